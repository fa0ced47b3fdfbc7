// Kernel parameters of the sm80 GEMM and of the split-K reduction. Plain C structs of fixed-width
// builtin types and pointers: the host packs them byte for byte into Launch::params (and
// static_asserts their sizes), the kernels take them by value.
#pragma once

namespace tp {

// D = act(alpha * A x B + beta * C + bias) for `batch` independent products; A is M x K, B is K x N,
// C and D are M x N (same layout and leading dimension). Leading dimensions and batch strides are
// in elements. The grid is (tiles_m * tiles_n * batch, splitk, 1).
struct GemmParams {
  const void* a;
  const void* b;
  const void* c;
  void* d;
  const void* bias;       // N values, dtype of D
  void* workspace;        // split-K: serial (counters + partial tiles) or parallel (fp32 slices)
  long long batch_stride_a, batch_stride_b, batch_stride_c;  // c/d share the layout
  long long slice_stride; // parallel split-K: elements between fp32 slices (= batch * M * N)
  int m, n, k, batch;
  int lda, ldb, ldc;      // ldc is also D's leading dimension
  int tiles_m, tiles_n, splitk;
  float alpha, beta;
  int pad_;
};

// Parallel split-K: D[i] = act(alpha * sum_s ws[s * slice_stride + i] + beta * C[i] + bias[(i / bias_div) % bias_mod]).
struct ReduceParams {
  const float* ws;
  const void* c;
  void* d;
  const void* bias;
  long long total;        // elements of D
  long long slice_stride;
  int splitk;
  int bias_div, bias_mod;
  float alpha, beta;
  int pad_;
};

}  // namespace tp
