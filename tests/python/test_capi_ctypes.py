"""The C API (libtilepick_c.so) from Python through ctypes: problems, operand specs, errors, offline
plans (same kernel as `tilepick select`), the thread-local last error. ctest sets TILEPICK_C_LIB
and TILEPICK_CLI; without them these tests are skipped. No GPU needed."""
import ctypes as C
import json
import os
import subprocess
import threading

import pytest

from tilepick import capi
from tilepick.capi import (INVALID_ARGUMENT, INVALID_PROBLEM, NOT_FOUND, OK, PARSE_ERROR, UNSUPPORTED,
                           Applicability, OperandSpec, PlanOptions, Tensor)

LIB_PATH = os.environ.get("TILEPICK_C_LIB", "")
CLI = os.environ.get("TILEPICK_CLI", "")
pytestmark = pytest.mark.skipif(not LIB_PATH, reason="TILEPICK_C_LIB is not set")

GEMM = "gemm rcr m128 n256 k64 bf16"


@pytest.fixture(scope="module")
def lib():
    return capi.load(LIB_PATH)


def last_error(lib):
    return lib.tp_last_error().decode()


def parse(lib, text):
    h = C.c_void_p()
    status = lib.tp_problem_parse(text.encode(), C.byref(h))
    assert status == OK, last_error(lib)
    return h


def options(lib, **fields):
    o = PlanOptions()
    assert lib.tp_plan_options_init(C.byref(o)) == OK
    for k, v in fields.items():
        setattr(o, k, v.encode() if isinstance(v, str) else v)
    return o


def test_only_tp_symbols_are_exported():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB_PATH], capture_output=True, text=True, check=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert "tp_plan_create" in names and "tp_last_error" in names
    assert [n for n in names if not n.startswith("tp_")] == []


def test_problem_and_operands(lib):
    assert lib.tp_version().decode().count(".") == 2
    p = parse(lib, GEMM)
    try:
        s = C.c_char_p()
        assert lib.tp_problem_string(p, C.byref(s)) == OK
        assert s.value.decode().startswith("gemm rcr") and last_error(lib) == ""
        assert lib.tp_problem_op(p, C.byref(s)) == OK and s.value == b"gemm"
        n = C.c_size_t()
        assert lib.tp_problem_operand_count(p, C.byref(n)) == OK and n.value == 3
        specs = []
        for i in range(3):
            o = OperandSpec()
            assert lib.tp_problem_operand(p, i, C.byref(o)) == OK
            specs.append((o.name, o.slot, o.dims, o.dtype, [o.shape[j] for j in range(o.ndim)], o.output))
        assert specs == [(b"A", b"a", b"MK", 1, [128, 64], 0), (b"B", b"b", b"NK", 1, [256, 64], 0),
                         (b"D", b"d", b"MN", 1, [128, 256], 1)]
        o = OperandSpec()
        assert lib.tp_problem_operand(p, 3, C.byref(o)) == INVALID_ARGUMENT
        assert "index 3 is out of range" in last_error(lib)
    finally:
        lib.tp_problem_destroy(p)


def test_errors(lib):
    h = C.c_void_p(1234)
    assert lib.tp_problem_parse(b"gemm rcr m12x n1 k1 f16", C.byref(h)) == PARSE_ERROR
    assert h.value is None and "m12x" in last_error(lib)
    assert lib.tp_problem_parse(None, C.byref(h)) == INVALID_ARGUMENT
    assert last_error(lib) == "tp_problem_parse: argument 'text' is NULL"
    assert lib.tp_problem_parse(b"fwd g3 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f16", C.byref(h)) == INVALID_PROBLEM
    assert lib.tp_plan_kernel(None, None) == INVALID_ARGUMENT and "'plan'" in last_error(lib)
    assert lib.tp_plan_create(None, None, None) == INVALID_ARGUMENT

    p = parse(lib, GEMM)
    plan = C.c_void_p()
    try:
        o = options(lib, offline_arch="h200", strategy=42)
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == INVALID_ARGUMENT
        assert "options.strategy 42 is not a tp_strategy" in last_error(lib)
        o = options(lib, offline_arch="h200")
        assert o.strategy == 5 and o.auto_time_us < 0  # tp_strategy_auto; its threshold from the environment
        o.auto_time_us = float("nan")
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == INVALID_ARGUMENT
        assert "options.auto_time_us is NaN" in last_error(lib)
        o = options(lib, offline_arch="h200", policy=b"auto:k=zero")
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == PARSE_ERROR
        assert "policy 'auto:k=zero': k='zero' is not an integer >= 1" in last_error(lib)
        o = options(lib, offline_arch="h200", policy=b"heuristic:vendor=off")
        assert o.strategy == 5 and o.policy == b"heuristic:vendor=off"
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == OK
        lib.tp_plan_destroy(plan)
        plan = C.c_void_p()
        o = options(lib, offline_arch="no_such_gpu")
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == NOT_FOUND and plan.value is None
    finally:
        lib.tp_problem_destroy(p)

    fp8 = parse(lib, "gemm rcr m256 n256 k256 e4m3:e4m3:bf16")
    try:
        o = options(lib, offline_arch="a100_sxm", vendor=0)
        a = Applicability()
        assert lib.tp_check(fp8, C.byref(o), C.byref(a)) == OK
        assert a.ok == 0 and b"no legal tilepick kernel" in a.reason
        assert lib.tp_plan_create(fp8, C.byref(o), C.byref(plan)) == UNSUPPORTED
        assert "no legal tilepick kernel" in last_error(lib)
    finally:
        lib.tp_problem_destroy(fp8)


def select_top1(problem, arch):
    out = subprocess.run([CLI, "select", "-p", problem, "--arch", arch, "-k", "1"], capture_output=True, text=True,
                         check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("1 ")]
    assert len(rows) == 1, out
    return rows[0][rows[0].index("fam="):].strip()


@pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
@pytest.mark.parametrize("text", [GEMM, "fwd g32 mb4 ic256 ih14 iw14 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"])
def test_offline_plan_is_select_top1(lib, text):
    p = parse(lib, text)
    plan = C.c_void_p()
    try:
        o = options(lib, offline_arch="h200")
        assert lib.tp_plan_create(p, C.byref(o), C.byref(plan)) == OK, last_error(lib)
        k = C.c_char_p()
        assert lib.tp_plan_kernel(plan, C.byref(k)) == OK
        canonical = C.c_char_p()
        assert lib.tp_problem_string(p, C.byref(canonical)) == OK
        assert k.value.decode() == select_top1(canonical.value.decode(), "h200")
        r = C.c_int(1)
        assert lib.tp_plan_runnable(plan, C.byref(r)) == OK and r.value == 0
        js = C.c_char_p()
        assert lib.tp_plan_info_json(plan, C.byref(js)) == OK
        info = json.loads(js.value)
        assert info["kernel"] == k.value.decode() and info["arch"] == "h200" and info["device"] == -1

        assert lib.tp_plan_run(plan, None, None, None, None, None, None, None) == UNSUPPORTED
        assert last_error(lib).startswith("tp_plan_run: ") and "made offline for arch h200" in last_error(lib)
        tensors = (Tensor * 3)()
        assert lib.tp_plan_run_tensors(plan, tensors, 3, None, None) == UNSUPPORTED
        assert lib.tp_plan_run_tensors(plan, tensors, 1, None, None) == INVALID_ARGUMENT
        assert "takes 3 tensors" in last_error(lib)
    finally:
        lib.tp_plan_destroy(plan)
        lib.tp_problem_destroy(p)


def test_last_error_is_thread_local(lib):
    """Two threads fail differently, wait for each other, then each reads its own message."""
    barrier = threading.Barrier(2)
    seen = {}

    def fail(name, text):
        h = C.c_void_p()
        status = lib.tp_problem_parse(text, C.byref(h))
        barrier.wait()  # both have failed before either reads
        seen[name] = (status, last_error(lib))
        barrier.wait()

    threads = [threading.Thread(target=fail, args=("parse", b"gemm rcr m1 n1 k1 nope")),
               threading.Thread(target=fail, args=("null", None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["parse"][0] == PARSE_ERROR and "nope" in seen["parse"][1]
    assert seen["null"][0] == INVALID_ARGUMENT and seen["null"][1] == "tp_problem_parse: argument 'text' is NULL"
    p = parse(lib, GEMM)  # success on this thread clears its message, and theirs did not leak here
    assert last_error(lib) == ""
    lib.tp_problem_destroy(p)
