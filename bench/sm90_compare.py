"""Side-by-side table of our kernels (fam=sm90 unless --family says otherwise) against the vendor (cuBLASLt, cuDNN
for convolutions) from `tilepick sweep` record files of one run.

For every problem: the fastest verified config of the families, the vendor's heuristic pick and the best of its
algorithms (each timed; `vendor=...:exhaustive` and the like), TFLOPS, % of the arch's dense peak and
speed-up = vendor best time / sm90 time (fp8 problems against cuBLASLt fp8, % of the fp8 peak);
then the geomean speed-up, overall and per class (GEMM layout, dtype and epilogue, then by K and by our time; conv
direction, grouping, batch). Each row's `tilepick verify --time` command replays our kernel.

With --copy-gbs (the measured device copy rate, bench/copy_bandwidth.cu), rows also show the records' GB/s
(the problem's minimum bytes, GemmProblem / ConvProblem::min_bytes, per second) and that as a share of the
copy rate (over all problems, and over those of --copy-min-us or more): the yardstick of memory-bound (decode)
shapes.

  python3 bench/sm90_compare.py RECORDS.csv.gz [...] [--family sm90|sm80,dw|all] [--peak 989.4] [--copy-gbs 8000]
"""
import argparse
import csv
import gzip
import io
import math
from collections import defaultdict


def read(path):
    with gzip.open(path, "rt") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(io.StringIO("".join(lines))))


def problem_class(problem):
    """GEMM: layout, input dtype and epilogue ("rcr bf16 ep=bias"); conv: direction, dtype, batch, 2-D or 3-D,
    grouped or depthwise where it is, and for bwd_data whether it is strided ("bwd_data bf16 mb32 2-D strided")."""
    words = problem.split()
    ep = next((w for w in words if w.startswith("ep=")), "ep=none")
    if words[0] == "gemm":
        dtype = next(w for w in words if w[0] in "bfe" and (":" in w or w in ("bf16", "f16", "f32")))
        return f"{words[1]} {dtype.split(':')[0]} {ep}"
    dtype = words[-1] if words[-1] != ep else words[-2]
    batch = next(w for w in words if w.startswith("mb"))
    dims = "3-D" if any(w.startswith("id") for w in words) else "2-D"
    strided = words[0] == "bwd_data" and any(w[0] == "s" and w[1] in "dhw" and w[2:] != "1" for w in words)
    groups, channels = (next(w for w in words if w.startswith(k))[len(k):] for k in ("g", "ic"))
    grouping = "" if groups == "1" else " depthwise" if groups == channels else " grouped"
    return f"{words[0]} {dtype.split(':')[0]} {batch} {dims}{grouping}" + (" strided" if strided else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--family", default="sm90", help="our families, comma-separated, or 'all'")
    ap.add_argument("--peak", type=float, default=989.4,
                    help="dense bf16/f16 TFLOPS of the device (H100/H200 SXM); fp8 problems count twice it")
    ap.add_argument("--copy-gbs", type=float, help="measured copy rate, GB/s read + write (bench/copy_bandwidth.cu)")
    ap.add_argument("--copy-min-us", type=float, default=20.0,
                    help="also the copy-rate share over the problems whose best time is at least this (us)")
    ap.add_argument("--problems", help="only the problems of this problem-set file ('name: problem' lines as in data/problems)")
    a = ap.parse_args()
    only = None
    if a.problems:
        with open(a.problems) as f:
            only = {ln.split(": ", 1)[-1].strip() for ln in f if ln.strip() and not ln.startswith("#")}
    ours, heur, best, bad = {}, {}, {}, defaultdict(int)
    ours_fam = lambda c: c.startswith("fam=") and (a.family == "all" or c.split()[0][4:] in a.family.split(","))
    for path in a.records:
        for r in read(path):
            p, c = r["problem"], r["config"]
            if only is not None and p not in only:
                continue
            if r["status"] != "ok":
                if ours_fam(c):
                    bad[p] += 1
                continue
            t = float(r["median_us"])
            if ours_fam(c):
                if p not in ours or t < ours[p][0]:
                    ours[p] = (t, c, float(r["tflops"]), float(r["gbps"]))
            elif c.startswith("vendor=") and c.endswith(":heur"):
                heur[p] = t
            elif c.startswith("vendor="):
                best[p] = min(t, best.get(p, math.inf))
    logs = []
    bw = f" {'GB/s':>6} {'%copy':>6}" if a.copy_gbs else ""
    print(f"{'problem':44} {'ours us':>9} {'TFLOPS':>7} {'%peak':>6}{bw} {'heur us':>9} {'best us':>9} {'x best':>7}  config")
    copy_shares = []
    for p in sorted(ours, key=lambda s: (len(s), s)):
        t, c, tf, gbs = ours[p]
        vb = min(best.get(p, math.inf), heur.get(p, math.inf))
        x = vb / t if vb < math.inf else float("nan")
        if x == x:
            logs.append(math.log(x))
        peak = a.peak * (2 if ("e4m3" in p or "e5m2" in p) else 1)
        bw = ""
        if a.copy_gbs:
            copy_shares.append((gbs / a.copy_gbs, t))
            bw = f" {gbs:6.0f} {100 * gbs / a.copy_gbs:6.1f}"
        print(f"{p:44} {t:9.1f} {tf:7.1f} {100 * tf / peak:6.1f}{bw} {heur.get(p, float('nan')):9.1f} {vb:9.1f} {x:7.3f}  {c}"
              + (f"  ({bad[p]} not ok)" if bad[p] else ""))
    for p in sorted(set(bad) - set(ours)):
        print(f"{p:44} no {a.family} config ok ({bad[p]} not ok)")
    for name, keep in (("", lambda t: True), (f" on those of {a.copy_min_us:g} us or more", lambda t: t >= a.copy_min_us)):
        cs = sorted(share for share, t in copy_shares if keep(t))
        if cs:
            print(f"share of the copy rate ({a.copy_gbs:.0f} GB/s){name}: mean {100 * sum(cs) / len(cs):.1f}%, "
                  f"min {100 * cs[0]:.1f}%, P10 {100 * cs[len(cs) // 10]:.1f}% on {len(cs)} problems")
    if logs:
        print(f"geomean speed-up over the vendor's best: {math.exp(sum(logs) / len(logs)):.3f} on {len(logs)} problems")
        by_class = defaultdict(list)
        for p, (t, c, tf, _) in ours.items():
            vb = min(best.get(p, math.inf), heur.get(p, math.inf))
            if vb < math.inf:
                by_class[problem_class(p)].append(math.log(vb / t))
        if len(by_class) > 1:
            for k in sorted(by_class):
                v = by_class[k]
                print(f"  {k:40} {math.exp(sum(v) / len(v)):.3f} on {len(v)} (min {math.exp(min(v)):.3f})")
        # GEMMs by the K of the problem and by our time: where each tile's fixed cost or a partial wave shows.
        by_k, by_time = defaultdict(list), defaultdict(list)
        for p, (t, c, tf, _) in ours.items():
            vb = min(best.get(p, math.inf), heur.get(p, math.inf))
            k = next((w[1:] for w in p.split() if w[0] == "k" and w[1:].isdigit()), None)
            if vb == math.inf or not p.startswith("gemm") or k is None:
                continue
            by_k[int(k)].append(math.log(vb / t))
            by_time["< 20 us" if t < 20 else "20-100 us" if t < 100 else ">= 100 us"].append(math.log(vb / t))
        for name, groups in (("K", by_k), ("our time", by_time)):
            if len(groups) > 1:
                print(f"  by {name}: " + ", ".join(f"{k} {math.exp(sum(v) / len(v)):.3f} ({len(v)})"
                                                  for k, v in sorted(groups.items(), key=lambda kv: str(kv[0]).rjust(9))))
    for p in sorted(ours, key=lambda s: (len(s), s)):
        print(f"replay: tilepick verify --time -p '{p}' -c '{ours[p][1]}'")


if __name__ == "__main__":
    main()
