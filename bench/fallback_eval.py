"""The analytic fallback's first choice over every measured config of each problem, against the fastest
measured (records with every legal config measured, such as data/sweeps/h200/gemm_train_full.csv.gz, give its
whole-pool efficiency; sampled records only bound it from above). The fallback is tilepick's own
(`_core.heuristic_scores`); the arch is the records' unless --arch is given.

  PYTHONPATH=python python3 bench/fallback_eval.py data/sweeps/h200/gemm_train_full.csv.gz [--arch h200] [--worst 5]
"""
import argparse
import sys

import numpy as np

from tilepick import _core
from tilepick.records import read_records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--arch", default="")
    ap.add_argument("--worst", type=int, default=0, help="print the N worst problems")
    a = ap.parse_args()
    header, df = read_records(a.records)
    arch = a.arch or (header.get("devices") or [{}])[0].get("arch", "h200")
    df = df[(df.status == "ok") & ~df.config.str.startswith("vendor=")]
    best = df.groupby(["problem", "config"]).median_us.min().reset_index()
    rows = []
    for p, g in best.groupby("problem"):
        s = np.asarray(_core.heuristic_scores(p, list(g.config), arch))
        i = int(np.argmax(s))
        rows.append((g.median_us.min() / g.median_us.values[i], p, g.config.values[i], len(g)))
    e = np.array([r[0] for r in rows])
    print(f"arch {arch}: {len(e)} problems, {np.mean([r[3] for r in rows]):.0f} configs each: fallback first choice "
          f"mean {e.mean():.3f} median {np.median(e):.3f} p10 {np.quantile(e, .1):.3f} min {e.min():.3f}")
    for r in sorted(rows)[:a.worst]:
        print(f"  {r[0]:.3f} {r[1]} | {r[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
