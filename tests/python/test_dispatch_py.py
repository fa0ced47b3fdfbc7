"""The Python dispatcher API (tilepick.plan / select / run and the problem builders) without a GPU:
offline plans for h200 must pick what `tilepick select` ranks first, and every misuse must fail with a
message that names what is wrong."""
import os
import subprocess

import numpy as np
import pytest

import tilepick
from tilepick import _core

CLI = os.environ.get("TILEPICK_CLI", "")
needs_cli = pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")

GEMM = "gemm rcr m1000 n3000 k777 bf16 ep=bias"
CONV = "fwd g1 mb4 ic64 ih28 iw28 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
PROBLEMS = [
    GEMM,
    "gemm rrr m2048 n4096 k1024 f16",
    CONV,
    "fwd g32 mb8 ic256 ih14 iw14 oc256 kh3 kw3 sh2 sw2 ph1 pw1 bf16",  # grouped, strided
    "bwd_data g1 mb2 ic32 ih17 iw19 oc48 kh3 kw3 sh1 sw1 ph1 pw1 f16",
    "bwd_weight g1 mb2 ic32 ih17 iw19 oc48 kh3 kw3 sh1 sw1 ph1 pw1 f16",
    "fwd g1 mb2 ic16 id8 ih12 iw12 oc32 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16",  # 3-D
]


def cli_top1(problem, arch="h200"):
    out = subprocess.run([CLI, "select", "-p", problem, "--arch", arch, "-k", "1"], check=True,
                         capture_output=True, text=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("1 ")]
    assert len(rows) == 1, out
    return rows[0].split(None, 2)[2].strip()


def test_gemm_builder_round_trips():
    p = tilepick.gemm_problem(1000, 3000, 777, dtype="bf16", bias=True)
    assert p == tilepick.canonical_problem(GEMM) == tilepick.canonical_problem(p)
    q = tilepick.gemm_problem(64, 128, 256, dtype="f16", layout="crr", batch=8, activation="relu", beta=1.0)
    assert "batch8" in q and "crr" in q and "ep=relu" in q and "beta=1" in q
    assert tilepick.canonical_problem(q) == q
    assert tilepick.problem_op(q) == "gemm"


def test_conv_builder_round_trips():
    p = tilepick.conv_problem(4, 64, 128, (28, 28), 3, padding=1)
    assert p == tilepick.canonical_problem(CONV)
    g = tilepick.conv_problem(8, 256, 256, [14, 14], (3, 3), stride=2, padding=1, groups=32)
    assert g == tilepick.canonical_problem(PROBLEMS[3])
    d3 = tilepick.conv_problem(2, 16, 32, (8, 12, 12), 3, padding=1)
    assert d3 == tilepick.canonical_problem(PROBLEMS[6])
    dil = tilepick.conv_problem(1, 8, 8, (20, 20), 3, padding=2, dilation=2, direction="bwd_data", dtype="f16")
    assert tilepick.problem_op(dil) == "conv_bwd_data" and "dh2" in dil
    fused = tilepick.conv_problem(1, 8, 16, (9, 9), 1, bias=True, activation="relu")
    assert fused.endswith("ep=bias+relu")


def test_builder_errors_name_the_problem():
    with pytest.raises(ValueError, match="conv_problem: stride"):
        tilepick.conv_problem(1, 8, 8, (9, 9), 3, stride=(1, 1, 1))
    with pytest.raises(ValueError):
        tilepick.conv_problem(1, 8, 9, (9, 9), 3, groups=2)  # 9 output channels in 2 groups
    with pytest.raises(ValueError, match="bogus"):
        tilepick.gemm_problem(8, 8, 8, dtype="bogus")


def test_select_ranks_legal_kernels():
    s = tilepick.select(GEMM, arch="h200", k=4)
    assert s.problem == GEMM and s.arch == "h200"
    assert 1 <= len(s.top) <= 4 and s.pool_size >= len(s.top)
    assert [r.score for r in s.top] == sorted((r.score for r in s.top), reverse=True)
    legal = set(_core.legal_configs(GEMM, "h200"))
    assert all(r.config in legal for r in s.top)
    assert s.best == s.top[0].config


@needs_cli
@pytest.mark.parametrize("problem", PROBLEMS)
def test_offline_plan_picks_the_cli_top1(problem):
    plan = tilepick.plan(problem, arch="h200", vendor="off")
    assert not plan.runnable
    assert plan.kernel == cli_top1(problem) == tilepick.select(problem, "h200", 1).best
    info = plan.info
    assert info["problem"] == tilepick.canonical_problem(problem)
    assert info["kernel"] == plan.kernel and info["device"] == -1 and info["arch"]
    assert info["strategy"] == "auto"  # the default, which never times offline
    assert info["candidates"] and not any("time_us" in c for c in info["candidates"])  # none timed
    assert plan.problem in repr(plan) and "offline" in repr(plan)


def test_a_policy_string_plans_as_the_shorthand_does():
    by_policy = tilepick.plan(CONV, arch="h200", policy="heuristic:vendor=off")
    by_strategy = tilepick.plan(CONV, arch="h200", strategy="heuristic", vendor="off")
    assert by_policy.kernel == by_strategy.kernel
    assert by_policy.info["policy"] == by_strategy.info["policy"] == "heuristic:vendor=off"
    assert tilepick.plan(CONV, arch="h200", policy="auto:time_us=50").info["policy"] == "auto:time_us=50"
    with pytest.raises(ValueError, match="policy 'auto:k=0': k='0' is not an integer >= 1"):
        tilepick.plan(CONV, arch="h200", policy="auto:k=0")
    with pytest.raises(ValueError, match="give the policy alone"):
        tilepick.plan(CONV, arch="h200", policy="auto", strategy="heuristic")
    assert tilepick.check(CONV, arch="h200", policy="heuristic")["ok"] is True


def test_offline_auto_plan_is_the_heuristic_plan_and_checks_its_threshold():
    auto = tilepick.plan(CONV, arch="h200", auto_time_us=0.0)  # offline: never timed, whatever the threshold
    heuristic = tilepick.plan(CONV, arch="h200", strategy="heuristic")
    assert auto.kernel == heuristic.kernel and auto.info["strategy"] == "auto"
    with pytest.raises(ValueError, match="auto_time_us must be >= 0"):
        tilepick.plan(CONV, arch="h200", auto_time_us=-1.0)
    assert tilepick.check(CONV, arch="h200", auto_time_us=-1.0)["ok"] is False


def test_offline_plan_is_cached_and_counted():
    before = tilepick.dispatcher_stats()
    a = tilepick.plan(CONV, arch="h200", vendor="off")
    b = tilepick.plan(CONV, arch="h200", vendor="off")
    after = tilepick.dispatcher_stats()
    assert a.kernel == b.kernel
    assert after["memory_hits"] + after["new_plans"] >= before["memory_hits"] + before["new_plans"] + 2
    assert isinstance(after["cache_file"], str)
    tilepick.save_plan_cache()  # offline plans are never persisted; must not fail


def test_check_reports_candidates():
    c = tilepick.check(GEMM, arch="h200", vendor="off")
    assert c["ok"] is True and c["tilepick_candidates"] > 0, c


def test_operand_specs():
    gemm = tilepick.operand_specs(GEMM)
    assert [(s.name, s.slot, s.dims, s.shape, s.output) for s in gemm] == [
        ("A", "a", "MK", (1000, 777), False), ("B", "b", "NK", (3000, 777), False),
        ("D", "d", "MN", (1000, 3000), True), ("bias", "bias", "N", (3000,), False)]
    assert all(s.dtype == "bf16" for s in gemm)
    conv = tilepick.operand_specs(CONV)
    assert [(s.name, s.dims, s.shape) for s in conv] == [
        ("x", "NHWC", (4, 28, 28, 64)), ("w", "KYXC", (128, 3, 3, 64)), ("y", "NHWK", (4, 28, 28, 128))]
    bwd_w = tilepick.operand_specs(PROBLEMS[5])
    assert [s.name for s in bwd_w] == ["x", "dy", "dw"] and bwd_w[2].output
    d3 = tilepick.operand_specs(PROBLEMS[6])
    assert d3[1].dims == "KZYXC" and d3[1].shape == (32, 3, 3, 3, 16)


def test_bad_problem_names_the_token():
    with pytest.raises(ValueError, match="q77"):
        tilepick.plan("gemm rcr m64 n64 q77 bf16", arch="h200")
    with pytest.raises(ValueError):
        tilepick.select("fwd g3 mb1 ic8 ih8 iw8 oc8 kh3 kw3 bf16")  # C % G != 0


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="strategy 'fastest'"):
        tilepick.plan(GEMM, strategy="fastest", arch="h200")
    with pytest.raises(ValueError, match="vendor 'maybe'"):
        tilepick.plan(GEMM, vendor="maybe", arch="h200")
    with pytest.raises(ValueError, match="k must be"):
        tilepick.plan(GEMM, strategy="top_k", k=0, arch="h200")
    with pytest.raises((ValueError, RuntimeError)):  # timing needs a GPU
        tilepick.plan(GEMM, strategy="top_k", arch="h200")
    with pytest.raises(ValueError, match="strategy race times kernels"):
        tilepick.plan(GEMM, strategy="race", arch="h200")
    with pytest.raises(ValueError):
        tilepick.select(GEMM, arch="no_such_gpu")


def test_running_an_offline_plan_is_refused():
    plan = tilepick.plan(GEMM, arch="h200", vendor="off")
    with pytest.raises(RuntimeError, match="offline"):
        plan.run_raw([(256, "bf16", list(s.shape), [], 0) for s in tilepick.operand_specs(GEMM)])


def test_host_arrays_are_refused_by_name():
    plan = tilepick.plan(CONV, arch="h200", vendor="off")
    x = np.zeros((4, 28, 28, 64), dtype=np.float16)
    with pytest.raises(ValueError, match="operand 0 'x'.*host memory"):
        tilepick.run(plan, x, x, x)
    with pytest.raises(ValueError, match="operand 0 'x'.*dtype int32"):
        plan.run([np.zeros(3, dtype=np.int32), x, x])
    with pytest.raises(ValueError, match="operand 0 'x'.*not a DLPack tensor"):
        plan.run(["x", x, x])
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        plan.run_raw([(256, "int8", [1], [], 0)] * 3)
    with pytest.raises(ValueError, match="stream"):
        plan.run([], stream="default")


def cli_configs(problem, select, k, *args):
    out = subprocess.run([CLI, "select", "-p", problem, "-k", str(k), "--select", select, *args], check=True,
                         capture_output=True, text=True).stdout
    return [line.split(None, 2)[2].strip() for line in out.splitlines() if line[:1].isdigit()]


@needs_cli
def test_cli_prints_the_shortlist_top_k_times():
    conv = "fwd g1 mb128 ic24 ih192 iw192 oc96 kh3 kw3 sh2 sw2 ph1 pw1 bf16"  # its first 3 share a tile shape
    full = cli_configs(conv, "full", 40)
    first = cli_configs(conv, "shortlist", 4, "--shortlist", "first")
    varied = cli_configs(conv, "shortlist", 4, "--shortlist", "varied")
    assert cli_configs(conv, "shortlist", 4) == varied  # dispatch's rule, the default
    assert first == full[:4]
    # varied: full's order, skipping a config whose tile shape is already listed
    expected = []
    for c in full:
        if _core.tile_shape(c) not in [_core.tile_shape(e) for e in expected]:
            expected.append(c)
    assert varied == expected[:4] and varied != first
