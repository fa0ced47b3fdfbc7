"""tilepick: learned kernel selection for NVIDIA GPUs (Python side: records, reports, training, and the
dispatcher: problem builders, select, plan, run).

    import tilepick
    p = tilepick.gemm_problem(4096, 4096, 4096, dtype="bf16", bias=True)   # canonical problem string
    tilepick.select(p, arch="h200", k=4)        # the model's ranking, no GPU needed
    plan = tilepick.plan(p)                     # picks and compiles a kernel on the current GPU
    tilepick.run(plan, a, b, d, bias)           # DLPack device tensors in operand_specs(p) order

Problem strings are always made and checked by the C++ parser (tilepick._core); nothing here parses them.
The extension module is loaded on first use, so that the pure-Python parts (records, reports, training)
import without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

__all__ = ["gemm_problem", "conv_problem", "canonical_problem", "problem_op", "select", "plan", "check",
           "operand_specs", "run", "dispatcher_stats", "save_plan_cache", "Selection", "TensorSpec", "Plan"]

Ints = Union[int, Sequence[int]]


def _ext():
    """tilepick._core, imported on first use (training tools import tilepick without it)."""
    import importlib
    return importlib.import_module("tilepick._core")


def __getattr__(name: str) -> Any:
    if name == "Plan":
        return _ext().Plan
    if name == "__version__":  # the library's own (one version: CMakeLists.txt's project(), also the wheel's)
        return _ext().version()
    raise AttributeError(f"module 'tilepick' has no attribute {name!r}")


def _epilogue(bias: bool, activation: Optional[str]) -> str:
    parts = (["bias"] if bias else []) + ([activation] if activation and activation != "none" else [])
    return f" ep={'+'.join(parts)}" if parts else ""


def canonical_problem(text: str) -> str:
    """The canonical string of a problem (parse errors name the bad token: ValueError)."""
    return _ext().canonical_problem(text)


def problem_op(text: str) -> str:
    """gemm, conv_fwd, conv_bwd_data or conv_bwd_weight."""
    return _ext().problem_op(text)


def gemm_problem(m: int, n: int, k: int, dtype: str = "bf16", layout: str = "rcr", batch: int = 1,
                 bias: bool = False, activation: Optional[str] = None, alpha: float = 1.0, beta: float = 0.0,
                 acc: Optional[str] = None) -> str:
    """D[MxN] = act(alpha * A[MxK] @ B[KxN] + beta * C + bias): the canonical GEMM problem string.

    layout: three letters (A, B, C/D), r = row-major, c = column-major; dtype: one name (f16, bf16, e4m3,
    e5m2, f32) or "a:b:c"; activation: relu, gelu_tanh, gelu_erf, silu, sigmoid, tanh."""
    text = f"gemm {layout}" + (f" batch{batch}" if batch != 1 else "") + f" m{m} n{n} k{k} {dtype}"
    text += (f" acc={acc}" if acc else "") + (f" alpha={alpha!r}" if alpha != 1.0 else "")
    text += (f" beta={beta!r}" if beta != 0.0 else "") + _epilogue(bias, activation)
    return canonical_problem(text)


def _spatial(name: str, value: Ints, ndim: int) -> list:
    values = [value] * ndim if isinstance(value, int) else list(value)
    if len(values) != ndim:
        raise ValueError(f"conv_problem: {name} has {len(values)} values, the input has {ndim} spatial dims")
    return values


def conv_problem(n: int, c: int, k: int, input_size: Sequence[int], kernel_size: Ints, stride: Ints = 1,
                 padding: Ints = 0, dilation: Ints = 1, groups: int = 1, dtype: str = "bf16",
                 direction: str = "fwd", bias: bool = False, activation: Optional[str] = None) -> str:
    """The canonical convolution problem string (channels-last: x NHWGC, w GKYXC, y NHWGK).

    n: batch, c / k: input / output channels over all groups, input_size: (h, w) or (d, h, w);
    kernel_size, stride, padding, dilation: an int or one value per spatial dim;
    direction: fwd, bwd_data or bwd_weight; bias / activation: fwd only."""
    ndim = len(input_size)
    if ndim not in (2, 3):
        raise ValueError(f"conv_problem: input_size {tuple(input_size)} must be (h, w) or (d, h, w)")
    names = ["d", "h", "w"][3 - ndim:]
    fields = {"i": list(input_size), "k": _spatial("kernel_size", kernel_size, ndim),
              "s": _spatial("stride", stride, ndim), "p": _spatial("padding", padding, ndim),
              "d": _spatial("dilation", dilation, ndim)}
    text = f"{direction} g{groups} mb{n} ic{c}"
    text += "".join(f" i{a}{v}" for a, v in zip(names, fields["i"]))
    text += f" oc{k}"
    for key in "kspd":
        text += "".join(f" {key}{a}{v}" for a, v in zip(names, fields[key]))
    return canonical_problem(f"{text} {dtype}{_epilogue(bias, activation)}")


@dataclass(frozen=True)
class Ranked:
    config: str
    score: float
    source: str


@dataclass(frozen=True)
class Selection:
    """The selector's ranking of a problem's legal kernels (best first)."""
    problem: str
    arch: str
    top: list
    pool_size: int
    from_model: bool
    source: str
    reason: str
    confidence: float
    units: str
    pruned: bool = False  # pool_size counts only the model's candidates.txt configs (docs/selection.md)
    fast: bool = False    # ranked by the model's fast/ student, its top re-scored by the model (docs/selection.md)
    vendor_first: bool = False  # dispatch's heuristic strategy (vendor auto) runs the vendor's heuristic kernel
    vendor_chosen: bool = False  # ... because the model's per-problem vendor choice predicted it faster
    vendor_log_ratio: float = float("nan")  # that prediction: ln(vendor time / the pick's time); NaN without one

    @property
    def best(self) -> str:
        return self.top[0].config if self.top else ""


def select(problem: str, arch: str = "h200", k: int = 4) -> Selection:
    """Rank the legal kernels of `problem` for `arch` with the learned model (or the analytic fallback).
    No GPU needed; the same ranking as `tilepick select`."""
    s = _ext().select(problem, arch, k)
    s["top"] = [Ranked(**r) for r in s["top"]]
    return Selection(**s)


@dataclass(frozen=True)
class TensorSpec:
    """One operand: `shape` is in memory order, named by `dims` (e.g. NHWC, KYXC, MK)."""
    name: str
    slot: str
    dims: str
    dtype: str
    shape: tuple
    output: bool


def operand_specs(problem: str) -> list:
    """The operands of `problem` in run() order: a, b, [c], d, [bias]."""
    return [TensorSpec(**{**s, "shape": tuple(s["shape"])}) for s in _ext().operand_specs(problem)]


def plan(problem: str, strategy: str = "auto", k: int = 4, config: str = "", vendor: Optional[str] = None,
         device: int = -1, arch: Optional[str] = None, auto_time_us: Optional[float] = None,
         policy: Optional[str] = None):
    """A Plan for `problem` from the default dispatcher (cached in memory and in TILEPICK_PLAN_CACHE).

    policy: what is timed on first use and whether vendor libraries take part, as a string
    ("auto", "top_k:k=8", "auto:time_us=50,vendor=off"; docs/dispatch.md), instead of the shorthand below.
    Shorthand over the environment's policy (TILEPICK_POLICY, default auto): strategy: auto (top_k where the
    model's top-1 is estimated at >= auto_time_us, default 100; else heuristic), heuristic (model top-1), race (time
    the model's top-1 against the vendor's heuristic kernel on the GPU), top_k (time the best k on the GPU),
    exhaustive, fixed (config names the kernel); vendor: off | auto | only; device: CUDA ordinal, -1 = current; arch
    ("h200", "sm_90"): plan offline for that arch without a GPU (not runnable, never timed)."""
    return _ext().plan(problem, strategy, k, config, vendor, device, arch or "", auto_time_us, policy)


def check(problem: str, strategy: str = "auto", k: int = 4, config: str = "", vendor: Optional[str] = None,
          device: int = -1, arch: Optional[str] = None, auto_time_us: Optional[float] = None,
          policy: Optional[str] = None) -> dict:
    """{ok, reason, tilepick_candidates, vendor_candidate}: whether plan() with these options can succeed."""
    return _ext().check(problem, strategy, k, config, vendor, device, arch or "", auto_time_us, policy)


def _workspace_for(p, tensors: Sequence[Any]):
    """A workspace allocated by the framework of the first tensor (torch or cupy), or a clear error."""
    first = tensors[0] if tensors else None
    module = type(first).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty(p.workspace_bytes, dtype=torch.uint8, device=first.device)
    if module == "cupy":
        import cupy
        return cupy.empty(p.workspace_bytes, dtype=cupy.uint8)
    raise ValueError(f"run: the plan needs a workspace of {p.workspace_bytes} bytes of device memory; "
                     "pass workspace= (a device array or pointer)")


_TORCH_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float8_e4m3fn": "e4m3",
                 "float8_e5m2": "e5m2"}


def _torch_raw(t) -> tuple:
    """(data_ptr, dtype, shape, strides, device) of a torch tensor, for Plan.run_raw (no DLPack)."""
    name = str(t.dtype).replace("torch.", "")
    return (t.data_ptr(), _TORCH_DTYPES.get(name, name), list(t.shape), list(t.stride()),
            t.device.index if t.device.type == "cuda" else -1)


def run(problem_or_plan, *tensors, workspace=None, stream=None, strategy: str = "auto", k: int = 4,
        vendor: Optional[str] = None, device: int = -1) -> None:
    """Run a problem (planned here with the given options) or a Plan on device tensors given in
    operand_specs order: torch tensors (read directly; stream None = torch's current stream) or any
    DLPack array (cupy, jax, ...; stream None = the default stream). A workspace is allocated through
    torch or cupy when the plan needs one and none is given; stream: None, a CUstream int or an object
    with .cuda_stream (torch / cupy streams)."""
    p = problem_or_plan
    if isinstance(p, str):
        p = plan(p, strategy=strategy, k=k, vendor=vendor, device=device)
    if workspace is None and p.workspace_bytes > 0:
        workspace = _workspace_for(p, tensors)
    if tensors and all(type(t).__module__.startswith("torch") and hasattr(t, "data_ptr") for t in tensors):
        import torch
        if stream is None and tensors[0].device.type == "cuda":
            stream = torch.cuda.current_stream(tensors[0].device)
        ws = workspace if workspace is None or isinstance(workspace, int) else workspace.data_ptr()
        p.run_raw([_torch_raw(t) for t in tensors], ws or 0, stream)
    else:
        p.run(list(tensors), workspace, stream)


def dispatcher_stats() -> dict:
    """Plan-cache counters: new_plans, memory_hits, file_hits, file_entries, rejected_entries, cache_file."""
    return _ext().dispatcher_stats()


def save_plan_cache() -> None:
    """Write the plans made so far to TILEPICK_PLAN_CACHE (no-op when it is unset)."""
    _ext().save_plan_cache()
