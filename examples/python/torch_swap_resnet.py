#!/usr/bin/env python3
"""Run a torchvision ResNet through tilepick kernels (GPU): swap its convolutions and classifier for
tilepick ops, check the output against PyTorch, and time a forward pass of each.

  PYTHONPATH=python python3 examples/python/torch_swap_resnet.py [--model resnet50] [--batch 32]
      [--strategy heuristic|race|top_k] [--compile]
"""
import argparse
import copy
import time

import torch
import torchvision

import tilepick.torch as tpt


def forward_ms(model, x, repeats=20):
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            model(x)
        end.record()
        end.synchronize()
    return start.elapsed_time(end) / repeats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18", help="a torchvision model name (resnet18, resnet50, ...)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--strategy", default="auto", choices=["auto", "heuristic", "race", "top_k"])
    ap.add_argument("--compile", action="store_true", help="torch.compile the swapped model")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)().cuda().eval()
    model = model.to(torch.bfloat16).to(memory_format=torch.channels_last)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    x = x.contiguous(memory_format=torch.channels_last)

    fast = copy.deepcopy(model)
    tpt.set_strategy(args.strategy)
    skipped = []
    n = tpt.swap_modules(fast, skipped=skipped)
    print(f"{args.model}: {n} modules now run tilepick kernels; left to torch: {skipped or 'none'}")
    if args.compile:
        fast = torch.compile(fast)

    t0 = time.perf_counter()
    with torch.no_grad():
        out = fast(x)  # plans (and JIT-compiles) every layer's kernel on first use
        torch.cuda.synchronize()
    print(f"first call (plan + compile + run): {time.perf_counter() - t0:.2f} s, {tpt.plan_count()} plans")
    with torch.no_grad():
        ref = model(x)
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    same_top1 = (out.argmax(1) == ref.argmax(1)).float().mean().item()
    print(f"vs torch: relative error {err:.2e}, same top-1 class for {same_top1:.0%} of the batch")
    print(f"forward: torch {forward_ms(model, x):.3f} ms, tilepick {forward_ms(fast, x):.3f} ms "
          f"(batch {args.batch}, bf16, channels-last)")


if __name__ == "__main__":
    main()
