#!/usr/bin/env python3
"""Host time of one tilepick.torch conv call, taken apart (GPU; a probe): the whole call with and without
autograd against torch's, Plan.run_raw alone with prepared arguments (tilepick and vendor plans), and a
cProfile of the call's Python functions.

  python3 experiments/2026-11-25-host-cost/torch_host_breakdown.py [--calls 2000]
"""
import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # torch_e2e
import torch_e2e as e2e  # noqa: E402  (also puts python/ on the path)
import tilepick.torch as tpt  # noqa: E402


per_call = e2e.host_us_per_call


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=200,
                    help="calls per measurement: fewer than the launch queue holds, so the host never waits")
    args = ap.parse_args()
    dev = dict(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(32, 64, 56, 56, **dev).contiguous(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, **dev).contiguous(memory_format=torch.channels_last)
    wg = w.clone().requires_grad_()
    rows, runs = {}, {}
    for vendor in ("off", "only"):
        tpt.set_vendor(vendor)
        rows[f"tilepick conv2d ({vendor})"] = per_call(lambda: tpt.conv2d(x, w, None, 1, 1), args.calls)
        rows[f"tilepick conv2d grad ({vendor})"] = per_call(lambda: tpt.conv2d(x, wg, None, 1, 1), args.calls)
        key = [k for k in tpt._plans if k[1] == "fwd" and k[-1] == vendor][0]
        plan = tpt._plans[key]
        y = torch.empty(32, 64, 56, 56, **dev).contiguous(memory_format=torch.channels_last)
        raw = [(t.data_ptr(), tpt._DTYPES[t.dtype], list(t.shape), list(t.stride()), 0) for t in (x, w, y)]
        stream = tpt._current_stream(0)
        ws = tpt._workspace(plan.workspace_bytes, 0, stream) if plan.workspace_bytes else 0
        rows[f"Plan.run_raw only ({vendor}, {plan.kernel[:40]})"] = per_call(lambda: plan.run_raw(raw, ws, stream),
                                                                              args.calls)
        rows[f"_run ({vendor})"] = per_call(lambda: tpt._run(plan, [x, w, y], 0), args.calls)
        runs[vendor] = (lambda plan=plan, raw=raw, ws=ws, stream=stream: plan.run_raw(raw, ws, stream))
    tpt.set_vendor(None)
    # Interleaved with a cuDNN call of torch's own (batch norm in training uses cuDNN): does alternating
    # between torch's cuDNN handle and tilepick's cost host time?
    bn = torch.nn.BatchNorm2d(64).cuda().to(torch.bfloat16)
    rows["torch batch_norm (train)"] = bn_us = per_call(lambda: bn(x), args.calls)
    for vendor, fn in runs.items():
        pair = per_call(lambda: (bn(x), fn()), args.calls)
        rows[f"batch_norm + run_raw ({vendor}) minus batch_norm"] = pair - bn_us
    rows["torch conv2d"] = per_call(lambda: F.conv2d(x, w, None, 1, 1), args.calls)
    rows["torch conv2d grad"] = per_call(lambda: F.conv2d(x, wg, None, 1, 1), args.calls)
    rows["torch.empty channels_last"] = per_call(lambda: torch.empty(32, 64, 56, 56, **dev, memory_format=torch.channels_last), args.calls)
    for k, v in rows.items():
        print(f"{k:60s} {v:7.1f} us per call")
    tpt.set_vendor("off")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        tpt.conv2d(x, wg, None, 1, 1)
    prof.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    print(s.getvalue())


if __name__ == "__main__":
    main()
