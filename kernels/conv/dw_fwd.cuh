// Depthwise convolution, forward (and unit-stride backward-data as a forward pass with the filter
// rotated), and backward-data for any stride, one stride phase per tile.
//
// Cfg (generated per program): T; tile_h, tile_w, tile_c, ppt, cpt, threads; vec (staging vector,
// elements); fz, fy, fx (filter extents, 0 = runtime); sw, dw (W stride and dilation, 0 = runtime);
// act, bias, flip.
//
// Tile: TH output rows x TW cols x TC channels of one (n, od) slice; a block computes p.iters of them
// (the host's tiles_per_block), with the next one's input box loading while it computes this one.
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
  const int SR = p.halo[1], SC = p.halo[2];
  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int r = pg / GW, col0 = (pg % GW) * PPT;

  float acc[PPT][CPT] = {};
  // One filter row at a time (not unrolled: keeps the loads of one row in flight, not of all rows).
#pragma unroll 1
  for (int fz = 0; fz < FZ; ++fz) {
#pragma unroll 1
    for (int fy = 0; fy < FY; ++fy) {
      const T* s_row = s_x + ((fz * SR + r * p.stride[1] + fy * p.dilation[1]) * SC) * TC + lc * CPT;
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
// Block = p.iters consecutive spatial tiles (tile col fastest, then tile row, od, n) of one channel tile
// (blockIdx.x % tiles_c). Stages the filter once; with one tile it stages the input box (cp.async) and
// computes; with more, two box buffers take turns: the next tile's box is in flight while this one's is
// computed, so the block keeps loads going through its compute (a single tile leaves that overlap to the
// other blocks on the SM). Each thread computes its CPT channels x PPT columns of one row.
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
  float* s_w = reinterpret_cast<float*>(smem);                                    // [taps][TC]
  unsigned char* s_box = smem + align16(taps * TC * int(sizeof(float)));          // [2][FZ][SR][SC][TC]
  const int box_bytes = align16(p.halo[0] * p.halo[1] * p.halo[2] * TC * int(sizeof(T)));
  auto s_x = [&](int i) { return reinterpret_cast<T*>(s_box + (i & 1) * box_bytes); };
  const int c0 = (blockIdx.x % p.tiles_c) * TC;
  const int tiles = p.tiles_w * p.tiles_h * p.out[0] * p.n;
  const int t0 = blockIdx.x / p.tiles_c * p.iters, t1 = min(t0 + p.iters, tiles);

  fwd_stage<Cfg>(p, s_x(0), t0, c0);
  copy_commit();
  stage_filter<T, TC, Cfg::threads, Cfg::flip>(s_w, static_cast<const T*>(p.src2), p.c, c0, taps);
  for (int t = t0; t < t1; ++t) {
    const bool next = t + 1 < t1;
    if (next) {
      fwd_stage<Cfg>(p, s_x(t - t0 + 1), t + 1, c0);  // into the buffer the previous tile was computed from
      copy_commit();
      copy_wait<1>();
    } else {
      copy_wait<0>();
    }
    __syncthreads();
    fwd_compute<Cfg>(p, s_x(t - t0), s_w, t, c0);
    if (next) __syncthreads();  // every thread is done with this buffer before it is staged again
  }
}

// dx[n][d][h][w][c] = sum over taps with (h + ph - y*dh) % sh == 0 (and likewise d, w) of
//   dy[n][(d+pd-z*dd)/sd][(h+ph-y*dh)/sh][(w+pw-x*dw)/sw][c] * w[c][z][y][x]
// A unit is one tile of one stride phase (qh, qw) = (h % sh, w % sw): within it the valid taps are the same
// for every pixel and the dy rows/cols they read are consecutive, so it stages one dy box and runs a dense
// correlation over the phase's pixels h = qh + sh * a, w = qw + sw * b.
namespace dw {

struct PhaseUnit {
  int b0, a0;          // phase column and row of the tile
  int qh, qw, d, n;    // stride phase, dx depth, image
  int omin_h, omin_w;  // dy offsets of the box (the smallest tap offset, at y = FY-1 / x = FX-1)
};

// Unit u (tile col fastest, then tile row, phase, d, n).
__device__ __forceinline__ PhaseUnit phase_unit(const DwParams& p, int u, int TH, int TW, int FY, int FX) {
  PhaseUnit r;
  r.b0 = (u % p.tiles_w) * TW;
  u /= p.tiles_w;
  r.a0 = (u % p.tiles_h) * TH;
  u /= p.tiles_h;
  const int phases = p.stride[1] * p.stride[2];
  r.qh = (u % phases) / p.stride[2], r.qw = (u % phases) % p.stride[2];
  u /= phases;
  r.d = u % p.out[0], r.n = u / p.out[0];
  r.omin_h = floor_div(r.qh + p.pad[1] - (FY - 1) * p.dilation[1], p.stride[1]);
  r.omin_w = floor_div(r.qw + p.pad[2] - (FX - 1) * p.dilation[2], p.stride[2]);
  return r;
}

// dy depth read by tap z for dx depth d, or -1.
__device__ __forceinline__ int phase_slice(const DwParams& p, int d, int z) {
  const int t = d + p.pad[0] - z * p.dilation[0];
  return t % p.stride[0] == 0 && t >= 0 ? t / p.stride[0] : -1;
}

}  // namespace dw

// Block = p.iters consecutive units of one channel tile (blockIdx.x % tiles_c), two dy box buffers taking
// turns as in dw_fwd; the filter is staged once.
template <class Cfg>
__device__ __forceinline__ void dw_bwd_data(const DwParams& p) {
  using namespace dw;
  typedef typename Cfg::T T;
  constexpr int TH = Cfg::tile_h, TW = Cfg::tile_w, TC = Cfg::tile_c, PPT = Cfg::ppt, CPT = Cfg::cpt;
  constexpr int LC = TC / CPT, GW = TW / PPT;
  extern __shared__ __align__(16) unsigned char smem[];
  const int FZ = Cfg::fz ? Cfg::fz : p.filter[0];
  const int FY = Cfg::fy ? Cfg::fy : p.filter[1];
  const int FX = Cfg::fx ? Cfg::fx : p.filter[2];
  const int sh = p.stride[1], sw = p.stride[2];
  const int SR = p.halo[1], SC = p.halo[2];
  const int taps = FZ * FY * FX;
  float* s_w = reinterpret_cast<float*>(smem);                            // [taps][TC]
  unsigned char* s_box = smem + align16(taps * TC * int(sizeof(float)));  // [2][FZ][SR][SC][TC]: slice z = tap z
  const int box_bytes = align16(FZ * SR * SC * TC * int(sizeof(T)));
  auto s_dy = [&](int i) { return reinterpret_cast<T*>(s_box + (i & 1) * box_bytes); };
  const int c0 = (blockIdx.x % p.tiles_c) * TC;
  const int units = p.tiles_w * p.tiles_h * sh * sw * p.out[0] * p.n;
  const int u0 = blockIdx.x / p.tiles_c * p.iters, u1 = min(u0 + p.iters, units);
  auto stage = [&](int u, T* dst) {
    const PhaseUnit t = phase_unit(p, u, TH, TW, FY, FX);
    stage_box<T, TC, Cfg::vec, Cfg::threads>(dst, static_cast<const T*>(p.src), p.in, p.c, t.n, FZ,
                                             [&](int z) { return phase_slice(p, t.d, z); }, t.a0 + t.omin_h, SR,
                                             t.b0 + t.omin_w, SC, c0);
    copy_commit();
  };

  stage(u0, s_dy(0));
  stage_filter<T, TC, Cfg::threads, false>(s_w, static_cast<const T*>(p.src2), p.c, c0, taps);
  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int r = pg / GW, col0 = (pg % GW) * PPT;
  for (int u = u0; u < u1; ++u) {
    const bool next = u + 1 < u1;
    if (next) {
      stage(u + 1, s_dy(u - u0 + 1));  // into the buffer the previous unit was computed from
      copy_wait<1>();
    } else {
      copy_wait<0>();
    }
    __syncthreads();
    const PhaseUnit t = phase_unit(p, u, TH, TW, FY, FX);
    const T* box = s_dy(u - u0);
    float acc[PPT][CPT] = {};
    for (int fz = 0; fz < FZ; ++fz) {
      const int z = phase_slice(p, t.d, fz);
      if (z < 0 || z >= p.in[0]) continue;
#pragma unroll 1
      for (int fy = 0; fy < FY; ++fy) {
        const int v = t.qh + p.pad[1] - fy * p.dilation[1];
        if (v % sh != 0) continue;
        const T* s_row = box + ((fz * SR + r + v / sh - t.omin_h) * SC) * TC + lc * CPT;
#pragma unroll
        for (int fx = 0; fx < FX; ++fx) {
          const int o = t.qw + p.pad[2] - fx * p.dilation[2];
          if (o % sw != 0) continue;
          const T* s_col = s_row + (col0 + o / sw - t.omin_w) * TC;
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
    const int h = t.qh + sh * (t.a0 + r), ch = c0 + lc * CPT;
    if (h < p.out[1] && ch < p.c) {
      T* dx = static_cast<T*>(p.dst) + (((t.n * p.out[0] + t.d) * p.out[1] + h) * p.out[2]) * p.c + ch;
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        const int w = t.qw + sw * (t.b0 + col0 + j);
        if (w < p.out[2]) store_f(dx + w * p.c, acc[j]);
      }
    }
    if (next) __syncthreads();  // every thread is done with this buffer before it is staged again
  }
}

}  // namespace tp
