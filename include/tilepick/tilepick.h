/* tilepick C API: problems, operand specs and dispatcher plans behind opaque handles.
 *
 * Rules that hold for every function here (docs/capi.md has the long form):
 *  - Each function returns tp_status (tp_status_ok = 0) unless its comment names another result.
 *    No C++ exception crosses this boundary; a NULL argument that is not documented as allowed is
 *    an error (tp_status_invalid_argument) whose message names the argument.
 *  - tp_last_error() is the message of the last call made on the calling thread: "" after a call
 *    that succeeded, the reason after one that failed. Each thread has its own.
 *  - Output arguments are written only on success, except handles (*out), which are set to NULL
 *    when a create function fails.
 *  - Strings returned through `const char**` are owned by the handle they came from and live as
 *    long as it does, unless the comment says they are thread-local.
 *  - Handles are immutable after creation except tp_dispatcher; all may be used from many threads
 *    at once. Destroy functions accept NULL.
 */
#ifndef TILEPICK_TILEPICK_H_
#define TILEPICK_TILEPICK_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TP_API
#else
#define TP_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors tilepick::Status (include/tilepick/error.hpp). */
typedef enum tp_status {
  tp_status_ok = 0,
  tp_status_parse_error = 1,      /* a string does not follow its grammar */
  tp_status_invalid_problem = 2,  /* well-formed but breaks a rule (C % G != 0, ...) */
  tp_status_unsupported = 3,      /* valid but outside what tilepick implements (or offline) */
  tp_status_not_found = 4,        /* a file, arch, space or kernel that does not exist */
  tp_status_io_error = 5,
  tp_status_cuda_error = 6,
  tp_status_internal = 7,         /* a bug or an unexpected exception: the message says which */
  tp_status_invalid_argument = 8  /* a NULL argument, a bad option or tensor */
} tp_status;

/* Mirrors tilepick::DType. */
typedef enum tp_dtype {
  tp_dtype_f16 = 0,
  tp_dtype_bf16 = 1,
  tp_dtype_e4m3 = 2,
  tp_dtype_e5m2 = 3,
  tp_dtype_f32 = 4
} tp_dtype;

typedef enum tp_strategy {
  tp_strategy_heuristic = 0,   /* the model's top-1, no timing */
  tp_strategy_top_k = 1,       /* time the model's best k on the device (for conv one per tile shape), keep the fastest */
  tp_strategy_exhaustive = 2,  /* time every legal candidate */
  tp_strategy_fixed = 3,       /* tp_plan_options.config names the kernel */
  tp_strategy_race = 4,        /* time the model's top-1 against the vendor's heuristic kernel, keep the faster */
  tp_strategy_auto = 5         /* top_k where the model's top-1 is estimated at >= auto_time_us, else heuristic */
} tp_strategy;

typedef enum tp_vendor_mode {
  tp_vendor_default = -1,  /* the environment's policy (TILEPICK_POLICY), else auto */
  tp_vendor_off = 0,       /* tilepick kernels only */
  tp_vendor_auto = 1,      /* the vendor library is one more candidate */
  tp_vendor_only = 2       /* cuBLASLt / cuDNN algorithms only */
} tp_vendor_mode;

typedef struct tp_problem tp_problem;
typedef struct tp_plan tp_plan;
typedef struct tp_dispatcher tp_dispatcher;

/* ---- library ---- */

/* "0.1.0"; static storage. Never fails. */
TP_API const char* tp_version(void);
/* "ok", "parse_error", ..., "invalid_argument"; "unknown" for other values. Static storage. */
TP_API const char* tp_status_name(tp_status status);
/* Canonical dtype name ("f16", "bf16", ...), or NULL for a value outside tp_dtype. Static storage. */
TP_API const char* tp_dtype_name(tp_dtype dtype);
/* The calling thread's last message: "" after success. Thread-local; valid until the next tp_
 * call on this thread. Never NULL. */
TP_API const char* tp_last_error(void);

/* ---- problems ---- */

/* Parses a problem string ("gemm rcr m4096 n4096 k4096 bf16", "fwd g32 mb32 ic256 ..."). */
TP_API tp_status tp_problem_parse(const char* text, tp_problem** out);
TP_API void tp_problem_destroy(tp_problem* problem);
/* The canonical string (round-trips through tp_problem_parse). Owned by the problem. */
TP_API tp_status tp_problem_string(const tp_problem* problem, const char** out);
/* The op name: "gemm", "conv_fwd", "conv_bwd_data" or "conv_bwd_weight". Owned by the problem. */
TP_API tp_status tp_problem_op(const tp_problem* problem, const char** out);

/* One operand a plan of this problem takes, in run order a, b, [c when beta != 0], d, [bias]. */
typedef struct tp_operand_spec {
  const char* name;      /* "A", "B", "C", "D", "bias", "x", "w", "y", "dy", "dx", "dw" */
  const char* slot;      /* "a", "b", "c", "d", "bias": the argument of tp_plan_run it goes to */
  const char* dims;      /* one letter per memory dim, outermost first: "MK", "NHWC", "KYXC" */
  tp_dtype dtype;
  int ndim;
  const int64_t* shape;  /* ndim sizes in memory order (dense, the last dim contiguous) */
  int output;            /* 1 for the result the plan writes */
} tp_operand_spec;

TP_API tp_status tp_problem_operand_count(const tp_problem* problem, size_t* out);
/* Strings and shape are owned by the problem. index >= count is tp_status_invalid_argument. */
TP_API tp_status tp_problem_operand(const tp_problem* problem, size_t index, tp_operand_spec* out);

/* ---- plan options ---- */

typedef struct tp_plan_options {
  tp_strategy strategy;       /* default tp_strategy_auto */
  int k;                      /* top_k: candidates timed; default 4 */
  const char* config;         /* fixed: a config string or vendor algorithm ("cublaslt:algo0"); else NULL */
  tp_vendor_mode vendor;      /* default tp_vendor_default */
  int device;                 /* CUDA ordinal; -1 (default): the thread's current device, else 0 */
  const char* offline_arch;   /* plan without a GPU for this arch ("h200", "sm_90"): selection only */
  double auto_time_us;        /* auto: time (as top_k) plans whose first choice is estimated at >= this many us;
                                 < 0 (default): TILEPICK_POLICY's, else 100; INFINITY: never */
  const char* policy;         /* a policy string ("auto:time_us=50,vendor=off", docs/dispatch.md) instead of the
                                 strategy, k, vendor and auto_time_us above (which then keep their defaults);
                                 NULL (default): those fields over the environment's policy */
} tp_plan_options;
/* The strings are read during the call that takes the options and not kept. */

/* Fills the defaults above. Always call it first: fields added later get their defaults here. */
TP_API tp_status tp_plan_options_init(tp_plan_options* options);

/* ---- dispatchers (the default one needs no handle) ---- */

/* A dispatcher with its own plan cache, persisted in `cache_file` (JSON) when not NULL or "".
 * The default dispatcher (used when no handle is given) reads TILEPICK_PLAN_CACHE. */
TP_API tp_status tp_dispatcher_create(const char* cache_file, tp_dispatcher** out);
/* Plans made by the dispatcher stay valid after it is destroyed. */
TP_API void tp_dispatcher_destroy(tp_dispatcher* dispatcher);
/* Writes the persistable plans to the cache file now (no-op without one). */
TP_API tp_status tp_dispatcher_save(tp_dispatcher* dispatcher);
/* Forgets the plans kept in memory (the file is untouched). */
TP_API tp_status tp_dispatcher_clear_memory(tp_dispatcher* dispatcher);

typedef struct tp_cache_stats {
  size_t new_plans, memory_hits, file_hits;
  size_t file_entries, rejected_entries; /* from the file when it was loaded */
} tp_cache_stats;
/* dispatcher NULL: the default dispatcher. */
TP_API tp_status tp_dispatcher_stats(const tp_dispatcher* dispatcher, tp_cache_stats* out);

/* ---- applicability ---- */

typedef struct tp_applicability {
  int ok;                      /* 1 when a plan can be made */
  const char* reason;          /* why not ("" when ok); thread-local, valid until the next tp_check*
                                  call on this thread */
  size_t tilepick_candidates;  /* legal tilepick kernels */
  int vendor_candidate;        /* 1 when the vendor library can run it (online only) */
} tp_applicability;

/* Returns tp_status_ok whenever the arguments are valid; "not applicable" is out->ok == 0 with the
 * reason. options NULL: defaults. */
TP_API tp_status tp_check(const tp_problem* problem, const tp_plan_options* options, tp_applicability* out);
TP_API tp_status tp_dispatcher_check(const tp_dispatcher* dispatcher, const tp_problem* problem,
                                     const tp_plan_options* options, tp_applicability* out);

/* ---- plans ---- */

/* Picks (and on a GPU compiles) the kernel for a problem with the default dispatcher.
 * options NULL: defaults. An offline plan (options->offline_arch set) only selects. */
TP_API tp_status tp_plan_create(const tp_problem* problem, const tp_plan_options* options, tp_plan** out);
TP_API tp_status tp_dispatcher_plan(tp_dispatcher* dispatcher, const tp_problem* problem,
                                    const tp_plan_options* options, tp_plan** out);
TP_API void tp_plan_destroy(tp_plan* plan);

/* The winner: a config string ("fam=sm80 tile=...") or a vendor algorithm ("cublaslt:algo2").
 * Owned by the plan. */
TP_API tp_status tp_plan_kernel(const tp_plan* plan, const char** out);
/* Device memory the caller passes as the workspace (256-byte aligned), 0 when none. */
TP_API tp_status tp_plan_workspace_bytes(const tp_plan* plan, size_t* out);
/* 0 for offline plans (they cannot run), 1 otherwise. */
TP_API tp_status tp_plan_runnable(const tp_plan* plan, int* out);
/* Base alignment in bytes the plan needs for slot "a", "b", "c", "d" or "bias". */
TP_API tp_status tp_plan_alignment(const tp_plan* plan, const char* slot, size_t* out);
/* Everything about the plan as JSON (problem, kernel, strategy, arch, device, model, candidates,
 * cache, timings, workspace). Owned by the plan. */
TP_API tp_status tp_plan_info_json(const tp_plan* plan, const char** out);

/* Runs on raw device pointers on `stream` (a CUstream / cudaStream_t; NULL = default stream).
 * c is read only when the problem has beta != 0, bias only with a bias epilogue (else NULL);
 * workspace only when tp_plan_workspace_bytes > 0. Conv: a, b are the two inputs (fwd: x, w;
 * bwd_data: dy, w; bwd_weight: x, dy), d the result. The plan's device must be current on the
 * calling thread. Asynchronous: errors of the kernel itself show up at the next synchronization.
 * fp8 GEMMs with block scales (scale=block) take their scale tensors SA and SB: run them with
 * tp_plan_run_tensors. */
TP_API tp_status tp_plan_run(const tp_plan* plan, const void* a, const void* b, const void* c, void* d,
                             const void* bias, void* workspace, void* stream);

/* A tensor as the caller holds it (DLPack-like). Shape and strides are in elements; strides NULL
 * means dense row-major. Accepted: the memory order of tp_problem_operand with dense strides, or the
 * logical view: a matrix as rows x cols however it is stored (a transposed view of a column-major
 * B), a conv tensor as N C (D) H W with channels-last strides (torch's channels_last).
 * device: CUDA ordinal, -1 for host memory. */
typedef struct tp_tensor {
  void* data;
  tp_dtype dtype;
  int ndim;                /* 0..8 */
  const int64_t* shape;
  const int64_t* strides;  /* NULL or ndim values */
  int device;
} tp_tensor;

/* Checks each tensor against the operand specs (same order as tp_problem_operand: a, b, [c], d,
 * [bias]) and runs. A mismatch is tp_status_invalid_argument naming the operand and what differs. */
TP_API tp_status tp_plan_run_tensors(const tp_plan* plan, const tp_tensor* tensors, size_t count,
                                     void* workspace, void* stream);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TILEPICK_TILEPICK_H_ */
