// CPU reference GEMM: D = act(alpha * A x B + beta * C + bias), fp64 accumulation.
// Each output element is computed by one thread in a fixed order (k = 0..K-1), so the result does
// not depend on the thread count. `d` may alias `c` (each C element is read before its D is written).
// Block-scaled problems sum each 128-k block on its own (same order), then add (SA * SB) * block sum
// block by block, kb = 0..KB-1; SA * SB is exact (two fp32 values), so the GPU reference
// (kernels/ref/gemm_ref.cuh) reproduces every rounding.
#include <algorithm>
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
          double* d, const double* scale_a, const double* scale_b) {
  if (p.beta != 0.0 && c == nullptr) throw Error(Status::internal, "ref::gemm: beta != 0 but C is null");
  if (p.epilogue.bias && bias == nullptr)
    throw Error(Status::internal, "ref::gemm: the epilogue has a bias but the bias pointer is null");
  const bool block = p.scale == GemmScale::block;
  if (block && (scale_a == nullptr || scale_b == nullptr))
    throw Error(Status::internal, "ref::gemm: '" + to_string(p) + "' has block scales but scale_a or scale_b is null");
  if (!block && (scale_a != nullptr || scale_b != nullptr))
    throw Error(Status::internal,
                "ref::gemm: block scales given for '" + to_string(p) + "', which has none (scale=block)");

  const std::int64_t M = p.m, N = p.n, K = p.k;
  const Strides sa = strides(p.layout_a, M, K), sb = strides(p.layout_b, K, N);
  const Strides sc = strides(p.layout_c, M, N);
  const std::int64_t KB = p.k_blocks(), NB = p.n_blocks();

  // One work item = one row i of one batch: N outputs of K multiply-adds each.
  parallel_for(0, p.batch * M, [&](std::int64_t item) {
    const std::int64_t batch = item / M, i = item % M;
    const double* A = a + batch * M * K;
    const double* B = b + batch * K * N;
    const double* C = c ? c + batch * M * N : nullptr;
    double* D = d + batch * M * N;
    const double* SA = block ? scale_a + batch * KB * M : nullptr;  // [KB][M]
    const double* SB = block ? scale_b + batch * NB * KB : nullptr;  // [NB][KB]
    for (std::int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      if (!block) {
        for (std::int64_t k = 0; k < K; ++k) acc += A[i * sa.row + k * sa.col] * B[k * sb.row + j * sb.col];
      } else {
        for (std::int64_t kb = 0; kb < KB; ++kb) {
          double part = 0.0;
          for (std::int64_t k = kb * kScaleBlock; k < std::min(K, (kb + 1) * kScaleBlock); ++k)
            part += A[i * sa.row + k * sa.col] * B[k * sb.row + j * sb.col];
          acc += SA[kb * M + i] * SB[j / kScaleBlock * KB + kb] * part;
        }
      }
      const std::int64_t out = i * sc.row + j * sc.col;
      double v = p.alpha * acc;
      if (p.beta != 0.0) v += p.beta * C[out];
      if (p.epilogue.bias) v += bias[j];
      D[out] = apply_activation(p.epilogue.act, v);
    }
  }, grain_for(N * K));
}

}  // namespace tilepick::ref
