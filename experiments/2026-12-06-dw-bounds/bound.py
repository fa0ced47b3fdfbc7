"""Ceilings of the grouped / depthwise layers against cuDNN, from one run's records (run.sh).

For each layer: the best time of ours and of cuDNN's algorithms, and the shortest time any kernel could take,
max(min_bytes / copy rate, floor), where min_bytes is the problem's compulsory traffic (tilepick's problem model:
every operand read or written once) and floor the shortest time any kernel took on the trivial problems of the
same run. ceiling = cuDNN's time / that bound: the most any kernel could gain over cuDNN there. The model column
uses floor + min_bytes / copy rate instead (a launch's latency, then its bytes at the copy rate: T = L + n / B).
Classes as bench/sm90_compare.py names them.
  .venv/bin/python experiments/2026-12-06-dw-bounds/bound.py experiments/2026-12-06-dw-bounds/h100/{layers.csv.gz,copy_bandwidth.txt}  (from the repository root)
"""
import collections
import json
import math
import sys

sys.path[:0] = ["python", "bench"]
from sm90_compare import problem_class  # noqa: E402
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402

TRIVIAL = ("ih1 iw1", "m8 n8 k8", "ih8 iw8")


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(records, copy_file):
    copy_gbs = float(open(copy_file).read().split()[1])
    _, df = read_records(records)
    best = df[df.status == "ok"].groupby(["problem", "is_vendor"]).median_us.min().unstack()
    ours, vendor = best[False], best[True]
    trivial = best.index.map(lambda p: any(t in p for t in TRIVIAL))
    floor = best[trivial].min().min()
    print(f"copy rate {copy_gbs:.0f} GB/s; floor {floor:.2f} us (the shortest time of any kernel on the trivial problems)")
    cls = collections.defaultdict(list)
    for p in best.index[~trivial]:
        if p.startswith("gemm") or math.isnan(vendor[p]) or math.isnan(ours[p]):
            continue
        stream = json.loads(_core.problem_json(p))["min_bytes"] / (copy_gbs * 1e3)  # us
        cls[problem_class(p)].append((vendor[p] / ours[p], vendor[p] / max(stream, floor), vendor[p] / 2 < floor,
                                      vendor[p] / (floor + stream)))
    print(f"{'class':40s} {'n':>3s} {'ours/cuDNN':>10s} {'ceiling':>8s} {'2x possible':>11s} {'under floor':>11s} "
          f"{'model':>6s} {'2x (model)':>10s}")
    for name in sorted(cls):
        v = cls[name]
        can = [x for x in v if x[1] >= 2]
        print(f"{name:40s} {len(v):3d} {geomean([x[0] for x in v]):10.3f} {geomean([x[1] for x in v]):8.2f} "
              f"{len(can):5d} ({geomean([x[0] for x in can]):.2f}) {sum(x[2] for x in v):7d} "
              f"{geomean([x[3] for x in v]):10.2f} {sum(x[3] >= 2 for x in v):6d}")
    allv = [x for v in cls.values() for x in v]
    print(f"{'all':40s} {len(allv):3d} {geomean([x[0] for x in allv]):10.3f} {geomean([x[1] for x in allv]):8.2f} "
          f"{sum(x[1] >= 2 for x in allv):5d} {'':18s} {geomean([x[3] for x in allv]):6.2f} "
          f"{sum(x[3] >= 2 for x in allv):6d}")
    print("ceiling: geomean of cuDNN's time / max(min_bytes / copy rate, floor); 2x possible: layers whose ceiling is "
          ">= 2 (in brackets ours/cuDNN over them); under floor: layers where half of cuDNN's time is below the floor; "
          "model: the same with floor + min_bytes / copy rate, and the layers where it is >= 2")


if __name__ == "__main__":
    main(*sys.argv[1:3])
