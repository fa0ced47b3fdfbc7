"""The tilepick C API from Python with ctypes (no build step, no bindings).

    TILEPICK_C_LIB=build/libtilepick_c.so python3 examples/python/capi_ctypes.py [PROBLEM]

Parses a problem, prints its operands, plans it offline for an H200 and prints the plan as JSON.
With torch and a CUDA device it also plans for the device, runs the kernel on torch tensors through
tp_plan_run_tensors and compares with torch; without them it says it skipped the run.
"""
import ctypes as C
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tilepick.capi import DTYPES, OK, OperandSpec, PlanOptions, Tensor, load  # noqa: E402  (ctypes only)


class TilepickError(RuntimeError):
    def __init__(self, lib, status):
        self.status = status
        super().__init__(f"{lib.tp_status_name(status).decode()}: {lib.tp_last_error().decode()}")


def check(lib, status):
    if status != OK:
        raise TilepickError(lib, status)


def operands(lib, problem):
    n = C.c_size_t()
    check(lib, lib.tp_problem_operand_count(problem, C.byref(n)))
    out = []
    for i in range(n.value):
        s = OperandSpec()
        check(lib, lib.tp_problem_operand(problem, i, C.byref(s)))
        out.append({"name": s.name.decode(), "slot": s.slot.decode(), "dims": s.dims.decode(),
                    "dtype": DTYPES[s.dtype], "shape": [s.shape[j] for j in range(s.ndim)], "output": bool(s.output)})
    return out


def plan(lib, problem, offline_arch=None):
    o = PlanOptions()
    check(lib, lib.tp_plan_options_init(C.byref(o)))
    if offline_arch:
        o.offline_arch = offline_arch.encode()
    h = C.c_void_p()
    check(lib, lib.tp_plan_create(problem, C.byref(o), C.byref(h)))
    return h


def plan_info(lib, p):
    s = C.c_char_p()
    check(lib, lib.tp_plan_info_json(p, C.byref(s)))
    return json.loads(s.value)


def run_with_torch(lib, problem, specs):
    """Runs the plan on torch CUDA tensors laid out as the operand specs say; returns the max error."""
    import torch
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    code = {v: DTYPES.index(k) for k, v in tdt.items()}  # torch dtype -> tp_dtype
    gen = torch.Generator(device="cuda").manual_seed(0)
    tensors = [torch.randn(s["shape"], dtype=tdt[s["dtype"]], device="cuda", generator=gen) for s in specs]
    p = plan(lib, problem)
    try:
        ws_bytes = C.c_size_t()
        check(lib, lib.tp_plan_workspace_bytes(p, C.byref(ws_bytes)))
        ws = torch.empty(max(ws_bytes.value, 1), dtype=torch.uint8, device="cuda")
        shapes = [(C.c_int64 * len(t.shape))(*t.shape) for t in tensors]
        arr = (Tensor * len(tensors))()
        for a, t, shp in zip(arr, tensors, shapes):
            a.data, a.dtype, a.ndim = t.data_ptr(), code[t.dtype], t.dim()
            a.shape, a.strides, a.device = shp, None, t.device.index
        stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(lib, lib.tp_plan_run_tensors(p, arr, len(tensors), C.c_void_p(ws.data_ptr() if ws_bytes.value else 0), stream))
        torch.cuda.synchronize()
        return plan_info(lib, p)["kernel"], tensors
    finally:
        lib.tp_plan_destroy(p)


def main():
    text = sys.argv[1] if len(sys.argv) > 1 else "gemm rcr m512 n384 k256 bf16"
    lib = load()
    print("tilepick", lib.tp_version().decode())
    problem = C.c_void_p()
    check(lib, lib.tp_problem_parse(text.encode(), C.byref(problem)))
    try:
        canonical = C.c_char_p()
        check(lib, lib.tp_problem_string(problem, C.byref(canonical)))
        print("problem:", canonical.value.decode())
        specs = operands(lib, problem)
        for s in specs:
            print(f"  {s['name']:<4} {'out' if s['output'] else 'in '} {s['dims']:<5} {s['dtype']} {s['shape']}")

        p = plan(lib, problem, offline_arch="h200")
        info = plan_info(lib, p)
        lib.tp_plan_destroy(p)
        print("offline plan (h200):", info["kernel"])
        print("  from", info["selection_source"], "| pool", info["pool_size"], "| workspace", info["workspace_bytes"])

        # Errors come back as a status plus the thread's last error message.
        bad = C.c_void_p()
        status = lib.tp_problem_parse(b"gemm rcr m12x n1 k1 f16", C.byref(bad))
        print("bad problem ->", lib.tp_status_name(status).decode() + ":", lib.tp_last_error().decode())

        try:
            import torch
            have_gpu = torch.cuda.is_available()
        except ImportError:
            have_gpu = False
        plain_gemm = canonical.value.startswith(b"gemm rcr ") and len(specs) == 3 and b"batch" not in canonical.value
        if not have_gpu or not plain_gemm:
            print("no torch CUDA device (or not a plain rcr GEMM): skipped the GPU run")
            return 0
        kernel, (a, bt, d) = run_with_torch(lib, problem, specs)
        want = (a.float() @ bt.float().t())
        err = ((d.float() - want).norm() / want.norm()).item()
        print(f"GPU plan: {kernel}\nGPU run: relative L2 error vs torch {err:.2e}")
        return 0 if err < 2e-2 else 1
    finally:
        lib.tp_problem_destroy(problem)


if __name__ == "__main__":
    sys.exit(main())
