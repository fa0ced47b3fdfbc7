#!/usr/bin/env python3
"""Build problems, rank kernels and plan them offline for an H200 (no GPU needed).

  PYTHONPATH=python python3 examples/python/select_and_plan.py [--arch h200]
"""
import argparse

import tilepick


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="h200", help="arch spec to plan for (h200, sm_90, ...)")
    args = ap.parse_args()

    problems = [
        tilepick.gemm_problem(2048, 14336, 4096, dtype="bf16"),                   # Llama MLP up-projection
        tilepick.gemm_problem(2048, 4096, 4096, dtype="bf16", bias=True, activation="gelu_tanh"),
        tilepick.conv_problem(32, 256, 256, (14, 14), 3, padding=1),               # ResNet-50 stage 3
        tilepick.conv_problem(32, 768, 768, (7, 7), 7, padding=3, groups=768),     # ConvNeXt depthwise 7x7
        tilepick.conv_problem(32, 256, 256, (14, 14), 3, padding=1, direction="bwd_weight"),
    ]
    for p in problems:
        print(f"{p}\n  op {tilepick.problem_op(p)}")
        s = tilepick.select(p, arch=args.arch, k=3)
        print(f"  {s.pool_size} legal kernels, ranked by {s.source or 'fallback'} (confidence {s.confidence:.3g})")
        for r in s.top:
            print(f"    {r.score:10.4g}  {r.config}")
        plan = tilepick.plan(p, arch=args.arch)  # selection only: an offline plan does not run
        print(f"  plan: {plan.kernel}{' (vendor)' if plan.vendor else ''}, runnable={plan.runnable}")
        for spec in tilepick.operand_specs(p):
            shape = "x".join(map(str, spec.shape))
            print(f"    {'out' if spec.output else 'in '} {spec.name:4s} {spec.dtype} {spec.dims:5s} {shape}")
    print("dispatcher:", tilepick.dispatcher_stats())


if __name__ == "__main__":
    main()
