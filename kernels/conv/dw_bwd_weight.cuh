// Depthwise convolution, backward-weight:
//   dw[c][z][y][x] = sum_{n,od,oh,ow} x[n][od*sd-pd+z*dd][oh*sh-ph+y*dh][ow*sw-pw+x*dw][c] * dy[n][od][oh][ow][c]
//
// Block: a TH x TW tile of dy pixels x TC channels, looping over its share (split) of the (n, od)
// slices; each slice stages the dy tile and the x box it reads, in a ring of Cfg::stages buffers
// filled with cp.async ahead of the compute. The block's sums go to the workspace as one fp32
// partial per (c, tap)
//   ws[part][c][tap], part = split * tiles_h * tiles_w + tile_row * tiles_w + tile_col,
// and dw_bwd_weight_reduce adds the parts in a fixed order: deterministic, no atomics. With one part
// (Cfg::single: one split, one tile) the block writes dw[c][tap] itself and there is no reduce launch.
//
// dw_bwd_weight (filter extents known at compile time): thread = CPT channels x strips of PPT
//   consecutive dy pixels x a group of filter rows, with all taps of those rows in registers; one
//   staged x column feeds every (pixel, tap) pair that reads it. At the end the threads are summed in
//   a fixed order (butterfly inside a warp, then step by step through shared memory).
// dw_bwd_weight_taps (any filter): thread = CPT channels x up to KT taps, summing over all pixels of
//   the tile; `passes` blocks cover the taps.
#pragma once
#include "conv/dw_common.cuh"

namespace tp {
namespace dw {

// Block coordinates and staging shared by both bwd_weight kernels.
template <class Cfg>
struct BwdWeightTile {
  typedef typename Cfg::T T;
  static constexpr int TH = Cfg::tile_h, TW = Cfg::tile_w, TC = Cfg::tile_c;
  int c0, oh0, ow0, split, part, pass;
  int FZ, FY, FX, SR, SC;  // SC columns staged per x row
  int x_bytes, stage_bytes;

  __device__ __forceinline__ BwdWeightTile(const DwParams& p, int passes) {
    int b = blockIdx.x;  // (c tile, tile col, tile row, pass, split)
    c0 = (b % p.tiles_c) * TC;
    b /= p.tiles_c;
    const int tw = b % p.tiles_w;
    b /= p.tiles_w;
    const int th = b % p.tiles_h;
    b /= p.tiles_h;
    pass = b % passes;
    split = b / passes;
    oh0 = th * TH, ow0 = tw * TW;
    part = (split * p.tiles_h + th) * p.tiles_w + tw;
    FZ = Cfg::fz ? Cfg::fz : p.filter[0];
    FY = Cfg::fy ? Cfg::fy : p.filter[1];
    FX = Cfg::fx ? Cfg::fx : p.filter[2];
    SR = p.halo[1], SC = p.halo[2];
    x_bytes = align16(FZ * SR * SC * TC * int(sizeof(T)));
    stage_bytes = x_bytes + align16(TH * TW * TC * int(sizeof(T)));
  }
  // Buffer s: x box [FZ][SR][SC][TC], then the dy tile [TH][TW][TC].
  __device__ __forceinline__ T* s_x(unsigned char* smem, int s) const {
    return reinterpret_cast<T*>(smem + s * stage_bytes);
  }
  __device__ __forceinline__ T* s_dy(unsigned char* smem, int s) const {
    return reinterpret_cast<T*>(smem + s * stage_bytes + x_bytes);
  }
  // Issues the copies of slice q = n * OD + od into buffer s (the caller commits the group).
  __device__ __forceinline__ void stage(const DwParams& p, unsigned char* smem, int q, int s) const {
    const int od = q % p.out[0], n = q / p.out[0];
    stage_box<T, TC, Cfg::vec, Cfg::threads>(
        s_x(smem, s), static_cast<const T*>(p.src), p.in, p.c, n, FZ,
        [&](int k) { return od * p.stride[0] - p.pad[0] + k * p.dilation[0]; }, oh0 * p.stride[1] - p.pad[1], SR,
        ow0 * p.stride[2] - p.pad[2], SC, c0);
    stage_box<T, TC, Cfg::vec, Cfg::threads>(s_dy(smem, s), static_cast<const T*>(p.src2), p.out, p.c, n, 1,
                                             [&](int) { return od; }, oh0, TH, ow0, TW, c0);
  }
  // Runs body(s) for every slice of this split, with the slice staged in buffer s: a ring of
  // Cfg::stages buffers, slice q + stages - 1 in flight (cp.async) while slice q is computed.
  template <class Body>
  __device__ __forceinline__ void for_each_slice(const DwParams& p, unsigned char* smem, Body body) const {
    constexpr int S = Cfg::stages;
    const int q0 = split * p.iters;
    const int q1 = min(q0 + p.iters, p.n * p.out[0]);
#pragma unroll
    for (int k = 0; k < S - 1; ++k) {
      if (q0 + k < q1) stage(p, smem, q0 + k, k);
      copy_commit();  // possibly empty: keeps the group count uniform
    }
    for (int q = q0; q < q1; ++q) {
      const int k = q - q0;
      if (q + S - 1 < q1) stage(p, smem, q + S - 1, (k + S - 1) % S);
      copy_commit();
      copy_wait<S - 1>();
      __syncthreads();
      body(k % S);
      __syncthreads();
    }
  }
};

// One filter row: acc[fx] += sum_j x[(col0 + j) * sw + fx * dw] * dy[j], s_x at column 0 of the row.
template <class Cfg>
__device__ __forceinline__ void filter_row_grad(float (&acc)[Cfg::fx][Cfg::cpt], const typename Cfg::T* s_x,
                                                const float (&dy)[Cfg::ppt][Cfg::cpt], int col0, int sw, int dw) {
  typedef typename Cfg::T T;
  constexpr int PPT = Cfg::ppt, CPT = Cfg::cpt, TC = Cfg::tile_c, FX = Cfg::fx;
  if constexpr (Cfg::sw > 0 && Cfg::dw > 0) {
    constexpr int SW = Cfg::sw, DW = Cfg::dw;
    constexpr int WIN = (PPT - 1) * SW + (FX - 1) * DW + 1;
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
          for (int i = 0; i < CPT; ++i) acc[t / DW][i] = fmaf(v[i], dy[j][i], acc[t / DW][i]);
        }
      }
    }
  } else {
#pragma unroll
    for (int fx = 0; fx < FX; ++fx) {
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        float v[CPT];
        load_f(s_x + ((col0 + j) * sw + fx * dw) * TC, v);
#pragma unroll
        for (int i = 0; i < CPT; ++i) acc[fx][i] = fmaf(v[i], dy[j][i], acc[fx][i]);
      }
    }
  }
}

}  // namespace dw

// Filter extents known at compile time. The P = TH*TW/PPT strips of PPT pixels are shared by
// FG = Cfg::fgroups groups of filter rows: thread (pg, lc) takes the rows R = fz*FY + fy with
// R % FG == pg % FG (NR = ceil(FZ*FY / FG) of them, all their taps in registers) for the strips
// pg / FG + k * P/FG, k < FG. FG > 1 trades dy reloads for fewer registers (more warps).
template <class Cfg>
__device__ __forceinline__ void dw_bwd_weight(const DwParams& p) {
  using namespace dw;
  allow_dependent_launch();  // the reduce launch (if any) may start; it waits for this grid itself
  typedef typename Cfg::T T;
  constexpr int TW = Cfg::tile_w, TC = Cfg::tile_c, PPT = Cfg::ppt, CPT = Cfg::cpt;
  constexpr int LC = TC / CPT, GW = TW / PPT, P = Cfg::threads / LC;
  constexpr int FZ = Cfg::fz, FY = Cfg::fy, FX = Cfg::fx, TAPS = FZ * FY * FX, ROWS = FZ * FY;
  constexpr int FG = Cfg::fgroups, NR = (ROWS + FG - 1) / FG;
  static_assert(FZ > 0 && FY > 0 && FX > 0, "dw_bwd_weight needs the filter at compile time");
  static_assert(P % FG == 0, "filter-row groups must divide the strips");
  extern __shared__ __align__(16) unsigned char smem[];

  const BwdWeightTile<Cfg> tile(p, 1);
  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int g = pg % FG, q = pg / FG;

  float acc[NR][FX][CPT] = {};  // rows g, g + FG, ... of the filter, all taps of each
  tile.for_each_slice(p, smem, [&](int s) {
    const T* s_x = tile.s_x(smem, s) + lc * CPT;
    const T* s_dy = tile.s_dy(smem, s) + lc * CPT;
#pragma unroll 1
    for (int k = 0; k < FG; ++k) {
      const int strip = q + k * (P / FG), r = strip / GW, col0 = (strip % GW) * PPT;
      float dy[PPT][CPT];
#pragma unroll
      for (int j = 0; j < PPT; ++j) load_f(s_dy + (r * TW + col0 + j) * TC, dy[j]);
#pragma unroll
      for (int m = 0; m < NR; ++m) {
        const int R = g + m * FG;
        if (FG == 1 || R < ROWS) {
          const int fz = R / FY, fy = R % FY;
          const T* s_row = s_x + ((fz * tile.SR + r * p.stride[1] + fy * p.dilation[1]) * tile.SC) * TC;
          filter_row_grad<Cfg>(acc[m], s_row, dy, col0, p.stride[2], p.dilation[2]);
        }
      }
    }
  });

  // Sum over the strips in a fixed order. Butterfly over the lanes of a warp that hold the same
  // channels and filter rows (pg apart by multiples of FG), then step by step into s_red[TAPS][TC]:
  // in each step the writers hold distinct filter rows.
  constexpr int GPW = LC >= 32 ? 1 : 32 / LC;  // strips (pg values) per warp
  if constexpr (GPW > FG) {
#pragma unroll
    for (int m = 0; m < NR; ++m)
#pragma unroll
      for (int fx = 0; fx < FX; ++fx)
#pragma unroll
        for (int i = 0; i < CPT; ++i)
#pragma unroll
          for (int off = LC * FG; off < 32; off *= 2) acc[m][fx][i] += __shfl_xor_sync(0xffffffffu, acc[m][fx][i], off);
  }
  constexpr int SPAN = GPW > FG ? GPW : FG;  // pg values summed per step
  constexpr int STEPS = P / SPAN;
  float* s_red = reinterpret_cast<float*>(smem);  // [TAPS][TC], reuses the staging buffers
  const bool writer = pg % SPAN < FG;
  for (int step = 0; step < STEPS; ++step) {
    if (writer && pg / SPAN == step) {
#pragma unroll
      for (int m = 0; m < NR; ++m) {
        const int R = g + m * FG;
        if (FG == 1 || R < ROWS) {
#pragma unroll
          for (int fx = 0; fx < FX; ++fx)
#pragma unroll
            for (int i = 0; i < CPT; ++i) {
              float& dst = s_red[(R * FX + fx) * TC + lc * CPT + i];
              dst = step == 0 ? acc[m][fx][i] : dst + acc[m][fx][i];
            }
        }
      }
    }
    __syncthreads();
  }

  // Partial of this block: ws[part][c][tap] for c < C (contiguous over (c, tap)); with one part, dw itself.
  const long long at = (long long)tile.part * p.c * TAPS + (long long)tile.c0 * TAPS;
  const int nc = min(TC, p.c - tile.c0);
  for (int e = threadIdx.x; e < nc * TAPS; e += Cfg::threads) {
    const int cc = e / TAPS, t = e - cc * TAPS;
    if constexpr (Cfg::single)
      static_cast<T*>(p.dst)[at + e] = from_float<T>(s_red[t * TC + cc]);
    else
      static_cast<float*>(p.workspace)[at + e] = s_red[t * TC + cc];
  }
}

// Any filter: thread (pixel group pg, channel lane lc) owns taps pass*P*KT + k*P + pg, k < KT.
template <class Cfg>
__device__ __forceinline__ void dw_bwd_weight_taps(const DwParams& p) {
  using namespace dw;
  allow_dependent_launch();
  typedef typename Cfg::T T;
  constexpr int TH = Cfg::tile_h, TW = Cfg::tile_w, TC = Cfg::tile_c, CPT = Cfg::cpt;
  constexpr int LC = TC / CPT, P = Cfg::threads / LC, KT = Cfg::taps_per_thread;
  extern __shared__ __align__(16) unsigned char smem[];

  const BwdWeightTile<Cfg> tile(p, p.passes);
  const int lc = threadIdx.x % LC, pg = threadIdx.x / LC;
  const int taps = tile.FZ * tile.FY * tile.FX;
  int s_off[KT];  // offset of tap k's x column 0 in the staged box, or -1
#pragma unroll
  for (int k = 0; k < KT; ++k) {
    const int t = (tile.pass * KT + k) * P + pg;
    const int tz = t / (tile.FY * tile.FX), ty = (t / tile.FX) % tile.FY, tx = t % tile.FX;
    s_off[k] = t < taps ? (tz * tile.SR + ty * p.dilation[1]) * tile.SC + tx * p.dilation[2] : -1;
  }

  float acc[KT][CPT] = {};
  tile.for_each_slice(p, smem, [&](int s) {
    const T* s_x = tile.s_x(smem, s) + lc * CPT;
    const T* s_dy = tile.s_dy(smem, s) + lc * CPT;
#pragma unroll 1
    for (int r = 0; r < TH; ++r) {
#pragma unroll 2
      for (int c = 0; c < TW; ++c) {
        float dy[CPT];
        load_f(s_dy + (r * TW + c) * TC, dy);
        const int pix = r * p.stride[1] * tile.SC + c * p.stride[2];
#pragma unroll
        for (int k = 0; k < KT; ++k) {
          if (s_off[k] < 0) continue;
          float x[CPT];
          load_f(s_x + (s_off[k] + pix) * TC, x);
#pragma unroll
          for (int i = 0; i < CPT; ++i) acc[k][i] = fmaf(x[i], dy[i], acc[k][i]);
        }
      }
    }
  });

  const long long at = (long long)tile.part * p.c * taps;
#pragma unroll
  for (int k = 0; k < KT; ++k) {
    const int t = (tile.pass * KT + k) * P + pg;
    if (s_off[k] < 0) continue;
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int ch = tile.c0 + lc * CPT + i;
      if (ch >= p.c) continue;
      if constexpr (Cfg::single)
        static_cast<T*>(p.dst)[at + (long long)ch * taps + t] = from_float<T>(acc[k][i]);
      else
        static_cast<float*>(p.workspace)[at + (long long)ch * taps + t] = acc[k][i];
    }
  }
}

namespace dw {

// dst[e] = sum over parts (in order) of ws[part][e], e < total (fp32 partials -> T). 256 threads: lane = element
// of a 32-element chunk, warp = parts warp, warp + 8, ...; the 8 warp sums are added in order.
template <class T>
__device__ __forceinline__ void reduce_parts(const DwParams& p, long long total) {
  wait_for_previous_grid();  // the partials kernel's workspace, before reading it
  __shared__ float s_sum[8][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long e = (long long)blockIdx.x * 32 + lane;
  const float* ws = static_cast<const float*>(p.workspace);
  float s = 0.f;
  if (e < total) {
#pragma unroll 4
    for (int part = warp; part < p.parts; part += 8) s += ws[part * total + e];
  }
  s_sum[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && e < total) {
    float v = s_sum[0][lane];
#pragma unroll
    for (int w = 1; w < 8; ++w) v += s_sum[w][lane];
    static_cast<T*>(p.dst)[e] = from_float<T>(v);
  }
}

}  // namespace dw

// dw[c][tap] = the parts of ws[part][c][tap] summed in order.
template <class Cfg>
__device__ __forceinline__ void dw_bwd_weight_reduce(const DwParams& p) {
  dw::reduce_parts<typename Cfg::T>(p, (long long)p.c * p.filter[0] * p.filter[1] * p.filter[2]);
}

}  // namespace tp
