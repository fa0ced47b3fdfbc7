#!/usr/bin/env python3
"""The conv teacher's three bagged boosters one at a time, two of them, and all three: the choice among the measured
configs of the conv held-out sets (bench/selection_probes.py's CONV_HELDOUT), per op mean / P10 / min (CPU only).

  PYTHONPATH=python python3 bench/teacher_bags_probe.py
"""
import sys, gzip
sys.path.insert(0, "bench")
import numpy as np, lightgbm as lgb
from tilepick import _core
import selection_probes as sp
h = sp.heldout_rows(sp.CONV_HELDOUT)
X = np.ascontiguousarray(_core.features_batch(list(h["problem"]), list(h["config"]), "h200", 0))
text = gzip.open(_core.model_file("models/conv_fwd_half_h200"), "rt").read()
b = lgb.Booster(model_str=text)
n = b.num_trees(); print("trees", n)
oracle = h.groupby("problem")["median_us"].min()
def rep(name, s):
    e = sp.efficiency_of(h, s, oracle)
    print(f"{name:14s}", "  ".join(f"{o[5:]} {sp.line('', e.reindex(h.loc[h.op==o,'problem'].unique()))}" for o in sorted(h.op.unique())), f"| all {100*e.mean():.2f}", flush=True)
full = b.predict(X, raw_score=True)
rep("3 bags", full)
per = n // 3
for k in range(3):
    s = b.predict(X, raw_score=True, start_iteration=k*per, num_iteration=per)
    rep(f"bag {k}", s)
rep("bags 0+1", b.predict(X, raw_score=True, start_iteration=0, num_iteration=2*per))
