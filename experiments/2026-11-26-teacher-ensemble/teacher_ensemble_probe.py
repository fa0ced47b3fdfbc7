#!/usr/bin/env python3
"""Probe: does averaging the shipped lambdarank conv teacher with the regression teacher it replaced (commit 248eb64,
reg_rel, 8,739 trees) choose better? Over the README eval's H200 records, each held-out conv problem's measured
configs are scored by both (C++ evaluator), each model's scores z-scored per problem and mixed with weight w on the
lambdarank teacher; the pick's efficiency against the fastest measured, mean / P10 / min %.

  mkdir -p /tmp/reg && git archive 248eb64 models | tar x -C /tmp/reg
  PYTHONPATH=python python3 experiments/2026-11-26-teacher-ensemble/teacher_ensemble_probe.py /tmp/reg/models/conv_half_h200.model.txt.gz
"""
import os
import sys

import numpy as np
import pandas as pd

from tilepick import _core
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "2026-11-26-topk-shortlist"))
from topk_diversity import measured  # noqa: E402

RECORDS = [f"data/sweeps/h200-graph/{n}.csv.gz" for n in
           "recheck_val newmodel_val lambdarank_val b1_val video_val video2_val shortlist_val".split()]


def main() -> None:
    rows = [(p, c, us) for (p, c), us in measured(RECORDS).items() if _core.problem_op(p) != "gemm"]
    d = pd.DataFrame(rows, columns=["p", "c", "us"])
    X = np.asarray(_core.features_batch(list(d.p), list(d.c), "h200", 2))
    d["lr"] = np.asarray(_core.gbdt_predict("models/conv_half_h200.model.txt.gz", X))
    d["rg"] = np.asarray(_core.gbdt_predict(sys.argv[1], X))
    z = {m: d.groupby("p")[m].transform(lambda s: (s - s.mean()) / (s.std() + 1e-9)) for m in ("lr", "rg")}
    for w in (0.25, 0.5, 0.75):
        d[f"w={w}"] = w * z["lr"] + (1 - w) * z["rg"]
    oracle = d.groupby("p").us.min()
    for op, g in d.groupby(d.p.map(_core.problem_op)):
        out = [f"{op} ({g.p.nunique()} problems)"]
        for col in ("lr", "rg", "w=0.25", "w=0.5", "w=0.75"):
            pick = g.loc[g.groupby("p")[col].idxmax()]
            e = oracle[pick.p].to_numpy() / pick.us.to_numpy() * 100
            out.append(f"{col} {e.mean():.2f} / {np.percentile(e, 10):.1f} / {e.min():.1f}")
        print(" | ".join(out))


if __name__ == "__main__":
    main()
