// CPU references: fp64 accumulation, multi-threaded (env::num_threads()).
// Inputs are doubles holding values already representable in the problem's dtypes
// (see round_to_dtype); outputs are the exact fp64 results, before rounding to the output dtype.
//
// Memory layouts (element offsets, row-major over the listed dims):
//   GEMM  A: M x K per batch, row (i*K + k) or col (k*M + i); B: K x N, row (k*N + j) or col (j*K + k);
//         C/D: M x N, row or col; batches are contiguous (stride M*K, K*N, M*N); bias: N values;
//         block scales (scale=block, KB = ceil(K/128), NB = ceil(N/128)): SA [batch][KB][M], SB [batch][NB][KB].
//   Conv  x: N [D] H W G Cg    w: G Kg [Z] Y X Cg    y: N [Do] Ho Wo G Kg    bias: K = G*Kg values
#pragma once
#include <cstdint>
#include <vector>

#include "tilepick/problem.hpp"

namespace tilepick::ref {

// Round a double to the nearest value of `t` (round-to-nearest-even, subnormals included; f32 rounds
// to float). Overflow gives +-inf for f16/bf16/f32 and saturates to +-max for fp8 (e4m3 448,
// e5m2 57344; +-inf saturates too); NaN stays NaN. Used to make random inputs exactly representable.
double round_to_dtype(DType t, double v);
// tf32: f32 range with a 10-bit mantissa (what tensor cores use for f32 inputs); overflow gives +-inf.
double round_to_tf32(double v);

// D = act(alpha * A x B + beta * C + bias). `c` may be null when beta == 0 (C is then not read),
// `bias` null when the epilogue has no bias; `d` may alias `c`. With p.scale == block, A x B is
// sum_kb SA[kb][i] SB[j/128][kb] (sum over k in block kb of A[i][k] B[k][j]) (problem.hpp): scale_a and
// scale_b are then required, and must be null otherwise (Error either way).
void gemm(const GemmProblem& p, const double* a, const double* b, const double* c, const double* bias,
          double* d, const double* scale_a = nullptr, const double* scale_b = nullptr);

// The conv references use p's geometry only (p.dir is ignored); conv_fwd applies p.epilogue.
// Outputs are fully overwritten. conv_fwd throws Error when the epilogue has a bias and `bias` is null.
// y = act(conv(x, w) + bias)
void conv_fwd(const ConvProblem& p, const double* x, const double* w, const double* bias, double* y);
// dx = conv_transpose(dy, w)  (the adjoint of conv_fwd in x)
void conv_bwd_data(const ConvProblem& p, const double* dy, const double* w, double* dx);
// dw = correlation of x and dy (the adjoint of conv_fwd in w)
void conv_bwd_weight(const ConvProblem& p, const double* x, const double* dy, double* dw);

}  // namespace tilepick::ref
