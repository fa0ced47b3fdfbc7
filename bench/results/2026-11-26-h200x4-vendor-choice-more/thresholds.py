"""CV and held-out tables of the vendor choice on 4,830 problems at each grid threshold (run from the repo root,
PYTHONPATH=python)."""
import glob, numpy as np, pandas as pd
from tilepick import vendor_choice as vc, train, records as rec, _core
files = sorted(glob.glob("data/sweeps/h200/*_train*.csv.gz"))
rem = [f"data/sweeps/h200-graph/{n}.csv.gz" for n in ("conv_train_short", "conv_train_20us", "vendor_conv_train", "vendor_conv_train2")]
t = vc.times_table(files, rem)
t = t[t.op.isin(vc.OPS["conv"]) & (t.problem.map(_core.dtype_family) == "half")].reset_index(drop=True)
tags = {}
for f in sorted(glob.glob("data/problems/sweep/*_train*.txt")): tags.update(rec.read_problem_tags(f))
groups = pd.Series([train.cv_group(p, tags.get(rec.problem_key(p))) for p in t.problem])
X, y = vc.problem_features(list(t.problem), "h200"), np.log(t.vendor / t.ours).to_numpy()
cv = vc.cross_validated(X, y, groups, 2)
m = vc.fit(X, y, 2)
ht = vc.heldout_table("data/sweeps/h200-graph/recheck_val.csv.gz+data/sweeps/h200-graph/vendor_conv_val.csv.gz")
hp = m.predict(vc.problem_features(list(ht.problem), "h200"))
for th in (-0.2, -0.1, 0.0, 0.1, 0.2):
    a = vc.table(t, cv, th); b = vc.table(ht, hp, th)
    print(f"th {th:5}: CV " + " ".join(f"{o[5:]} {100*a[o]['choice']['mean']:.1f}/{100*a[o]['choice']['time_weighted']:.1f}" for o in vc.OPS['conv'])
          + " | heldout " + " ".join(f"{o[5:]} {100*b[o]['choice']['mean']:.1f}/{100*b[o]['choice']['p10']:.1f}/{100*b[o]['choice']['time_weighted']:.1f}" for o in vc.OPS['conv']))
# by source of training problems: the synthetic vs network groups
t["net"] = groups.str.startswith("shape:").map({True: "synthetic", False: "network"})
print(t.groupby(["net","op"]).size())
