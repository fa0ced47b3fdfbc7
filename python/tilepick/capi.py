"""ctypes declarations of the C API (include/tilepick/tilepick.h) for libtilepick_c.so: status codes,
the structs and the function signatures. Needs no compiled module; used by the ctypes example and tests.

    from tilepick import capi
    lib = capi.load("build/libtilepick_c.so")   # default: TILEPICK_C_LIB
"""
import ctypes as C
import os

# tp_status
OK, PARSE_ERROR, INVALID_PROBLEM, UNSUPPORTED, NOT_FOUND, IO_ERROR, CUDA_ERROR, INTERNAL, INVALID_ARGUMENT = range(9)
DTYPES = ["f16", "bf16", "e4m3", "e5m2", "f32"]  # tp_dtype order


class OperandSpec(C.Structure):
    _fields_ = [("name", C.c_char_p), ("slot", C.c_char_p), ("dims", C.c_char_p), ("dtype", C.c_int),
                ("ndim", C.c_int), ("shape", C.POINTER(C.c_int64)), ("output", C.c_int)]


class PlanOptions(C.Structure):
    _fields_ = [("strategy", C.c_int), ("k", C.c_int), ("config", C.c_char_p), ("vendor", C.c_int),
                ("device", C.c_int), ("offline_arch", C.c_char_p), ("auto_time_us", C.c_double),
                ("policy", C.c_char_p)]


class Applicability(C.Structure):
    _fields_ = [("ok", C.c_int), ("reason", C.c_char_p), ("tilepick_candidates", C.c_size_t),
                ("vendor_candidate", C.c_int)]


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("ndim", C.c_int), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("device", C.c_int)]


def load(path=None):
    """The library with argtypes / restype set for every declared function."""
    lib = C.CDLL(path or os.environ.get("TILEPICK_C_LIB", "build/libtilepick_c.so"))
    P, S = C.c_void_p, C.c_char_p
    sigs = {
        "tp_version": ([], S), "tp_status_name": ([C.c_int], S), "tp_last_error": ([], S),
        "tp_problem_parse": ([S, C.POINTER(P)], C.c_int), "tp_problem_destroy": ([P], None),
        "tp_problem_string": ([P, C.POINTER(S)], C.c_int), "tp_problem_op": ([P, C.POINTER(S)], C.c_int),
        "tp_problem_operand_count": ([P, C.POINTER(C.c_size_t)], C.c_int),
        "tp_problem_operand": ([P, C.c_size_t, C.POINTER(OperandSpec)], C.c_int),
        "tp_plan_options_init": ([C.POINTER(PlanOptions)], C.c_int),
        "tp_check": ([P, C.POINTER(PlanOptions), C.POINTER(Applicability)], C.c_int),
        "tp_plan_create": ([P, C.POINTER(PlanOptions), C.POINTER(P)], C.c_int),
        "tp_plan_destroy": ([P], None), "tp_plan_kernel": ([P, C.POINTER(S)], C.c_int),
        "tp_plan_runnable": ([P, C.POINTER(C.c_int)], C.c_int),
        "tp_plan_workspace_bytes": ([P, C.POINTER(C.c_size_t)], C.c_int),
        "tp_plan_info_json": ([P, C.POINTER(S)], C.c_int),
        "tp_plan_run": ([P, P, P, P, P, P, P, P], C.c_int),
        "tp_plan_run_tensors": ([P, C.POINTER(Tensor), C.c_size_t, P, P], C.c_int),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, res
    return lib
