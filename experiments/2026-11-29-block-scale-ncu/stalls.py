"""Warp-stall samples of an Nsight Compute source page (`ncu --page source --csv --print-source sass`):
the stall reasons over the whole kernel and the instructions with the most samples.
Usage: python3 stalls.py sass_block.csv.gz [top]"""
import csv
import gzip
import io
import sys


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12
    text = (gzip.open(path, "rt") if path.endswith(".gz") else open(path)).read()
    rows = list(csv.reader(io.StringIO(text)))
    hdr, data = rows[1], rows[2:]  # rows[0] names the kernel
    src, total = hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")
    reasons = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    sums = {hdr[i][6:]: sum(int(r[i] or 0) for r in data) for i in reasons}
    n = sum(sums.values())
    print(f"{rows[0][1]}: {n} samples; " + ", ".join(f"{k} {100 * v / n:.1f}%" for k, v in
                                                  sorted(sums.items(), key=lambda t: -t[1]) if v / n >= 0.01))
    for r in sorted(data, key=lambda r: -int(r[total] or 0))[:top]:
        why = {hdr[i][6:]: int(r[i]) for i in reasons if r[i] not in ("", "0")}
        main_reason = max(why, key=why.get) if why else "-"
        print(f"{int(r[total]):6d} {100 * int(r[total]) / n:5.1f}%  {main_reason:12s} {r[src].strip()[:70]}")


if __name__ == "__main__":
    main()
