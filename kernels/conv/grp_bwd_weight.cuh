// Grouped convolution with few channels per group (fam=grp), backward-weight, on tensor cores:
//   dw[g][k][tap][c] = sum_{n, od, oh, ow} x[n][od*sd-pd+z*dd][oh*sh-ph+y*dh][ow*sw-pw+x*dw][g][c] * dy[n][od][oh][ow][g][k]
//
// GEMM view of one group: M = (tap, input channel) in chunks of 8 channels of one tap (chunk j: tap j / (cpg / 8),
// channels 8 (j % (cpg / 8)) ..), N = cpg output channels, K = dy pixels, 16 a step. An item (TH x TW dy pixels of
// one (n, od), TC channels = TC / cpg whole groups) stages its x box (tile + halo) and its dy tile in shared memory;
// ldmatrix.trans reads A (x, rows = channels of a tap, per-lane pixel addresses shifted by the tap) and B (dy) from
// them. A warp owns the output channels [8 NB wn, 8 NB (wn + 1)) of its group (NB n8 blocks: all of them, or half
// of 48 or 64) and the m blocks (chunk pairs) wi, wi + WM, ... and sums them over every pixel of the block's items
// in registers.
//
// Block (channel tile, split): the items [split iters, (split + 1) iters) of its channel tile, in a ring of
// Cfg::stages buffers (the next item loads during this one's MMAs). Its sums go to the workspace as fp32
// partials ws[split][C][taps x cpg] (dw's layout), and grp_bwd_weight_reduce adds the splits in a fixed order:
// deterministic, no atomics. With one split (Cfg::single) the block writes dw itself.
//
// Cfg (src/jit/family_grp.cpp): T; tile_h, tile_w, tile_c; cpg; threads; fz, fy, fx (compile time, nonzero);
// stages; single.
#pragma once
#include "common/mma.cuh"
#include "conv/dw_bwd_weight.cuh"
#include "conv/dw_common.cuh"

namespace tp {
template <class Cfg>
__device__ __forceinline__ void grp_bwd_weight(const DwParams& p) {
  allow_dependent_launch();  // the reduce launch (if any) may start; it waits for this grid itself
  using dw::smem_u32;
  using grp::BwdWeightShape;
  using grp::bwd_weight_shape;
  typedef typename Cfg::T T;
  constexpr int TH = Cfg::tile_h, TW = Cfg::tile_w, TC = Cfg::tile_c, CPG = Cfg::cpg, S = Cfg::stages;
  constexpr int FZ = Cfg::fz, FY = Cfg::fy, FX = Cfg::fx, TAPS = FZ * FY * FX;
  static_assert(FZ > 0 && FY > 0 && FX > 0, "grp_bwd_weight needs the filter at compile time");
  static_assert(S == 1 || S == 2, "fam=grp stages: 1 or 2 staged items");
  static_assert((TH * TW) % 16 == 0, "a tile's pixels must be whole 16-pixel steps");
  constexpr int CB = CPG / 8, KC = TAPS * CB;          // chunks a tap, chunks
  constexpr int WG = Cfg::threads / 32 / (TC / CPG);  // warps a group
  constexpr BwdWeightShape shape = bwd_weight_shape(TAPS, CPG, WG);
  static_assert(shape.per_warp > 0, "the warps of a group must split its output channels");
  constexpr int NB = shape.n_blocks, WN = shape.n_warps, WM = WG / WN;  // n8 blocks a warp, warps along n, m
  constexpr int MPW = shape.per_warp, PP = grp_pixel_pitch(TC), STEPS = TH * TW / 16;
  extern __shared__ __align__(16) unsigned char smem[];

  const int BH = p.halo[1], BW = p.halo[2];
  const int box_bytes = dw::align16(FZ * BH * BW * PP * int(sizeof(T)));
  const int stage_bytes = box_bytes + dw::align16(TH * TW * PP * int(sizeof(T)));
  auto s_x = [&](int slot) { return reinterpret_cast<T*>(smem + slot * stage_bytes); };
  auto s_dy = [&](int slot) { return reinterpret_cast<T*>(smem + slot * stage_bytes + box_bytes); };

  const int ct = blockIdx.x % p.tiles_c, split = blockIdx.x / p.tiles_c, c0 = ct * TC;
  const int per_tile = p.tiles_w * p.tiles_h * p.out[0] * p.n;  // items of one channel tile
  const int q0 = split * p.iters, q1 = min(q0 + p.iters, per_tile);
  auto stage = [&](int q, int slot) {  // item q: (tile col, tile row, od, n), the col fastest
    const int ow0 = (q % p.tiles_w) * TW;
    q /= p.tiles_w;
    const int oh0 = (q % p.tiles_h) * TH;
    q /= p.tiles_h;
    const int od = q % p.out[0], n = q / p.out[0];
    dw::stage_box<T, TC, 8, Cfg::threads, PP>(
        s_x(slot), static_cast<const T*>(p.src), p.in, p.c, n, FZ,
        [&](int k) { return od * p.stride[0] - p.pad[0] + k * p.dilation[0]; }, oh0 * p.stride[1] - p.pad[1], BH,
        ow0 * p.stride[2] - p.pad[2], BW, c0);
    dw::stage_box<T, TC, 8, Cfg::threads, PP>(s_dy(slot), static_cast<const T*>(p.src2), p.out, p.c, n, 1,
                                             [&](int) { return od; }, oh0, TH, ow0, TW, c0);
  };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gl = warp / WG, wn = warp % WG % WN, wi = warp % WG / WN;  // group in the block, n part, m part
  // A (x^T): lane l supplies stored row (pixel) (l % 8) + 8 (l / 16) of chunk (l / 8) & 1 of the pair.
  const int a_pix = (lane & 7) + 8 * (lane >> 4), a_chunk = (lane >> 3) & 1;
  // B (dy): matrices (pixels 0-7, n block 2i), (8-15, 2i), (0-7, 2i + 1), (8-15, 2i + 1).
  const int b_pix = (lane & 7) + 8 * ((lane >> 3) & 1), b_n = lane >> 4;
  int a_off[MPW];  // this lane's chunk of m block wi + WM j: byte offset of its tap and channel block in the box
#pragma unroll
  for (int j = 0; j < MPW; ++j) {
    const int ch = min(2 * (wi + WM * j) + a_chunk, KC - 1);  // a chunk past K: any staged row (its C rows unused)
    const int tap = ch / CB, cb = ch - tap * CB;
    const int fz = tap / (FY * FX), fyx = tap - fz * (FY * FX), fy = fyx / FX, fx = fyx - fy * FX;
    const int pix = (fz * BH + fy * p.dilation[1]) * BW + fx * p.dilation[2];  // box slice k = filter slice k
    a_off[j] = (pix * PP + gl * CPG + cb * 8) * int(sizeof(T));
  }
  const bool active = c0 + gl * CPG < p.c;  // a ragged channel tile has fewer groups
  float acc[MPW][NB][4] = {};

  for (int k = 0; k < S - 1; ++k) {
    if (q0 + k < q1) stage(q0 + k, k);
    dw::copy_commit();
  }
  for (int q = q0; q < q1; ++q) {
    const int k = q - q0, slot = k % S;
    if (q + S - 1 < q1) stage(q + S - 1, (k + S - 1) % S);
    dw::copy_commit();
    dw::copy_wait<S - 1>();
    __syncthreads();
    if (active) {
      const u32 x_base = smem_u32(s_x(slot));
      const u32 dy_base = smem_u32(s_dy(slot)) + (gl * CPG + wn * NB * 8) * int(sizeof(T));
#pragma unroll 2
      for (int s = 0; s < STEPS; ++s) {
        u32 b[NB][2];
        const u32 b_row = dy_base + ((16 * s + b_pix) * PP) * int(sizeof(T));
#pragma unroll
        for (int i2 = 0; i2 < NB / 2; ++i2) {
          u32 r[4];
          ldsm_x4_trans(r, b_row + ((2 * i2 + b_n) * 8) * int(sizeof(T)));
          b[2 * i2][0] = r[0], b[2 * i2][1] = r[1], b[2 * i2 + 1][0] = r[2], b[2 * i2 + 1][1] = r[3];
        }
        if constexpr (NB % 2 == 1) ldsm_x2_trans(b[NB - 1], b_row + ((NB - 1) * 8) * int(sizeof(T)));  // odd count
        const int m = 16 * s + a_pix, r = m / TW, col = m - r * TW;
        const u32 a_row = x_base + ((r * p.stride[1] * BW + col * p.stride[2]) * PP) * int(sizeof(T));
#pragma unroll
        for (int j = 0; j < MPW; ++j) {
          if (MPW * WM > shape.m_blocks && wi + WM * j >= shape.m_blocks) continue;  // the warp's share is short
          u32 a[4];
          ldsm_x4_trans(a, a_row + a_off[j]);
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) mma<T>(acc[j][nb], a, b[nb]);
        }
      }
    }
    __syncthreads();  // this slot is free again
  }
  if (!active) return;

  // acc[j][nb]: rows g (chunk 2 mb) and g + 8 (chunk 2 mb + 1) = (tap, input channel), columns 2t, 2t + 1 = output
  // channels; dw[k][tap x cpg + c], k of the group at column nb 8 + 2t (+ 1).
  const int g = lane >> 2, tq = lane & 3, row_len = TAPS * CPG;
  const i64 k0 = c0 + gl * CPG + wn * NB * 8 + 2 * tq;
  float* ws = static_cast<float*>(p.workspace) + i64(split) * p.c * row_len;
  T* dw_out = static_cast<T*>(p.dst);
#pragma unroll
  for (int j = 0; j < MPW; ++j) {
    const int mb = wi + WM * j;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ch = 2 * mb + h;
      if (ch >= KC) continue;
      const int tap = ch / CB, c = (ch - tap * CB) * 8 + g, e = tap * CPG + c;
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const i64 at = (k0 + nb * 8 + i) * row_len + e;
          if constexpr (Cfg::single)
            dw_out[at] = from_float<T>(acc[j][nb][2 * h + i]);
          else
            ws[at] = acc[j][nb][2 * h + i];
        }
      }
    }
  }
}

// dw = sum over the splits (in order) of the partials; one element of C x taps x cpg a thread-lane.
template <class Cfg>
__device__ __forceinline__ void grp_bwd_weight_reduce(const DwParams& p) {
  dw::reduce_parts<typename Cfg::T>(p, i64(p.c) * p.filter[0] * p.filter[1] * p.filter[2] * Cfg::cpg);
}

}  // namespace tp
