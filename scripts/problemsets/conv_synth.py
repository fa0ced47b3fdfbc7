#!/usr/bin/env python3
"""Synthetic conv shapes (training only), seeded and reproducible.

  python3 scripts/problemsets/conv_synth.py [--per-kind 40] [--seed 7] [--dtype bf16]
      [--dirs fwd,bwd_data,bwd_weight] [--max-flops 4e11] [--kinds KIND=N,...] [--spatial 7,10,...]
      [--batches 1,2,...] [--tag synth_conv] [--exclude FILE ...] [--out FILE]

Kinds: depthwise (k 3/5/7, strides, dilation), grouped (G x channels per group), pointwise 1x1,
dense 3x3, large kernels (5x5/7x7/11x11, stems), strided/patchify (k = stride), dilated (ASPP-like),
3-D (dense, (2+1)D factors, depthwise), odd (prime channels, odd spatial, asymmetric kernels) and temporal
(3-D convs factored into time and space, (3,1,1) mostly, any channel count, clips of 2-16 frames).
Each shape is written for every direction with one batch, halved until flops <= --max-flops.
Tags: <tag>.<kind>.<i> (synth_conv by default). --kinds picks kinds and their counts (default: every
kind but temporal, --per-kind each); --spatial replaces the map sizes that the 2-D kinds draw from, --batches the batches
(drawn before the flops cap halves them); --exclude drops
shapes whose problem key (any direction) is in the given files.
"""
import argparse
import math
import random
import sys

from common import command, emit, excluded_keys, int_list
from shapes import DIRS, ConvShape, conv_flops, conv_string, header, line

SPATIAL = (7, 10, 14, 19, 28, 38, 56, 75, 112)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
PRIMES = (3, 5, 7, 11, 13, 17, 31, 37, 61, 67, 97, 127, 131, 257, 509)
ODD_SPATIAL = (3, 9, 13, 15, 17, 23, 31, 35, 37, 73, 149)


def log_uniform(r, lo, hi, mult=1):
    v = math.exp(r.uniform(math.log(lo), math.log(hi)))
    return max(mult, int(round(v / mult)) * mult)


def shape2d(c, k, g, hw, f, s, p=None, d=1):
    f = f if isinstance(f, tuple) else (f, f)
    s = s if isinstance(s, tuple) else (s, s)
    hw = hw if isinstance(hw, tuple) else (hw, hw)
    p = tuple(d * (fi - 1) // 2 for fi in f) if p is None else (p if isinstance(p, tuple) else (p, p))
    return ConvShape(c, k, g, hw, f, s, p, (d, d))


def depthwise(r, sizes=SPATIAL):
    c = r.choice((32, 48, 64, 96, 120, 144, 192, 240, 256, 384, 480, 576, 672, 768, 960, 1152, 1536))
    f, s = r.choice((3, 5, 7)), r.choice((1, 1, 2))
    return shape2d(c, c, c, r.choice(sizes), f, s, d=r.choice((1, 1, 1, 2)))


def grouped(r, sizes=SPATIAL):
    g, cpg = r.choice((2, 4, 8, 16, 32, 64)), r.choice((4, 8, 16, 32, 64, 128))
    kpg = cpg * r.choice((1, 1, 2))
    return shape2d(g * cpg, g * kpg, g, r.choice(sizes), r.choice((1, 3, 3)), r.choice((1, 1, 2)))


def pointwise(r, sizes=SPATIAL):
    mult = r.choice((8, 8, 16, 1))
    s = r.choice((1, 1, 1, 2))
    return shape2d(log_uniform(r, 8, 2048, mult), log_uniform(r, 8, 2048, mult), 1, r.choice(sizes), 1, s, 0)


def dense3x3(r, sizes=SPATIAL):
    return shape2d(log_uniform(r, 16, 1024, 8), log_uniform(r, 16, 1024, 8), 1, r.choice(sizes), 3,
                   r.choice((1, 1, 2)))


def large_kernel(r, sizes=SPATIAL):
    f = r.choice((5, 7, 7, 11))
    if r.random() < 0.5:  # stem: few input channels, stride 2 or 4
        return shape2d(r.choice((1, 3, 4, 8)), r.choice((16, 24, 32, 48, 64, 96)), 1, r.choice((112, 160, 224, 256)),
                       f, r.choice((2, 4)))
    return shape2d(log_uniform(r, 16, 256, 8), log_uniform(r, 16, 256, 8), 1, r.choice(sizes[:6]), f, 1)


def strided(r, sizes=SPATIAL):
    if r.random() < 0.5:  # patchify: kernel = stride, no padding
        f = r.choice((2, 4, 8, 14, 16))
        hw = f * r.choice((4, 7, 8, 14, 16, 28))
        c = 3 if f >= 8 else log_uniform(r, 16, 512, 8)
        return shape2d(c, log_uniform(r, 64, 1024, 32), 1, hw, f, f, 0)
    return shape2d(log_uniform(r, 16, 512, 8), log_uniform(r, 32, 1024, 8), 1, r.choice(sizes[2:]),
                   r.choice((1, 3, 3)), 2)


def dilated(r, sizes=SPATIAL):
    d = r.choice((2, 3, 4, 6, 12, 18))
    c = r.choice((64, 128, 256, 320, 512))
    return shape2d(c, r.choice((64, 128, 256)), 1, r.choice((17, 28, 33, 38, 56, 65)), 3, 1, d, d)


def three_d(r, sizes=SPATIAL):
    t, hw = r.choice((2, 4, 8, 16)), r.choice((7, 14, 28, 56))
    kind = r.random()
    c = log_uniform(r, 8, 512, 8)
    s = r.choice((1, 1, 2))
    if kind < 0.25:  # depthwise 3x3x3 (X3D-like)
        return ConvShape(c, c, c, (t, hw, hw), (3, 3, 3), (1, s, s), (1, 1, 1), (1, 1, 1))
    filt = r.choice(((3, 3, 3), (1, 3, 3), (3, 1, 1), (1, 1, 1), (3, 3, 3)))
    pad = tuple(f // 2 for f in filt)
    k = log_uniform(r, 8, 512, 8)
    return ConvShape(c, k, 1, (t, hw, hw), filt, (s if filt[0] > 1 else 1, s, s), pad, (1, 1, 1))


def odd(r, sizes=SPATIAL):
    c, k = r.choice(PRIMES), r.choice(PRIMES + (64, 96))
    hw = (r.choice(ODD_SPATIAL), r.choice(ODD_SPATIAL))
    f = r.choice((1, 3, 5, (1, 7), (7, 1), (1, 3), (3, 1)))
    s = r.choice((1, 1, 2, (1, 2), (2, 1)))
    return shape2d(c, k, 1, hw, f, s)


def temporal(r, sizes=SPATIAL):
    t, hw = r.choice((2, 4, 8, 16)), r.choice((7, 14, 28, 56))
    c, k = log_uniform(r, 16, 1280), log_uniform(r, 16, 1280)  # any count: factored nets size their mid planes freely
    filt = r.choice(((3, 1, 1), (3, 1, 1), (3, 1, 1), (5, 1, 1), (1, 3, 3)))
    s = r.choice((1, 1, 2))
    stride = (s, 1, 1) if filt[0] > 1 else (1, s, s)
    return ConvShape(c, k, 1, (t, hw, hw), filt, stride, tuple(f // 2 for f in filt), (1, 1, 1))


KINDS = {f.__name__: f for f in (depthwise, grouped, pointwise, dense3x3, large_kernel, strided, dilated, three_d, odd,
                                                 temporal)}
# Without --kinds: the kinds of the first synthetic files (temporal came later; conv_synth_temporal.txt names it).
DEFAULT_KINDS = tuple(k for k in KINDS if k != "temporal")


def parse_kinds(text, per_kind):
    """'depthwise=120,grouped=30' -> {kind: count}; empty: every kind, per_kind each."""
    if not text:
        return {k: per_kind for k in DEFAULT_KINDS}
    counts = {}
    for item in text.split(","):
        name, _, n = item.partition("=")
        if name not in KINDS:
            raise SystemExit(f"conv_synth.py: unknown kind '{name}' in --kinds (kinds: {', '.join(KINDS)})")
        counts[name] = int(n) if n else per_kind
    return counts


def generate(per_kind, seed, dtype, dirs, max_flops, kinds=None, sizes=SPATIAL, tag="synth_conv",
             exclude=frozenset(), batches=BATCHES):
    r = random.Random(seed)
    lines, seen = [], set()
    for kind, count in (kinds or {k: per_kind for k in DEFAULT_KINDS}).items():
        make, i = KINDS[kind], 0
        while i < count:
            sh = make(r, sizes)
            if min(sh.out()) < 1 or sh in seen:
                continue
            b = r.choice(batches)
            while b > 1 and conv_flops(sh, b) > max_flops:
                b //= 2
            if conv_flops(sh, b) > max_flops:
                continue
            seen.add(sh)
            probs = [conv_string(d, sh, b, dtype) for d in dirs]
            if any(p in exclude for p in probs):
                continue
            lines += [line(f"{tag}.{kind}.{i}", p) for p in probs]
            i += 1
    return lines


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-kind", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--max-flops", type=float, default=4e11)
    ap.add_argument("--kinds", default="", help="KIND=N,... (default: every kind, --per-kind each)")
    ap.add_argument("--spatial", default="", help="map sizes of the 2-D kinds (default: %s)" %
                    ",".join(map(str, SPATIAL)))
    ap.add_argument("--batches", default="", help="batches drawn from (default: %s)" % ",".join(map(str, BATCHES)))
    ap.add_argument("--tag", default="synth_conv")
    ap.add_argument("--exclude", nargs="*", default=[])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    sizes = tuple(int_list(a.spatial)) if a.spatial else SPATIAL
    body = generate(a.per_kind, a.seed, a.dtype, a.dirs.split(","), a.max_flops, parse_kinds(a.kinds, a.per_kind),
                    sizes, a.tag, excluded_keys(a.exclude), tuple(int_list(a.batches)) if a.batches else BATCHES)
    emit(header(command("conv_synth.py", argv), body, ["split train (synthetic)"]) + body, a.out)


if __name__ == "__main__":
    main()
