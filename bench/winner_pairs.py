#!/usr/bin/env python3
"""Pairs file ('problem|config' lines, for `tilepick sweep --pairs` and bench/sm90_gpu.sh's PERF_PAIRS) of every
problem of a problem set x the configs that won most often on that set in earlier sweep records.

A config's `align=` is written as `auto` (the sweep resolves it per problem), so a winner carries over to problems of
other alignments. Problems of the set that the records lack still get the configs.

  python3 bench/winner_pairs.py --records v26/perf.csv.gz --problems data/problems/sm90_llm_t2048.txt --top 10 \\
      --family sm90 > .device-in/t2048_pairs.txt
"""
import argparse
import csv
import gzip
import io
import re
from collections import Counter


def read_records(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return list(csv.DictReader(io.StringIO("".join(ln for ln in f if not ln.startswith("#")))))


def read_problems(path):
    out = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line.split(": ", 1)[1] if ": " in line else line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", nargs="+", required=True, help="sweep record files (.csv or .csv.gz)")
    ap.add_argument("--problems", required=True, help="problem-set file ('name: problem' lines as in data/problems)")
    ap.add_argument("--top", type=int, default=10, help="configs to keep (default 10)")
    ap.add_argument("--family", default="sm90", help="only configs of this family (default sm90)")
    a = ap.parse_args()
    problems = read_problems(a.problems)
    wanted = set(problems)
    best = {}
    for path in a.records:
        for r in read_records(path):
            if r["problem"] not in wanted or r["status"] != "ok" or not r["config"].startswith(f"fam={a.family} "):
                continue
            t = float(r["median_us"])
            if r["problem"] not in best or t < best[r["problem"]][0]:
                best[r["problem"]] = (t, re.sub(r" align=\S+", " align=auto", r["config"]))
    wins = Counter(c for _, c in best.values())
    if not wins:
        raise SystemExit(f"winner_pairs: no ok {a.family} record of a problem of {a.problems}")
    configs = [c for c, _ in wins.most_common(a.top)]
    for p in problems:
        for c in configs:
            print(f"{p}|{c}")


if __name__ == "__main__":
    main()
