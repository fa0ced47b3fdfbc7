"""Two models' whole-pool first choices on the same held-out records, problem by problem: from two `tilepick eval
--out` folders (eval.csv), over the problems where both first choices were measured, per op: mean and P10 of each,
the mean difference and how many problems each wins by more than the band.

usage: python bench/paired_eval.py OLD_EVAL_DIR NEW_EVAL_DIR [--band 0.005]
"""
import argparse
from pathlib import Path

import pandas as pd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--band", type=float, default=0.005, help="a difference within this is a tie")
    a = ap.parse_args()
    cols = ["op", "problem", "own_first_measured", "own_first_efficiency"]
    old, new = (pd.read_csv(Path(d) / "eval.csv", usecols=cols) for d in (a.old, a.new))
    both = old.merge(new, on=["op", "problem"], suffixes=("_old", "_new"))
    both = both[(both.own_first_measured_old == 1) & (both.own_first_measured_new == 1)]
    print(f"{'op':<16} {'n':>4} | {'old mean':>8} {'p10':>6} | {'new mean':>8} {'p10':>6} | {'diff':>7} "
          f"{'new wins':>8} {'old wins':>8} {'ties':>5}")
    for op, g in both.groupby("op"):
        o, n = g.own_first_efficiency_old, g.own_first_efficiency_new
        d = n - o
        print(f"{op:<16} {len(g):>4} | {100 * o.mean():8.2f} {100 * o.quantile(0.1):6.2f} | {100 * n.mean():8.2f} "
              f"{100 * n.quantile(0.1):6.2f} | {100 * d.mean():+7.2f} {(d > a.band).sum():>8} {(d < -a.band).sum():>8} "
              f"{(d.abs() <= a.band).sum():>5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
