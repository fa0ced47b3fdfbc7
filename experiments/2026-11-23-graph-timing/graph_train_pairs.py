"""Pair list for re-measuring conv training problems with CUDA-graph timing (experiments/2026-11-23-graph-timing/graph_train_gpu.sh): every
recorded kernel pair (a pair's first ok record, as training keeps it) of the conv training problems that the
shipped conv models' manifests list, of the given dtypes, whose recorded best lies in [--min-us, --max-us);
problems in a seeded random order (so a partial sweep is a random subset), problems of --exclude lists left out.

usage: python experiments/2026-11-23-graph-timing/graph_train_pairs.py --dtype f16 --max-us 20 --out bench/sweep/graph_conv_train_b.txt.gz"""
import argparse
import gzip
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from tilepick.records import read_records  # noqa: E402

DIRECTIONS = ("conv_fwd", "conv_bwd_data", "conv_bwd_weight")


def training_files() -> list[str]:
    files = {x["file"] for d in DIRECTIONS for x in json.loads((ROOT / f"models/{d}_half_h200/manifest.json").read_text())["data"]}
    return sorted(str(ROOT / f) for f in files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", nargs="+", default=["bf16"], help="problem dtypes to take (bf16, f16)")
    ap.add_argument("--min-us", type=float, default=0.0)
    ap.add_argument("--max-us", type=float, required=True)
    ap.add_argument("--exclude", nargs="*", default=[], help="pair lists whose problems are left out")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, d = read_records(training_files())
    d = d[(d.status == "ok") & ~d.config.str.startswith("vendor=")].drop_duplicates(["problem", "config"])
    best = d.groupby("problem").median_us.min()
    dtype = best.index.str.split().str[-1]
    take = best[dtype.isin(a.dtype) & (best >= a.min_us) & (best < a.max_us)].index
    excluded = set()
    for f in a.exclude:
        with gzip.open(f, "rt") as fh:
            excluded |= {line.split("|", 1)[0] for line in fh}
    problems = sorted(set(take) - excluded)
    order = np.random.default_rng(a.seed).permutation(len(problems))
    pairs = d[d.problem.isin(problems)].groupby("problem").config.apply(sorted)
    with gzip.GzipFile(a.out, "wb", mtime=0) as raw:
        lines = [f"{problems[i]}|{c}\n" for i in order for c in pairs[problems[i]]]
        raw.write("".join(lines).encode())
    print(f"{a.out}: {len(problems)} problems, {len(lines)} pairs ({len(excluded)} problems excluded)")


if __name__ == "__main__":
    main()
