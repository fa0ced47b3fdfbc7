#!/usr/bin/env python3
"""Pairs file ('problem|config' lines, for `tilepick sweep --pairs` and bench/sm90_gpu.sh's PERF_PAIRS) of every
problem of a problem set x the configs that won most often on that set in earlier sweep records (beside
bench/recheck_pairs.py, which keeps each problem's own recorded best and the models' first choices).

A config's `align=` is written as `auto` (the sweep resolves it per problem), so a winner carries over to problems of
other alignments. Problems of the set that the records lack still get the configs.

  python3 bench/winner_pairs.py --records v26/perf.csv.gz --problems data/problems/sm90_llm_t2048.txt --top 10 \\
      --family sm90 > .device-in/t2048_pairs.txt
"""
import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", nargs="+", required=True, help="sweep record files (.csv or .csv.gz)")
    ap.add_argument("--problems", required=True, help="problem-set file ('name: problem' lines as in data/problems)")
    ap.add_argument("--top", type=int, default=10, help="configs to keep (default 10)")
    ap.add_argument("--family", default="sm90", help="only configs of this family (default sm90)")
    a = ap.parse_args()
    problems = list(dict.fromkeys(p for _, p in _core.problem_file(a.problems)))
    _, df = read_records(a.records)
    df = df[df.problem.isin(problems) & (df.status == "ok") & df.config.str.startswith(f"fam={a.family} ")]
    winners = df.loc[df.groupby("problem").median_us.idxmin(), "config"].str.replace(r" align=\S+", " align=auto",
                                                                                       regex=True)
    if winners.empty:
        raise SystemExit(f"winner_pairs: no ok {a.family} record of a problem of {a.problems}")
    configs = [c for c, _ in Counter(winners).most_common(a.top)]
    for p in problems:
        for c in configs:
            print(f"{p}|{c}")


if __name__ == "__main__":
    main()
