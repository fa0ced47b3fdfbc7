// Reference GEMM in fp64: D = act(alpha * A x B + beta * C + bias), inputs read in their dtypes.
//
// Tiles of 64 x 64 outputs, 256 threads, each thread owning a 4 x 4 block (rows ty + 16 r,
// columns tx + 16 c). A 64 x 16 slice of A and a 16 x 64 slice of B are staged in shared memory as
// doubles. Every output is summed over k = 0 .. K-1 in order with exact products (inputs have at
// most 24 significant bits), so results match the CPU reference (src/ref/gemm_ref.cpp) bit for
// bit up to the epilogue's libm calls. With Cfg::block_scale the sum restarts at every 128-k block
// and each block's sum is added as (SA * SB) * sum, in the CPU's order and roundings (SA * SB is
// exact: two fp32 values). Tiles are taken grid-stride over (batch, tile_m, tile_n).
#pragma once
#include "ref/common.cuh"

namespace tp {
namespace refk {

constexpr int kGemmTile = 64, kGemmTileK = 16, kGemmThreads = 256;
constexpr int kGemmScaleBlock = 128;  // tilepick::kScaleBlock: k (and n) extent of one block scale
static_assert(kGemmScaleBlock % kGemmTileK == 0, "a k slice never straddles two scale blocks");

// Stages rows x cols elements starting at (r0, c0) of a matrix (strides sr, sc) into
// smem[col][row] (A: rows i, cols k) or smem[row][col] (B: rows k, cols j); out of range -> 0.
// The thread order follows the unit stride so that global reads coalesce.
template <int DT, int Rows, int Cols, bool Transpose>
__device__ __forceinline__ void stage(double (*smem)[kGemmTile + 1], const void* base, i64 r0, i64 c0, i64 rows,
                                      i64 cols, i64 sr, i64 sc) {
  const bool cols_fastest = sc == 1;
  for (int e = threadIdx.x; e < Rows * Cols; e += kGemmThreads) {
    const int r = cols_fastest ? e / Cols : e % Rows;
    const int c = cols_fastest ? e % Cols : e / Rows;
    const i64 gr = r0 + r, gc = c0 + c;
    const double v = (gr < rows && gc < cols) ? load<DT>(base, gr * sr + gc * sc) : 0.0;
    if (Transpose) smem[c][r] = v;
    else smem[r][c] = v;
  }
}

// acc += (SA[kb][i] * SB[j / 128][kb]) * sum for the thread's 4 x 4 outputs of batch bt, then sum = 0.
// Scales of rows or columns past the matrix read as 0 (those outputs are never stored).
__device__ __forceinline__ void add_scaled_block(const RefGemmParams& p, i64 bt, i64 kb, i64 i0, i64 j0, int ty, int tx,
                                                 double (&sum)[4][4], double (&acc)[4][4]) {
  const i64 n_blocks = (p.n + kGemmScaleBlock - 1) / kGemmScaleBlock;
  const float* sa = p.scale_a + (bt * p.k_blocks + kb) * p.m;   // [m] of block kb
  const float* sb = p.scale_b + bt * n_blocks * p.k_blocks + kb;  // [n_blocks], stride k_blocks
  double sa_r[4], sb_c[4];
  for (int r = 0; r < 4; ++r) {
    const i64 i = i0 + ty + 16 * r;
    sa_r[r] = i < p.m ? (double)sa[i] : 0.0;
  }
  for (int c = 0; c < 4; ++c) {
    const i64 j = j0 + tx + 16 * c;
    sb_c[c] = j < p.n ? (double)sb[j / kGemmScaleBlock * p.k_blocks] : 0.0;
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      acc[r][c] = __dadd_rn(acc[r][c], __dmul_rn(__dmul_rn(sa_r[r], sb_c[c]), sum[r][c]));
      sum[r][c] = 0.0;
    }
}

template <class Cfg> __device__ void gemm_ref(const RefGemmParams& p) {
  __shared__ double a_s[kGemmTileK][kGemmTile + 1];  // [k][i]
  __shared__ double b_s[kGemmTileK][kGemmTile + 1];  // [k][j]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const i64 tiles = p.batch * p.tiles_m * p.tiles_n;
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    const i64 bt = t / (p.tiles_m * p.tiles_n), tm = (t / p.tiles_n) % p.tiles_m, tn = t % p.tiles_n;
    const i64 i0 = tm * kGemmTile, j0 = tn * kGemmTile;
    const char* a = (const char*)p.a + bt * p.m * p.k * refnum::dt_bytes(Cfg::ta);
    const char* b = (const char*)p.b + bt * p.k * p.n * refnum::dt_bytes(Cfg::tb);
    double acc[4][4], sum[4][4];  // the result; the running k sum (Cfg::block_scale: of the current block)
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) acc[r][c] = 0.0, sum[r][c] = 0.0;
    for (i64 k0 = 0; k0 < p.k; k0 += kGemmTileK) {
      __syncthreads();  // the previous slice is consumed
      stage<Cfg::ta, kGemmTile, kGemmTileK, true>(a_s, a, i0, k0, p.m, p.k, p.a_row, p.a_col);
      stage<Cfg::tb, kGemmTileK, kGemmTile, false>(b_s, b, k0, j0, p.k, p.n, p.b_row, p.b_col);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kGemmTileK; ++kk) {
        double av[4], bv[4];
        for (int r = 0; r < 4; ++r) av[r] = a_s[kk][ty + 16 * r];
        for (int c = 0; c < 4; ++c) bv[c] = b_s[kk][tx + 16 * c];
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c) sum[r][c] = fma(av[r], bv[c], sum[r][c]);  // exact product: = sum + a*b
      }
      const i64 k_end = k0 + kGemmTileK;
      if (Cfg::block_scale && (k_end % kGemmScaleBlock == 0 || k_end >= p.k))
        add_scaled_block(p, bt, k0 / kGemmScaleBlock, i0, j0, ty, tx, sum, acc);
    }
    if (!Cfg::block_scale)
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = sum[r][c];
    const i64 mn = bt * p.m * p.n;
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) {
        const i64 i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
        if (i >= p.m || j >= p.n) continue;
        const i64 out = mn + i * p.c_row + j * p.c_col;
        double v = __dmul_rn(p.alpha, acc[r][c]);  // no contraction: the CPU order of roundings
        if (Cfg::has_beta) v = __dadd_rn(v, __dmul_rn(p.beta, load<Cfg::tc>(p.c, out)));
        if (Cfg::has_bias) v = __dadd_rn(v, load<Cfg::tc>(p.bias, j));
        p.d[out] = activate<Cfg::act>(v);
      }
  }
}

}  // namespace refk
}  // namespace tp
