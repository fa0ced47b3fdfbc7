#!/usr/bin/env python3
"""Kernel trees side by side: sweep record files of the same (problem, config) pairs, one per kernel tree (run.sh),
as time ratios against the first file: geomean per config and over all pairs, and the
pairs that moved most. The vendor rows of each file show how much the device itself drifted between the sweeps.

  python3 experiments/2026-11-29-decode-regression/ab.py ab_head.csv.gz ab_38dd8ac.csv.gz
"""
import argparse
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from sm90_compare import read  # noqa: E402  (plain csv: runs on the lent machine, which has no pandas)


def times(path):
    """{(problem, config without align): median us} of the ok rows, and {problem: cuBLASLt best us}."""
    ours, vendor = {}, {}
    for r in read(path):
        if r["status"] != "ok":
            continue
        if r["config"].startswith("vendor=cublaslt:best"):
            vendor[r["problem"]] = float(r["median_us"])
        elif r["config"].startswith("fam="):
            ours[(r["problem"], re.sub(r" align=\S+", "", r["config"]))] = float(r["median_us"])
    return ours, vendor


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", help="record files, the reference first")
    ap.add_argument("--top", type=int, default=10, help="pairs to list that moved most (default 10)")
    a = ap.parse_args()
    ref, ref_vendor = times(a.records[0])
    for path in a.records[1:]:
        ours, vendor = times(path)
        common = [k for k in ref if k in ours]
        by_config = defaultdict(list)
        for k in common:
            by_config[k[1]].append(ours[k] / ref[k])
        print(f"== {path} / {a.records[0]}: {len(common)} pairs, time ratio {geomean([ours[k] / ref[k] for k in common]):.3f}; "
              f"cuBLASLt {geomean([vendor[p] / ref_vendor[p] for p in vendor if p in ref_vendor]):.3f}")
        for config, ratios in sorted(by_config.items(), key=lambda kv: geomean(kv[1])):
            print(f"  {geomean(ratios):.3f} on {len(ratios):3d}  {config}")
        for k in sorted(common, key=lambda k: abs(math.log(ours[k] / ref[k])), reverse=True)[: a.top]:
            print(f"  {ours[k] / ref[k]:.3f}  {ours[k]:9.2f} vs {ref[k]:9.2f} us  {k[0]} | {k[1]}")


if __name__ == "__main__":
    main()
