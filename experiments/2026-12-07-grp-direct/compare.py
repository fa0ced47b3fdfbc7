# Per problem of a grp sweep record file: cuDNN best / best measured grp config (speed-up), both times in us, the
# problem and the winning config; then the geomean per (direction, batch) class.
#   python3 experiments/2026-12-07-grp-direct/compare.py experiments/2026-12-07-grp-direct/h100/grp.csv.gz | sort -k4,4 -k5,5
import csv, gzip, sys, math, collections
rows=[r for r in csv.DictReader(l for l in gzip.open(sys.argv[1],'rt') if not l.startswith('#'))]
best=collections.defaultdict(dict); cfgt=collections.defaultdict(lambda: collections.defaultdict(dict))
for r in rows:
    if r['status']!='ok': continue
    t=float(r['median_us']); k='v' if r['config'].startswith('vendor') else 'o'
    if t < best[r['problem']].get(k,(1e9,))[0]: best[r['problem']][k]=(t,r['config'])
    if k=='o': cfgt[r['config'].split(' fx')[0]][r['problem']]=t
g=collections.defaultdict(list)
for p,d in best.items():
    if 'o' in d and 'v' in d:
        s=d['v'][0]/d['o'][0]; cls=p.split()[0]+' '+p.split()[2]
        g[cls].append(s); print(f"{s:5.2f} {d['o'][0]:8.1f} {d['v'][0]:8.1f} {p[:70]:70s} {d['o'][1]}")
for c,v in sorted(g.items()): print(c, len(v), 'geomean %.3f'%math.exp(sum(map(math.log,v))/len(v)), 'min %.2f max %.2f'%(min(v),max(v)))
