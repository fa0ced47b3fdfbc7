#!/usr/bin/env python3
"""cuDNN baseline for the depthwise layers of experiments/2026-11-21-dw-harness/dw_bench.cpp (same shapes, bf16, channels_last).

fwd: F.conv2d(groups=C); bwd_data: torch.nn.grad.conv2d_input; bwd_weight: torch.nn.grad.conv2d_weight.
torch.backends.cudnn.benchmark = True; each op is captured K times over rotated buffers (> 3x L2) in a
CUDA graph and timed with CUDA events: median of 5 replays / K. The kernels that ran are listed (from
the profiler) so that the backend (cuDNN or PyTorch's native depthwise) is on record.
Usage: python3 experiments/2026-11-21-dw-harness/dw_cudnn.py [out.csv]
"""
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

LAYERS = [  # name, N, C, H, W, k, stride, pad
    ("convnext_t.s1.dw7", 32, 96, 56, 56, 7, 1, 3),
    ("mobilenetv2.dw3s2", 32, 144, 56, 56, 3, 2, 1),
    ("convnext_t.s2.dw7", 32, 192, 28, 28, 7, 1, 3),
    ("mobilenetv2.dw3s1", 32, 192, 28, 28, 3, 1, 1),
]


def main():
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    print(f"device: {props.name}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, L2 {l2 >> 20} MB")
    dt = torch.bfloat16
    rows = []
    for name, N, C, H, W, k, s, p in LAYERS:
        OH = (H + 2 * p - k) // s + 1
        OW = (W + 2 * p - k) // s + 1
        x_bytes, y_bytes, w_bytes = N * C * H * W * 2, N * C * OH * OW * 2, C * k * k * 2
        sets = max(2, (3 * l2) // (x_bytes + y_bytes) + 2)
        xs = [torch.randn(N, C, H, W, device=dev, dtype=dt).to(memory_format=torch.channels_last) for _ in range(sets)]
        dys = [torch.randn(N, C, OH, OW, device=dev, dtype=dt).to(memory_format=torch.channels_last) for _ in range(sets)]
        w = torch.randn(C, 1, k, k, device=dev, dtype=dt).to(memory_format=torch.channels_last)
        ops = {
            "fwd": lambda i: F.conv2d(xs[i], w, None, s, p, 1, C),
            "bwd_data": lambda i: conv2d_input(xs[i].shape, w, dys[i], s, p, 1, C),
            "bwd_weight": lambda i: conv2d_weight(xs[i], w.shape, dys[i], s, p, 1, C),
        }
        for d, op in ops.items():
            for i in range(sets):
                op(i)  # benchmark=True picks the algorithm here
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                op(0)
                torch.cuda.synchronize()
            kernels = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
            K = 2 * sets
            try:
                g = torch.cuda.CUDAGraph()
                outs = [None] * K
                with torch.cuda.graph(g):
                    for i in range(K):
                        outs[i] = op(i % sets)
                run = g.replay
                how = "graph"
            except Exception as e:  # fall back to eager launches
                print(f"  graph capture failed ({e}); timing eager launches")
                run = lambda: [op(i % sets) for i in range(K)]
                how = "eager"
            run()
            torch.cuda.synchronize()
            times = []
            for _ in range(5):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                run()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) * 1000 / K)
            us = statistics.median(times)
            gbps = (x_bytes + y_bytes + w_bytes) / (us * 1e3)
            print(f"CUDNN {name:20s} {d:10s} {us:9.2f} us {gbps:8.1f} GB/s ({how}) kernels: {'; '.join(kernels)[:300]}")
            rows.append((props.name, name, d, us, gbps, how, "|".join(kernels)))
            del g
        del xs, dys
        torch.cuda.empty_cache()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write("device,layer,dir,us,gbps,timing,kernels\n")
            for r in rows:
                f.write(",".join(f'"{v}"' if isinstance(v, str) else f"{v:.3f}" for v in r) + "\n")


if __name__ == "__main__":
    main()
