// Depthwise convolution, forward (and unit-stride backward-data as a forward pass with the filter
// rotated), and backward-data for any stride, one stride phase per block.
//
// Cfg (generated per program): T; tile_h, tile_w, tile_c, ppt, cpt, threads; vec (staging vector,
// elements); fz, fy, fx (filter extents, 0 = runtime); sw, dw (W stride and dilation, 0 = runtime);
// act, bias, flip.
//
// Block: one output tile of TH rows x TW cols x TC channels of one (n, od) slice.
// Thread: CPT channels (lc) x PPT consecutive output columns of one row (r, col0).
//   threads = (TH * TW / PPT) * (TC / CPT), channel lanes fastest (coalesced along channels).
#pragma once
#include "conv/dw_common.cuh"

namespace tp {
namespace dw {

// One filter row: acc[j] += sum_fx x[(col0 + j) * sw + fx * dw] * w[fx] for j < PPT, where s_x points
// at column 0 of the staged input row (this thread's channels) and s_w at tap fx = 0 of the row.
// With FX, SW, DW known at compile time each staged column is loaded and converted once and reused by
// every (j, fx) pair that reads it (a register window of (PPT-1)*SW + (FX-1)*DW + 1 columns).
template <class Cfg>
__device__ __forceinline__ void filter_row(float (&acc)[Cfg::ppt][Cfg::cpt], const typename Cfg::T* s_x,
                                           const float* s_w, int col0, int sw, int dw, int fx_n) {
  typedef typename Cfg::T T;
  constexpr int PPT = Cfg::ppt, CPT = Cfg::cpt, TC = Cfg::tile_c;
  if constexpr (Cfg::fx > 0 && Cfg::sw > 0 && Cfg::dw > 0) {
    constexpr int FX = Cfg::fx, SW = Cfg::sw, DW = Cfg::dw;
    constexpr int WIN = (PPT - 1) * SW + (FX - 1) * DW + 1;
    float w[FX][CPT];
#pragma unroll
    for (int fx = 0; fx < FX; ++fx) load_f32(s_w + fx * TC, w[fx]);
    const T* s = s_x + col0 * SW * TC;
#pragma unroll
    for (int k = 0; k < WIN; ++k) {
      float v[CPT];
      load_f(s + k * TC, v);
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        const int t = k - j * SW;  // = fx * DW
        if (t >= 0 && t % DW == 0 && t / DW < FX) {
#pragma unroll
          for (int i = 0; i < CPT; ++i) acc[j][i] = fmaf(v[i], w[t / DW][i], acc[j][i]);
        }
      }
    }
  } else {
    for (int fx = 0; fx < fx_n; ++fx) {
      float w[CPT];
      load_f32(s_w + fx * TC, w);
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        float v[CPT];
        load_f(s_x + ((col0 + j) * sw + fx * dw) * TC, v);
#pragma unroll
        for (int i = 0; i < CPT; ++i) acc[j][i] = fmaf(v[i], w[i], acc[j][i]);
      }
    }
  }
}

// Computes and stores one output tile from its staged input box s_x [FZ][SR][SC][TC] and the staged
// filter s_w [taps][TC]: thread = CPT channels x PPT consecutive columns of row r.
template <class Cfg>
__device__ __forceinline__ void fwd_tile(const DwParams& p, const typename Cfg::T* s_x, const float* s_w, int n,
                                         int od, int oh0, int ow0, int c0) {
  typedef typename Cfg::T T;
  constexpr int TC = Cfg::tile_c, PPT = Cfg::ppt, CPT = Cfg::cpt;
  constexpr int LC = TC / CPT;           // channel lanes
  constexpr int GW = Cfg::tile_w / PPT;  // pixel groups along a tile row
  const int FZ = Cfg::fz ? Cfg::fz : p.filter[0];
  const int FY = Cfg::fy ? Cfg::fy : p.filter[1];
  const int FX = Cfg::fx ? Cfg::fx : p.filter[2];
  const int SR = p.halo[1];
  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int r = pg / GW, col0 = (pg % GW) * PPT;

  float acc[PPT][CPT] = {};
  // One filter row at a time (not unrolled: keeps the loads of one row in flight, not of all rows).
#pragma unroll 1
  for (int fz = 0; fz < FZ; ++fz) {
#pragma unroll 1
    for (int fy = 0; fy < FY; ++fy) {
      const T* s_row = s_x + ((fz * SR + r * p.stride[1] + fy * p.dilation[1]) * p.halo[2]) * TC + lc * CPT;
      filter_row<Cfg>(acc, s_row, s_w + ((fz * FY + fy) * FX) * TC + lc * CPT, col0, p.stride[2], p.dilation[2], FX);
    }
  }

  // Epilogue: + bias, activation, one CPT-wide store per pixel.
  const int oh = oh0 + r, ch = c0 + lc * CPT;
  if (oh >= p.out[1] || ch >= p.c) return;
  float bias[CPT] = {};
  if constexpr (Cfg::bias) load_f(static_cast<const T*>(p.bias) + ch, bias);
  T* y = static_cast<T*>(p.dst) + (((n * p.out[0] + od) * p.out[1] + oh) * p.out[2]) * p.c + ch;
#pragma unroll
  for (int j = 0; j < PPT; ++j) {
    const int ow = ow0 + col0 + j;
    if (ow < p.out[2]) {
      float v[CPT];
#pragma unroll
      for (int i = 0; i < CPT; ++i) v[i] = activate<Cfg::act>(acc[j][i] + bias[i]);
      store_f(y + ow * p.c, v);
    }
  }
}

// Spatial tile t of a channel tile (tile col fastest, then tile row, od, n): stages its input box.
template <class Cfg>
__device__ __forceinline__ void fwd_stage(const DwParams& p, typename Cfg::T* s_x, int t, int c0) {
  typedef typename Cfg::T T;
  const int ow0 = (t % p.tiles_w) * Cfg::tile_w;
  t /= p.tiles_w;
  const int oh0 = (t % p.tiles_h) * Cfg::tile_h;
  t /= p.tiles_h;
  const int od = t % p.out[0], n = t / p.out[0];
  stage_box<T, Cfg::tile_c, Cfg::vec, Cfg::threads>(
      s_x, static_cast<const T*>(p.src), p.in, p.c, n, p.halo[0],
      [&](int k) { return od * p.stride[0] - p.pad[0] + k * p.dilation[0]; }, oh0 * p.stride[1] - p.pad[1],
      p.halo[1], ow0 * p.stride[2] - p.pad[2], p.halo[2], c0);
}

template <class Cfg>
__device__ __forceinline__ void fwd_compute(const DwParams& p, const typename Cfg::T* s_x, const float* s_w, int t,
                                            int c0) {
  const int ow0 = (t % p.tiles_w) * Cfg::tile_w;
  t /= p.tiles_w;
  const int oh0 = (t % p.tiles_h) * Cfg::tile_h;
  t /= p.tiles_h;
  fwd_tile<Cfg>(p, s_x, s_w, t / p.out[0], t % p.out[0], oh0, ow0, c0);
}

}  // namespace dw

// y[n][od][oh][ow][c] = act(bias[c] + sum_{z,y,x} x[n][od*sd-pd+z*dd][oh*sh-ph+y*dh][ow*sw-pw+x*dw][c] * w[c][z][y][x])
// Block = one tile: (c tile fastest, then tile col, tile row, od, n). Stages the input box (cp.async)
// and the filter, then each thread computes its CPT channels x PPT columns of one row.
template <class Cfg>
__device__ __forceinline__ void dw_fwd(const DwParams& p) {
  using namespace dw;
  typedef typename Cfg::T T;
  constexpr int TC = Cfg::tile_c;
  extern __shared__ __align__(16) unsigned char smem[];
  const int FZ = Cfg::fz ? Cfg::fz : p.filter[0];
  const int FY = Cfg::fy ? Cfg::fy : p.filter[1];
  const int FX = Cfg::fx ? Cfg::fx : p.filter[2];
  const int taps = FZ * FY * FX;
  float* s_w = reinterpret_cast<float*>(smem);                                                // [taps][TC]
  T* s_x = reinterpret_cast<T*>(smem + align16(taps * TC * int(sizeof(float))));  // [FZ][SR][SC][TC]
  const int c0 = (blockIdx.x % p.tiles_c) * TC, t = blockIdx.x / p.tiles_c;

  fwd_stage<Cfg>(p, s_x, t, c0);
  copy_commit();
  stage_filter<T, TC, Cfg::threads, Cfg::flip>(s_w, static_cast<const T*>(p.src2), p.c, c0, taps);
  copy_wait<0>();
  __syncthreads();
  fwd_compute<Cfg>(p, s_x, s_w, t, c0);
}

// dx[n][d][h][w][c] = sum over taps with (h + ph - y*dh) % sh == 0 (and likewise d, w) of
//   dy[n][(d+pd-z*dd)/sd][(h+ph-y*dh)/sh][(w+pw-x*dw)/sw][c] * w[c][z][y][x]
// Blocks own one stride phase (qh, qw) = (h % sh, w % sw): within it the valid taps are the same for
// every pixel and the dy rows/cols they read are consecutive, so the block stages one dy box and
// runs a dense correlation over the phase's pixels h = qh + sh * a, w = qw + sw * b.
template <class Cfg>
__device__ __forceinline__ void dw_bwd_data(const DwParams& p) {
  using namespace dw;
  typedef typename Cfg::T T;
  constexpr int TH = Cfg::tile_h, TW = Cfg::tile_w, TC = Cfg::tile_c, PPT = Cfg::ppt, CPT = Cfg::cpt;
  constexpr int LC = TC / CPT, GW = TW / PPT;
  extern __shared__ __align__(16) unsigned char smem[];

  int b = blockIdx.x;  // (c tile, tile col, tile row, phase, d, n)
  const int c0 = (b % p.tiles_c) * TC;
  b /= p.tiles_c;
  const int b0 = (b % p.tiles_w) * TW;  // phase column of the tile
  b /= p.tiles_w;
  const int a0 = (b % p.tiles_h) * TH;  // phase row of the tile
  b /= p.tiles_h;
  const int phases = p.stride[1] * p.stride[2];
  const int qh = (b % phases) / p.stride[2], qw = (b % phases) % p.stride[2];
  b /= phases;
  const int d = b % p.out[0], n = b / p.out[0];

  const int FZ = Cfg::fz ? Cfg::fz : p.filter[0];
  const int FY = Cfg::fy ? Cfg::fy : p.filter[1];
  const int FX = Cfg::fx ? Cfg::fx : p.filter[2];
  const int sd = p.stride[0], sh = p.stride[1], sw = p.stride[2];
  const int SR = p.halo[1], SC = p.halo[2];
  // dy row of tap y for phase row a: a + (qh + ph - y*dh) / sh; the smallest offset is at y = FY-1.
  const int omin_h = floor_div(qh + p.pad[1] - (FY - 1) * p.dilation[1], sh);
  const int omin_w = floor_div(qw + p.pad[2] - (FX - 1) * p.dilation[2], sw);
  T* s_dy = reinterpret_cast<T*>(smem);  // [FZ][SR][SC][TC]: dy box, slice z = tap z
  float* s_w = reinterpret_cast<float*>(smem + align16(FZ * SR * SC * TC * int(sizeof(T))));  // [taps][TC]

  auto dy_slice = [&](int z) {  // dy depth read by tap z, or -1
    const int t = d + p.pad[0] - z * p.dilation[0];
    return t % sd == 0 && t >= 0 ? t / sd : -1;
  };
  stage_box<T, TC, Cfg::vec, Cfg::threads>(s_dy, static_cast<const T*>(p.src), p.in, p.c, n, FZ, dy_slice,
                                           a0 + omin_h, SR, b0 + omin_w, SC, c0);
  copy_commit();
  stage_filter<T, TC, Cfg::threads, false>(s_w, static_cast<const T*>(p.src2), p.c, c0, FZ * FY * FX);
  copy_wait<0>();
  __syncthreads();

  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int r = pg / GW, col0 = (pg % GW) * PPT;
  float acc[PPT][CPT] = {};
  for (int fz = 0; fz < FZ; ++fz) {
    const int z = dy_slice(fz);
    if (z < 0 || z >= p.in[0]) continue;
#pragma unroll 1
    for (int fy = 0; fy < FY; ++fy) {
      const int u = qh + p.pad[1] - fy * p.dilation[1];
      if (u % sh != 0) continue;
      const T* s_row = s_dy + ((fz * SR + r + u / sh - omin_h) * p.halo[2]) * TC + lc * CPT;
#pragma unroll
      for (int fx = 0; fx < FX; ++fx) {
        const int v = qw + p.pad[2] - fx * p.dilation[2];
        if (v % sw != 0) continue;
        const T* s_col = s_row + (col0 + v / sw - omin_w) * TC;
        float w[CPT];
        load_f32(s_w + ((fz * FY + fy) * FX + fx) * TC + lc * CPT, w);
#pragma unroll
        for (int j = 0; j < PPT; ++j) {
          float x[CPT];
          load_f(s_col + j * TC, x);
#pragma unroll
          for (int i = 0; i < CPT; ++i) acc[j][i] = fmaf(x[i], w[i], acc[j][i]);
        }
      }
    }
  }

  const int h = qh + sh * (a0 + r), ch = c0 + lc * CPT;
  if (h >= p.out[1] || ch >= p.c) return;
  T* dx = static_cast<T*>(p.dst) + (((n * p.out[0] + d) * p.out[1] + h) * p.out[2]) * p.c + ch;
#pragma unroll
  for (int j = 0; j < PPT; ++j) {
    const int w = qw + sw * (b0 + col0 + j);
    if (w < p.out[2]) store_f(dx + w * p.c, acc[j]);
  }
}

}  // namespace tp
