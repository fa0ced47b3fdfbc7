#!/usr/bin/env python3
"""Summarizes a dw_bench results CSV (and optionally the dw_cudnn.py CSV): per layer and direction the
fastest configs, their GB/s, and the speed-up over cuDNN. Usage: dw_report.py dw_results.csv [cudnn.csv]"""
import csv
import sys
from collections import defaultdict


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    cudnn = {}
    if len(sys.argv) > 2:
        for r in csv.DictReader(open(sys.argv[2])):
            cudnn[(r["layer"], r["dir"])] = float(r["us"])
    checked = len(rows)
    failed = [r for r in rows if r["pass"] != "1"]
    print(f"{checked} (problem, config) pairs checked, {len(failed)} failed")
    for r in failed[:20]:
        print("  FAIL", r["problem"], "|", r["config"], "| max_err", r["max_err"])
    by = defaultdict(list)
    for r in rows:
        if r["tag"] != "check" and r["pass"] == "1" and float(r["us"]) > 0:
            d = r["problem"].split()[0]
            by[(r["tag"], d)].append(r)
    for (tag, d), rs in sorted(by.items()):
        rs.sort(key=lambda r: float(r["us"]))
        ref = cudnn.get((tag, d))
        best = float(rs[0]["us"])
        vs = f"  cuDNN {ref:.2f} us -> {ref / best:.2f}x" if ref else ""
        print(f"{tag:20s} {d:10s} {len(rs):3d} configs, best {best:8.2f} us {float(rs[0]['gbps']):7.1f} GB/s{vs}")
        for r in rs[:5]:
            print(f"    {float(r['us']):8.2f} us {float(r['gbps']):7.1f} GB/s regs {r['regs']:>3s} smem {r['smem']:>6s}  {r['config']}")
        print(f"    median of all sampled: {float(rs[len(rs) // 2]['us']):.2f} us")


if __name__ == "__main__":
    main()
