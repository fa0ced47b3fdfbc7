#!/usr/bin/env python3
"""Could dispatch's race strategy time only where the vendor choice is unsure? From a `tilepick eval --out DIR`
eval.csv (conv problems): the vendor choice's prediction per problem (tilepick.select, the shipped models), then the
kernel run when the share of problems nearest the threshold is raced and the rest run the heuristic strategy's
choice, against the fastest known kernel: mean / P10 / min / time-weighted %.

  PYTHONPATH=python python3 experiments/2026-11-26-race/race_gating.py build/eval/eval.csv
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import tilepick


def main() -> None:
    d = pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else "build/eval/eval.csv")
    d = d[d.op != "gemm"].dropna(subset=["dispatch_us", "race_us", "best_known_us"]).reset_index(drop=True)
    threshold = json.loads(Path("models/conv_fwd_half_h200/feature_spec.json").read_text())["vendor_choice"]["threshold"]
    pred = np.array([tilepick.select(p, "h200", 1).vendor_log_ratio for p in d.problem])  # the selector's own
    d["unsure"] = np.abs(pred - threshold)
    for op, g in d.groupby("op"):
        print(f"{op}: {len(g)} problems")
        for share in (0, 0.1, 0.2, 0.3, 0.5, 1.0):
            raced = g.unsure.rank(method="first") <= share * len(g)
            us = np.where(raced, g.race_us, g.dispatch_us)
            e = g.best_known_us / us * 100
            print(f"  race the {share:4.0%} least sure: {e.mean():6.2f} / {np.percentile(e, 10):6.2f} / {e.min():5.1f}"
                  f" / tw {100 * g.best_known_us.sum() / us.sum():6.2f}")


if __name__ == "__main__":
    main()
