"""What dispatch's auto strategy buys at each threshold, by the records of a `tilepick eval` run.

auto times a plan as top_k (the shortlist and the vendor's heuristic and best kernels) where the analytic estimate
of the model's first choice (eval.csv `own_first_est_us`) is at least T microseconds, and runs what the heuristic
strategy runs elsewhere (`dispatch_us`). Per op: mean / P10 / min / time-weighted efficiency against the fastest
kernel measured (`best_known_us`), and the share of problems timed.
    python3 bench/auto_threshold.py build/eval/eval.csv [--thresholds 0 50 100 200 500 inf]
"""
import argparse

import numpy as np
import pandas as pd


def row(g: pd.DataFrame, t: float) -> str:
    timed = (g.own_first_est_us >= t).to_numpy()
    ours = g.own_timed_us.fillna(g.own_first_us)
    tuned = np.fmin(ours, g.vendor_best_us)  # NaN only where every side failed
    us = np.where(timed, tuned, g.dispatch_us)
    eff = np.nan_to_num(g.best_known_us.to_numpy() / us)  # a failed pick counts 0
    tw = 0.0 if np.isnan(us).any() else g.best_known_us.sum() / us.sum()
    return (f"{100 * eff.mean():5.1f} {100 * np.percentile(eff, 10):5.1f} {100 * eff.min():5.1f} {100 * tw:5.1f}"
            f" {100 * timed.mean():4.0f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("eval_csv")
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0, 50, 100, 200, 500, float("inf")])
    a = ap.parse_args()
    d = pd.read_csv(a.eval_csv)
    d = d[d.dispatch_efficiency.notna()]
    ops = sorted(d.op.unique())
    print("T (us) | " + " | ".join(f"{op}: mean p10 min tw timed" for op in ops))
    for t in a.thresholds:
        print(f"{t:6g} | " + " | ".join(row(d[d.op == op], t) for op in ops))


if __name__ == "__main__":
    main()
