#!/usr/bin/env python3
"""Random small problems for GPU correctness checks (odd sizes, M=1, depthwise, G>1, 3-D, dilation).

Writes one problem per line, tagged rand.<i>; deterministic for a seed.
  python3 bench/random_problems.py --count 520 --seed 1 > data/problems/verify_random.txt
  python3 bench/random_problems.py --sm90 --count 520 --seed 1 > data/problems/verify_random_sm90.txt
  python3 bench/random_problems.py --conv --count 520 --seed 1 > data/problems/verify_random_conv.txt
--sm90: GEMMs that fam=sm90 runs (f16/bf16 inputs in every layout, a quarter e4m3/e5m2 inputs in
layout rcr with f16/bf16/f32 outputs, half of those with block scales; the contiguous extents of A and B 16 bytes for TMA): the other sizes odd, M = 1..16 often, K not a multiple of 64 mostly, sizes up
to 1,000 so that multi-tile grids, clusters and split-K are reached.
--conv: convolutions of every direction, 2-D and 3-D: one group, 2-64 groups and depthwise, odd sizes,
strides 1-3, dilation, padding 0-3, batch 1-64 (large batches with small images); a fifth with one group,
channels a multiple of 8 and 16-bit inputs, as fam=sm90 runs them.
"""
import argparse
import random


def odd_size(r, hi):
    """Mostly odd sizes, sometimes 1, sometimes a multiple of 8."""
    x = r.random()
    if x < 0.1:
        return 1
    if x < 0.3:
        return 8 * r.randint(1, max(1, hi // 8))
    return r.randint(1, hi) | 1


def gemm_extras(r, toks):
    """Batch, alpha, beta and an epilogue, each sometimes, on the tokens of a GEMM."""
    if r.random() < 0.2:
        toks.insert(2, f"batch{r.randint(2, 4)}")
    if r.random() < 0.25:
        toks.append(f"alpha={r.choice([0.5, 2, -1.25])}")
    if r.random() < 0.25:
        toks.append(f"beta={r.choice([1, 0.5, -2])}")
    if r.random() < 0.4:
        act = r.choice(["", "relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid", "tanh"])
        toks.append("ep=" + ("bias+" + act if act else "bias") if r.random() < 0.7 else "ep=" + (act or "relu"))
    return " ".join(toks)


def gemm(r):
    m = 1 if r.random() < 0.15 else odd_size(r, 300)
    n, k = odd_size(r, 300), odd_size(r, 400)
    layout = r.choice(["rcr", "rrr", "crr", "ccr", "rcc", "crc"])
    din = r.choice(["f16", "bf16", "f32"])
    dout = r.choice([din, din, "f32", "bf16" if din != "bf16" else "f16"])
    dt = din if dout == din else f"{din}:{din}:{dout}"
    toks = ["gemm", layout, f"m{m}", f"n{n}", f"k{k}", dt]
    return gemm_extras(r, toks)


def gemm_sm90(r):
    fp8 = r.random() < 0.25  # e4m3 / e5m2 inputs: K-major A and B only (layout rcr), 16-byte rows of K
    layout = "rcr" if fp8 else r.choice(["rcr", "rrr", "crr", "ccr", "rcc", "crc", "rrc", "ccc"])
    a_col, b_row = layout[0] == "c", layout[1] == "r"
    vec = 16 if fp8 else 8  # elements per 16 bytes

    def size(hi, contiguous):
        x = r.randint(1, hi)
        return max(vec, x // vec * vec) if contiguous else x | 1 if r.random() < 0.8 else x

    hi = 1000 if r.random() < 0.1 else 400
    m = size(16, a_col) if r.random() < 0.2 else size(hi, a_col)
    n = size(hi, b_row)
    k = size(hi, not a_col or not b_row)  # K is contiguous in a K-major operand
    din = r.choice(["e4m3", "e5m2"] if fp8 else ["f16", "bf16"])
    out16 = r.choice(["bf16", "f16"])
    dout = r.choice([out16, out16, "f32"]) if fp8 else r.choice([din, din, "f32", "bf16" if din == "f16" else "f16"])
    dt = din if dout == din else f"{din}:{din}:{dout}"
    toks = ["gemm", layout, f"m{m}", f"n{n}", f"k{k}", dt]
    if fp8 and r.random() < 0.5:  # fp32 block scales (1 x 128 of A, 128 x 128 of B)
        toks.append("scale=block")
    return gemm_extras(r, toks)


def conv(r):
    d = r.choice(["fwd", "bwd_data", "bwd_weight"])
    three = r.random() < 0.25
    kind = r.random()
    if kind < 0.25:  # depthwise
        g = r.randint(2, 40)
        c = k = g
    else:
        g = r.choice([1, 1, 2, 3, 4, 8])
        c, k = g * odd_size(r, 24), g * odd_size(r, 24)
    axes = ["d", "h", "w"] if three else ["h", "w"]
    sp = {}
    for a in axes:
        f = r.choice([1, 3, 3, 5, 7] if kind < 0.25 else [1, 1, 3, 3, 5, 2])
        if three and a == "d":
            f = r.choice([1, 3])
        s, p, dl = r.choice([1, 1, 2, 3]), r.randint(0, 2), r.choice([1, 1, 1, 2])
        span = dl * (f - 1) + 1
        lo = max(1, span - 2 * p)
        i = r.randint(lo, max(lo, 10 if three else 20))
        sp[a] = (i, f, s, p, dl)
    toks = [d, f"g{g}", f"mb{r.randint(1, 3)}", f"ic{c}"] + [f"i{a}{sp[a][0]}" for a in axes] + [f"oc{k}"]
    toks += [f"k{a}{sp[a][1]}" for a in axes] + [f"s{a}{sp[a][2]}" for a in axes] + [f"p{a}{sp[a][3]}" for a in axes]
    if any(sp[a][4] != 1 for a in axes):
        toks += [f"d{a}{sp[a][4]}" for a in axes]
    din = r.choice(["f16", "bf16", "f32"])
    toks.append(din)
    if d == "fwd" and r.random() < 0.35:
        act = r.choice(["relu", "gelu_tanh", "silu", "sigmoid", "tanh"])
        toks.append("ep=bias+" + act if r.random() < 0.7 else "ep=bias")
    return " ".join(toks)


def conv_wide(r):
    """A convolution of --conv: groups 1 / 2-64 / depthwise, padding 0-3, batch 1-64, a fifth shaped for fam=sm90."""
    if r.random() < 0.2:  # one group, channels multiples of 8, 16-bit inputs: what fam=sm90 runs
        t = conv(r).split()
        t[1] = "g1"
        t[3] = f"ic{8 * r.randint(1, 24)}"
        t[[i for i, x in enumerate(t) if x.startswith("oc")][0]] = f"oc{8 * r.randint(1, 24)}"
        t[[i for i, x in enumerate(t) if x in ("f16", "bf16", "f32")][0]] = r.choice(["f16", "bf16"])
        return " ".join(t)
    t = conv(r).split()
    big_groups = r.random() < 0.3
    if big_groups and not t[1] == f"g{t[3][2:]}":  # 16-64 groups of 1-8 channels (ResNeXt / RegNet widths)
        g = r.choice([16, 32, 64])
        t[1] = f"g{g}"
        t[3] = f"ic{g * r.randint(1, 8)}"
        i = [i for i, x in enumerate(t) if x.startswith("oc")][0]
        t[i] = f"oc{g * r.randint(1, 8)}"
    for i, x in enumerate(t):  # padding up to 3
        if x[0] == "p" and x[1] in "dhw" and r.random() < 0.15:
            t[i] = f"{x[:2]}3"
    pixels = 1
    for x in t:
        if x[0] == "i" and x[1] in "dhw" and x[2:].isdigit():
            pixels *= int(x[2:])
    if pixels <= 100 and r.random() < 0.6:  # a large batch of small images
        t[2] = f"mb{r.randint(4, 64)}"
    return " ".join(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=520)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gemm-fraction", type=float, default=0.4)
    ap.add_argument("--sm90", action="store_true", help="GEMMs that fam=sm90 runs (see above)")
    ap.add_argument("--conv", action="store_true", help="convolutions only (see above)")
    a = ap.parse_args()
    r = random.Random(a.seed)
    flag = " --sm90" if a.sm90 else " --conv" if a.conv else ""
    print(f"# generated by bench/random_problems.py{flag} --count {a.count} --seed {a.seed}")
    for i in range(a.count):
        if a.sm90:
            print(f"rand.{i}: " + gemm_sm90(r))
        elif a.conv:
            print(f"rand.{i}: " + conv_wide(r))
        else:
            print(f"rand.{i}: " + (gemm(r) if r.random() < a.gemm_fraction else conv(r)))


if __name__ == "__main__":
    main()
