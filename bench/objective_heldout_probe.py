#!/usr/bin/env python3
"""The shipped conv teacher, a lambdarank and a reg_rel stand-in (600 rounds, learning rate 0.15, one booster) and
rank blends of the teacher with each: the choice among the measured configs of the conv held-out sets
(selection_probes.CONV_HELDOUT), per op mean / P10 / min. CPU only.

  PYTHONPATH=python python3 bench/objective_heldout_probe.py
"""
import sys, time
sys.path.insert(0, __import__("os").path.dirname(__file__))
import numpy as np, pandas as pd, lightgbm as lgb
from tilepick import _core, train as tr
import selection_probes as sp
t0 = time.time()
df = sp.training_rows("conv_fwd_half_h200")
h = sp.heldout_rows(sp.CONV_HELDOUT)
X = tr.compute_features(df, "h200")
Xh = np.ascontiguousarray(_core.features_batch(list(h["problem"]), list(h["config"]), "h200", 0))
teacher = np.asarray(_core.gbdt_predict(_core.model_file("models/conv_fwd_half_h200"), Xh))
print("features", f"{time.time()-t0:.0f}s", flush=True)
oracle = h.groupby("problem")["median_us"].min()
def rep(name, s):
    e = sp.efficiency_of(h, s, oracle)
    print(f"{name:26s}", "  ".join(f"{o[5:]} {sp.line('', e.reindex(h.loc[h.op==o,'problem'].unique()))}" for o in sorted(h.op.unique())), f"| all {100*e.mean():.2f}", flush=True)
rep("teacher", teacher)
def prank(s):  # per-problem percentile rank (higher better)
    return pd.Series(s).groupby(h["problem"].to_numpy()).rank(pct=True).to_numpy()
df = df.sort_values("problem", kind="stable")
X = X[df.index.to_numpy()]
group = df.groupby("problem", sort=False).size().to_numpy()
for obj in ("lambdarank", "reg_rel"):
    p = tr.params_for(obj, 1, "conv"); p.update(learning_rate=0.15, num_threads=2)
    ds = lgb.Dataset(X, label=tr.target(df, obj), group=group if obj == "lambdarank" else None)
    b = lgb.train(p, ds, num_boost_round=600)
    s = b.predict(Xh) * tr.score_sign(obj)
    print(obj, "trained", f"{time.time()-t0:.0f}s", flush=True)
    rep(f"{obj} stand-in", s)
    for w in (0.25, 0.5):
        rep(f"teacher + {w} {obj} (ranks)", (1 - w) * prank(teacher) + w * prank(s))
