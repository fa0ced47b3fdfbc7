"""Measured value of `tilepick search` proposals (issue 5).

Reads the sweep of a `search --out` pairs file (proposals + the model's best pool config per problem)
and the sampled validation records of the same problems, and compares per problem:
  outside_vs_poolbest   time of the model's best pool config / best measured config outside the pool
  outside_vs_oracle     best sampled pool config (the records' oracle) / best outside the pool
  best_vs_oracle        the records' oracle / best of everything measured here (what search + timing gives)
Values > 1 mean the proposals are faster. Pool membership comes from the registry (tilepick._core).

usage: python experiments/2026-11-21-search-eval/search_eval.py PROPOSALS.csv.gz POOL_RECORDS.csv.gz [--arch h200] [--out CSV]"""
import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402


def kernels(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.status == "ok") & ~df.config.str.startswith("vendor=")]


def compare(prop: pd.DataFrame, pool: pd.DataFrame, arch: str) -> pd.DataFrame:
    rows = []
    for problem, g in kernels(prop).groupby("problem"):
        legal = set(_core.legal_configs(problem, arch))
        inside = g[g.config.isin(legal)]
        outside = g[~g.config.isin(legal)]
        sampled = kernels(pool[pool.problem == problem])
        model_best = _core.select(problem, arch, 1)["top"][0]["config"]
        mb = inside[inside.config == model_best].median_us.min()
        rows.append(dict(problem=problem, n_outside=len(outside), model_pool_best_us=mb,
                         best_outside_us=outside.median_us.min(), oracle_us=sampled.median_us.min(),
                         best_measured_us=g.median_us.min()))
    r = pd.DataFrame(rows)
    r["outside_vs_poolbest"] = r.model_pool_best_us / r.best_outside_us
    r["outside_vs_oracle"] = r.oracle_us / r.best_outside_us
    r["best_vs_oracle"] = r.oracle_us / r.best_measured_us
    return r


def summary(r: pd.DataFrame) -> str:
    lines = [f"{len(r)} problems"]
    for c in ["outside_vs_poolbest", "outside_vs_oracle", "best_vs_oracle"]:
        s = r[c].dropna()
        lines.append(f"{c:20s} geomean {np.exp(np.log(s).mean()):.3f}  median {s.median():.3f}  "
                     f"faster by >2%: {(s > 1.02).sum():3d}  slower by >2%: {(s < 0.98).sum():3d}  "
                     f"range {s.min():.2f}..{s.max():.2f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("proposals")
    ap.add_argument("pool_records")
    ap.add_argument("--arch", default="h200")
    ap.add_argument("--out")
    a = ap.parse_args()
    r = compare(read_records(a.proposals)[1], read_records(a.pool_records)[1], a.arch)
    print(summary(r))
    if a.out:
        r.to_csv(a.out, index=False, float_format="%.4g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
