#!/usr/bin/env python3
"""Grouped CV (the training problems, train.fold_of folds) of a lambdarank and a reg_rel stand-in for the pooled conv
teacher, same rows, rounds and settings (learning rate 0.15, one booster, ROUNDS fixed; default 600). CPU only.

  PYTHONPATH=python python3 bench/objective_cv_probe.py [ROUNDS]
"""
import sys, time
sys.path.insert(0, __import__("os").path.dirname(__file__))
import numpy as np, pandas as pd, lightgbm as lgb
from tilepick import train as tr
import selection_probes as sp
t0 = time.time()
df = sp.training_rows("conv_fwd_half_h200")
df = df.sort_values(["problem", "config"], kind="stable").reset_index(drop=True)
X = tr.compute_features(df, "h200")
folds = tr.fold_of(df["group"])
R = int(sys.argv[1]) if len(sys.argv) > 1 else 600
for obj in ("lambdarank", "reg_rel"):
    parts = []
    for f in range(tr.FOLDS):
        te = folds == f
        p = tr.params_for(obj, 1, "conv"); p.update(learning_rate=0.15, num_threads=2)
        b = lgb.train(p, tr.dataset(X[~te], df[~te], obj, lgb), num_boost_round=R)
        s = tr.score_sign(obj) * b.predict(X[te])
        parts.append(tr.efficiency(df[te], s).assign(op=df.loc[te].groupby("problem")["op"].first()))
    e = pd.concat(parts)
    print(obj, R, " ".join(f"{op[5:]} {100*g.eff.mean():.2f}/{100*g.eff.quantile(.1):.1f}/{100*g.eff.min():.0f}" for op, g in e.groupby("op")),
          f"all {100*e.eff.mean():.2f}", f"{time.time()-t0:.0f}s", flush=True)
