#!/usr/bin/env python3
"""Time the vendor libraries (cuBLAS through torch.matmul, cuDNN through torch convolution) on
tilepick problems, with the measurement rules of DESIGN.md: random normal inputs in the real dtype,
cold L2 (a buffer of 3x L2 is rewritten before every repeat), CUDA events, median and IQR.

  build/tilepick problem parse --json --file data/problems/resnet50_mb32.txt > /tmp/p.jsonl
  python3 bench/vendor_times.py /tmp/p.jsonl --out vendor.csv [--heuristic]

--heuristic turns cudnn.benchmark off (cuDNN's heuristic first choice); the default lets cuDNN
time its algorithms and keep the fastest (its exhaustive best). GEMM epilogues are not fused on
the vendor side (bias/activation run as separate kernels and are included in the time).
"""
import argparse
import csv
import json
import sys

import torch
import torch.nn.functional as F

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
ACT = {"none": lambda x: x, "relu": F.relu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
       "gelu_erf": F.gelu, "silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def gemm_fn(p):
    m, n, k, b = p["m"], p["n"], p["k"], p["batch"]
    dt = DT[p["a"]]
    lay = p["layout"]
    # Storage follows the layout; the logical operands are views.
    a = torch.randn(b, m, k, device="cuda", dtype=dt) if lay[0] == "r" else torch.randn(b, k, m, device="cuda", dtype=dt).transpose(1, 2)
    bb = torch.randn(b, k, n, device="cuda", dtype=dt) if lay[1] == "r" else torch.randn(b, n, k, device="cuda", dtype=dt).transpose(1, 2)
    bias = torch.randn(n, device="cuda", dtype=DT[p["c"]]) if p["bias"] else None
    act = ACT[p["act"]]
    out_dt = DT[p["c"]]

    def run():
        d = torch.matmul(a, bb)
        if p["alpha"] != 1:
            d = d * p["alpha"]
        if bias is not None:
            d = d + bias
        return act(d).to(out_dt)
    return run


def conv_fn(p):
    nd = p["ndim"]
    sp = slice(3 - nd, 3)
    ins, fil = p["in"][sp], p["filter"][sp]
    stride, pad, dil = p["stride"][sp], p["pad"][sp], p["dilation"][sp]
    g, n, c, k = p["g"], p["mb"], p["ic"], p["oc"]
    dt = DT[p["x"]]
    fmt = torch.channels_last if nd == 2 else torch.channels_last_3d
    x = torch.randn(n, c, *ins, device="cuda", dtype=dt).to(memory_format=fmt)
    w = torch.randn(k, c // g, *fil, device="cuda", dtype=dt).to(memory_format=fmt)
    conv = F.conv2d if nd == 2 else F.conv3d
    if p["dir"] == "fwd":
        bias = torch.randn(k, device="cuda", dtype=dt) if p["bias"] else None
        act = ACT[p["act"]]
        return lambda: act(conv(x, w, bias, stride, pad, dil, g))
    y = conv(x, w, None, stride, pad, dil, g)
    dy = torch.randn_like(y).to(memory_format=fmt)
    mask = [p["dir"] == "bwd_data", p["dir"] == "bwd_weight", False]
    return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, stride, pad, dil, False, [0] * nd, g, mask)


def time_fn(fn, flush, min_ms=30.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, total = [], 0.0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while (total < min_ms or len(times) < 5) and len(times) < 500:
        flush.fill_(len(times) & 0xff)
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = start.elapsed_time(end)
        times.append(t * 1e3)
        total += t
    times.sort()
    return times[len(times) // 2], times[len(times) * 3 // 4] - times[len(times) // 4], len(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", help="JSON lines from 'tilepick problem parse --json'")
    ap.add_argument("--out", required=True)
    ap.add_argument("--heuristic", action="store_true")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = not a.heuristic
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(3 * l2, dtype=torch.uint8, device="cuda")
    with open(a.problems) as f, open(a.out, "w", newline="") as o:
        w = csv.writer(o)
        w.writerow(["name", "problem", "vendor", "median_us", "iqr_us", "reps", "tflops", "device", "torch", "cudnn"])
        for line in f:
            p = json.loads(line)
            fn = gemm_fn(p) if p["op"] == "gemm" else conv_fn(p)
            med, iqr, reps = time_fn(fn, flush)
            # torch.matmul takes cuBLASLt's heuristic choice; cuDNN is exhaustive unless --heuristic.
            name = "cublas:heur" if p["op"] == "gemm" else ("cudnn:heur" if a.heuristic else "cudnn:best")
            w.writerow([p["name"], p["problem"], name, f"{med:.3f}", f"{iqr:.3f}", reps,
                        f"{p['flops'] / (med * 1e-6) / 1e12:.2f}", torch.cuda.get_device_name(0),
                        torch.__version__, torch.backends.cudnn.version()])
            print(f"{name} {med:9.2f} us {p['flops'] / (med * 1e-6) / 1e12:7.1f} TF  {p['problem']}", flush=True)
            del fn
    return 0


if __name__ == "__main__":
    sys.exit(main())
