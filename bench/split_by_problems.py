"""Splits a record file by problem lists: rows whose problem is in PROBLEMS.txt go to --out, keeping
the file's header lines (used to split bench/model_pairs_gpu.sh's records into train and val files).

usage: python bench/split_by_problems.py RECORDS.csv.gz PROBLEMS.txt... --out OUT.csv.gz"""
import argparse
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from tilepick.records import problem_key, read_problem_tags  # noqa: E402


def problems(path: str) -> set:
    keys = set(read_problem_tags(path))
    for line in open(path):  # untagged lines too
        text = line.split("#", 1)[0].strip()
        if text and not text.split(" ", 1)[0].endswith(":"):
            keys.add(problem_key(text))
    return keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records")
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    keep = set().union(*(problems(p) for p in a.problems))
    n = m = 0
    with gzip.open(a.records, "rt") as src, gzip.open(a.out, "wt") as dst:
        for i, line in enumerate(src):
            if line.startswith("#") or line.startswith("problem,"):
                dst.write(line)
                continue
            n += 1
            if problem_key(line.split(",", 1)[0]) in keep:
                dst.write(line)
                m += 1
    print(f"{a.out}: {m} of {n} rows")


if __name__ == "__main__":
    main()
