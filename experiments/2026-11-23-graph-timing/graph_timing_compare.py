"""Compares sweep files of the same pairs timed two ways (experiments/2026-11-23-graph-timing/graph_timing_gpu.sh): per bin of the
first file's time, the median time ratio of each file to the first, and for files with several
passes (`--repeat`) the pass-to-pass spread (|pass 1 / pass 2 - 1|, median and P90).

usage: python experiments/2026-11-23-graph-timing/graph_timing_compare.py NAME=FILE.csv.gz [NAME=FILE.csv.gz ...]"""
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from tilepick.records import read_records  # noqa: E402

BINS = [0, 8, 12, 20, 50, 100, float("inf")]


def kernel_rows(path: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, d = read_records([path])
    d = d[(d.status == "ok") & ~d.config.str.startswith("vendor=")].copy()
    d["pass"] = d.groupby(["problem", "config"]).cumcount()
    return d


def main() -> None:
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[1:]):
        sys.exit(__doc__)
    files = dict(a.split("=", 1) for a in sys.argv[1:])
    rows = {name: kernel_rows(path) for name, path in files.items()}
    med = pd.concat({n: d.groupby(["problem", "config"]).median_us.median() for n, d in rows.items()}, axis=1).dropna()
    first = next(iter(files))
    bins = pd.cut(med[first], BINS)
    out = pd.DataFrame({"pairs": med.groupby(bins, observed=True).size()})
    for n in list(files)[1:]:
        out[f"{n} / {first}"] = (med[n] / med[first]).groupby(bins, observed=True).median().round(3)
        out[f"{first} - {n} (us)"] = (med[first] - med[n]).groupby(bins, observed=True).median().round(2)
    out.index.name = f"{first} time (us)"
    print("median time ratio per pair, by the first file's time\n" + out.to_string() + "\n")
    for n, d in rows.items():
        if d["pass"].max() < 1:
            continue
        p = d.pivot_table(index=["problem", "config"], columns="pass", values="median_us").dropna()
        spread = (p[0] / p[1] - 1).abs()
        s = spread.groupby(pd.cut(p.min(axis=1), BINS), observed=True).quantile([0.5, 0.9]).unstack()
        s.columns = ["median", "P90"]
        s.index.name = "time (us)"
        print(f"{n}: pass-to-pass spread |t1/t2 - 1|\n" + (s * 100).round(2).to_string() + "\n")


if __name__ == "__main__":
    main()
