// CPU reference GEMM: D = act(alpha * A x B + beta * C + bias), fp64 accumulation.
// Each output element is computed by one thread in a fixed order (k = 0..K-1), so the result does
// not depend on the thread count. `d` may alias `c` (each C element is read before its D is written).
#include <cstdint>

#include "ref/parallel.hpp"
#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::ref {
namespace {

// Element strides of a rows x cols matrix stored row- or column-major.
struct Strides {
  std::int64_t row, col;
};
Strides strides(MatLayout l, std::int64_t rows, std::int64_t cols) {
  return l == MatLayout::row ? Strides{cols, 1} : Strides{1, rows};
}

}  // namespace

void gemm(const GemmProblem& p, const double* a, const double* b, const double* c, const double* bias,
          double* d) {
  if (p.beta != 0.0 && c == nullptr) throw Error(Status::internal, "ref::gemm: beta != 0 but C is null");
  if (p.epilogue.bias && bias == nullptr)
    throw Error(Status::internal, "ref::gemm: the epilogue has a bias but the bias pointer is null");

  const std::int64_t M = p.m, N = p.n, K = p.k;
  const Strides sa = strides(p.layout_a, M, K), sb = strides(p.layout_b, K, N);
  const Strides sc = strides(p.layout_c, M, N);

  // One work item = one row i of one batch: N outputs of K multiply-adds each.
  parallel_for(0, p.batch * M, [&](std::int64_t item) {
    const std::int64_t batch = item / M, i = item % M;
    const double* A = a + batch * M * K;
    const double* B = b + batch * K * N;
    const double* C = c ? c + batch * M * N : nullptr;
    double* D = d + batch * M * N;
    for (std::int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < K; ++k) acc += A[i * sa.row + k * sa.col] * B[k * sb.row + j * sb.col];
      const std::int64_t out = i * sc.row + j * sc.col;
      double v = p.alpha * acc;
      if (p.beta != 0.0) v += p.beta * C[out];
      if (p.epilogue.bias) v += bias[j];
      D[out] = apply_activation(p.epilogue.act, v);
    }
  }, grain_for(N * K));
}

}  // namespace tilepick::ref
