# Padded against unpadded staging rows, from the record files of one run folder:
#   per class (direction, batch, 2-D / 3-D, strided bwd_data), geomean of
#     cuDNN's best / our best per problem, for each sweep;
#     the paired ratio per (problem, config) of each sweep against the first (same configs, > 1: faster).
#   .venv/bin/python experiments/2026-12-07-dw-row-pitch/compare.py experiments/2026-12-07-dw-row-pitch/h100 nopad,pad,nopad2,pad2
import collections
import math
import re
import sys

sys.path.insert(0, "python")
from tilepick.records import read_records  # noqa: E402


def load(folder, name):
    _, df = read_records(f"{folder}/{name}.csv.gz")
    return df[df.status == "ok"]


def klass(p):
    d = p.split()[0]
    mb = re.search(r" mb(\d+)", p).group(1)
    strided = d == "bwd_data" and max(int(x) for x in re.findall(r" s[dhw](\d+)", p)) > 1
    return f"{d} mb{mb} {'3-D' if ' id' in p else '2-D'}{' strided' if strided else ''}"


def gm(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    folder, names = sys.argv[1], sys.argv[2].split(",")
    runs = {n: load(folder, n) for n in names}
    best = {n: df.groupby("problem").median_us.min() for n, df in runs.items()}
    pair = {n: df.groupby(["problem", "config"]).median_us.min() for n, df in runs.items()}
    vendor = load(folder, "vendor")
    cudnn = vendor[vendor.is_vendor].groupby("problem").median_us.min()
    classes = collections.defaultdict(list)
    for p in best[names[0]].index:
        if p in cudnn.index and all(p in best[n].index for n in names):
            classes[klass(p)].append(p)
    head = " ".join(f"{'cudnn/' + n:>12}" for n in names) + "  " + " ".join(f"{n + '/' + names[0]:>14}" for n in names[1:])
    print(f"{'class':28} {'n':>3} {head}")

    def row(label, ps):
        keys = [k for k in pair[names[0]].index if k[0] in set(ps) and all(k in pair[n].index for n in names)]
        vs = " ".join(f"{gm(cudnn[p] / best[n][p] for p in ps):12.3f}" for n in names)
        paired = " ".join(f"{gm(pair[names[0]][k] / pair[n][k] for k in keys):14.3f}" for n in names[1:])
        print(f"{label:28} {len(ps):3d} {vs}  {paired}")

    everything = []
    for c, ps in sorted(classes.items()):
        row(c, ps)
        everything += ps
    row("all", everything)


if __name__ == "__main__":
    main()
