#!/usr/bin/env python3
"""Which K configs should dispatch's top_k strategy time? The model's first K, or a more varied K?

The model's first 4 often differ only in stages or swizzle of one tile shape; when that tile is the
wrong one, all four miss together. The varied lists take configs in the model's order but skip one
whose tile shape (sm80: tile and warps; dw: its dwtile) is already taken:
  plain   the first K
  d1      at most one per tile shape
  cap2    the first, then at most two per tile shape
  p2d     the first two, then at most one per tile shape

  pairs: write the (problem|config) pairs of the strategies' lists that no record holds (--fresh: all of
         them, to time every list in one call), problems in a seeded random order (a partial sweep is a random
         subset), for experiments/2026-11-23-graph-timing/graph_train_gpu.sh (bench/sweep/graph_NAME.txt.gz)
  score: the fastest measured of each strategy's first K per op (mean / P10 / min of oracle time /
         that time, and the share of problems whose K are all measured)

  python3 experiments/2026-11-26-topk-shortlist/topk_diversity.py pairs --records R... --problems-file F... --out bench/sweep/graph_topk_div.txt.gz
  python3 experiments/2026-11-26-topk-shortlist/topk_diversity.py score --records R... --problems-file F... [-k 2 3 4]
"""
import argparse
import gzip
import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402

STRATEGIES = {"plain": (4, 99), "d1": (1, 1), "cap2": (1, 2), "p2d": (2, 1)}  # (kept as ranked, cap per shape)


def tile_shape(config: str) -> tuple:
    """What a varied list keeps few of: Selector::shortlist's key (sm80 tile and warps, dw its dwtile)."""
    return tuple(_core.tile_shape(config))


def varied(ranked: list[str], k: int, head: int, cap: int) -> list[str]:
    """The first `head` of `ranked`, then in order those whose shape is on the list fewer than `cap` times."""
    out = list(ranked[: min(head, k)])
    count: dict = {}
    for c in out:
        count[tile_shape(c)] = count.get(tile_shape(c), 0) + 1
    for c in ranked[len(out):]:
        if len(out) == k:
            break
        if count.get(tile_shape(c), 0) < cap:
            out.append(c)
            count[tile_shape(c)] = count.get(tile_shape(c), 0) + 1
    out += [c for c in ranked if c not in out][: k - len(out)]  # too few shapes: fill in order
    return out


def measured(records: list[str]) -> dict:
    """(canonical problem, config) -> time (us) of the ok kernel records."""
    _, df = read_records(records)
    df = df[(df["status"] == "ok") & ~df["config"].str.startswith("vendor=")]
    canon = {p: _core.canonical_problem(p) for p in df["problem"].unique()}
    df = df.assign(problem=df["problem"].map(canon))
    times = {}
    for (p, c), us in df.groupby(["problem", "config"])["median_us"]:
        v = sorted(us)
        times[(p, c)] = v[(len(v) - 1) // 2]  # the eval's rule: the lower median of repeats
    return times


def problems_of(files: list[str], times: dict) -> list[str]:
    """The problems of the files, in file order, that the records time."""
    seen = {p for p, _ in times}
    out = []
    for f in files:
        for _, p in _core.problem_file(f):
            if p in seen and p not in out:
                out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["pairs", "score"])
    ap.add_argument("--records", nargs="+", required=True)
    ap.add_argument("--problems-file", nargs="+", required=True)
    ap.add_argument("--models", default="models")
    ap.add_argument("--arch", default="h200")
    ap.add_argument("-k", type=int, nargs="+", default=[4])
    ap.add_argument("--plain-k", type=int, default=8, help="pairs: also the plain first N (default 8)")
    ap.add_argument("--window", type=int, default=40, help="ranked configs the varied lists draw from")
    ap.add_argument("--oracle-records", nargs="*", default=[],
                    help="score: more records that only lower each problem's oracle (older or other timings)")
    ap.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    ap.add_argument("--ops", nargs="+", help="only problems of these ops (conv_fwd, ..., gemm)")
    ap.add_argument("--fresh", action="store_true", help="pairs: also those the records hold")
    ap.add_argument("--out")
    a = ap.parse_args()

    times = measured(a.records)
    problems = [p for p in problems_of(a.problems_file, times) if not a.ops or _core.problem_op(p) in a.ops]
    wanted, oracle = set(problems), {}
    for (p, _), us in list(times.items()) + (list(measured(a.oracle_records).items()) if a.oracle_records else []):
        if p in wanted:
            oracle[p] = min(us, oracle.get(p, np.inf))
    lists = {}
    for p in problems:
        ranked = [c for c, _ in _core.selector_rank(p, a.arch, a.models, "full", a.window)]
        lists[p] = (ranked, {(s, k): varied(ranked, k, *STRATEGIES[s]) for s in a.strategies for k in a.k})

    if a.command == "pairs":
        if not a.out:
            sys.exit("pairs needs --out")
        pairs = []
        order = list(lists)
        np.random.default_rng(7).shuffle(order)
        for p in order:
            ranked, by = lists[p]
            want = list(ranked[: a.plain_k])
            for l in by.values():
                want += [c for c in l if c not in want]
            pairs += [f"{p}|{c}" for c in want if a.fresh or (p, c) not in times]
        with gzip.open(a.out, "wt") as f:
            f.write("\n".join(pairs) + "\n")
        print(f"{len(pairs)} pairs of {len(problems)} problems -> {a.out}")
        return

    rows = []
    for p, (_, by) in lists.items():
        for (s, k), l in by.items():
            ts = [times.get((p, c)) for c in l]
            done = [t for t in ts if t is not None]
            rows.append({"problem": p, "op": _core.problem_op(p), "strategy": s, "k": k, "all": len(done) == k,
                         "eff": oracle[p] / min(done) if done else np.nan})
    df = pd.DataFrame(rows)
    print("op strategy k: mean / P10 / min of the fastest of the K (oracle: fastest recorded), share all measured")
    for (op, k, s), g in df.groupby(["op", "k", "strategy"], sort=True):
        e = g["eff"] * 100
        print(f"{op:16s} {s:6s} k={k}: {e.mean():6.2f} / {np.nanpercentile(e, 10):6.2f} / {e.min():6.2f}"
              f"  measured {g['all'].mean():.2f}")
    if "plain" not in a.strategies:
        return
    print("paired against plain, same k: mean difference (points) +- its standard error, problems better / worse by > 1")
    wide = df.pivot_table(index=["op", "k", "problem"], columns="strategy", values="eff")
    for (op, k), g in wide.groupby(level=["op", "k"]):
        for s in a.strategies:
            if s == "plain":
                continue
            d = (g[s] - g["plain"]).dropna() * 100
            print(f"{op:16s} {s:6s} k={k}: {d.mean():+6.3f} +- {d.std() / np.sqrt(len(d)):.3f}, "
                  f"{(d > 1).sum()} / {(d < -1).sum()}")


if __name__ == "__main__":
    main()
