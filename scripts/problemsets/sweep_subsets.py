#!/usr/bin/env python3
"""Compact sweep subsets, sampled deterministically and stratified from the full sets.

  python3 scripts/problemsets/sweep_subsets.py [--data data/problems] [--out data/problems/sweep]
      [--dtype bf16] [--max-flops 2e11] [--gemm-train 210] [--gemm-val 80] [--conv-train 400] [--conv-val 130]
      [--conv-train-more 800 800 800] [--conv-train-nets2 900] [--conv-val2 900] [--gemm-train-more 600] [--gemm-val2 240]

Writes gemm_train.txt, gemm_val.txt, conv_train.txt, conv_val.txt (suffix _<dtype> unless bf16), and
conv_train_more.txt, conv_train_more2.txt, ...: the problems each step of --conv-train-more adds to the
conv-train budget (later sweeps; a larger budget holds the smaller one's problems), and
conv_train_nets2.txt: --conv-train-nets2 problems of the later training networks (conv_nets_train2.txt),
conv_val2.txt: --conv-val2 problems of the second held-out set (conv_nets_val2.txt),
gemm_train_more.txt, ...: what each step of --gemm-train-more adds to the gemm-train budget,
gemm_val2.txt: --gemm-val2 problems of the second GEMM held-out set (gemm_llm_val2.txt), sampled as gemm_val.
Problems above --max-flops are left out and duplicate keys are written once. The budget is split
over the strata at each level (levels below; a stratum smaller than its share gives the
rest to the others), and inside a stratum problems are taken in order of a hash of their key, so
the choice is stable when other strata change. Flops bins are half decades.
  gemm train: source (llm fwd 40%, llm bwd 20%, synth random 20%, synth edge 20%) > model or kind > bin
  gemm val:   source (llm fwd 75%, llm bwd 25%) > model > bin
  conv train: source (networks 65%, synthetic 35%) > direction > kind (network kinds weighted
              dense 2 : grouped 1 : depthwise 1 : 3d 1; synthetic kinds even) > network > bin
  conv val:   direction > network > kind > bin (every validation network gets an even share)
"""
import argparse
import math
import os
import re
import sys

from common import command, emit, network_of
from shapes import header, line, read_problems, stable_hash

TOKEN = re.compile(r"^([a-z]+)(\d+)$")


def fields(prob):
    out = {}
    for t in prob.split()[1:]:
        m = TOKEN.match(t)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def gemm_flops(prob):
    f = fields(prob)
    return 2.0 * f["m"] * f["n"] * f["k"] * f.get("batch", 1)


def conv_info(prob):
    """(flops, kind) of a conv problem string."""
    f = fields(prob)
    axes = "dhw" if "id" in f else "hw"
    flops = 2.0 * f["mb"] * (f["ic"] // f["g"]) * f["oc"]
    for a in axes:
        span = f.get("d" + a, 1) * (f["k" + a] - 1) + 1
        flops *= ((f["i" + a] + 2 * f["p" + a] - span) // f["s" + a] + 1) * f["k" + a]
    if len(axes) == 3:
        kind = "3d"
    elif f["g"] > 1 and f["ic"] == f["g"] == f["oc"]:
        kind = "depthwise"
    else:
        kind = "grouped" if f["g"] > 1 else "dense"
    return flops, kind


def flops_bin(flops):
    return int(math.floor(2 * math.log10(max(flops, 1.0))))


def allocate(sizes, n, weights):
    """Split n over groups in proportion to weights as far as their sizes allow (water filling)."""
    share, left, open_ = [0] * len(sizes), n, [i for i, s in enumerate(sizes) if s > 0]
    while left > 0 and open_:
        left0, total = left, sum(weights[i] for i in open_)
        for i in list(open_):
            take = min(max(1, int(left0 * weights[i] / total)), sizes[i] - share[i], left)
            share[i] += take
            left -= take
            if share[i] == sizes[i]:
                open_.remove(i)
    return share


def stratified(items, n, depth=0, weights=None):
    """items: (index, tag, prob, levels); picks n spread over levels[depth] (evenly, or by the weight
    of a level value in weights), then deeper."""
    if n >= len(items):
        return list(items)
    if not items or depth == len(items[0][3]):
        return sorted(items, key=lambda it: stable_hash(it[2]))[:n]
    groups = {}
    for it in items:
        groups.setdefault(it[3][depth], []).append(it)
    keys = sorted(groups, key=str)
    out = []
    w = [(weights or {}).get(k, 1.0) for k in keys]
    for key, share in zip(keys, allocate([len(groups[k]) for k in keys], n, w)):
        out += stratified(groups[key], share, depth + 1, weights)
    return out


def sources(paths, levels_of):
    """Distinct problems of the files under the flops cap, as (index, tag, prob, levels)."""
    items, seen = [], set()
    for path in paths:
        for tag, prob in read_problems(path):
            if prob in seen:
                continue
            seen.add(prob)
            lv = levels_of(tag, prob)
            if lv is not None:
                items.append((len(items), tag, prob, lv))
    return items


def by_source(items, budget, weights=None):
    """budget: {source: n}; the first level of every item is its source."""
    out = []
    for src, n in budget.items():
        out += stratified([it for it in items if it[3][0] == src], n, 1, weights)
    return out


def gemm_levels(max_flops):
    def levels(tag, prob):
        fl = gemm_flops(prob)
        if fl > max_flops:
            return None
        parts = tag.split(".")
        if parts[0] == "synth_gemm":
            return ("random" if parts[1] == "random" else "edge", parts[1], flops_bin(fl))
        if tag.endswith(("dgrad", "wgrad")):
            return ("bwd", parts[0], parts[-1], flops_bin(fl))
        return ("fwd", parts[0], flops_bin(fl))
    return levels


CONV_KIND_WEIGHTS = {"dense": 2.0, "grouped": 1.0, "depthwise": 1.0, "3d": 1.0}


def conv_levels(max_flops, by_network=False):
    def levels(tag, prob):
        fl, kind = conv_info(prob)
        if fl > max_flops:
            return None
        direction, net = prob.split()[0], network_of(tag)
        if net == "synth_conv":
            return ("synth", direction, tag.split(".")[1], flops_bin(fl))
        if by_network:
            return ("nets", direction, net, kind, flops_bin(fl))
        return ("nets", direction, kind, net, flops_bin(fl))
    return levels


def write(lines_in, name, argv, out_dir, note):
    body = [line(tag, prob) for _, tag, prob, _ in sorted(lines_in)]
    emit(header(command("sweep_subsets.py", argv), body, [note]) + body, os.path.join(out_dir, name))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="data/problems")
    ap.add_argument("--out", default="data/problems/sweep")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--max-flops", type=float, default=2e11)
    ap.add_argument("--gemm-train", type=int, default=210)
    ap.add_argument("--gemm-val", type=int, default=80)
    ap.add_argument("--conv-train", type=int, default=400)
    ap.add_argument("--conv-val", type=int, default=130)
    ap.add_argument("--conv-train-more", type=int, nargs="*", default=[800, 800, 800])
    ap.add_argument("--conv-train-nets2", type=int, default=900)
    ap.add_argument("--conv-val2", type=int, default=900)
    ap.add_argument("--gemm-train-more", type=int, nargs="*", default=[600])
    ap.add_argument("--gemm-val2", type=int, default=240)
    a = ap.parse_args(argv)
    sfx = "" if a.dtype == "bf16" else "_" + a.dtype
    src = lambda name: os.path.join(a.data, f"{name}{sfx}.txt")  # noqa: E731
    shown = [v for i, v in enumerate(argv) if v not in ("--data", "--out") and
             (i == 0 or argv[i - 1] not in ("--data", "--out"))]
    g, c = gemm_levels(a.max_flops), conv_levels(a.max_flops)

    n = a.gemm_train
    items = sources([src("gemm_llm_train"), src("gemm_synth")], g)
    gemm_pick = lambda n: by_source(items, {"fwd": n * 2 // 5, "bwd": n // 5, "random": n // 5,  # noqa: E731
                                            "edge": n - n * 4 // 5})
    pick = gemm_pick(n)
    write(pick, f"gemm_train{sfx}.txt", shown, a.out, "from gemm_llm_train + gemm_synth (training)")
    taken = {it[2] for it in pick}
    for i, step in enumerate(a.gemm_train_more):
        n += step
        more = [it for it in gemm_pick(n) if it[2] not in taken]
        taken |= {it[2] for it in more}
        write(more, f"gemm_train_more{i + 1 if i else ''}{sfx}.txt", shown, a.out,
              f"from gemm_llm_train + gemm_synth (training): what a budget of {n} adds to the files before")

    gemm_val_pick = lambda items, n: by_source(items, {"fwd": n * 3 // 4, "bwd": n - n * 3 // 4})  # noqa: E731
    write(gemm_val_pick(sources([src("gemm_llm_val")], g), a.gemm_val), f"gemm_val{sfx}.txt", shown, a.out,
          "from gemm_llm_val (validation)")

    if os.path.exists(src("gemm_llm_val2")):  # sampled like gemm_val
        write(gemm_val_pick(sources([src("gemm_llm_val2")], g), a.gemm_val2), f"gemm_val2{sfx}.txt", shown, a.out,
              "from gemm_llm_val2 (the second GEMM held-out set)")

    n = a.conv_train
    items = sources([src("conv_nets_train"), src("conv_synth")], c)
    conv_pick = lambda n: by_source(items, {"nets": n * 13 // 20, "synth": n - n * 13 // 20},  # noqa: E731
                                    CONV_KIND_WEIGHTS)
    pick = conv_pick(n)
    write(pick, f"conv_train{sfx}.txt", shown, a.out, "from conv_nets_train + conv_synth (training)")
    taken = {it[2] for it in pick}
    for i, step in enumerate(a.conv_train_more):
        n += step
        more = [it for it in conv_pick(n) if it[2] not in taken]
        taken |= {it[2] for it in more}
        name = f"conv_train_more{i + 1 if i else ''}{sfx}.txt"
        write(more, name, shown, a.out,
              f"from conv_nets_train + conv_synth (training): what a budget of {n} adds to the files before")

    if os.path.exists(src("conv_nets_train2")):
        items = sources([src("conv_nets_train2")], c)
        write(by_source(items, {"nets": a.conv_train_nets2}, CONV_KIND_WEIGHTS), f"conv_train_nets2{sfx}.txt", shown,
              a.out, "from conv_nets_train2 (training networks added later)")
    if os.path.exists(src("conv_nets_val2")):  # sampled like conv_train_nets2, not like conv_val
        items = sources([src("conv_nets_val2")], c)
        write(by_source(items, {"nets": a.conv_val2}, CONV_KIND_WEIGHTS), f"conv_val2{sfx}.txt", shown,
              a.out, "from conv_nets_val2 (the second held-out set)")

    if os.path.exists(src("conv_synth_spatial")):  # small enough to sweep whole
        items = sources([src("conv_synth_spatial")], c)
        write(items, f"conv_train_spatial{sfx}.txt", shown, a.out,
              "every problem of conv_synth_spatial (training: map sizes conv_synth lacks)")

    if os.path.exists(src("conv_synth_dw_batch")):  # small enough to sweep whole
        items = sources([src("conv_synth_dw_batch")], c)
        write(items, f"conv_train_dw_batch{sfx}.txt", shown, a.out,
              "every problem of conv_synth_dw_batch (training: depthwise at batches 32-128)")

    video = [src("conv_nets_train3"), src("conv_synth_temporal")]
    if all(os.path.exists(p) for p in video):  # swept whole with 20 sampled configs each, no flops cap
        write(sources(video, lambda tag, prob: ()), f"conv_train_video{sfx}.txt", shown, a.out, "every problem of conv_nets_train3 and "
              "conv_synth_temporal (training: 3-D convs factored into time and space)")

    items = sources([src("conv_nets_val")], conv_levels(a.max_flops, by_network=True))
    write(by_source(items, {"nets": a.conv_val}), f"conv_val{sfx}.txt", shown, a.out,
          "from conv_nets_val (validation)")


if __name__ == "__main__":
    main()
