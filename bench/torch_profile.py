#!/usr/bin/env python3
"""Where a tilepick.torch training step spends its time, per vendor mode (GPU, bf16).

For each model of bench/torch_e2e.py and each vendor mode with the heuristic strategy (auto: dispatch's vendor
decisions, off: the model's pick everywhere, only: the vendor everywhere), race (vendor auto with the race strategy,
which times the model's pick against the vendor's heuristic kernel on first use of each shape), default (vendor auto
with the auto strategy, the library's default: top_k on first use where the pick is estimated long) plus plain
torch, after the first
step (its time, planning included, is reported) and warm-up:
  - the step time (CUDA events, median of --repeats), and the same step captured once as a CUDA graph and
    replayed (GPU time without the host's per-call overhead; its output is compared with an eager step's);
  - host time in tilepick.torch's run calls per step (from the plan lookup on), split into vendor and
    tilepick plans (count, us);
  - a torch.profiler pass over --profiled steps: GPU kernel time per step, the share of the step the GPU
    is busy (union of kernel intervals), kernel time by library, and the CUDA API calls by total time.
Writes <out>/profile.json and <out>/profile.md.

  python3 bench/torch_profile.py --out /tmp/prof [--models resnet50,convnext_t] [--modes torch,auto,off,only,race,default]
"""
import argparse
import copy
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_e2e as e2e  # noqa: E402  (its build / step, so both benchmarks run the same networks)
import tilepick.torch as tpt  # noqa: E402


class RunTimer:
    """Wraps tilepick.torch's two run paths (_run: checked tensors; _run_seen: a call seen before, bare
    pointers): host seconds and calls per (vendor plan?)."""

    def __init__(self):
        self.run, self.run_seen, self.on = tpt._run, tpt._run_seen, False
        self.calls, self.seconds = defaultdict(int), defaultdict(float)

    def timed(self, plan, fn, *args):
        if not self.on:
            return fn(*args)
        t0 = time.perf_counter()
        fn(*args)
        key = "vendor" if plan.vendor else "tilepick"
        self.seconds[key] += time.perf_counter() - t0
        self.calls[key] += 1

    def install(self):
        tpt._run = lambda plan, tensors, index: self.timed(plan, self.run, plan, tensors, index)
        tpt._run_seen = lambda seen, pointers: self.timed(seen[0], self.run_seen, seen, pointers)


def library(name):
    n = name.lower()
    if n.startswith("tp_") or "tilepick" in n:
        return "tilepick"
    if any(s in n for s in ("cudnn", "xmma", "implicit_convolve", "conv2d", "nhwc", "sm90_", "sm80_", "cutlass")):
        return "cudnn/cublas"
    return "torch/other"


def profiled(fn, steps):
    from torch.profiler import profile, ProfilerActivity
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    kernels, api = [], defaultdict(lambda: [0, 0.0])
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            kernels.append((ev.time_range.start, ev.time_range.end, ev.name))
        elif ev.name.startswith(("cuda", "cu")) and not ev.name.startswith("cudnn"):
            api[ev.name][0] += 1
            api[ev.name][1] += ev.cpu_time_total
    kernels.sort()
    busy, end = 0.0, None
    for s, e, _ in kernels:
        if end is None or s > end:
            busy += e - s
            end = e
        elif e > end:
            busy += e - end
            end = e
    span = kernels[-1][1] - kernels[0][0] if kernels else 0.0
    by_lib, by_name = defaultdict(float), defaultdict(lambda: [0, 0.0])
    for s, e, n in kernels:
        by_lib[library(n)] += (e - s) / steps
        by_name[n][0] += 1
        by_name[n][1] += (e - s) / steps
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:12]
    return {"kernel_us_per_step": sum(e - s for s, e, _ in kernels) / steps, "kernels_per_step": len(kernels) / steps,
            "gpu_busy_share": busy / span if span else 0.0, "kernel_span_us_per_step": span / steps,
            "kernel_us_by_library": dict(by_lib),
            "top_kernels": [{"name": n[:90], "calls_per_step": c / steps, "us_per_step": t} for n, (c, t) in top],
            "api_us_per_step": {k: {"calls": c / steps, "us": t / steps}
                                for k, (c, t) in sorted(api.items(), key=lambda kv: -kv[1][1])[:10]}}


def graphed(model, x, loss_fn, args):
    """The training step captured once as a CUDA graph, then replayed: GPU time without host overhead.
    Returns (median ms of --repeats replays, relative difference of the replayed output to an eager step's)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on the capture's stream (workspaces are kept per stream)
        for _ in range(3):
            e2e.step(model, x, loss_fn)
    torch.cuda.current_stream().wait_stream(side)
    eager = e2e.step(model, x, loss_fn).detach().clone()
    model.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(x)
        loss_fn(out).backward()
    g.replay()
    torch.cuda.synchronize()
    diff = e2e.rel_err(out, eager)
    times = []
    for _ in range(args.repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    del g
    return statistics.median(times), diff


def run_mode(name, s, mode, args, timer):
    model, x, loss_fn = e2e.build(name, s)
    if mode != "torch":  # race and default: vendor auto with the race or auto strategy
        tpt.swap_modules(model)
        strategy = {"race": "race", "default": "auto"}.get(mode, "heuristic")
        tpt.set_strategy(strategy)
        tpt.set_vendor("auto" if strategy != "heuristic" else mode)

    def fn():
        e2e.step(model, x, loss_fn)

    t0 = time.perf_counter()
    fn()  # plans every shape
    torch.cuda.synchronize()
    first_step_s = time.perf_counter() - t0
    times = e2e.time_steps(model, x, loss_fn, args.warmup, args.repeats)
    timer.calls.clear(), timer.seconds.clear()
    timer.on = True
    for _ in range(args.repeats):
        fn()
    torch.cuda.synchronize()
    timer.on = False
    host = {k: {"calls_per_step": timer.calls[k] / args.repeats,
                "us_per_step": timer.seconds[k] / args.repeats * 1e6,
                "us_per_call": timer.seconds[k] / max(timer.calls[k], 1) * 1e6} for k in timer.calls}
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        fn()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / args.repeats * 1e3
    row = {"step_ms": times["median_ms"], "step_min_ms": times["min_ms"], "wall_ms_per_step": wall,
           "first_step_s": first_step_s,
           "plan_run_host": host, **profiled(fn, args.profiled)}
    try:
        row["graphed_step_ms"], row["graphed_output_rel_diff"] = graphed(model, x, loss_fn, args)
    except Exception as ex:  # noqa: BLE001  (a step that cannot be captured is reported, not fatal)
        row["graphed_error"] = f"{type(ex).__name__}: {ex}"[:300]
    tpt.set_vendor(None)
    tpt.set_strategy("heuristic")
    return row


def markdown(result):
    lines = [f"# tilepick.torch step profile ({result['environment']['date']})", "",
             " | ".join(f"{k} {v}" for k, v in result["environment"].items()), "",
             "| model | mode | first step s | step ms | CUDA-graph step ms | kernel ms | GPU busy | kernels | "
             "Plan.run host us/call (vendor; tilepick) |", "|---|---|---|---|---|---|---|---|---|"]
    for name, modes in result["models"].items():
        for mode, r in modes.items():
            h = r["plan_run_host"]
            cell = "; ".join(f"{h[k]['us_per_call']:.1f} x{h[k]['calls_per_step']:.0f}" if k in h else "-"
                             for k in ("vendor", "tilepick"))
            gr = f"{r['graphed_step_ms']:.2f}" if "graphed_step_ms" in r else r.get("graphed_error", "-")
            lines.append(f"| {name} | {mode} | {r.get('first_step_s', float('nan')):.1f} | {r['step_ms']:.2f} | {gr} | {r['kernel_us_per_step'] / 1e3:.2f} | "
                         f"{r['gpu_busy_share']:.0%} | {r['kernels_per_step']:.0f} | {cell} |")
    for name, modes in result["models"].items():
        for mode, r in modes.items():
            lines += ["", f"## {name} / {mode}", "", "kernel us per step by library: " +
                      ", ".join(f"{k} {v:.0f}" for k, v in r["kernel_us_by_library"].items()), "",
                      "CUDA API per step: " + ", ".join(f"{k} {v['calls']:.0f}x {v['us']:.0f} us"
                                                        for k, v in r["api_us_per_step"].items()), ""]
            lines += [f"- {k['us_per_step']:.0f} us, {k['calls_per_step']:.0f}x {k['name']}" for k in r["top_kernels"]]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,convnext_t")
    ap.add_argument("--modes", default="torch,auto,off,only")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--profiled", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_profile: needs a CUDA device")
    s = dict(batch=args.batch, image=224, tokens=2048, hidden=4096, ffn=14336)
    timer = RunTimer()
    timer.install()
    result = {"environment": e2e.environment(), "models": {}}
    for name in args.models.split(","):
        result["models"][name] = {}
        for mode in args.modes.split(","):
            try:
                r = run_mode(name, s, mode, args, timer)
            except Exception as ex:  # noqa: BLE001  (report it, go on with the next mode)
                print(f"{name} {mode}: FAILED {type(ex).__name__}: {ex}", flush=True)
                continue
            result["models"][name][mode] = r
            print(f"{name:10s} {mode:6s} step {r['step_ms']:.2f} ms, kernels {r['kernel_us_per_step'] / 1e3:.2f} ms, "
                  f"busy {r['gpu_busy_share']:.0%}, host {r['plan_run_host']}", flush=True)
            torch.cuda.empty_cache()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "profile.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
