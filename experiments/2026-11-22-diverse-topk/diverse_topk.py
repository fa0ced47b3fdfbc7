"""Would dispatch top_k gain from timing *different* tile shapes instead of the model's first k? Per held-out
problem, the shipped models rank every measured config (full selection, `_core.selector_rank`); the first k
by score (as dispatch times them) is compared with picks that keep the first `keep` and then skip configs
whose key (sm80: tile MxN, or MxN and split-K; dw: the spatial tile) is already taken. Efficiency = oracle /
fastest of the k picks. Only measured configs take part, so this is a proxy for the whole-pool top_k.

usage: PYTHONPATH=build/python:python python3 experiments/2026-11-22-diverse-topk/diverse_topk.py RECORDS.csv.gz... [--models models]"""
import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402

VARIANTS = {  # name: (k, key, picks kept as ranked before diversity applies)
    "t1": (1, "mn", 1), "t4": (4, "mn", 4), "t4 mn keep 1": (4, "mn", 1), "t4 mn keep 2": (4, "mn", 2),
    "t4 mn+splitk keep 1": (4, "mnsk", 1), "t4 mn+splitk keep 2": (4, "mnsk", 2), "t8": (8, "mn", 8),
}


def key(config: str, how: str) -> tuple:
    f = dict(kv.split("=", 1) for kv in config.split())
    if f["fam"] == "dw":
        return ("dw", f["dwtile"].rsplit("x", 1)[0])
    m, n = f["tile"].split("x")[:2]
    return (m, n, f["splitk"]) if how == "mnsk" else (m, n)


def fastest_of_picks(ranked: list[tuple[str, float]], k: int, how: str, keep: int) -> float:
    picks, taken = [], set()
    for config, us in ranked:
        if len(picks) == k:
            break
        kk = key(config, how)
        if len(picks) < keep or kk not in taken:
            picks.append(us)
            taken.add(kk)
    for _, us in ranked:  # fewer distinct keys than k: fill in rank order
        if len(picks) == k:
            break
        if us not in picks:
            picks.append(us)
    return min(picks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--models", default="models")
    a = ap.parse_args()
    d = pd.concat([read_records(f)[1] for f in a.records])
    d = d[(d.status == "ok") & ~d.config.str.startswith("vendor=")]
    best = d.groupby(["problem", "config"]).median_us.min()
    eff: dict[tuple[str, str], list[float]] = {}
    for problem, times in best.groupby(level=0):
        times = times.droplevel(0)
        ranked = [(c, times[c]) for c, _ in _core.selector_rank(problem, "h200", a.models, "full", 100000)
                  if c in times.index]
        if not ranked:
            continue
        op = "gemm" if problem.startswith("gemm") else problem.split()[0]
        for name, (k, how, keep) in VARIANTS.items():
            eff.setdefault((op, name), []).append(times.min() / fastest_of_picks(ranked, k, how, keep) * 100)
    for (op, name), e in sorted(eff.items(), key=lambda x: (x[0][0], list(VARIANTS).index(x[0][1]))):
        e = np.array(e)
        print(f"{op:11s} {name:20s} n {len(e):4d}  mean {e.mean():5.1f}  p10 {np.percentile(e, 10):5.1f}  "
              f"p1 {np.percentile(e, 1):5.1f}  min {e.min():5.1f}")


if __name__ == "__main__":
    main()
