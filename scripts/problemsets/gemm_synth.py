#!/usr/bin/env python3
"""Synthetic GEMMs (training only): log-uniform random shapes and edge shapes, seeded.

  python3 scripts/problemsets/gemm_synth.py [--random 300] [--per-edge 20] [--seed 11] [--dtype bf16]
      [--max-flops 2e12] [--out FILE]

random: M, N, K log-uniform in [1, 16384] (half rounded to a multiple of 8..128), layouts rcr
(most), rrr, crr, ccr; some with ep=bias[+act] or beta=1.
Edge kinds: gemv (M=1 or N=1), outer (K=1), tiny_k (K 2..16), prime (all of M, N, K prime),
split_k (small M, N; huge K), skinny (M 2..16 decode), unaligned (sizes = 1 mod 8),
attention (batched QK^T rcr and PV rrr, head dim 64/128). Tags: synth_gemm.<kind>.<i>.
"""
import argparse
import math
import random
import sys

from common import command, emit
from shapes import gemm_string, header, line

LAYOUTS = ("rcr",) * 5 + ("rrr", "crr", "ccr")
PRIMES = (2, 3, 5, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191, 12289)


def log_int(r, lo, hi):
    return int(round(math.exp(r.uniform(math.log(lo), math.log(hi)))))


def rand_size(r, lo=1, hi=16384):
    v = log_int(r, lo, hi)
    if r.random() < 0.5 and v >= 16:
        mult = r.choice((8, 16, 64, 128))
        v = max(mult, v // mult * mult)
    return v


def random_shape(r):
    m, n, k = rand_size(r), rand_size(r), rand_size(r)
    ep, beta, x = None, 0, r.random()
    if x < 0.15:
        ep = "bias"
    elif x < 0.25:
        ep = "bias+" + r.choice(("relu", "gelu_tanh", "gelu_erf", "silu"))
    elif x < 0.3:
        beta = 1
    return dict(layout=r.choice(LAYOUTS), m=m, n=n, k=k, beta=beta, ep=ep)


def edge(kind, r):
    big = lambda: rand_size(r, 256, 16384)  # noqa: E731
    if kind == "gemv":
        m, n, k = 1, big(), big()
        if r.random() < 0.5:
            m, n = n, 1
    elif kind == "outer":
        m, n, k = big(), big(), 1
    elif kind == "tiny_k":
        m, n, k = big(), big(), r.choice((2, 3, 4, 5, 8, 12, 16))
    elif kind == "prime":
        m, n, k = (r.choice(PRIMES) for _ in range(3))
    elif kind == "split_k":
        m, n, k = rand_size(r, 16, 256), rand_size(r, 16, 256), rand_size(r, 8192, 131072)
    elif kind == "skinny":
        m, n, k = r.randint(2, 16), big(), big()
    elif kind == "unaligned":
        m, n, k = (8 * log_int(r, 1, 1024) + 1 for _ in range(3))
    else:  # attention: batch = batch x heads; QK^T then PV
        seq, hd, b = r.choice((128, 256, 512, 1024, 2048, 4096)), r.choice((64, 128)), r.choice((8, 16, 32, 64, 128))
        if r.random() < 0.5:
            return dict(layout="rcr", m=seq, n=seq, k=hd, batch=b)
        return dict(layout="rrr", m=seq, n=hd, k=seq, batch=b)
    return dict(layout=r.choice(LAYOUTS), m=m, n=n, k=k)


EDGE_KINDS = ("gemv", "outer", "tiny_k", "prime", "split_k", "skinny", "unaligned", "attention")


def flops(s):
    return 2.0 * s["m"] * s["n"] * s["k"] * s.get("batch", 1)


def generate(n_random, per_edge, seed, dtype, max_flops):
    r = random.Random(seed)
    lines, seen = [], set()

    def take(kind, make, count):
        i = 0
        while i < count:
            s = make()
            prob = gemm_string(s["layout"], s["m"], s["n"], s["k"], dtype, s.get("batch", 1), s.get("beta", 0),
                               s.get("ep"))
            if flops(s) > max_flops or prob in seen:
                continue
            seen.add(prob)
            lines.append(line(f"synth_gemm.{kind}.{i}", prob))
            i += 1

    take("random", lambda: random_shape(r), n_random)
    for kind in EDGE_KINDS:
        take(kind, lambda: edge(kind, r), per_edge)
    return lines


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random", type=int, default=300)
    ap.add_argument("--per-edge", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--max-flops", type=float, default=2e12)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    body = generate(a.random, a.per_edge, a.seed, a.dtype, a.max_flops)
    emit(header(command("gemm_synth.py", argv), body, ["split train (synthetic)"]) + body, a.out)


if __name__ == "__main__":
    main()
