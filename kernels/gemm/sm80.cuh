// sm80 GEMM: D[b] = act(alpha * A[b] x B[b] + beta * C[b] + bias), any layouts, batched, split-K.
// Grid (tiles_m * tiles_n * batch, splitk, 1); block warps_m * warps_n warps; dynamic shared memory
// stages * (tile_m + tile_n) * tile_k * sizeof(TA).
// Cfg adds to sm80_core.cuh: a_kmajor (A row-major), b_kmajor (B column-major), c_colmajor.
#pragma once
#include "gemm/params.cuh"
#include "gemm/sm80_core.cuh"

namespace tp {

template <class Cfg> __device__ __forceinline__ void gemm_sm80(const GemmParams& p) {
  extern __shared__ __align__(128) unsigned char smem[];
  typedef Sm80Shape<Cfg> S;
  typedef typename Cfg::TA T;
  typedef typename Cfg::TC TC;

  // Block -> (batch, tile_m, tile_n, split-K slice).
  const int tiles = p.tiles_m * p.tiles_n;
  const int batch = blockIdx.x / tiles;
  int tm, tn;
  raster_tile<Cfg>(blockIdx.x - batch * tiles, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * Cfg::tile_m, n0 = tn * Cfg::tile_n;
  const int ktiles = (p.k + Cfg::tile_k - 1) / Cfg::tile_k, slice = blockIdx.y;
  const int kt0 = int((long long)ktiles * slice / p.splitk), kt1 = int((long long)ktiles * (slice + 1) / p.splitk);

  // Operands of this batch: A is M x K, B is K x N.
  const PlainLoader<T, Cfg::a_kmajor, Cfg::tile_m, Cfg::tile_k, Cfg::align_a, S::THREADS> la(
      static_cast<const T*>(p.a) + batch * p.batch_stride_a, p.lda, p.m, p.k, m0);
  const PlainLoader<T, Cfg::b_kmajor, Cfg::tile_n, Cfg::tile_k, Cfg::align_b, S::THREADS> lb(
      static_cast<const T*>(p.b) + batch * p.batch_stride_b, p.ldb, p.n, p.k, n0);

  float acc[S::MI][S::NI][4];
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < S::NI; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;
  sm80_mainloop<Cfg>(la, lb, kt0, kt1, acc, smem);

  EpiArgs e;
  e.d = p.d, e.c = p.c, e.bias = p.bias, e.workspace = p.workspace, e.slice_stride = p.slice_stride;
  e.alpha = p.alpha, e.beta = p.beta, e.m = p.m, e.n = p.n;
  e.splitk = p.splitk, e.slice = slice, e.tile_id = blockIdx.x, e.tiles_total = gridDim.x;
  const long long base = batch * p.batch_stride_c;
  if (Cfg::c_colmajor) sm80_finish<Cfg>(acc, OutColMajor{base, p.ldc}, m0, n0, e, smem);
  else sm80_finish<Cfg>(acc, OutRowMajor{base, p.ldc}, m0, n0, e, smem);
}

}  // namespace tp
