"""PyTorch ops backed by tilepick kernels: linear, matmul, conv2d, conv3d (forward and backward).

    import tilepick.torch as tpt
    y = tpt.linear(x, w, b)              # x @ w.T + b (torch.ops.tilepick.linear under torch.compile)
    y = tpt.conv2d(x, w, b, stride=2, padding=1, groups=32)
    tpt.swap_modules(model)              # nn.Linear / nn.Conv2d / nn.Conv3d -> tilepick subclasses
    tpt.set_strategy("top_k", k=4)       # time the model's best 4 on first use of each shape
    tpt.warmup(model, x)                 # plan and compile a step's shapes before the first step
    tpt.set_distributed(True)            # torch.distributed: every rank runs rank 0's choices
    tpt.set_gemm_buckets(True)           # serving: one kernel choice per bucket of token counts

The ops are torch.library custom ops (namespace `tilepick`) with fake kernels (torch.compile) and
autograd: linear backward runs the GEMMs dy @ W (rrr) and dy^T @ x (crr), conv backward runs the
bwd_data and bwd_weight problems; bias gradients are torch sums. In eager mode the same code runs
through torch.autograd.Function (no torch.library dispatch on the host path); torch.compile, fake and
meta tensors go through the custom ops. Inputs are f16 or bf16 CUDA tensors; under torch.autocast
other floating inputs (fp32 parameters) are cast to its dtype first, as torch's own ops do.
Convolutions work on channels-last memory (torch channels_last == tilepick x NHWGC, a weight
[K, C/G, kh, kw] in channels_last memory == tilepick w [K][Y][X][C/G]); other inputs are copied
into it on every call, with one warning per op and operand, and outputs are channels-last. Kernels run on torch.cuda.current_stream().

Unsupported inputs (dtype, device, a shape with no kernel) raise an error naming the op and the
reason. With set_fallback(True) they run through torch instead, with one warning per reason.
"""
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import tilepick

__all__ = ["linear", "matmul", "conv2d", "conv3d", "set_strategy", "get_strategy", "set_vendor",
           "set_fallback", "set_gemm_buckets", "set_distributed", "swap_modules", "Linear", "Conv2d", "Conv3d",
           "plan_count", "warmup"]

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16"}


class _Settings:
    strategy = "auto"
    k = 4
    vendor: Optional[str] = None  # None: the environment's policy's (TILEPICK_POLICY, default auto)
    fallback = False
    gemm_buckets = False
    distributed = False
    group = None  # the torch.distributed process group of set_distributed (None: the default group)
    version = 0  # bumped by every setter: part of the keys of _seen


_settings = _Settings()
_plans: Dict[tuple, object] = {}
_plans_lock = threading.Lock()
_recorded: Optional[Dict[tuple, tuple]] = None  # during warmup(): problem key -> (make_problem, device, bucket)
_warned = set()


def set_strategy(strategy: str, k: Optional[int] = None) -> None:
    """auto (the default: top_k for the shapes whose top-1 the analytic model estimates at >= TILEPICK_POLICY's
    time_us, default 100 us, heuristic for the rest), heuristic (the model's top-1), race (time the model's top-1 against
    the vendor's heuristic kernel on first use of a shape, keep the faster) or top_k (time the model's best k and
    the vendor's kernels); exhaustive times every legal kernel. Applies to plans made from now on."""
    if strategy not in ("auto", "heuristic", "race", "top_k", "exhaustive"):
        raise ValueError(f"set_strategy: '{strategy}' is not one of auto, heuristic, race, top_k, exhaustive")
    if k is not None and k < 1:
        raise ValueError(f"set_strategy: k must be >= 1, got {k}")
    _settings.strategy = strategy
    _settings.k = k or _settings.k
    _settings.version += 1


def get_strategy() -> str:
    return _settings.strategy


def set_vendor(mode: Optional[str]) -> None:
    """off | auto | only: whether cuBLASLt / cuDNN take part (None: TILEPICK_POLICY's, default auto)."""
    if mode not in (None, "off", "auto", "only"):
        raise ValueError(f"set_vendor: '{mode}' is not one of off, auto, only (or None)")
    _settings.vendor = mode
    _settings.version += 1


def set_fallback(enabled: bool) -> None:
    """When True, inputs tilepick cannot run (dtype, device, no kernel for the shape) go to torch with a
    warning instead of raising."""
    _settings.fallback = bool(enabled)
    _settings.version += 1


def set_gemm_buckets(enabled: bool) -> None:
    """When True, GEMMs (linear, matmul and linear's data gradient) choose their kernel once per bucket of M, the
    next power of two >= 16 (an LLM's token count), and run every M of the bucket with it: a new M is planned
    with strategy fixed (no ranking, no timing, the compiled kernel reused), falling back to its own choice
    only where the bucket's kernel cannot run it. Off by default: fixed shapes (training) get their own choice."""
    _settings.gemm_buckets = bool(enabled)
    _settings.version += 1


def set_distributed(enabled: bool, group=None) -> None:
    """When True and torch.distributed is initialized with more than one rank in `group` (None: the default
    group), every rank runs the kernels that the group's first rank chose: it plans each new problem (timing as
    the strategy says), broadcasts its choice, and the others plan that kernel with strategy fixed. With a timed
    strategy, ranks would otherwise time on their own and may run different kernels (and numerics). Every rank
    must meet each new problem in the same order, as SPMD training does: each is one broadcast."""
    _settings.distributed, _settings.group = bool(enabled), group
    _settings.version += 1


def _agreeing_rank() -> Optional[int]:
    """This rank in set_distributed's group, or None when plans are not agreed across ranks."""
    if not _settings.distributed:
        return None
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size(_settings.group) < 2:
        return None
    return dist.get_rank(_settings.group)


def _agreed_plan(problem: str, device: int, rank: int):
    """The first rank's plan of `problem`, made on every rank (set_distributed); its errors raise on all ranks."""
    import torch.distributed as dist
    choice = [None]
    plan = None
    if rank == 0:
        try:
            plan = tilepick.plan(problem, strategy=_settings.strategy, k=_settings.k, vendor=_settings.vendor,
                                 device=device)
            choice[0] = ("kernel", plan.kernel)
        except (NotImplementedError, ValueError) as e:
            choice[0] = (type(e).__name__, str(e))
    src = 0 if _settings.group is None else dist.get_global_rank(_settings.group, 0)
    dist.broadcast_object_list(choice, src=src, group=_settings.group)
    what, text = choice[0]
    if what != "kernel":
        raise (NotImplementedError if what == "NotImplementedError" else ValueError)(f"rank 0: {text}")
    if plan is None:
        plan = tilepick.plan(problem, strategy="fixed", config=text, vendor=_settings.vendor, device=device)
    return plan


def plan_count() -> int:
    """Plans made by this module so far (one per distinct problem and strategy)."""
    return len(_plans)


class Unsupported(ValueError):
    """tilepick cannot run these inputs (the message says why)."""


def _fallback_or_raise(op: str, reason: str) -> None:
    if not _settings.fallback:
        raise Unsupported(f"tilepick.{op}: {reason} (tilepick.torch.set_fallback(True) runs such inputs in torch)")
    if (op, reason) not in _warned:
        _warned.add((op, reason))
        warnings.warn(f"tilepick.{op}: {reason}; running torch instead", stacklevel=3)


def _unsupported_reason(tensors: Sequence[Optional[Tensor]], names=("input", "weight", "bias")) -> Optional[str]:
    first = tensors[0]
    for name, t in zip(names, tensors):
        if t is None:
            continue
        if t.device.type != "cuda":
            return f"{name} is on {t.device}; tilepick runs on CUDA devices"
        if t.dtype not in _DTYPES:
            return f"{name} has dtype {t.dtype}; tilepick ops take float16 or bfloat16"
        if t.dtype != first.dtype or t.device != first.device:
            return f"{name} is {t.dtype} on {t.device} but {names[0]} is {first.dtype} on {first.device}"
    return None


def _plan(key: tuple, make_problem, device: int):
    """The Plan for a problem key under the current strategy (made once per key and strategy)."""
    full = key + (device, _settings.strategy, _settings.k, _settings.vendor)
    plan = _plans.get(full)
    if plan is None:
        problem = make_problem()
        rank = _agreeing_rank()
        if rank is not None:
            plan = _agreed_plan(problem, device, rank)
        else:
            plan = tilepick.plan(problem, strategy=_settings.strategy, k=_settings.k, vendor=_settings.vendor,
                                 device=device)
        with _plans_lock:
            _plans[full] = plan
    return plan


_workspaces: Dict[tuple, Tensor] = {}


def _current_stream(index: int) -> int:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def _workspace(nbytes: int, index: int, stream: int) -> int:
    """A device buffer of at least nbytes, kept per (device, stream): kernels on one stream run in
    order, so consecutive calls can share it."""
    buf = _workspaces.get((index, stream))
    if buf is None or buf.numel() < nbytes:
        buf = torch.empty(max(nbytes, 1 << 20), dtype=torch.uint8, device=torch.device("cuda", index))
        _workspaces[(index, stream)] = buf
    return buf.data_ptr()


def _run(plan, tensors: Sequence[Tensor], index: int) -> None:
    """Runs a plan on tensors in operand_specs order, passed with their logical shapes and strides:
    tilepick checks that each one's memory is the dense layout its operand needs."""
    args = [(t.data_ptr(), _DTYPES[t.dtype], list(t.shape), list(t.stride()), index) for t in tensors]
    _launch(plan, index, lambda ws, stream: plan.run_raw(args, ws, stream))


def _launch(plan, index: int, run) -> None:
    """run(workspace, stream) on the device's current stream with a workspace for the plan, device `index`
    current."""
    stream = _current_stream(index)
    ws_bytes = plan.workspace_bytes
    ws = _workspace(ws_bytes, index, stream) if ws_bytes else 0
    if torch.cuda.current_device() != index:
        with torch.cuda.device(index):
            run(ws, stream)
    else:
        run(ws, stream)


# Calls seen before: a call whose tensors (shape, strides, dtype, device), parameters and settings match an
# earlier call that ran without copies reuses that call's checks and plan, and passes bare pointers
# (Plan.run_pointers checks device and alignment). Key -> (plan, output shape, device index). A conv call took 24 us of host time without it, 14 us with it (experiments/2026-11-25-host-cost/torch_host_breakdown.py, H200 host).
_seen: Dict[tuple, tuple] = {}


def _meta(t: Optional[Tensor]):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def _remember(key: tuple, plan, out: Tensor, index: int) -> None:
    _seen[key] = (plan, tuple(out.shape), index)


def _run_seen(seen: tuple, pointers: List[int]) -> None:
    plan, _, index = seen
    _launch(plan, index, lambda ws, stream: plan.run_pointers(pointers, ws, stream))


def _ptrs(*tensors: Optional[Tensor]) -> List[int]:
    return [t.data_ptr() for t in tensors if t is not None]


def _conv_seen(key: tuple, inputs: Sequence[Optional[Tensor]]) -> Optional[Tensor]:
    """A conv call seen before: its channels-last output (like the first input), computed; else None.
    inputs: the operands before the output in run order, then the bias (or None)."""
    seen = _seen.get(key)
    if seen is None:
        return None
    out = _new_channels_last(seen[1], inputs[0])
    _run_seen(seen, _ptrs(inputs[0], inputs[1], out, *inputs[2:]))
    return out


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _plan_bucketed(key: tuple, make_problem, device: int, bucket: tuple):
    """The plan of a GEMM with the kernel chosen once for its bucket of M (set_gemm_buckets): bucket is
    (the bucket's problem key, its make_problem)."""
    full = key + (device, _settings.strategy, _settings.k, _settings.vendor, "bucket")
    plan = _plans.get(full)
    if plan is None:
        chosen = _plan(*bucket, device)
        try:
            plan = tilepick.plan(make_problem(), strategy="fixed", config=chosen.kernel, vendor=_settings.vendor,
                                 device=device)
        except (NotImplementedError, ValueError):  # the bucket's kernel cannot run this M: its own choice
            plan = _plan(key, make_problem, device)
        with _plans_lock:
            _plans[full] = plan
    return plan


def _make_plan(key: tuple, make_problem, device: int, bucket: Optional[tuple]):
    return _plan(key, make_problem, device) if bucket is None else _plan_bucketed(key, make_problem, device, bucket)


def _plan_or_fallback(op: str, key: tuple, make_problem, device: torch.device, bucket: Optional[tuple] = None):
    """The plan, or None when planning found no kernel and fallback is on (or warmup() is noting problems:
    then torch computes the call). bucket: see _plan_bucketed."""
    if _recorded is not None:
        _recorded.setdefault(key, (make_problem, _index(device), bucket))
        return None
    try:
        return _make_plan(key, make_problem, _index(device), bucket)
    except (NotImplementedError, ValueError) as e:
        _fallback_or_raise(op, f"no kernel: {e}")
        return None


# ---------------------------------------------------------------------------------------------- GEMM

def _mat_operand(t: Tensor) -> Tuple[str, Tensor]:
    """(layout letter, tensor): row-major when t is contiguous, column-major when its transpose is (a
    transposed view is read in place), else a row-major copy."""
    if t.is_contiguous():
        return "r", t
    if t.mT.is_contiguous():
        return "c", t
    return "r", t.contiguous()


def _gemm(a: Tensor, b: Tensor, bias: Optional[Tensor], op: str) -> Optional[Tensor]:
    """a [B?, M, K] @ b [B?, K, N] (+ bias [N]) -> [B?, M, N] row-major; None when it fell back."""
    seen_key = ("gemm", _meta(a), _meta(b), _meta(bias), _settings.version)
    seen = _seen.get(seen_key)
    if seen is not None:
        out = torch.empty(seen[1], dtype=a.dtype, device=a.device)
        _run_seen(seen, _ptrs(a, b, out, bias))
        return out
    batched = a.dim() == 3
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[0] if batched else 1
    out = torch.empty((batch, M, N) if batched else (M, N), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    if K == 0:
        return out.zero_() if bias is None else out.copy_(bias.expand_as(out))
    la, va = _mat_operand(a)
    lb, vb = _mat_operand(b)
    dtype = _DTYPES[a.dtype]

    def key(m: int) -> tuple:
        return ("gemm", la + lb + "r", batch, m, N, K, dtype, bias is not None)

    def problem(m: int) -> str:
        return tilepick.gemm_problem(m, N, K, dtype, la + lb + "r", batch=batch, bias=bias is not None)

    bucket = None
    if _settings.gemm_buckets:
        m_bucket = max(16, 1 << (M - 1).bit_length())
        if m_bucket != M:
            bucket = (key(m_bucket), lambda: problem(m_bucket))
    plan = _plan_or_fallback(op, key(M), lambda: problem(M), a.device, bucket)
    if plan is None:
        return None
    vo = out
    if batched and batch == 1:  # a batch of one is a plain GEMM: 2-D operands
        va, vb, vo = va[0], vb[0], out[0]
    vbias = bias.contiguous() if bias is not None else None
    _run(plan, [va, vb, vo] + ([vbias] if bias is not None else []), _index(a.device))
    if va.data_ptr() == a.data_ptr() and vb.data_ptr() == b.data_ptr() and vbias is bias:  # no copies
        _remember(seen_key, plan, out, _index(a.device))
    return out


def _linear_shapes(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> None:
    if weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1] or \
            (bias is not None and tuple(bias.shape) != (weight.shape[0],)):
        raise ValueError(f"tilepick.linear: input {tuple(x.shape)}, weight {tuple(weight.shape)} and bias "
                         f"{None if bias is None else tuple(bias.shape)} do not fit (weight [out, in], bias [out])")


def _linear_impl(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    _linear_shapes(x, weight, bias)
    x2 = x.reshape(-1, x.shape[-1])
    reason = _unsupported_reason([x, weight, bias])
    out = None
    if reason is None:
        out = _gemm(x2, weight.mT, bias, "linear")
    else:
        _fallback_or_raise("linear", reason)
    if out is None:
        out = F.linear(x2, weight, bias).contiguous()
    return out.reshape(*x.shape[:-1], weight.shape[0])


@torch.library.custom_op("tilepick::linear", mutates_args=())
def _linear_op(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    return _linear_impl(x, weight, bias)


@_linear_op.register_fake
def _(x, weight, bias=None):
    _linear_shapes(x, weight, bias)
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _linear_setup(ctx, inputs, output):
    x, weight, bias = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _linear_grads(ctx, grad, mm):
    x, weight = ctx.saved_tensors
    g2 = grad.reshape(-1, grad.shape[-1])
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = mm(g2, weight).reshape(x.shape)  # rrr
    if ctx.needs_input_grad[1]:
        dw = mm(g2.mT, x.reshape(-1, x.shape[-1]))  # crr
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = g2.sum(0, dtype=torch.float32).to(grad.dtype)
    return dx, dw, db


_linear_op.register_autograd(lambda ctx, grad: _linear_grads(ctx, grad, torch.ops.tilepick.matmul),
                             setup_context=_linear_setup)


def _matmul_shapes(a: Tensor, b: Tensor) -> Optional[str]:
    if a.dim() < 2 or b.dim() < 2 or a.shape[-1] != b.shape[-2]:
        return f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not multiply as matrices"
    if b.dim() == 2 or (a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0]):
        return None
    return f"shapes {tuple(a.shape)} @ {tuple(b.shape)}: only 2-D @ 2-D, [B,M,K] @ [B,K,N] and [...,M,K] @ [K,N]"


def _matmul_impl(a: Tensor, b: Tensor) -> Tensor:
    shape_error = _matmul_shapes(a, b)
    if shape_error:
        raise ValueError(f"tilepick.matmul: {shape_error}")
    flat = a.reshape(-1, a.shape[-1]) if (b.dim() == 2 and a.dim() > 2) else a
    reason = _unsupported_reason([a, b], names=("a", "b"))
    out = None
    if reason is None:
        out = _gemm(flat, b, None, "matmul")
    else:
        _fallback_or_raise("matmul", reason)
    if out is None:
        out = torch.matmul(flat, b).contiguous()
    return out.reshape(*a.shape[:-1], b.shape[-1])


@torch.library.custom_op("tilepick::matmul", mutates_args=())
def _matmul_op(a: Tensor, b: Tensor) -> Tensor:
    return _matmul_impl(a, b)


@_matmul_op.register_fake
def _(a, b):
    shape_error = _matmul_shapes(a, b)
    if shape_error:
        raise ValueError(f"tilepick.matmul: {shape_error}")
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _matmul_grads(ctx, grad, mm):
    a, b = ctx.saved_tensors
    da = db = None
    if ctx.needs_input_grad[0]:
        da = mm(grad, b.mT)
    if ctx.needs_input_grad[1]:
        if b.dim() == 2:  # a was flattened: db = a2^T @ g2
            db = mm(a.reshape(-1, a.shape[-1]).mT, grad.reshape(-1, grad.shape[-1]))
        else:
            db = mm(a.mT, grad)
    return da, db


_matmul_op.register_autograd(lambda ctx, grad: _matmul_grads(ctx, grad, torch.ops.tilepick.matmul),
                             setup_context=_matmul_setup)


# ---------------------------------------------------------------------------------------- convolution

def _memory_format(ndim: int):
    return torch.channels_last if ndim == 4 else torch.channels_last_3d


def _channels_last(t: Tensor, op: str, name: str) -> Tensor:
    """t in channels-last memory (tilepick's NHWC / NDHWC, and KYXC for weights); a copy when it is not,
    said once per op and operand (the copy costs a pass over the tensor on every call)."""
    fmt = _memory_format(t.dim())
    if t.is_contiguous(memory_format=fmt):
        return t
    if (op, name) not in _warned:
        _warned.add((op, name))
        warnings.warn(f"tilepick.{op}: the {name} is not in channels-last memory and is copied on every call; "
                      "convert the model and its inputs with .to(memory_format=torch.channels_last)", stacklevel=4)
    return t.contiguous(memory_format=fmt)


def _new_channels_last(shape, like: Tensor) -> Tensor:
    return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=_memory_format(len(shape)))


def _out_size(i: int, k: int, s: int, p: int, d: int) -> int:
    return (i + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_shape(x_shape, w_shape, stride, padding, dilation) -> List[int]:
    spatial = [_out_size(i, k, s, p, d) for i, k, s, p, d in zip(x_shape[2:], w_shape[2:], stride, padding, dilation)]
    return [x_shape[0], w_shape[0], *spatial]


def _conv_key(direction, x_shape, w_shape, stride, padding, dilation, groups, dtype, bias):
    return ("conv", direction, tuple(x_shape), tuple(w_shape), tuple(stride), tuple(padding), tuple(dilation),
            groups, dtype, bias)


def _conv_problem_fn(direction, x_shape, w_shape, stride, padding, dilation, groups, dtype, bias):
    return lambda: tilepick.conv_problem(x_shape[0], x_shape[1], w_shape[0], list(x_shape[2:]), list(w_shape[2:]),
                                         list(stride), list(padding), list(dilation), groups, dtype, direction,
                                         bias=bias)


def _conv_args(op, x_shape, w_shape, stride, padding, dilation, groups):
    nd = len(x_shape) - 2
    if len(w_shape) != nd + 2:
        raise ValueError(f"tilepick.{op}: input {tuple(x_shape)} and weight {tuple(w_shape)} differ in rank")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        if len(v) != nd:
            raise ValueError(f"tilepick.{op}: {name} {tuple(v)} needs {nd} values")
    if groups < 1 or x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        raise ValueError(f"tilepick.{op}: input {tuple(x_shape)}, weight {tuple(w_shape)} and groups={groups} "
                         "do not fit (input channels = weight.shape[1] * groups, groups divides out channels)")


def _torch_conv(x, w, bias, stride, padding, dilation, groups):
    fn = F.conv2d if x.dim() == 4 else F.conv3d
    y = fn(x, w, bias, stride, padding, dilation, groups)
    return _new_channels_last(y.shape, y).copy_(y)  # the same strides as the fake kernel's


def _conv_fwd(op, x, weight, bias, stride, padding, dilation, groups) -> Tensor:
    key = ("fwd", _meta(x), _meta(weight), _meta(bias), tuple(stride), tuple(padding), tuple(dilation), groups,
           _settings.version)
    y = _conv_seen(key, (x, weight, bias))
    if y is not None:
        return y
    _conv_args(op, x.shape, weight.shape, stride, padding, dilation, groups)
    reason = _unsupported_reason([x, weight, bias])
    if reason is not None:
        _fallback_or_raise(op, reason)
        return _torch_conv(x, weight, bias, stride, padding, dilation, groups)
    y = _new_channels_last(_conv_shape(x.shape, weight.shape, stride, padding, dilation), x)
    if y.numel() == 0:
        return y
    dtype = _DTYPES[x.dtype]
    args = (x.shape, weight.shape, stride, padding, dilation, groups, dtype, bias is not None)
    plan = _plan_or_fallback(op, _conv_key("fwd", *args), _conv_problem_fn("fwd", *args), x.device)
    if plan is None:
        return _torch_conv(x, weight, bias, stride, padding, dilation, groups)
    tensors = [_channels_last(x, op, "input"), _channels_last(weight, op, "weight"), y] + (
        [bias.contiguous()] if bias is not None else [])
    _run(plan, tensors, _index(x.device))
    if tensors[0] is x and tensors[1] is weight and (bias is None or tensors[3] is bias):
        _remember(key, plan, y, _index(x.device))
    return y


@torch.library.custom_op("tilepick::conv2d", mutates_args=())
def _conv2d_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
               dilation: List[int], groups: int) -> Tensor:
    return _conv_fwd("conv2d", x, weight, bias, stride, padding, dilation, groups)


@torch.library.custom_op("tilepick::conv3d", mutates_args=())
def _conv3d_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
               dilation: List[int], groups: int) -> Tensor:
    return _conv_fwd("conv3d", x, weight, bias, stride, padding, dilation, groups)


def _conv_fake(x, weight, bias, stride, padding, dilation, groups):
    _conv_args("conv", x.shape, weight.shape, stride, padding, dilation, groups)
    return _new_channels_last(_conv_shape(x.shape, weight.shape, stride, padding, dilation), x)


_conv2d_op.register_fake(_conv_fake)
_conv3d_op.register_fake(_conv_fake)


def _conv_bwd_data_impl(dy: Tensor, weight: Tensor, input_size: List[int], stride: List[int], padding: List[int],
                        dilation: List[int], groups: int) -> Tensor:
    """dx of a convolution: the bwd_data problem (a = dy, b = w, d = dx), channels-last."""
    op = "conv_bwd_data"
    key = ("bwd_data", _meta(dy), _meta(weight), tuple(input_size), tuple(stride), tuple(padding), tuple(dilation),
           groups, _settings.version)
    dx = _conv_seen(key, (dy, weight))
    if dx is not None:
        return dx
    reason = _unsupported_reason([dy, weight], names=("grad", "weight"))
    dx = _new_channels_last(list(input_size), dy)
    plan = None
    if reason is None and dx.numel():
        dtype = _DTYPES[dy.dtype]
        args = (input_size, weight.shape, stride, padding, dilation, groups, dtype, False)
        plan = _plan_or_fallback(op, _conv_key("bwd_data", *args), _conv_problem_fn("bwd_data", *args), dy.device)
    elif reason is not None:
        _fallback_or_raise(op, reason)
    if plan is None:
        if dx.numel():
            grad = torch.nn.grad.conv2d_input if dy.dim() == 4 else torch.nn.grad.conv3d_input
            dx.copy_(grad(list(input_size), weight, dy, stride, padding, dilation, groups))
        return dx
    tensors = [_channels_last(dy, op, "output gradient"), _channels_last(weight, op, "weight"), dx]
    _run(plan, tensors, _index(dy.device))
    if tensors[0] is dy and tensors[1] is weight:
        _remember(key, plan, dx, _index(dy.device))
    return dx


@torch.library.custom_op("tilepick::conv_bwd_data", mutates_args=())
def _conv_bwd_data_op(dy: Tensor, weight: Tensor, input_size: List[int], stride: List[int], padding: List[int],
                      dilation: List[int], groups: int) -> Tensor:
    return _conv_bwd_data_impl(dy, weight, input_size, stride, padding, dilation, groups)


@_conv_bwd_data_op.register_fake
def _(dy, weight, input_size, stride, padding, dilation, groups):
    return _new_channels_last(list(input_size), dy)


def _conv_bwd_weight_impl(x: Tensor, dy: Tensor, weight_size: List[int], stride: List[int], padding: List[int],
                          dilation: List[int], groups: int) -> Tensor:
    """dw of a convolution: the bwd_weight problem (a = x, b = dy, d = dw [K][Y][X][C/G]), channels-last."""
    op = "conv_bwd_weight"
    key = ("bwd_weight", _meta(x), _meta(dy), tuple(weight_size), tuple(stride), tuple(padding), tuple(dilation),
           groups, _settings.version)
    dw = _conv_seen(key, (x, dy))
    if dw is not None:
        return dw
    reason = _unsupported_reason([x, dy], names=("input", "grad"))
    dw = _new_channels_last(list(weight_size), x)
    plan = None
    if reason is None and dw.numel():
        if dy.numel() == 0:
            return dw.zero_()
        dtype = _DTYPES[x.dtype]
        args = (x.shape, weight_size, stride, padding, dilation, groups, dtype, False)
        plan = _plan_or_fallback(op, _conv_key("bwd_weight", *args), _conv_problem_fn("bwd_weight", *args), x.device)
    elif reason is not None:
        _fallback_or_raise(op, reason)
    if plan is None:
        if dw.numel():
            grad = torch.nn.grad.conv2d_weight if x.dim() == 4 else torch.nn.grad.conv3d_weight
            dw.copy_(grad(x, list(weight_size), dy, stride, padding, dilation, groups))
        return dw
    tensors = [_channels_last(x, op, "input"), _channels_last(dy, op, "output gradient"), dw]
    _run(plan, tensors, _index(x.device))
    if tensors[0] is x and tensors[1] is dy:
        _remember(key, plan, dw, _index(x.device))
    return dw


@torch.library.custom_op("tilepick::conv_bwd_weight", mutates_args=())
def _conv_bwd_weight_op(x: Tensor, dy: Tensor, weight_size: List[int], stride: List[int], padding: List[int],
                        dilation: List[int], groups: int) -> Tensor:
    return _conv_bwd_weight_impl(x, dy, weight_size, stride, padding, dilation, groups)


@_conv_bwd_weight_op.register_fake
def _(x, dy, weight_size, stride, padding, dilation, groups):
    return _new_channels_last(list(weight_size), x)


def _conv_setup(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, groups = inputs
    ctx.save_for_backward(x, weight)
    ctx.params = (list(stride), list(padding), list(dilation), groups)
    ctx.has_bias = bias is not None


def _conv_grads(ctx, grad, bwd_data, bwd_weight):
    x, weight = ctx.saved_tensors
    stride, padding, dilation, groups = ctx.params
    dx = dw = db = None
    if ctx.needs_input_grad[0]:
        dx = bwd_data(grad, weight, list(x.shape), stride, padding, dilation, groups)
    if ctx.needs_input_grad[1]:
        dw = bwd_weight(x, grad, list(weight.shape), stride, padding, dilation, groups)
    if ctx.has_bias and ctx.needs_input_grad[2]:
        db = grad.sum([0, *range(2, grad.dim())], dtype=torch.float32).to(grad.dtype)
    return dx, dw, db, None, None, None, None


def _conv_backward(ctx, grad):
    return _conv_grads(ctx, grad, torch.ops.tilepick.conv_bwd_data, torch.ops.tilepick.conv_bwd_weight)


_conv2d_op.register_autograd(_conv_backward, setup_context=_conv_setup)
_conv3d_op.register_autograd(_conv_backward, setup_context=_conv_setup)


# ---------------------------------------------------------------------------------------- eager path
# Outside torch.compile the ops run through these autograd Functions, which call the same code as
# the custom ops without torch.library's dispatch (about 20 us per call on the host); under
# torch.compile the custom ops are used, so graphs see tilepick::* nodes with fake kernels.

class _LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        _linear_setup(ctx, (x, weight, bias), None)
        return _linear_impl(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        return _linear_grads(ctx, grad, _matmul_impl)


class _MatmulFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _matmul_impl(a, b)

    @staticmethod
    def backward(ctx, grad):
        return _matmul_grads(ctx, grad, _matmul_impl)


class _ConvFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation, groups):
        _conv_setup(ctx, (x, weight, bias, stride, padding, dilation, groups), None)
        return _conv_fwd("conv2d" if x.dim() == 4 else "conv3d", x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, grad):
        return _conv_grads(ctx, grad, _conv_bwd_data_impl, _conv_bwd_weight_impl)


def _eager(x: Tensor) -> bool:
    """True for plain CUDA tensors outside torch.compile (fake, meta and traced tensors take the ops)."""
    return x.device.type == "cuda" and type(x) in (Tensor, nn.Parameter) and not torch.compiler.is_compiling()


def _grad_needed(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4: one pair of functions taking the device type
    def _autocast_dtype(device_type: str) -> Optional[torch.dtype]:
        """torch.autocast's dtype for `device_type` while it is on, else None."""
        return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None
else:  # torch 2.3: per-device functions
    def _autocast_dtype(device_type: str) -> Optional[torch.dtype]:
        """torch.autocast's dtype for `device_type` while it is on, else None."""
        if device_type == "cuda" and torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
        if device_type == "cpu" and torch.is_autocast_cpu_enabled():
            return torch.get_autocast_cpu_dtype()
        return None


def _autocast(*tensors):
    """Under torch.autocast, floating tensors of another dtype run in its dtype, as torch's own linear,
    matmul and conv do: fp32 parameters become bf16 / f16 operands, and their gradients come back in
    fp32 through the cast."""
    device_type = tensors[0].device.type  # meta tensors (shape propagation) have no autocast state
    dtype = _autocast_dtype(device_type) if device_type in ("cuda", "cpu") else None
    if dtype is None:
        return tensors
    return tuple(t.to(dtype) if t is not None and t.is_floating_point() and t.dtype != dtype else t for t in tensors)


def _linear_call(x, weight, bias):
    x, weight, bias = _autocast(x, weight, bias)
    if not _eager(x):
        return torch.ops.tilepick.linear(x, weight, bias)
    return _LinearFn.apply(x, weight, bias) if _grad_needed(x, weight, bias) else _linear_impl(x, weight, bias)


def _matmul_call(a, b):
    a, b = _autocast(a, b)
    if not _eager(a):
        return torch.ops.tilepick.matmul(a, b)
    return _MatmulFn.apply(a, b) if _grad_needed(a, b) else _matmul_impl(a, b)


def _conv_call(x, weight, bias, stride, padding, dilation, groups):
    x, weight, bias = _autocast(x, weight, bias)
    if not _eager(x):
        op = torch.ops.tilepick.conv2d if x.dim() == 4 else torch.ops.tilepick.conv3d
        return op(x, weight, bias, stride, padding, dilation, groups)
    if _grad_needed(x, weight, bias):
        return _ConvFn.apply(x, weight, bias, stride, padding, dilation, groups)
    return _conv_fwd("conv2d" if x.dim() == 4 else "conv3d", x, weight, bias, stride, padding, dilation, groups)


# ------------------------------------------------------------------------------------- public wrappers

IntOrTuple = Union[int, Sequence[int]]


def _tuple(v: IntOrTuple, n: int, name: str) -> List[int]:
    values = [int(v)] * n if isinstance(v, int) else [int(i) for i in v]
    if len(values) != n:
        raise ValueError(f"{name}: expected an int or {n} values, got {v!r}")
    return values


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """x @ weight.T + bias through the tilepick GEMM (layout rcr, bias epilogue)."""
    return _linear_call(x, weight, bias)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for 2-D @ 2-D, [B,M,K] @ [B,K,N] and [...,M,K] @ [K,N]; transposed views are read in place."""
    return _matmul_call(a, b)


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
           padding: IntOrTuple = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """F.conv2d (zero padding) through tilepick; the result is in channels_last memory."""
    return _conv_call(x, weight, bias, _tuple(stride, 2, "stride"), _tuple(padding, 2, "padding"),
                      _tuple(dilation, 2, "dilation"), groups)


def conv3d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
           padding: IntOrTuple = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """F.conv3d (zero padding) through tilepick; the result is in channels_last_3d memory."""
    return _conv_call(x, weight, bias, _tuple(stride, 3, "stride"), _tuple(padding, 3, "padding"),
                      _tuple(dilation, 3, "dilation"), groups)


# ---------------------------------------------------------------------------------------- module swap

class Linear(nn.Linear):
    """nn.Linear whose forward runs tilepick.linear (made by swap_modules; same parameters)."""

    def forward(self, x: Tensor) -> Tensor:
        return _linear_call(x, self.weight, self.bias)


class _ConvMixin:
    _tilepick_padding: List[int]

    def forward(self, x: Tensor) -> Tensor:
        return _conv_call(x, self.weight, self.bias, list(self.stride), self._tilepick_padding,
                          list(self.dilation), self.groups)


class Conv2d(_ConvMixin, nn.Conv2d):
    """nn.Conv2d whose forward runs tilepick.conv2d (made by swap_modules; same parameters)."""


class Conv3d(_ConvMixin, nn.Conv3d):
    """nn.Conv3d whose forward runs tilepick.conv3d (made by swap_modules; same parameters)."""


def _tensors_in(value) -> List[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    return []


def warmup(module: nn.Module, *inputs, backward: bool = True, threads: Optional[int] = None) -> int:
    """Plans (and JIT-compiles) ahead every problem that one step of `module` on inputs of these shapes
    runs through tilepick: the forward, and with `backward` the backward of the sum of its floating outputs.
    The step itself runs in torch while the problems are noted; parameters, their gradients and the
    module's buffers (BatchNorm statistics) are left as they were. Plans are then made on `threads` threads
    (default: one per CPU when the strategy times nothing, i.e. heuristic; else 1, so that timings do not
    share the GPU; always 1 under set_distributed, whose broadcasts every rank makes in one order). Returns the number of new plans; later calls of those shapes find them made."""
    global _recorded
    if _recorded is not None:
        raise RuntimeError("tilepick.torch.warmup: already warming up (one module at a time)")
    grads = [(p, p.grad) for p in module.parameters()]
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    _recorded = {}
    try:
        out = module(*inputs)
        if backward:
            outs = [t for t in _tensors_in(out) if t.requires_grad and t.is_floating_point()]
            if outs:
                torch.autograd.backward([t.sum() for t in outs])
    finally:
        recorded, _recorded = _recorded, None
        for p, g in grads:
            p.grad = g
        with torch.no_grad():
            for b, saved in buffers:
                b.copy_(saved)
    if threads is None:
        threads = (os.cpu_count() or 1) if _settings.strategy == "heuristic" else 1
    if _agreeing_rank() is not None:  # each new problem is a broadcast: every rank plans them in one order
        threads = 1
    before = len(_plans)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(lambda item: _make_plan(item[0], *item[1]), recorded.items()))
    return len(_plans) - before


def _numeric_padding(m: nn.Module) -> Optional[List[int]]:
    """The symmetric zero padding of a conv module, or None when it has none (asymmetric 'same')."""
    if isinstance(m.padding, str):
        if m.padding == "valid":
            return [0] * len(m.kernel_size)
        total = [d * (k - 1) for d, k in zip(m.dilation, m.kernel_size)]  # 'same' (stride 1)
        return [t // 2 for t in total] if all(t % 2 == 0 for t in total) else None
    return list(m.padding)


def swap_modules(model: nn.Module, linear: bool = True, conv: bool = True,
                 skipped: Optional[list] = None) -> int:
    """Make every nn.Linear (linear=True) and nn.Conv2d / nn.Conv3d (conv=True) in `model` run tilepick,
    in place: each module's class becomes the tilepick subclass, parameters and hooks stay as they are.
    Convolutions with padding_mode other than 'zeros', transposed convolutions, and asymmetric 'same'
    padding are left alone; they are appended to `skipped` as (name, reason) when it is given and
    reported in one warning. Returns the number of modules swapped."""
    count = 0
    left = []
    for name, m in model.named_modules():
        if type(m) is nn.Linear and linear:
            m.__class__ = Linear
            count += 1
        elif type(m) in (nn.Conv2d, nn.Conv3d) and conv:
            if m.padding_mode != "zeros":
                left.append((name, f"padding_mode '{m.padding_mode}' (tilepick pads with zeros only)"))
                continue
            padding = _numeric_padding(m)
            if padding is None:
                left.append((name, f"padding='same' with kernel {m.kernel_size} and dilation {m.dilation} "
                                   "is asymmetric"))
                continue
            m._tilepick_padding = padding
            m.__class__ = Conv2d if type(m) is nn.Conv2d else Conv3d
            count += 1
    if skipped is not None:
        skipped.extend(left)
    if left:
        warnings.warn("tilepick.torch.swap_modules left " + ", ".join(f"{n or '<root>'} ({r})" for n, r in left)
                      + " to torch", stacklevel=2)
    return count


def unswap_modules(model: nn.Module) -> int:
    """Undo swap_modules: tilepick modules go back to nn.Linear / nn.Conv2d / nn.Conv3d."""
    back = {Linear: nn.Linear, Conv2d: nn.Conv2d, Conv3d: nn.Conv3d}
    count = 0
    for m in model.modules():
        if type(m) in back:
            m.__class__ = back[type(m)]
            count += 1
    return count
