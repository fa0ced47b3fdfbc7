"""CV of the vendor choice on 4,830 problems at each grid threshold: mean / P10 / time-weighted per op (run from
the repo root, PYTHONPATH=python)."""
exec(open('bench/results/2026-11-26-h200x4-vendor-choice-more/thresholds.py').read().split("m = vc.fit")[0])
for th in vc.THRESHOLDS:
    a = vc.table(t, cv, th)
    s = np.mean([[a[o]['choice'][k] for k in ('mean','p10','time_weighted')] for o in vc.OPS['conv']], axis=0)
    print(f"th {th:5}: " + " ".join(f"{o[5:]} {100*a[o]['choice']['mean']:.1f}/{100*a[o]['choice']['p10']:.1f}/{100*a[o]['choice']['time_weighted']:.1f}" for o in vc.OPS['conv']) + f"  | avg mean {100*s[0]:.2f} p10 {100*s[1]:.2f} tw {100*s[2]:.2f} all3 {100*s.mean():.2f}")
