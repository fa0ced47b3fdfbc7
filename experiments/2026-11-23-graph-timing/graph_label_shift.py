"""What graph timing changes in the training labels of short problems (bench/results/2026-11-23-h200-graph-timing/,
section 5): for every problem whose pairs in the graph-timed file are all measured, against the records a model
trained on (a pair's first record, as training keeps it), over the same configs: whether the records' fastest is
the fastest with graphs, its graph-timed efficiency, the rank correlation of the two timings, and the median
label log(time / problem best) of each.

usage: python experiments/2026-11-23-graph-timing/graph_label_shift.py [--graph FILE] [--pairs FILE] [--manifest models/.../manifest.json]"""
import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from tilepick.records import read_records  # noqa: E402


def kernel_ok(files: list[str]) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, d = read_records(files)
    return d[(d.status == "ok") & ~d.config.str.startswith("vendor=")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default=str(ROOT / "data/sweeps/h200-graph/conv_train_short.csv.gz"))
    ap.add_argument("--pairs", default=str(ROOT / "bench/sweep/graph_conv_train_short.txt.gz"))
    ap.add_argument("--manifest", default=str(ROOT / "models/conv_fwd_half_h200/manifest.json"))
    a = ap.parse_args()
    files = [str(ROOT / x["file"]) for x in json.loads(Path(a.manifest).read_text())["data"] if "f16" not in x["file"]]
    old = kernel_ok(files).drop_duplicates(["problem", "config"])
    new = kernel_ok([a.graph])
    want = pd.read_csv(a.pairs, sep="|", header=None, names=["problem", "config"]).groupby("problem").size()
    got = new.groupby("problem").size()
    complete = got[got == want.reindex(got.index)].index
    x = old.merge(new[new.problem.isin(complete)], on=["problem", "config"], suffixes=("_old", "_graph"))
    rows = []
    for _, d in x.groupby("problem"):
        t_old, t_new = d.median_us_old, d.median_us_graph
        rows.append({"configs": len(d), "same_best": t_old.idxmin() == t_new.idxmin(),
                     "old_best_efficiency": t_new.min() / t_new[t_old.idxmin()],
                     "rank_corr": t_old.rank().corr(t_new.rank()),
                     "label_spread_old": np.log(t_old / t_old.min()).median(),
                     "label_spread_graph": np.log(t_new / t_new.min()).median()})
    r = pd.DataFrame(rows)
    print(f"{len(r)} complete problems of {new.problem.nunique()} measured; "
          f"the records' fastest is the fastest with graphs on {r.same_best.mean():.1%}")
    print(r.drop(columns="same_best").describe(percentiles=[0.1, 0.5, 0.9]).round(3).to_string())


if __name__ == "__main__":
    main()
