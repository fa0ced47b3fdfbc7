"""Is the selector's confidence (the predicted margin of its first choice over the runner-up) a good
trigger for on-device timing? From a `tilepick eval --out DIR` eval.csv: per op, the Spearman correlation
of confidence with the first choice's efficiency, and the efficiency when only the least confident share
of problems is timed (dispatch top_k: the fastest of the first timed_k) and the rest run the first choice.

usage: python3 experiments/2026-11-22-confidence-gating/confidence_gating.py build/eval/eval.csv"""
import sys

import numpy as np
import pandas as pd


def gated(x: pd.DataFrame, least_certain: pd.Series, share: float) -> np.ndarray:
    """Efficiency (%) per problem when the `share` of problems ranked first by `least_certain` (rank 1 =
    least certain) is timed and the rest run the first choice."""
    timed = least_certain.rank(method="first") <= share * len(x)
    return np.where(timed, x.timed_efficiency, x.efficiency) * 100


def main() -> None:
    d = pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else "build/eval/eval.csv")
    for op, x in d[d.own_confidence.notna()].groupby("op", sort=False):
        rho = x[["own_confidence", "efficiency"]].corr(method="spearman").iloc[0, 1]
        print(f"{op}: {len(x)} problems, Spearman(confidence, first-choice efficiency) {rho:.2f}")
        for share in (0, 0.25, 0.5, 0.75, 1.0):
            e = gated(x, x.own_confidence, share)
            print(f"  time the {share:4.0%} least confident: mean {e.mean():.1f} P10 {np.percentile(e, 10):.1f} "
                  f"min {e.min():.1f}")


if __name__ == "__main__":
    main()
