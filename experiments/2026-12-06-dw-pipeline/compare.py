# Geomean per class of (cuDNN best / our best) per sweep and of the sweeps against the first, from the records of h100/.
#   .venv/bin/python experiments/2026-12-06-dw-pipeline/compare.py off,on,off2,on264 off
#   .venv/bin/python experiments/2026-12-06-dw-pipeline/compare.py wgrad_off,wgrad_on,wgrad_off2 wgrad_off
import sys,re,math; sys.path.insert(0,'python')
from tilepick.records import read_records
D='experiments/2026-12-06-dw-pipeline/h100/'
def load(n):
    h,df=read_records(D+n+'.csv.gz'); return df[df.status=='ok']
def best(df):
    o=df[~df.is_vendor].groupby('problem').median_us.min(); return o
def vend(df):
    return df[df.is_vendor].groupby('problem').median_us.min()
def cls(p):
    d=p.split()[0]; mb=re.search(r' mb(\d+)',p).group(1); st=max(int(x) for x in re.findall(r' s[dhw](\d+)',p))
    dim='3-D' if ' id' in p else '2-D'
    return f"{d} mb{mb} {dim}{' strided' if st>1 and d=='bwd_data' else ''}"
def gm(x): x=list(x); return math.exp(sum(math.log(v) for v in x)/len(x)) if x else float('nan')
names=sys.argv[1].split(',')
runs={n:best(load(n)) for n in names}
v=vend(load(sys.argv[2]))
import collections
C=collections.defaultdict(list)
for p in runs[names[0]].index:
    C[cls(p)].append(p)
print("%-28s %3s "%("class","n")+" ".join("%9s"%("cudnn/"+n) for n in names)+"  "+" ".join("%9s"%(n+"/"+names[0]) for n in names[1:]))
allp=[]
for c,ps in sorted(C.items()):
    ps=[p for p in ps if p in v.index and all(p in runs[n].index for n in names)]
    allp+=ps
    print("%-28s %3d "%(c,len(ps))+" ".join("%9.3f"%gm(v[p]/runs[n][p] for p in ps) for n in names)+"  "+" ".join("%9.3f"%gm(runs[names[0]][p]/runs[n][p] for p in ps) for n in names[1:]))
ps=allp
print("%-28s %3d "%("all",len(ps))+" ".join("%9.3f"%gm(v[p]/runs[n][p] for p in ps) for n in names)+"  "+" ".join("%9.3f"%gm(runs[names[0]][p]/runs[n][p] for p in ps) for n in names[1:]))
