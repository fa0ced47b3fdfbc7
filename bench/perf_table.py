#!/usr/bin/env python3
"""Join `tilepick verify --time --csv` (ours) with bench/vendor_times.py (vendor) into a markdown table:
best measured config per problem vs the vendor, and geometric-mean speedups per problem class.

  python3 bench/perf_table.py ours.csv vendor.csv > table.md
"""
import csv
import gzip
import math
import sys
from collections import defaultdict


def klass(problem):
    t = problem.split()
    if t[0] == "gemm":
        m, n, k = (int(x[1:]) for x in t[2:5] if x[0] in "mnk") if "batch" not in t[2] else (0, 0, 0)
        return "gemm large (m>=2048)" if m >= 2048 and n >= 2048 else "gemm small-m"
    f = {x.rstrip("0123456789"): x for x in t[1:]}
    g, ic, oc = (int(f[k][len(k):]) for k in ("g", "ic", "oc"))
    kind = "depthwise" if g > 1 and g == ic == oc else "grouped" if g > 1 else "dense"
    return f"{t[0]} {kind}"


def open_text(path):
    """A CSV to read, plain or gzip (bench/results stores the large ones as .csv.gz)."""
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def main():
    ours, vendor = defaultdict(list), {}
    with open_text(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            if r["ok"] == "1" and float(r["median_us"]) > 0:
                ours[r["problem"]].append(r)
    with open_text(sys.argv[2]) as f:
        for r in csv.DictReader(f):
            vendor[r["problem"]] = r
    rows, by_class = [], defaultdict(list)
    for p, rs in ours.items():
        best = min(rs, key=lambda r: float(r["median_us"]))
        v = vendor.get(p)
        if not v:
            continue
        speedup = float(v["median_us"]) / float(best["median_us"])
        by_class[klass(p)].append(speedup)
        rows.append((best["name"], p, float(best["median_us"]), float(best["tflops"]), float(v["median_us"]),
                     v["vendor"], speedup, len(rs), best["config"]))
    print("| class | problems | geomean speedup vs vendor | min | max |\n|---|---|---|---|---|")
    for c in sorted(by_class):
        s = by_class[c]
        g = math.exp(sum(math.log(x) for x in s) / len(s))
        print(f"| {c} | {len(s)} | {g:.2f}x | {min(s):.2f}x | {max(s):.2f}x |")
    print("\n| layer | problem | ours us | TFLOP/s | vendor us | vendor | speedup | configs timed | best config |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: r[0]):
        print(f"| {r[0]} | `{r[1]}` | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} | {r[5]} | {r[6]:.2f}x | {r[7]} | `{r[8]}` |")


if __name__ == "__main__":
    main()
