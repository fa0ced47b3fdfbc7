#!/usr/bin/env python3
"""End-to-end PyTorch training steps through tilepick.torch vs plain PyTorch (GPU, bf16).

Models: ResNet-50 and ConvNeXt-T (torchvision, channels-last, batch 32, 224x224), a Llama-style MLP
block (silu(x W_gate) * (x W_up) W_down, hidden 4096, ffn 14336, 2048 tokens) and R(2+1)D-18 (torchvision video,
channels-last 3-D, half the batch of 16-frame clips at half the image size; not in the default --models). For each:
  1. correctness: one forward + backward through tilepick (after swap_modules), through torch in bf16
     and through torch in fp64 from the same weights and input; the output and every parameter
     gradient of tilepick must be at most twice as far (relative Frobenius error) from fp64 as torch's;
  2. steady-state time of forward + backward (CUDA events, warm-up, median and IQR of --repeats) for
     torch (cuDNN heuristic), torch with cudnn.benchmark, tilepick heuristic and tilepick top_k;
  3. host time per op call on tiny shapes (launch-bound): tilepick.torch vs torch;
  4. first call to result in a fresh process: a cold JIT cache (TILEPICK_CACHE_DIR empty), a warm disk
     cache (new process, same dir) and a warm plan cache (TILEPICK_PLAN_CACHE file reused), per strategy.
Writes <out>/torch_e2e.json and <out>/torch_e2e.md.

  python3 bench/torch_e2e.py --out bench/results/DATE-h200-torch-e2e            # the full run
  python3 bench/torch_e2e.py --out /tmp/e2e --quick                             # small shapes, minutes
"""
import argparse
import copy
import ctypes
import json
import os
import statistics
import subprocess
import sys
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import tilepick  # noqa: E402
import tilepick.torch as tpt  # noqa: E402

MODELS = ("resnet50", "convnext_t", "llama_mlp")
EXTRA_MODELS = ("r2plus1d18",)
DTYPE = torch.bfloat16


class LlamaMLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def sizes(args):
    if args.quick:
        return dict(batch=8, image=128, tokens=512, hidden=1024, ffn=2816)
    return dict(batch=args.batch, image=224, tokens=args.tokens, hidden=args.hidden, ffn=args.ffn)


def build(name, s, seed=0):
    """(model, input, loss function) on the GPU in bf16; image models channels-last, train mode."""
    torch.manual_seed(seed)
    if name == "llama_mlp":
        model = LlamaMLP(s["hidden"], s["ffn"])
        for p in model.parameters():
            nn.init.normal_(p, std=s["hidden"] ** -0.5)
        x = torch.randn(s["tokens"], s["hidden"], device="cuda", dtype=DTYPE)
        target = None
    else:
        import torchvision
        video = name == "r2plus1d18"  # half the batch of 16-frame 112x112 clips, channels-last 3-D
        if name == "resnet50":
            model = torchvision.models.resnet50(num_classes=1000)
        elif video:
            model = torchvision.models.video.r2plus1d_18(num_classes=400)
        else:  # stochastic depth off: the compared runs must drop the same blocks (none)
            model = torchvision.models.convnext_tiny(num_classes=1000, stochastic_depth_prob=0.0)
        batch = max(s["batch"] // 2, 1) if video else s["batch"]
        shape = (batch, 3, 16, s["image"] // 2, s["image"] // 2) if video else (batch, 3, s["image"], s["image"])
        fmt = torch.channels_last_3d if video else torch.channels_last
        x = torch.randn(*shape, device="cuda", dtype=DTYPE).contiguous(memory_format=fmt)
        target = torch.randint(0, 400 if video else 1000, (batch,), device="cuda")
    model = model.cuda().to(DTYPE)
    if name != "llama_mlp":
        model = model.to(memory_format=torch.channels_last_3d if name == "r2plus1d18" else torch.channels_last)
    model.train()

    def loss_fn(out):
        out = out.to(torch.float64 if out.dtype == torch.float64 else torch.float32)
        return out.square().mean() if target is None else F.cross_entropy(out, target)

    return model, x, loss_fn


def step(model, x, loss_fn):
    model.zero_grad(set_to_none=True)
    out = model(x)
    loss_fn(out).backward()
    return out


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def check(name, s, floor):
    """tilepick vs torch on one training step from identical weights and input, both measured against
    the same step in fp64: tilepick passes where its relative error is at most twice torch's bf16
    error (or below `floor`), for the output and every parameter gradient."""
    model, x, loss_fn = build(name, s)
    twin = copy.deepcopy(model)
    model64 = copy.deepcopy(model).double()
    skipped = []
    swapped = tpt.swap_modules(twin, skipped=skipped)
    results = {}
    for key, m, xin in (("torch", model, x), ("fp64", model64, x.double()), ("tilepick", twin, x)):
        out = step(m, xin, loss_fn)
        results[key] = {"output": out.detach(), **{f"grad:{n}": p.grad for n, p in m.named_parameters()
                                                   if p.grad is not None}}
    del model64
    rows = {}
    for k, ref in results["fp64"].items():
        if k in results["tilepick"] and k in results["torch"]:
            rows[k] = (rel_err(results["tilepick"][k], ref), rel_err(results["torch"][k], ref))
    bad = {k: v for k, v in rows.items() if v[0] > max(2 * v[1], floor)}
    worst = max(rows, key=lambda k: rows[k][0] / max(rows[k][1], floor))
    return {"swapped_modules": swapped, "skipped_modules": skipped, "output_rel_err": rows["output"][0],
            "torch_output_rel_err": rows["output"][1], "worst": worst, "worst_rel_err": rows[worst][0],
            "worst_torch_rel_err": rows[worst][1], "floor": floor, "failures": sorted(bad),
            "ok": not bad}


def time_steps(model, x, loss_fn, warmup, repeats):
    for _ in range(warmup):
        step(model, x, loss_fn)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(model, x, loss_fn)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return {"median_ms": statistics.median(times), "iqr_ms": q[2] - q[0], "min_ms": min(times), "repeats": repeats}


def timings(name, s, args):
    rows = {}
    model, x, loss_fn = build(name, s)
    for mode in args.modes:
        torch.backends.cudnn.benchmark = mode == "torch_cudnn_benchmark"
        m = model
        if mode.startswith("tilepick"):
            m = copy.deepcopy(model)
            tpt.swap_modules(m)
            tpt.set_strategy(mode.split("_", 1)[1], k=args.k)
        plans_before = tpt.plan_count()
        t0 = time.perf_counter()
        step(m, x, loss_fn)  # plans (and tunes) every shape: not part of the steady state
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        rows[mode] = {**time_steps(m, x, loss_fn, args.warmup, args.repeats), "first_step_s": first,
                      "new_plans": tpt.plan_count() - plans_before}
        print(f"  {name:10s} {mode:22s} {rows[mode]['median_ms']:9.3f} ms (IQR {rows[mode]['iqr_ms']:.3f}) "
              f"first step {first:.2f} s", flush=True)
    torch.backends.cudnn.benchmark = False
    tpt.set_strategy("heuristic")
    base = rows.get("torch", {}).get("median_ms")
    for r in rows.values():
        r["speedup_vs_torch"] = base / r["median_ms"] if base else None
    return rows


def host_overhead(calls=2000):
    """Microseconds of host time per call on tiny shapes, where launching is the whole cost."""
    dev = dict(device="cuda", dtype=DTYPE)
    x, w = torch.randn(16, 64, **dev), torch.randn(64, 64, **dev)
    xc, wc = torch.randn(1, 64, 8, 8, **dev).contiguous(memory_format=torch.channels_last), torch.randn(64, 64, 3, 3, **dev)
    wc = wc.contiguous(memory_format=torch.channels_last)
    wg, wcg = w.clone().requires_grad_(), wc.clone().requires_grad_()  # training: autograd records the call
    cases = {"torch linear": lambda: F.linear(x, w), "tilepick linear": lambda: tpt.linear(x, w),
             "torch conv2d": lambda: F.conv2d(xc, wc, None, 1, 1), "tilepick conv2d": lambda: tpt.conv2d(xc, wc, None, 1, 1),
             "torch linear (grad)": lambda: F.linear(x, wg), "tilepick linear (grad)": lambda: tpt.linear(x, wg),
             "torch conv2d (grad)": lambda: F.conv2d(xc, wcg, None, 1, 1),
             "tilepick conv2d (grad)": lambda: tpt.conv2d(xc, wcg, None, 1, 1)}
    out = {}
    for name, fn in cases.items():
        out[name] = host_us_per_call(fn, calls)
        print(f"  host time per call: {name:24s} {out[name]:7.1f} us", flush=True)
    return out


def host_us_per_call(fn, calls):
    """Host microseconds per call of fn over `calls` calls after 20 warm-up calls (keep the calls' GPU work
    below what the launch queue holds, or this measures the GPU)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return us


def first_call_child(args):
    """In a fresh process: one training step from nothing, timed to the result (plans, JIT, run)."""
    s = sizes(args)
    model, x, loss_fn = build(args.first_call, s)
    if args.strategy != "torch":
        tpt.swap_modules(model)
        tpt.set_strategy(args.strategy, k=args.k)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step(model, x, loss_fn)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if args.strategy != "torch":
        tilepick.save_plan_cache()
    stats = tilepick.dispatcher_stats() if args.strategy != "torch" else {}
    print(json.dumps({"seconds": seconds, "plans": tpt.plan_count(), "dispatcher": stats}))


def first_calls(name, args, workdir):
    """cold JIT -> warm disk cache -> warm plan cache, each in a new process, per strategy."""
    out = {}
    for strategy in ["torch"] + [m.split("_", 1)[1] for m in args.modes if m.startswith("tilepick")]:
        cache = Path(tempfile.mkdtemp(prefix=f"jit-{name}-{strategy}-", dir=workdir))
        plan_file = cache.with_suffix(".plans.json")
        scenarios = [("cold_jit", plan_file), ("warm_disk", cache.with_suffix(".other.json")),
                     ("warm_plan_cache", plan_file)] if strategy != "torch" else [("cold", plan_file)]
        for scenario, plans in scenarios:
            env = dict(os.environ, TILEPICK_CACHE_DIR=str(cache), TILEPICK_PLAN_CACHE=str(plans))
            if scenario == "warm_disk" and plans.exists():
                plans.unlink()
            cmd = [sys.executable, __file__, "--first-call", name, "--strategy", strategy, "--k", str(args.k)]
            cmd += ["--quick"] if args.quick else ["--batch", str(args.batch), "--tokens", str(args.tokens),
                                                   "--hidden", str(args.hidden), "--ffn", str(args.ffn)]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if r.returncode != 0:
                out[f"{strategy}/{scenario}"] = {"error": r.stderr.strip().splitlines()[-1:] or ["?"]}
                print(f"  {name:10s} first call {strategy}/{scenario}: FAILED\n{r.stderr[-2000:]}", flush=True)
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            res["process_wall_s"] = wall
            out[f"{strategy}/{scenario}"] = res
            print(f"  {name:10s} first call {strategy + '/' + scenario:26s} {res['seconds']:8.2f} s "
                  f"(process {wall:.1f} s)", flush=True)
    return out


def environment():
    def cublas_version():
        for lib in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
            try:
                v = ctypes.CDLL(lib).cublasLtGetVersion()
                return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
            except (OSError, AttributeError):
                continue
        return "unknown"

    def commit():
        # .commit (written next to a copied tree, as for the GPU machine) wins over git, as in CMake.
        if (ROOT / ".commit").is_file():
            return (ROOT / ".commit").read_text().strip()
        try:
            return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "unknown"

    try:
        import torchvision
        tv = torchvision.__version__
    except ImportError:
        tv = None
    props = torch.cuda.get_device_properties(0)
    return {"device": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
            "capability": f"{props.major}.{props.minor}", "torch": torch.__version__, "torchvision": tv,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "cublaslt": cublas_version(),
            "tilepick_commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def markdown(result):
    env, lines = result["environment"], []
    lines += [f"# tilepick.torch end to end ({env['date']})", "",
              f"{env['device']} ({env['sm_count']} SMs), torch {env['torch']}, CUDA {env['cuda']}, "
              f"cuDNN {env['cudnn']}, cuBLASLt {env['cublaslt']}, tilepick {env['tilepick_commit']}; "
              f"sizes {result['sizes']}, bf16, {result['repeats']} repeats after {result['warmup']} warm-up.", "",
              "## Correctness (one training step; relative Frobenius error vs the fp64 step, torch bf16 in brackets)",
              "", "| model | swapped | output | worst (relative to torch) | ok |", "|---|---|---|---|---|"]
    for name, c in result["correctness"].items():
        lines.append(f"| {name} | {c['swapped_modules']} | {c['output_rel_err']:.2e} ({c['torch_output_rel_err']:.2e})"
                     f" | {c['worst']} {c['worst_rel_err']:.2e} ({c['worst_torch_rel_err']:.2e}) | "
                     f"{'yes' if c['ok'] else 'NO: ' + ', '.join(c['failures'])} |")
    lines += ["", "## Forward + backward, steady state (median ms, IQR; speed-up vs torch)", "",
              "| model | " + " | ".join(result["modes"]) + " |", "|---" * (len(result["modes"]) + 1) + "|"]
    for name, rows in result["timings"].items():
        def speedup(r):  # None without a torch mode in the run
            return f" x{r['speedup_vs_torch']:.2f}" if r["speedup_vs_torch"] is not None else ""
        cells = [f"{rows[m]['median_ms']:.2f} ({rows[m]['iqr_ms']:.2f}){speedup(rows[m])}"
                 if m in rows else "-" for m in result["modes"]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Host time per call on tiny shapes (us): " +
              ", ".join(f"{k} {v:.1f}" for k, v in result["host_us_per_call"].items())]
    if result["first_call"]:
        lines += ["", "## First call to result in a new process (s)", "", "| model | case | seconds | plans |",
                  "|---|---|---|---|"]
        for name, cases in result["first_call"].items():
            for case, r in cases.items():
                lines.append(f"| {name} | {case} | " + (f"{r['seconds']:.2f} | {r.get('plans', '')}" if "seconds" in r
                                                        else f"failed: {r['error']} |") + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder (torch_e2e.json, torch_e2e.md)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma list of {', '.join(MODELS + EXTRA_MODELS)}")
    ap.add_argument("--modes", default="torch,torch_cudnn_benchmark,tilepick_heuristic,tilepick_top_k")
    ap.add_argument("--quick", action="store_true", help="small shapes and few repeats (a smoke test)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--k", type=int, default=4, help="top_k: candidates timed per problem")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--floor", type=float, default=2e-2,
                    help="relative error vs fp64 always accepted (else at most twice torch's own bf16 error)")
    ap.add_argument("--no-first-call", action="store_true", help="skip the cold / warm cache runs")
    ap.add_argument("--first-call", help=argparse.SUPPRESS)  # child process: MODEL
    ap.add_argument("--strategy", default="heuristic", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_e2e: needs a CUDA device")
    if args.first_call:
        return first_call_child(args)
    if not args.out:
        ap.error("--out is required")
    if args.quick:
        args.warmup, args.repeats = min(args.warmup, 2), min(args.repeats, 5)
    args.modes = args.modes.split(",")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    print(" | ".join(f"{k} {v}" for k, v in env.items()), flush=True)
    s = sizes(args)
    scratch = tempfile.mkdtemp(prefix="tilepick-e2e-")  # JIT caches and plan files of the first-call runs
    result = {"environment": env, "sizes": s, "modes": args.modes, "warmup": args.warmup, "repeats": args.repeats,
              "correctness": {}, "timings": {}, "first_call": {}, "host_us_per_call": host_overhead()}
    for name in args.models.split(","):
        if name not in MODELS + EXTRA_MODELS:
            ap.error(f"unknown model '{name}' (one of {', '.join(MODELS + EXTRA_MODELS)})")
        result["correctness"][name] = c = check(name, s, args.floor)
        print(f"  {name:10s} check vs fp64: {c['swapped_modules']} modules, output {c['output_rel_err']:.2e} "
              f"(torch {c['torch_output_rel_err']:.2e}), worst {c['worst']} {c['worst_rel_err']:.2e} (torch "
              f"{c['worst_torch_rel_err']:.2e}) -> {'ok' if c['ok'] else 'MISMATCH ' + ', '.join(c['failures'])}",
              flush=True)
        result["timings"][name] = timings(name, s, args)
        if not args.no_first_call:
            result["first_call"][name] = first_calls(name, args, scratch)
        torch.cuda.empty_cache()
    shutil.rmtree(scratch, ignore_errors=True)
    (out / "torch_e2e.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "torch_e2e.md").write_text(markdown(result))
    print(markdown(result))
    return 0 if all(c["ok"] for c in result["correctness"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
