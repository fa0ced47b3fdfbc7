#!/usr/bin/env python3
"""Where an sm90 GEMM kernel's warps wait: the per-SASS-instruction warp-stall samples of
`ncu --page source --print-source sass --csv` (bench/sm90_gpu.sh's ncu step writes ncu_ours_sass.csv.gz).

Prints the share of samples per region of the kernel, in address order: the consumers' tile start
(before a tile's first wgmma), main loop (wgmma issue and waits), epilogue (from the first shuffle or
shared store after the main loop) and producer (from the first TMA load), then the instructions with
the most samples and their main stall reasons.

  python3 bench/ncu_stalls.py ncu_ours_sass.csv.gz [--top N]
"""
import argparse
import csv
import gzip


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu source page CSV (.csv or .csv.gz)")
    ap.add_argument("--top", type=int, default=20, help="instructions to list (default 20)")
    a = ap.parse_args()
    opener = gzip.open if a.csv.endswith(".gz") else open
    with opener(a.csv, "rt") as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if "Source" in r)
    h, data = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    src, samples, executed = h.index("Source"), h.index("Warp Stall Sampling (All Samples)"), h.index("Instructions Executed")
    reasons = [i for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    n = lambda r, i: int(float(r[i] or 0))
    total = sum(n(r, samples) for r in data) or 1
    region, shares = "tile start", {"tile start": 0, "main loop": 0, "epilogue": 0, "producer": 0}
    for r in data:
        s = r[src]
        if "GMMA" in s and region == "tile start":
            region = "main loop"
        if ("SHFL" in s or "STS" in s or "STSM" in s) and region == "main loop":
            region = "epilogue"
        if "UTMALDG" in s:
            region = "producer"
        shares[region] += n(r, samples)
    print(f"{total} samples, {len(data)} instructions")
    print("  ".join(f"{k} {100 * v / total:.1f}%" for k, v in shares.items()))
    for r in sorted(data, key=lambda r: -n(r, samples))[: a.top]:
        why = sorted(((n(r, i), h[i][6:]) for i in reasons), reverse=True)[:2]
        why = ", ".join(f"{k} {v}" for v, k in why if v)
        print(f"{r[0][-6:]} {100 * n(r, samples) / total:5.1f}%  x{n(r, executed):<8} {r[src].strip()[:64]:64} {why}")


if __name__ == "__main__":
    main()
