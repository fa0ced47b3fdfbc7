"""Held-out quality of the vendor choice trained on a share of its 800 graph-labelled problems (run from the repo
root, PYTHONPATH=python; before vendor_conv_train2)."""
import glob, zlib
import numpy as np, pandas as pd
from tilepick import vendor_choice as vc, train, records as rec, _core
files = sorted(glob.glob("data/sweeps/h200/*_train*.csv.gz"))
rem = [f"data/sweeps/h200-graph/{n}.csv.gz" for n in ("conv_train_short", "conv_train_20us", "vendor_conv_train")]
t = vc.times_table(files, rem)
t = t[t.op.isin(vc.OPS["conv"]) & (t.problem.map(_core.dtype_family) == "half")].reset_index(drop=True)
tags = {}
for f in sorted(glob.glob("data/problems/sweep/*_train*.txt")): tags.update(rec.read_problem_tags(f))
groups = pd.Series([train.cv_group(p, tags.get(rec.problem_key(p))) for p in t.problem])
X, y = vc.problem_features(list(t.problem), "h200"), np.log(t.vendor / t.ours).to_numpy()
ht = vc.heldout_table("data/sweeps/h200-graph/recheck_val.csv.gz+data/sweeps/h200-graph/vendor_conv_val.csv.gz")
hX = vc.problem_features(list(ht.problem), "h200")
print(len(t), "training problems", groups.nunique(), "groups")
for frac in (0.5, 0.75, 1.0):
    res = []
    for salt in range(3 if frac < 1 else 1):
        keep = groups.map(lambda g: zlib.crc32(f"{salt}{g}".encode()) % 1000 < frac * 1000).to_numpy()
        m = vc.fit(X[keep], y[keep], 2)
        tab = vc.table(ht, m.predict(hX), -0.1)
        res.append([tab[o]["choice"][k] for o in vc.OPS["conv"] for k in ("mean", "time_weighted")])
    r = 100 * np.mean(res, axis=0)
    print(f"{frac:.2f} ({keep.sum()} problems): " + "  ".join(f"{o[5:]} {r[2*i]:.1f}/tw {r[2*i+1]:.1f}" for i, o in enumerate(vc.OPS["conv"])))
