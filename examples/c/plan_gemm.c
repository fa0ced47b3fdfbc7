/* Plan and run a bf16 GEMM through the tilepick C API.
 *
 *   plan_gemm [PROBLEM]        default "gemm rcr m512 n384 k256 bf16"
 *
 * 1. Offline: the kernel tilepick would pick on an H200, without a GPU.
 * 2. On a GPU (when the CUDA runtime finds one; otherwise this part says it skipped): a plan for the
 *    current device, buffers from cudaMalloc, a run on raw pointers and one on described tensors,
 *    and the result checked on the CPU. Only rcr bf16 GEMMs without C, bias or batch are run here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "tilepick/tilepick.h"

#define TP_CHECK(call)                                                                   \
  do {                                                                                   \
    tp_status s_ = (call);                                                               \
    if (s_ != tp_status_ok) {                                                            \
      fprintf(stderr, "%s failed: %s: %s\n", #call, tp_status_name(s_), tp_last_error()); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

#define CUDA_CHECK(call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));                      \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

/* bf16 <-> float (round to nearest even; the test values are exact in bf16 anyway). */
static unsigned short to_bf16(float f) {
  unsigned int u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

static float from_bf16(unsigned short h) {
  unsigned int u = (unsigned int)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void plan_offline(const tp_problem* p) {
  tp_plan_options o;
  tp_plan* plan = NULL;
  const char* kernel = NULL;
  size_t ws = 0;
  TP_CHECK(tp_plan_options_init(&o));
  o.offline_arch = "h200";
  TP_CHECK(tp_plan_create(p, &o, &plan));
  TP_CHECK(tp_plan_kernel(plan, &kernel));
  TP_CHECK(tp_plan_workspace_bytes(plan, &ws));
  printf("offline plan (h200): %s\n  workspace %zu bytes\n", kernel, ws);
  tp_plan_destroy(plan);
}

/* Runs the plan on device buffers and checks D = A x B (A row M x K, B column-major K x N). */
static int run_on_gpu(const tp_problem* p, long long m, long long n, long long k) {
  tp_plan* plan = NULL;
  const char* kernel = NULL;
  size_t ws_bytes = 0, i;
  unsigned short *ha, *hb, *hd;
  void *da = NULL, *db = NULL, *dd = NULL, *dws = NULL;
  long long r, c, x;
  int bad = 0;
  tp_tensor t[3];
  int64_t shape_a[2], shape_b[2], shape_d[2];

  TP_CHECK(tp_plan_create(p, NULL, &plan)); /* heuristic, current device (0) */
  TP_CHECK(tp_plan_kernel(plan, &kernel));
  TP_CHECK(tp_plan_workspace_bytes(plan, &ws_bytes));
  printf("GPU plan: %s\n", kernel);

  ha = malloc((size_t)(m * k) * 2);
  hb = malloc((size_t)(n * k) * 2);
  hd = malloc((size_t)(m * n) * 2);
  if (!ha || !hb || !hd) return 1;
  for (i = 0; i < (size_t)(m * k); ++i) ha[i] = to_bf16((float)((int)(i % 7) - 3) * 0.25f);
  for (i = 0; i < (size_t)(n * k); ++i) hb[i] = to_bf16((float)((int)(i % 5) - 2) * 0.5f);
  CUDA_CHECK(cudaMalloc(&da, (size_t)(m * k) * 2));
  CUDA_CHECK(cudaMalloc(&db, (size_t)(n * k) * 2));
  CUDA_CHECK(cudaMalloc(&dd, (size_t)(m * n) * 2));
  if (ws_bytes) CUDA_CHECK(cudaMalloc(&dws, ws_bytes));
  CUDA_CHECK(cudaMemcpy(da, ha, (size_t)(m * k) * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db, hb, (size_t)(n * k) * 2, cudaMemcpyHostToDevice));

  /* Raw pointers: a, b, c (unused, beta = 0), d, bias (none), workspace, stream (default). */
  CUDA_CHECK(cudaMemset(dd, 0xff, (size_t)(m * n) * 2)); /* NaN: unwritten outputs fail the check */
  TP_CHECK(tp_plan_run(plan, da, db, NULL, dd, NULL, dws, NULL));
  CUDA_CHECK(cudaDeviceSynchronize());

  /* The same through described tensors (shapes in memory order, strides NULL = dense). */
  shape_a[0] = m, shape_a[1] = k;
  shape_b[0] = n, shape_b[1] = k;
  shape_d[0] = m, shape_d[1] = n;
  t[0].data = da, t[0].dtype = tp_dtype_bf16, t[0].ndim = 2, t[0].shape = shape_a, t[0].strides = NULL, t[0].device = 0;
  t[1] = t[0], t[1].data = db, t[1].shape = shape_b;
  t[2] = t[0], t[2].data = dd, t[2].shape = shape_d;
  TP_CHECK(tp_plan_run_tensors(plan, t, 3, dws, NULL));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(hd, dd, (size_t)(m * n) * 2, cudaMemcpyDeviceToHost));

  for (r = 0; r < m; ++r)
    for (c = 0; c < n; ++c) {
      double want = 0, got = from_bf16(hd[r * n + c]);
      for (x = 0; x < k; ++x) want += (double)from_bf16(ha[r * k + x]) * from_bf16(hb[c * k + x]);
      if (!(fabs(got - want) <= 1e-2 * fabs(want) + 1e-2)) {
        if (bad < 5) fprintf(stderr, "D[%lld][%lld] = %g, want %g\n", r, c, got, want);
        ++bad;
      }
    }
  printf("GPU run: %s (%d of %lld elements off)\n", bad ? "WRONG" : "correct", bad, m * n);

  cudaFree(da), cudaFree(db), cudaFree(dd), cudaFree(dws);
  free(ha), free(hb), free(hd);
  tp_plan_destroy(plan);
  return bad ? 1 : 0;
}

int main(int argc, char** argv) {
  const char* text = argc > 1 ? argv[1] : "gemm rcr m512 n384 k256 bf16";
  tp_problem* p = NULL;
  const char* canonical = NULL;
  size_t count = 0, i;
  int devices = 0, j;
  long long m = 0, n = 0, k = 0;
  int all_bf16 = 1;

  printf("tilepick %s\n", tp_version());
  TP_CHECK(tp_problem_parse(text, &p));
  TP_CHECK(tp_problem_string(p, &canonical));
  TP_CHECK(tp_problem_operand_count(p, &count));
  printf("problem: %s\n", canonical);
  for (i = 0; i < count; ++i) {
    tp_operand_spec s;
    TP_CHECK(tp_problem_operand(p, i, &s));
    printf("  %-4s %s %-4s %s [", s.name, s.output ? "out" : "in ", s.dims, tp_dtype_name(s.dtype));
    for (j = 0; j < s.ndim; ++j) printf("%s%lld", j ? ", " : "", (long long)s.shape[j]);
    printf("]\n");
    all_bf16 = all_bf16 && s.dtype == tp_dtype_bf16;
    if (strcmp(s.name, "A") == 0 && s.ndim == 2) m = s.shape[0], k = s.shape[1];
    if (strcmp(s.name, "B") == 0 && s.ndim == 2) n = s.shape[0];
  }
  plan_offline(p);

  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("no CUDA device: skipped the GPU run\n");
    tp_problem_destroy(p);
    return 0;
  }
  if (count != 3 || !all_bf16 || strncmp(canonical, "gemm rcr ", 9) != 0 || strstr(canonical, "batch")) {
    printf("the GPU part of this example runs plain rcr bf16 GEMMs only: skipped\n");
    tp_problem_destroy(p);
    return 0;
  }
  CUDA_CHECK(cudaSetDevice(0));
  j = run_on_gpu(p, m, n, k);
  tp_problem_destroy(p);
  return j;
}
