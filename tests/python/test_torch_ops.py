"""tilepick.torch: the custom ops against torch.

Without CUDA (torch importable): shapes through the fake kernels (meta tensors), autograd wiring and
torch.compile through the fallback path, and the operand plumbing: every view handed to a plan must
match tilepick's operand_specs, and computing each problem in fp64 from those views must reproduce
torch (a reference executor replaces the GPU). On a GPU: forward and backward against an fp64 torch
reference on odd sizes in bf16 and f16, torch.compile, and swap_modules on torchvision's resnet18."""
import copy
import ctypes
import json
import math
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import tilepick  # noqa: E402
import tilepick.torch as tpt  # noqa: E402
from tilepick import _core  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# (x shape, weight shape, stride, padding, dilation, groups): odd sizes, grouped, depthwise, strided, 3-D.
CONV2D = [
    ((3, 24, 17, 15), (40, 24, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 32, 19, 19), (64, 8, 3, 3), (2, 2), (1, 1), (1, 1), 4),
    ((2, 48, 13, 11), (48, 1, 5, 5), (1, 1), (2, 2), (1, 1), 48),
    ((4, 64, 15, 15), (96, 64, 1, 1), (2, 2), (0, 0), (1, 1), 1),
    ((2, 16, 21, 21), (16, 16, 3, 3), (1, 1), (2, 2), (2, 2), 1),
    ((2, 3, 35, 33), (16, 3, 7, 7), (2, 2), (3, 3), (1, 1), 1),  # ResNet stem: 3 input channels
]
CONV3D = [
    ((2, 16, 5, 9, 9), (24, 16, 3, 3, 3), (1, 2, 2), (1, 1, 1), (1, 1, 1), 1),
    ((1, 32, 4, 7, 9), (32, 1, 3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 32),
]
DTYPES = [torch.bfloat16, torch.float16]


def conv_id(case):
    x, w, s, p, d, g = case
    return f"x{'x'.join(map(str, x))}_w{'x'.join(map(str, w))}_s{s[-1]}_p{p[-1]}_d{d[-1]}_g{g}"


@pytest.fixture(autouse=True)
def default_settings():
    tpt.set_fallback(False)
    tpt.set_strategy("heuristic")
    yield
    tpt.set_fallback(False)
    tpt.set_strategy("heuristic")
    tpt.set_gemm_buckets(False)


def conv_ref(x, w, b, stride, padding, dilation, groups):
    fn = F.conv2d if x.dim() == 4 else F.conv3d
    return fn(x, w, b, stride, padding, dilation, groups)


# -------------------------------------------------------------------------------- no GPU: shapes

def test_fake_kernels_give_torch_shapes_and_channels_last():
    meta = dict(device="meta", dtype=torch.bfloat16)
    for xs, ws, s, p, d, g in CONV2D + CONV3D:
        x = torch.empty(xs, **meta, requires_grad=True)
        w = torch.empty(ws, **meta, requires_grad=True)
        b = torch.empty(ws[0], **meta, requires_grad=True)
        fn = tpt.conv2d if x.dim() == 4 else tpt.conv3d
        y = fn(x, w, b, s, p, d, g)
        assert y.shape == conv_ref(x, w, b, s, p, d, g).shape
        fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        assert y.is_contiguous(memory_format=fmt)
        y.sum().backward()
        assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    a = torch.empty(3, 5, 7, **meta, requires_grad=True)
    bm = torch.empty(7, 9, **meta, requires_grad=True)
    z = tpt.matmul(a, bm)
    assert z.shape == (3, 5, 9)
    z.sum().backward()
    assert a.grad.shape == a.shape and bm.grad.shape == bm.shape
    assert tpt.linear(torch.empty(2, 3, 7, **meta), torch.empty(5, 7, **meta)).shape == (2, 3, 5)


def test_bad_shapes_and_devices_raise_clear_errors():
    with pytest.raises(ValueError, match="tilepick.linear: input"):
        tpt.linear(torch.empty(4, 7, device="meta"), torch.empty(5, 8, device="meta"))
    with pytest.raises(ValueError, match="groups=3"):
        tpt.conv2d(torch.empty(1, 8, 9, 9, device="meta"), torch.empty(8, 8, 3, 3, device="meta"), groups=3)
    with pytest.raises(ValueError, match="only 2-D @ 2-D"):
        tpt.matmul(torch.empty(5, 7, device="meta"), torch.empty(3, 7, 9, device="meta"))
    with pytest.raises(tpt.Unsupported, match="input is on cpu"):
        tpt.linear(torch.randn(4, 7), torch.randn(5, 7))
    with pytest.raises(ValueError, match="set_strategy"):
        tpt.set_strategy("fastest")


def test_fallback_runs_torch_with_a_warning_and_compiles():
    tpt.set_fallback(True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, stride=2, groups=4), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 5 * 5, 10))
    x = torch.randn(2, 3, 12, 12)
    ref = model(x)
    assert tpt.swap_modules(model) == 3
    with pytest.warns(UserWarning, match="running torch instead"):
        tpt._warned.clear()
        out = model(x)
    torch.testing.assert_close(out, ref)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    xg = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(xg)
        out.square().sum().backward()
    torch.testing.assert_close(out, ref)
    xr = x.clone().requires_grad_()
    tpt.unswap_modules(model)
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    model(xr).square().sum().backward()
    torch.testing.assert_close(xg.grad, xr.grad)
    for n, p in model.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, msg=n)


def test_swap_modules_reports_what_it_leaves():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding="same"), torch.nn.Conv2d(4, 4, 2, padding="same"),
                                torch.nn.Conv2d(4, 4, 3, padding_mode="reflect"), torch.nn.Conv3d(4, 4, 1),
                                torch.nn.ConvTranspose2d(4, 4, 3), torch.nn.Linear(4, 4))
    skipped = []
    with pytest.warns(UserWarning, match="left 1"):
        assert tpt.swap_modules(model, skipped=skipped) == 3
    assert [n for n, _ in skipped] == ["1", "2"]
    assert isinstance(model[0], tpt.Conv2d) and model[0]._tilepick_padding == [1, 1]
    assert isinstance(model[3], tpt.Conv3d) and type(model[4]) is torch.nn.ConvTranspose2d
    assert tpt.unswap_modules(model) == 3 and type(model[5]) is torch.nn.Linear
    assert tpt.swap_modules(model, conv=False) == 1


# --------------------------------------------------------------- no GPU: operand plumbing vs specs

def logical(view, dims, order):
    """The memory-order view with dims `dims`, permuted to `order` (letters missing from dims are skipped)."""
    return view.permute([dims.index(c) for c in order if c in dims])


class RefPlan:
    def __init__(self, problem):
        self.problem = problem
        self.workspace_bytes = 0


def memory_view(t, spec):
    """The spec-shaped memory of t, accepted as tilepick's check_tensor does: t in memory order, or its
    logical view (a matrix as rows x cols, a conv tensor as N C spatial with channels-last strides)."""
    n = t.dim()
    logical_to_memory = t.permute(0, *range(2, n), 1) if n >= 4 else t.mT if n >= 2 else t
    for v in (t, logical_to_memory):
        if tuple(v.shape) == spec.shape and v.is_contiguous():
            return v
    raise AssertionError(f"{spec.name}: shape {tuple(t.shape)} strides {t.stride()} is not {spec}")


def ref_run(plan, tensors, index):
    """Checks the tensors against operand_specs, then computes the problem in fp64 from their memory."""
    specs = tilepick.operand_specs(plan.problem)
    assert len(tensors) == len(specs), plan.problem
    views = [memory_view(t, s) for t, s in zip(tensors, specs)]
    for v, s in zip(views, specs):
        assert tpt._DTYPES[v.dtype] == s.dtype
    ref_compute(plan, specs, views)


def ref_run_pointers(plan, pointers):
    """Plan.run_pointers on CPU memory: each pointer read as its operand's memory-order f32 array."""
    specs = tilepick.operand_specs(plan.problem)
    assert len(pointers) == len(specs), plan.problem
    views = []
    for ptr, s in zip(pointers, specs):
        n = math.prod(s.shape)
        buf = (ctypes.c_float * n).from_address(ptr)
        views.append(torch.frombuffer(buf, dtype=torch.float32).view(s.shape))
    ref_compute(plan, specs, views)


def ref_compute(plan, specs, views):
    t = {s.name: v.double() for v, s in zip(views, specs)}
    dims = {s.name: s.dims for s in specs}
    j = json.loads(_core.problem_json(plan.problem))
    if tilepick.problem_op(plan.problem) == "gemm":
        d = logical(t["A"], dims["A"], "BMK") @ logical(t["B"], dims["B"], "BKN")
        if "bias" in t:
            d = d + t["bias"]
        out, name = d, "D"
        order = "BMN"
    else:
        nd = j["ndim"]
        sp = "DHW"[3 - nd:]
        fsp = "ZYX"[3 - nd:]
        sl = slice(3 - nd, 3)
        stride, pad, dil = j["stride"][sl], j["pad"][sl], j["dilation"][sl]
        g = j["g"]
        xo, wo, yo = "NC" + sp, "KC" + fsp, "NK" + sp
        grad = torch.nn.grad
        if j["dir"] == "fwd":
            out = conv_ref(logical(t["x"], dims["x"], xo), logical(t["w"], dims["w"], wo), t.get("bias"),
                           stride, pad, dil, g)
            name, order = "y", yo
        elif j["dir"] == "bwd_data":
            fn = grad.conv2d_input if nd == 2 else grad.conv3d_input
            xs = [j["mb"], j["ic"], *j["in"][sl]]
            out = fn(xs, logical(t["w"], dims["w"], wo), logical(t["dy"], dims["dy"], yo), stride, pad, dil, g)
            name, order = "dx", xo
        else:
            fn = grad.conv2d_weight if nd == 2 else grad.conv3d_weight
            ws = [j["oc"], j["ic"] // g, *j["filter"][sl]]
            out = fn(logical(t["x"], dims["x"], xo), ws, logical(t["dy"], dims["dy"], yo), stride, pad, dil, g)
            name, order = "dw", wo
    i = [s.name for s in specs].index(name)
    target = logical(views[i], dims[name], order)
    target.copy_(out.reshape(target.shape))


@pytest.fixture
def reference_executor(monkeypatch):
    """Plans become RefPlans and runs ref_run, on CPU tensors: tests everything but the kernels."""
    made = []

    def plan_or_fallback(op, key, make_problem, device, bucket=None):
        made.append(make_problem())
        return RefPlan(made[-1])

    monkeypatch.setattr(tpt, "_plan_or_fallback", plan_or_fallback)
    monkeypatch.setattr(tpt, "_run", ref_run)
    monkeypatch.setattr(tpt, "_seen", {})
    monkeypatch.setattr(tpt, "_run_seen", lambda seen, pointers: ref_run_pointers(seen[0], pointers))
    monkeypatch.setattr(tpt, "_index", lambda device: -1)
    monkeypatch.setattr(tpt, "_unsupported_reason", lambda tensors, names=None: None)
    monkeypatch.setitem(tpt._DTYPES, torch.float32, "f32")  # problems in f32 (tf32 on a GPU): exact here
    return made


def rand(*shape, dtype=torch.float32, requires_grad=True):
    return torch.randn(*shape, dtype=dtype).requires_grad_(requires_grad)


def check_grads(out, ref, inputs, ref_inputs, atol=2e-4, rtol=1e-3, grad_atol_of_max=None):
    """grad_atol_of_max: the gradients' atol as that fraction of the largest reference gradient (16-bit sums,
    whose rounding error scales with the largest terms, not with each element)."""
    torch.testing.assert_close(out, ref, atol=atol, rtol=rtol)
    g = torch.randn_like(ref)
    out.backward(g)
    ref.backward(g)
    for a, b in zip(inputs, ref_inputs):
        if a is not None:
            grad_atol = atol if grad_atol_of_max is None else grad_atol_of_max * b.grad.abs().max().item()
            torch.testing.assert_close(a.grad, b.grad, atol=grad_atol, rtol=rtol)


def clone_leaves(*ts):
    return [None if t is None else t.detach().clone().requires_grad_() for t in ts]


@pytest.mark.parametrize("case", CONV2D + CONV3D, ids=conv_id)
def test_conv_plumbing_matches_torch(reference_executor, case):
    torch.manual_seed(1)
    xs, ws, s, p, d, g = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    xr, wr, br = clone_leaves(x, w, b)
    fn = tpt.conv2d if len(xs) == 4 else tpt.conv3d
    check_grads(fn(x, w, b, s, p, d, g), conv_ref(xr, wr, br, s, p, d, g), [x, w, b], [xr, wr, br])
    assert [tilepick.problem_op(q) for q in reference_executor] == ["conv_fwd", "conv_bwd_data", "conv_bwd_weight"]
    assert reference_executor[0].endswith("ep=bias")


def test_inputs_not_in_channels_last_memory_are_copied_with_one_warning(reference_executor):
    torch.manual_seed(3)
    x, w = rand(2, 16, 9, 9).contiguous(), rand(24, 16, 3, 3).contiguous()  # NCHW, torch's default
    tpt._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            y = tpt.conv2d(x, w, None, 1, 1)
    said = [str(c.message) for c in caught if "channels-last" in str(c.message)]
    assert len(said) == 2 and any("the input" in m for m in said) and any("the weight" in m for m in said), said
    torch.testing.assert_close(y.double(), conv_ref(x.double(), w.double(), None, (1, 1), (1, 1), (1, 1), 1),
                               atol=1e-2, rtol=1e-2)


def test_repeated_shapes_take_the_seen_path(reference_executor):
    """A second call with the same shapes, strides and parameters plans nothing and runs the first call's
    plan on bare pointers, with the same results; a new stride order or a settings change does not."""
    torch.manual_seed(3)
    xs, ws = (2, 6, 7, 5), (4, 3, 3, 3)
    for i in range(2):
        x = rand(*xs).contiguous(memory_format=torch.channels_last).detach().requires_grad_()
        w = rand(*ws).contiguous(memory_format=torch.channels_last).detach().requires_grad_()
        b = rand(ws[0])
        xr, wr, br = clone_leaves(x, w, b)
        out, ref = tpt.conv2d(x, w, b, 1, 1, 1, 2), conv_ref(xr, wr, br, 1, 1, 1, 2)
        torch.testing.assert_close(out, ref, atol=2e-4, rtol=1e-3)
        g = torch.randn_like(out)  # channels-last, as out: the backward ops need no copies
        out.backward(g)
        ref.backward(g)
        for t, tr in ((x, xr), (w, wr), (b, br)):
            torch.testing.assert_close(t.grad, tr.grad, atol=2e-4, rtol=1e-3)
        assert len(reference_executor) == 3, "the second call planned again"
    assert len(tpt._seen) == 3  # fwd, bwd_data, bwd_weight
    x, w = rand(*xs), rand(*ws)  # NCHW: copied to channels-last, so not remembered
    tpt.conv2d(x, w, None, 1, 1, 1, 2)
    assert len(reference_executor) == 4 and len(tpt._seen) == 3
    tpt.set_fallback(False)  # any setter starts over
    x2, w2 = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
    for _ in range(2):
        tpt.conv2d(x2, w2, None, 1, 1, 1, 2)
    assert len(reference_executor) == 5 and len(tpt._seen) == 4
    a, m = rand(5, 12, requires_grad=False), rand(12, 7, requires_grad=False)
    for _ in range(2):
        torch.testing.assert_close(tpt.matmul(a, m), a @ m, atol=2e-4, rtol=1e-3)
    assert len(reference_executor) == 6 and len(tpt._seen) == 5


def test_linear_and_matmul_plumbing_matches_torch(reference_executor):
    torch.manual_seed(2)
    x, w, b = rand(3, 5, 12), rand(7, 12), rand(7)
    xr, wr, br = clone_leaves(x, w, b)
    check_grads(tpt.linear(x, w, b), F.linear(xr, wr, br), [x, w, b], [xr, wr, br])
    layouts = [q.split()[1] for q in reference_executor]
    assert layouts == ["rcr", "rrr", "crr"], reference_executor
    for a_shape, b_shape, ta, tb in [((6, 9), (9, 4), False, False), ((6, 9), (4, 9), False, True),
                                     ((9, 6), (9, 4), True, False), ((3, 6, 9), (3, 9, 4), False, False),
                                     ((3, 9, 6), (3, 4, 9), True, True), ((2, 3, 6, 9), (9, 4), False, False),
                                     ((1, 6, 9), (1, 4, 9), False, True)]:
        a, bb = rand(*a_shape), rand(*b_shape)
        ar, br2 = clone_leaves(a, bb)
        op_a = a.mT if ta else a
        op_b = bb.mT if tb else bb
        ref_a = ar.mT if ta else ar
        ref_b = br2.mT if tb else br2
        check_grads(tpt.matmul(op_a, op_b), torch.matmul(ref_a, ref_b), [a, bb], [ar, br2])
    assert any(" crr " in q or " ccr " in q for q in reference_executor)  # transposed views read in place


def test_opcheck_every_op(reference_executor):
    """torch.library.opcheck on every custom op (schema, fake kernel against the real one, autograd
    registration, AOT dispatch), the kernels replaced by the fp64 reference executor on CPU tensors."""
    torch.manual_seed(7)
    cl = dict(memory_format=torch.channels_last)
    x, w, b = rand(2, 16, 9, 7).contiguous(**cl), rand(24, 16, 3, 3).contiguous(**cl), rand(24)
    x3, w3 = rand(1, 8, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d), \
        rand(16, 8, 3, 3, 3).contiguous(memory_format=torch.channels_last_3d)
    dy = rand(2, 24, 5, 4, requires_grad=False).contiguous(**cl)
    cases = [
        (torch.ops.tilepick.linear.default, (rand(3, 5, 12), rand(7, 12), rand(7))),
        (torch.ops.tilepick.linear.default, (rand(4, 12), rand(7, 12), None)),
        (torch.ops.tilepick.matmul.default, (rand(3, 6, 9), rand(3, 9, 4))),
        (torch.ops.tilepick.conv2d.default, (x, w, b, [2, 2], [1, 1], [1, 1], 1)),
        (torch.ops.tilepick.conv3d.default, (x3, w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)),
        (torch.ops.tilepick.conv_bwd_data.default, (dy, w.detach(), [2, 16, 9, 7], [2, 2], [1, 1], [1, 1], 1)),
        (torch.ops.tilepick.conv_bwd_weight.default, (x.detach(), dy, [24, 16, 3, 3], [2, 2], [1, 1], [1, 1], 1)),
    ]
    for op, args in cases:
        result = torch.library.opcheck(op, args)
        assert all(v == "SUCCESS" for v in result.values()), (op, result)


@pytest.fixture
def reference_planner(monkeypatch):
    """tilepick.plan itself replaced (the module's own planning, caching and bucketing run): each call is
    recorded as (problem, strategy, config) and returns a RefPlan whose kernel names what chose it."""
    calls = []

    def plan(problem, strategy="auto", k=4, config="", **kwargs):
        calls.append((problem, strategy, config))
        p = RefPlan(problem)
        p.kernel = config or "choice for " + problem
        return p

    monkeypatch.setattr(tilepick, "plan", plan)
    monkeypatch.setattr(tpt, "_run", ref_run)
    monkeypatch.setattr(tpt, "_run_seen", lambda seen, pointers: ref_run_pointers(seen[0], pointers))
    monkeypatch.setattr(tpt, "_plans", {})
    monkeypatch.setattr(tpt, "_seen", {})
    monkeypatch.setattr(tpt, "_index", lambda device: -1)
    monkeypatch.setattr(tpt, "_unsupported_reason", lambda tensors, names=None: None)
    monkeypatch.setitem(tpt._DTYPES, torch.float32, "f32")
    return calls


def test_gemm_buckets_choose_once_per_bucket_of_m(reference_planner, monkeypatch):
    """With set_gemm_buckets(True) a new token count plans with the kernel its bucket (next power of two >= 16)
    chose (strategy fixed), never ranking again; where that kernel cannot run an M, the M gets its own choice."""
    torch.manual_seed(9)
    tpt.set_gemm_buckets(True)
    w, b = rand(7, 12, requires_grad=False), rand(7, requires_grad=False)
    for m in (5, 9, 16, 3, 40, 9):
        x = rand(m, 12, requires_grad=False)
        torch.testing.assert_close(tpt.linear(x, w, b), F.linear(x, w, b), atol=2e-4, rtol=1e-3)
    m_of = lambda problem: problem.split()[2]  # noqa: E731
    ranked = [m_of(p) for p, strategy, _ in reference_planner if strategy != "fixed"]
    fixed = [(m_of(p), config) for p, strategy, config in reference_planner if strategy == "fixed"]
    assert ranked == ["m16", "m64"], reference_planner
    assert [m for m, _ in fixed] == ["m5", "m9", "m3", "m40"]
    assert {c for m, c in fixed if m != "m40"} == {"choice for " + tilepick.gemm_problem(16, 7, 12, "f32", "rcr",
                                                                                       bias=True)}
    real_plan = tilepick.plan

    def refuse_m2(problem, strategy="auto", config="", **kwargs):
        if strategy == "fixed" and m_of(problem) == "m2":
            raise ValueError("fixed config '...' is not legal for " + problem)
        return real_plan(problem, strategy=strategy, config=config, **kwargs)

    monkeypatch.setattr(tilepick, "plan", refuse_m2)
    tpt.linear(rand(2, 12, requires_grad=False), w, b)
    assert (reference_planner[-1][1], m_of(reference_planner[-1][0])) == ("heuristic", "m2")
    tpt.set_gemm_buckets(False)  # exact choices again
    tpt.linear(rand(5, 12, requires_grad=False), w, b)
    assert (reference_planner[-1][1], m_of(reference_planner[-1][0])) == ("heuristic", "m5")


def _two_ranks(worker):
    """worker(rank) in two forked processes joined by a gloo process group; their results by rank."""
    import socket
    import torch.distributed as dist
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = torch.multiprocessing.get_context("fork")
    results = ctx.Queue()

    def run(rank):
        try:
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
            results.put((rank, worker(rank)))
            dist.destroy_process_group()
        except BaseException as e:  # reported, not lost in the child
            results.put((rank, e))

    procs = [ctx.Process(target=run, args=(r,)) for r in range(2)]
    for p in procs:
        p.start()
    out = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    return out


def test_distributed_ranks_run_the_first_ranks_choices(reference_planner):
    """set_distributed(True): with a timed strategy each rank would run its own fastest kernel; instead rank 0
    plans, the other rank plans rank 0's kernel with strategy fixed, and a problem rank 0 cannot plan fails on
    both ranks (no rank is left waiting)."""
    real_plan = tilepick.plan
    w, b = rand(7, 12, requires_grad=False), rand(7, requires_grad=False)

    def worker(rank, agreed=True):
        def timed_here(problem, strategy="auto", k=4, config="", **kwargs):
            if strategy != "fixed" and " m3 " in problem:
                raise ValueError("no kernel for " + problem)
            p = real_plan(problem, strategy=strategy, k=k, config=config, **kwargs)
            if strategy != "fixed":
                p.kernel = f"rank {rank}'s fastest for {problem.split()[2]}"
            return p

        tilepick.plan = timed_here
        tpt.set_strategy("top_k", k=4)
        tpt.set_distributed(agreed)
        for m in (5, 9, 5):
            x = rand(m, 12, requires_grad=False)
            torch.testing.assert_close(tpt.linear(x, w, b), F.linear(x, w, b), atol=2e-4, rtol=1e-3)
        try:
            tpt.linear(rand(3, 12, requires_grad=False), w, b)
            error = None
        except tpt.Unsupported as e:
            error = str(e)
        return sorted(p.kernel for p in tpt._plans.values()), [s for _, s, _ in reference_planner], error

    res = _two_ranks(worker)
    for rank in (0, 1):
        assert not isinstance(res[rank], BaseException), res[rank]
    assert res[0][0] == res[1][0] == ["rank 0's fastest for m5", "rank 0's fastest for m9"]
    assert res[0][1] == ["top_k", "top_k"] and res[1][1] == ["fixed", "fixed"]
    assert "rank 0: no kernel for" in res[0][2] and "rank 0: no kernel for" in res[1][2]
    own = _two_ranks(lambda rank: worker(rank, agreed=False))  # without it each rank keeps its own choice
    assert own[1][0] == ["rank 1's fastest for m5", "rank 1's fastest for m9"], own[1]
    tpt.set_distributed(False)
    tpt.set_strategy("auto")


def test_warmup_plans_a_steps_problems_ahead_and_leaves_the_module_alone(reference_planner):
    """warmup() runs one step in torch while noting the problems, restores gradients and BatchNorm statistics,
    plans every problem (forward and backward) once, and the real step then plans nothing new and matches torch."""
    made = reference_planner
    torch.manual_seed(8)
    model = torch.nn.Sequential(torch.nn.Conv2d(6, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 4 * 4, 5))
    model = model.to(memory_format=torch.channels_last)
    ref = copy.deepcopy(model)
    assert tpt.swap_modules(model) == 3
    x = rand(2, 6, 8, 8, requires_grad=False).contiguous(memory_format=torch.channels_last)
    stats = model[1].running_mean.clone()
    # fwd and bwd_weight of the first conv (x needs no gradient), all three of the second, rcr, rrr, crr of the linear
    assert tpt.warmup(model, x) == 8
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(model[1].running_mean, stats) and int(model[1].num_batches_tracked) == 0
    assert sorted(tilepick.problem_op(q) for q, _, _ in made).count("gemm") == 3
    step = model(x)
    step.sum().backward()
    assert len(made) == 8, "the step planned a problem the warm-up missed"
    expect = ref(x)
    expect.sum().backward()
    torch.testing.assert_close(step, expect, atol=2e-4, rtol=1e-3)
    torch.testing.assert_close(model[0].weight.grad, ref[0].weight.grad, atol=2e-4, rtol=1e-3)
    tpt.set_strategy("top_k")  # a timed strategy: planned again (other plans), and one at a time
    assert tpt.warmup(model, x, backward=False) == 3 and len(made) == 11


def test_autocast_runs_fp32_parameters_in_its_dtype(reference_executor):
    """Under torch.autocast (here on the CPU: the same code path as CUDA) fp32 inputs and parameters run
    as bf16 problems, like torch's own ops, and the fp32 parameters get fp32 gradients."""
    torch.manual_seed(6)
    x, w, b = rand(3, 5, 12), rand(7, 12), rand(7)
    xr, wr, br = clone_leaves(x, w, b)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, ref = tpt.linear(x, w, b), F.linear(xr, wr, br)
        conv_x, conv_w = rand(2, 8, 9, 9), rand(16, 8, 3, 3)
        conv_xr, conv_wr = clone_leaves(conv_x, conv_w)
        conv_out = tpt.conv2d(conv_x, conv_w, None, padding=1)
        conv_ref = F.conv2d(conv_xr, conv_wr, None, padding=1)
    assert out.dtype == ref.dtype == torch.bfloat16 and conv_out.dtype == torch.bfloat16
    assert all(" bf16" in q for q in reference_executor), reference_executor
    check_grads(out.float(), ref.float(), [x, w, b], [xr, wr, br], atol=3e-2, rtol=3e-2)
    # torch's own bf16 conv backward and tilepick's (an exact sum rounded once) differ by up to about 2 bf16 ulps
    # of the largest gradient (0.14 next to a 0.07 element with torch 2.15 on the CPU): atol scales with it.
    check_grads(conv_out.float(), conv_ref.float(), [conv_x, conv_w], [conv_xr, conv_wr], atol=5e-2, rtol=3e-2,
                grad_atol_of_max=1e-2)
    assert w.grad.dtype == torch.float32 and conv_w.grad.dtype == torch.float32
    # Outside autocast nothing is cast.
    same = tpt._autocast(x, w)
    assert same[0] is x and same[1] is w


# ------------------------------------------------------------------------------------------- GPU

def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def assert_close_to_fp64(out, ref64, torch_out, what):
    """tilepick's error vs fp64 is at most twice torch's own error in the same dtype, or a dtype floor."""
    floor = 2e-2 if out.dtype == torch.bfloat16 else 2e-3
    err, torch_err = rel_err(out, ref64), rel_err(torch_out, ref64)
    assert out.shape == ref64.shape, what
    assert err <= max(2 * torch_err, floor), f"{what}: relative error {err:.3g} (torch {torch_err:.3g})"


def grads_of(fn, inputs, g):
    leaves = clone_leaves(*inputs)
    out = fn(*leaves)
    out.backward(g.to(out.dtype))
    return out, [None if t is None else t.grad for t in leaves]


def compare(fn_tp, fn_torch, inputs, what):
    """Forward and input gradients of tilepick vs torch (same dtype) and vs torch in fp64."""
    with torch.no_grad():
        ref = fn_torch(*[None if t is None else t.double() for t in inputs])
    g = torch.randn_like(ref)
    out, grads = grads_of(fn_tp, inputs, g)
    torch_out, torch_grads = grads_of(fn_torch, inputs, g)
    _, ref_grads = grads_of(fn_torch, [None if t is None else t.double() for t in inputs], g)
    assert_close_to_fp64(out, ref, torch_out, f"{what} forward")
    for i, (a, b, r) in enumerate(zip(grads, torch_grads, ref_grads)):
        if r is not None:
            assert_close_to_fp64(a, r, b, f"{what} grad {i}")
    return out


@cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CONV2D + CONV3D, ids=conv_id)
def test_conv_gpu(case, dtype):
    torch.manual_seed(3)
    xs, ws, s, p, d, g = case
    dev = dict(device="cuda", dtype=dtype)
    x, w, b = torch.randn(xs, **dev), torch.randn(ws, **dev) / (ws[1] * ws[2]) ** 0.5, torch.randn(ws[0], **dev)
    fn = tpt.conv2d if len(xs) == 4 else tpt.conv3d
    y = compare(lambda x, w, b: fn(x, w, b, s, p, d, g), lambda x, w, b: conv_ref(x, w, b, s, p, d, g), [x, w, b],
                conv_id(case))
    fmt = torch.channels_last if len(xs) == 4 else torch.channels_last_3d
    assert y.is_contiguous(memory_format=fmt)


@cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linear_gpu(dtype):
    torch.manual_seed(4)
    dev = dict(device="cuda", dtype=dtype)
    x, w, b = torch.randn(3, 37, 200, **dev), torch.randn(136, 200, **dev) / 14, torch.randn(136, **dev)
    compare(tpt.linear, F.linear, [x, w, b], "linear")
    compare(tpt.linear, F.linear, [x[:, :5].reshape(-1, 200), w, None], "linear without bias")


@cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_matmul_gpu(dtype):
    torch.manual_seed(5)
    dev = dict(device="cuda", dtype=dtype)
    cases = [((129, 72), (72, 200), lambda a, b: (a, b)),
             ((72, 129), (72, 200), lambda a, b: (a.mT, b)),
             ((4, 65, 96), (4, 96, 40), lambda a, b: (a, b)),
             ((4, 65, 96), (4, 40, 96), lambda a, b: (a, b.mT)),
             ((2, 3, 33, 64), (64, 48), lambda a, b: (a, b))]
    for a_shape, b_shape, view in cases:
        a, b = torch.randn(a_shape, **dev), torch.randn(b_shape, **dev) / 8
        compare(lambda a, b: tpt.matmul(*view(a, b)), lambda a, b: torch.matmul(*view(a, b)), [a, b],
                f"matmul {a_shape} {b_shape}")


@cuda
def test_autocast_gpu():
    """fp32 parameters under torch.autocast(bf16) after swap_modules: outputs and gradients within
    bf16 error of torch's own autocast run."""
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(32 * 9 * 9, 40)).cuda()
    ref = copy.deepcopy(model)
    assert tpt.swap_modules(model) == 2
    x = torch.randn(4, 16, 9, 9, device="cuda").to(memory_format=torch.channels_last)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out, want = model(x), ref(x)
    assert out.dtype == want.dtype == torch.bfloat16
    assert rel_err(out.float(), want.double()) < 2e-2
    out.float().sum().backward()
    want.float().sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.grad.dtype == torch.float32
        assert rel_err(p.grad, q.grad.double()) < 3e-2


@cuda
def test_nchw_inputs_are_copied_and_top_k_plans():
    torch.manual_seed(6)
    dev = dict(device="cuda", dtype=torch.bfloat16)
    x, w = torch.randn(2, 32, 15, 15, **dev), torch.randn(64, 32, 3, 3, **dev) / 17
    ref = F.conv2d(x.double(), w.double(), None, 1, 1)
    assert_close_to_fp64(tpt.conv2d(x, w, None, 1, 1), ref, F.conv2d(x, w, None, 1, 1), "nchw conv")
    tpt.set_strategy("top_k", k=2)
    y = tpt.conv2d(x.contiguous(memory_format=torch.channels_last), w, None, 1, 1)
    assert_close_to_fp64(y, ref, F.conv2d(x, w, None, 1, 1), "top_k conv")
    infos = [p.info for k, p in tpt._plans.items() if k[-3] == "top_k"]
    assert infos and all(i["strategy"] == "top_k" and i["device"] == 0 for i in infos)
    assert any(c.get("time_us", -1) > 0 for i in infos for c in i["candidates"])


@cuda
def test_race_plans_keep_the_faster_of_ours_and_cudnn():
    torch.manual_seed(7)
    dev = dict(device="cuda", dtype=torch.bfloat16)
    x, w = torch.randn(3, 24, 17, 19, **dev), torch.randn(40, 24, 3, 3, **dev) / 15
    tpt.set_strategy("race")
    try:
        y = tpt.conv2d(x.contiguous(memory_format=torch.channels_last), w, None, 1, 1)
    finally:
        tpt.set_strategy("heuristic")
    assert_close_to_fp64(y, F.conv2d(x.double(), w.double(), None, 1, 1), F.conv2d(x, w, None, 1, 1), "race conv")
    infos = [p.info for k, p in tpt._plans.items() if k[-3] == "race"]
    assert infos and all(i["strategy"] == "race" for i in infos)
    for i in infos:  # ours and cuDNN's heuristic kernel, both timed, the faster one runs
        c = i["candidates"]
        assert 1 <= len(c) <= 2 and any(x["vendor"] for x in c), c
        assert c[0].get("time_us", -1) > 0 and all(x.get("time_us", -1) < 0 or x["time_us"] >= c[0]["time_us"] for x in c), c
        assert i["vendor"] == c[0]["vendor"], i


@cuda
def test_gpu_errors():
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(tpt.Unsupported, match="dtype torch.float32"):
        tpt.linear(x, torch.randn(8, 8, device="cuda"))
    tpt.set_fallback(True)
    with pytest.warns(UserWarning, match="float32"):
        tpt._warned.clear()
        torch.testing.assert_close(tpt.linear(x, torch.eye(8, device="cuda")), x)
    plan = tilepick.plan(tilepick.gemm_problem(64, 128, 96, "bf16"))
    a = torch.randn(64, 96, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(96, 128, device="cuda", dtype=torch.bfloat16)
    d = torch.empty(64, 128, device="cuda", dtype=torch.bfloat16)
    bt = b.mT.contiguous()  # B column-major: memory [N][K]
    with pytest.raises(ValueError, match="operand B"):
        tilepick.run(plan, a, b, d)  # row-major [K][N] memory
    with pytest.raises(ValueError, match="operand D.*host memory"):
        tilepick.run(plan, a, bt, d.cpu())
    tilepick.run(plan, a, bt.mT, d)  # the logical K x N view of column-major memory
    assert_close_to_fp64(d, a.double() @ b.double(), a @ b, "tilepick.run on torch tensors")
    d.zero_()
    plan.run([a, bt, d])  # DLPack, memory order
    assert_close_to_fp64(d, a.double() @ b.double(), a @ b, "Plan.run on DLPack tensors")


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=8)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = F.relu(self.conv1(x))
        y = F.relu(self.conv2(y))
        return self.fc(y.mean((2, 3)))


@cuda
@pytest.mark.parametrize("vendor", ["off", "only"])
def test_cuda_graph_capture_replays_the_training_step(vendor):
    """A whole training step (forward and backward through tilepick's kernels or cuDNN's graph API) is captured
    as a CUDA graph; each replay on new input data gives the eager step's output and gradients."""
    torch.manual_seed(8)
    net = SmallNet().cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    tpt.swap_modules(net)
    tpt.set_vendor(vendor)
    try:
        x = torch.randn(4, 16, 20, 20, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)

        def step():
            out = net(x)
            out.float().square().sum().backward()
            return out

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up: plans every shape outside the capture
            for _ in range(2):
                net.zero_grad(set_to_none=True)
                step()
        torch.cuda.current_stream().wait_stream(side)
        net.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = step()
        graph_grads = [p.grad for p in net.parameters()]  # the tensors each replay writes
        for seed in (1, 2):
            torch.manual_seed(seed)
            x.copy_(torch.randn_like(x))
            graph.replay()
            torch.cuda.synchronize()
            replayed = [captured.clone()] + [g.clone() for g in graph_grads]
            net.zero_grad(set_to_none=True)
            eager = [step()] + [p.grad for p in net.parameters()]
            for a, b in zip(replayed, eager):
                torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
    finally:
        tpt.set_vendor(None)


@cuda
def test_torch_compile_gpu():
    torch.manual_seed(7)
    net = SmallNet().cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    x = torch.randn(4, 16, 20, 20, device="cuda", dtype=torch.bfloat16)
    ref = net(x)
    assert tpt.swap_modules(net) == 3
    eager = net(x)
    compiled = torch.compile(net, fullgraph=True)
    out = compiled(x)
    torch.testing.assert_close(out, eager, atol=2e-2, rtol=2e-2)
    assert rel_err(out, ref.double()) < 3e-2
    out.float().square().sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def train_step_grads(model, x):
    model.zero_grad()
    out = model(x)
    out.to(torch.float64 if out.dtype == torch.float64 else torch.float32).square().mean().backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@cuda
def test_swap_resnet18_matches_torch():
    """Eval forward and one training step (batch-norm on batch statistics) of resnet18 through tilepick:
    each output and gradient is at most twice as far from the fp64 model as torch's own bf16 is."""
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(8)
    model = tv.models.resnet18(num_classes=100).cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    model64 = copy.deepcopy(model).double()
    fast = copy.deepcopy(model)
    assert tpt.swap_modules(fast) == 21  # 20 convolutions and the classifier
    x = torch.randn(8, 3, 96, 96, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    for train in (False, True):
        for m in (model, model64, fast):
            m.train(train)
        results = [train_step_grads(m, x if m is not model64 else x.double()) for m in (model, model64, fast)]
        (ref, ref_grads), (ref64, ref64_grads), (out, grads) = results
        what = "train" if train else "eval"
        assert_close_to_fp64(out, ref64, ref, f"resnet18 {what} output")
        for n, g64 in ref64_grads.items():
            assert_close_to_fp64(grads[n], g64, ref_grads[n], f"resnet18 {what} grad {n}")
