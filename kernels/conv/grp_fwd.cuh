// Grouped convolution with few channels per group (fam=grp), forward (and unit-stride backward-data as a
// forward pass over dy with the filter rotated and each group's weights transposed: grp_flip_weights writes
// that copy of w into the workspace first), on tensor cores without
// im2col traffic: a block stages its input box (tile + halo, TC channels = TC / cpg whole groups) in shared
// memory once, and ldmatrix gathers each MMA's A rows from that box with per-lane addresses: row = output
// pixel, columns = 8 channels of one filter tap. Every filter tap reads the same box, so global memory is read
// about once, and no group's MMA sees another group's channels (no block-diagonal padding).
//
// GEMM view of one group: M = output pixels, N = cpg output channels, K = taps x cpg input channels, walked in
// chunks of 8 channels of one tap (chunk j: tap j / (cpg / 8), channels 8 (j % (cpg / 8)) ..); each m16n8k16
// step takes two chunks (an odd last one pairs with a zero chunk).
//
// Cfg (generated per program, src/jit/family_grp.cpp): T (f16 or bf16); tile_h, tile_w, tile_c; cpg (channels
// per group in and out); pw (output pixels per warp, a multiple of 16); threads; fz, fy, fx (filter extents, 0 =
// runtime); sy, sx, dly, dlx (H and W stride and dilation, 0 = runtime); act, bias; stages (boxes in flight, 1 or 2).
// With all of those baked every MMA step's box offset is a constant: the step loop unrolls to ldmatrix + mma.
// Work item: TH x TW output pixels of one (n, od) x TC channels. Warp: pw pixels x one group's cpg channels.
#pragma once
#include "common/mma.cuh"
#include "conv/dw_common.cuh"

namespace tp {
namespace grp {

using dw::copy_async;
using dw::smem_u32;

// Stages the weights of the block's groups as s_w[out channel][chunk j][8] (row pitch grp_weight_row): B of the
// view, rows = output channels, K = (tap, input channel): w[k][tap][c] of the group as it is, in 16-byte copies
// (bwd_data reads the flipped copy grp_flip_weights writes).
template <class Cfg>
__device__ __forceinline__ void stage_weights(typename Cfg::T* s_w, const DwParams& p, int c0, int taps) {
  typedef typename Cfg::T T;
  constexpr int TC = Cfg::tile_c, CPG = Cfg::cpg;
  const int WR = grp_weight_row(taps, CPG), K = taps * CPG;  // K elements a row
  const T* w = static_cast<const T*>(p.src2);
  const int vpr = K / 8;  // 16-byte vectors a row
  for (int i = threadIdx.x; i < TC * vpr; i += Cfg::threads) {
    const int r = i / vpr, v = i - r * vpr, k = c0 + r;
    const bool ok = k < p.c;
    copy_async<16>(s_w + r * WR + v * 8, ok ? w + i64(k) * K + v * 8 : w, ok);
  }
  for (int r = threadIdx.x; r < TC; r += Cfg::threads) copy_async<16>(s_w + r * WR + K, w, false);
}

// Work item t of the block's run: (channel tile, tile col, tile row, od, n), the channel tile slowest so that a
// run of consecutive items mostly keeps its groups (and their staged weights).
struct GrpItem {
  int c0, ow0, oh0, od, n;
  template <class Cfg>
  __device__ __forceinline__ static GrpItem of(const DwParams& p, int t) {
    GrpItem w;
    w.ow0 = (t % p.tiles_w) * Cfg::tile_w;
    t /= p.tiles_w;
    w.oh0 = (t % p.tiles_h) * Cfg::tile_h;
    t /= p.tiles_h;
    w.od = t % p.out[0];
    t /= p.out[0];
    w.n = t % p.n;
    w.c0 = (t / p.n) * Cfg::tile_c;
    return w;
  }
};

}  // namespace grp

// bwd_data's weights as the forward pass over dy reads them (kernel 0 of a bwd_data plan, into the workspace):
// w'[g][c][tap][k] = w[g][k][taps - 1 - tap][c], the filter rotated and each group's matrix transposed.
template <class Cfg>
__device__ __forceinline__ void grp_flip_weights(const DwParams& p) {
  typedef typename Cfg::T T;
  constexpr int CPG = Cfg::cpg;
  const int taps = p.filter[0] * p.filter[1] * p.filter[2], K = taps * CPG;
  const T* w = static_cast<const T*>(p.src2);
  T* out = static_cast<T*>(p.workspace);
  const i64 total = i64(p.c) * K;
  for (i64 i = blockIdx.x * i64(blockDim.x) + threadIdx.x; i < total; i += i64(gridDim.x) * blockDim.x) {
    const int c = int(i / K), e = int(i - i64(c) * K), tap = e / CPG, k = e - tap * CPG;
    const int group = c / CPG, ci = c - group * CPG;
    out[i] = w[(i64(group) * CPG + k) * K + (taps - 1 - tap) * CPG + ci];
  }
}

// y[n][od][oh][ow][g][k] = act(bias + sum_{tap, c} x[n][od*sd-pd+z*dd][oh*sh-ph+y*dh][ow*sw-pw+x*dw][g][c] *
//   w[g][k][tap][c]); bwd_data runs it over dy with the flipped weights (stride 1, pad F - 1 - pad).
// A resident grid (Launch::resident): block b runs the work items [b per, (b + 1) per), per = ceil(items / grid); a
// ring of Cfg::stages staged boxes (2: the next item's box loads during this one's MMAs); the weights are staged
// again only where the channel tile changes.
template <class Cfg>
__device__ __forceinline__ void grp_fwd(const DwParams& p) {
  using namespace grp;
  typedef typename Cfg::T T;
  constexpr int TC = Cfg::tile_c, TW = Cfg::tile_w, CPG = Cfg::cpg, PW = Cfg::pw, S = Cfg::stages;
  constexpr int MB = PW / 16, NB = CPG / 8, CB = CPG / 8;  // m16 blocks, n8 blocks, 8-channel chunks a tap
  constexpr int WG = Cfg::tile_h * TW / PW;                // warps a group
  constexpr int PP = grp_pixel_pitch(TC);
  static_assert(S == 1 || S == 2, "fam=grp stages: 1 or 2 staged boxes");
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr bool kFixed = Cfg::fz && Cfg::fy && Cfg::fx && Cfg::sy && Cfg::sx && Cfg::dly && Cfg::dlx;
  const int FZ = Cfg::fz ? Cfg::fz : p.filter[0];
  const int FY = Cfg::fy ? Cfg::fy : p.filter[1];
  const int FX = Cfg::fx ? Cfg::fx : p.filter[2];
  const int DY = Cfg::dly ? Cfg::dly : p.dilation[1], DX = Cfg::dlx ? Cfg::dlx : p.dilation[2];
  const int taps = FZ * FY * FX, KC = taps * CB, WR = grp_weight_row(taps, CPG);
  const int BH = kFixed ? int(box_extent(Cfg::tile_h, Cfg::sy, Cfg::fy, Cfg::dly)) : p.halo[1];
  const int BW = kFixed ? int(box_extent(TW, Cfg::sx, Cfg::fx, Cfg::dlx)) : p.halo[2];
  const int box_elems = (FZ * BH * BW + 1) * PP;  // the box and one zero pixel after it
  const int box_bytes = dw::align16(box_elems * int(sizeof(T)));

  const int items = p.tiles_c * p.tiles_w * p.tiles_h * p.out[0] * p.n;
  const int per = (items + gridDim.x - 1) / gridDim.x, first = blockIdx.x * per;
  const int last = min(items, first + per);
  if (first >= last) return;

  T* s_w = reinterpret_cast<T*>(smem);  // [TC][WR]
  unsigned char* s_boxes = smem + dw::align16(TC * WR * int(sizeof(T)));
  T* s_out = reinterpret_cast<T*>(s_boxes + S * box_bytes);  // [TH TW][PP]: the item's outputs, for wide stores
  auto box = [&](int slot) { return reinterpret_cast<T*>(s_boxes + slot * box_bytes); };
  auto stage = [&](const GrpItem& it, int slot) {
    dw::stage_box<T, TC, 8, Cfg::threads, PP>(
        box(slot), static_cast<const T*>(p.src), p.in, p.c, it.n, p.halo[0],
        [&](int k) { return it.od * p.stride[0] - p.pad[0] + k * p.dilation[0]; }, it.oh0 * p.stride[1] - p.pad[1],
        BH, it.ow0 * p.stride[2] - p.pad[2], BW, it.c0);
  };
  for (int slot = 0; slot < S; ++slot)  // the zero pixels after the boxes: rows of a zero chunk
    for (int v = threadIdx.x; v < TC / 8; v += Cfg::threads)
      copy_async<16>(box(slot) + FZ * BH * BW * PP + v * 8, p.src, false);
  GrpItem it = GrpItem::of<Cfg>(p, first);
  stage_weights<Cfg>(s_w, p, it.c0, taps);
  stage(it, 0);
  dw::copy_commit();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gl = warp / WG, pix0 = (warp % WG) * PW;  // the warp's group in the block, first pixel
  // A rows: lane l supplies row (l % 8) + 8 ((l / 8) & 1) of matrix l / 8; matrices 2, 3 hold the second chunk.
  const int a_row = (lane & 7) + 8 * ((lane >> 3) & 1), a_chunk = lane >> 4;
  int a_pix[MB];  // box pixel of this lane's A row at tap 0
#pragma unroll
  for (int mb = 0; mb < MB; ++mb) {
    const int m = pix0 + mb * 16 + a_row, r = m / TW, col = m - r * TW;
    a_pix[mb] = r * (Cfg::sy ? Cfg::sy : p.stride[1]) * BW + col * (Cfg::sx ? Cfg::sx : p.stride[2]);
  }
  // B rows: matrices (n block 2i, chunk 0), (2i, chunk 1), (2i + 1, chunk 0), (2i + 1, chunk 1).
  const int b_n = (lane & 7) + 8 * (lane >> 4), b_chunk = (lane >> 3) & 1;
  const u32 w_base = smem_u32(s_w) + (gl * CPG * WR) * 2;
  const int row_step = DY * BW, slice_step = BH * BW;
  const int g = lane >> 2, tq = lane & 3;
  T* y = static_cast<T*>(p.dst);
  // The box offset (bytes) of chunk j: its tap's pixel shift and its 8-channel block.
  auto chunk_offset = [&](int j) {
    const int tap = j / CB, cb = j - tap * CB;
    const int fz = tap / (FY * FX), fyx = tap - fz * (FY * FX), fy = fyx / FX, fx = fyx - fy * FX;
    return ((fz * slice_step + fy * row_step + fx * DX) * PP + cb * 8) * 2;  // box slice k = filter slice k
  };

  for (int t = first, i = 0; t < last; ++t, ++i) {
    const int slot = S == 2 ? i & 1 : 0;
    const bool has_next = t + 1 < last;
    const GrpItem next = GrpItem::of<Cfg>(p, has_next ? t + 1 : t);
    const bool prefetch = S == 2 && has_next && next.c0 == it.c0;  // the other slot is free since the last barrier
    if (prefetch) stage(next, slot ^ 1);
    dw::copy_commit();
    dw::copy_wait<1>();  // everything but the newest group: this item's box (and weights) are in
    __syncthreads();

    if (it.c0 + gl * CPG < p.c) {  // a ragged channel tile has fewer groups
      const u32 x_base = smem_u32(box(slot)) + (gl * CPG) * 2;
      const u32 zero_pix = smem_u32(box(slot)) + (FZ * BH * BW) * PP * 2;
      float acc[MB][NB][4] = {};
      const int steps = (KC + 1) / 2;
#pragma unroll(kFixed ? 64 : 2)
      for (int s = 0; s < steps; ++s) {
        // This lane's A chunk (2 s or 2 s + 1): its box offset; a chunk past K reads the zero pixel. Baked, both
        // candidates are constants and the lane selects one.
        const int ja = 2 * s + a_chunk;
        const int off = kFixed ? (a_chunk ? chunk_offset(2 * s + 1) : chunk_offset(2 * s)) : chunk_offset(ja);
        u32 b[NB][2];
#pragma unroll
        for (int i2 = 0; i2 < NB / 2; ++i2) {
          u32 r[4];
          ldsm_x4(r, w_base + ((i2 * 16 + b_n) * WR + (2 * s + b_chunk) * 8) * 2);
          b[2 * i2][0] = r[0], b[2 * i2][1] = r[1], b[2 * i2 + 1][0] = r[2], b[2 * i2 + 1][1] = r[3];
        }
        if constexpr (NB % 2 == 1)  // the last n block of an odd count (24, 40, 56 channels a group)
          ldsm_x2(b[NB - 1], w_base + (((NB - 1) * 8 + (lane & 7)) * WR + (2 * s + b_chunk) * 8) * 2);
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          const u32 addr = ja < KC ? x_base + a_pix[mb] * PP * 2 + off : zero_pix;
          u32 a[4];
          ldsm_x4(a, addr);
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) mma<T>(acc[mb][nb], a, b[nb]);
        }
      }

      // Epilogue: + bias, activation, into s_out; lane holds channel pairs (2 tq, 2 tq + 1) of pixels g, g + 8.
      const int ch = gl * CPG + 2 * tq;  // in the tile
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        float b0 = 0.f, b1 = 0.f;
        if constexpr (Cfg::bias) {
          const T* bias = static_cast<const T*>(p.bias) + it.c0 + ch + nb * 8;
          b0 = to_float(bias[0]), b1 = to_float(bias[1]);
        }
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = pix0 + mb * 16 + g + 8 * h;
            *reinterpret_cast<u32*>(s_out + m * PP + ch + nb * 8) =
                pack2<T>(activate<Cfg::act>(acc[mb][nb][2 * h] + b0), activate<Cfg::act>(acc[mb][nb][2 * h + 1] + b1));
          }
      }
    }
    __syncthreads();  // s_out is whole; this slot (and the weights) are free again
    {  // s_out to y in 16-byte vectors, a pixel's TC channels contiguous
      constexpr int VPP = TC / 8, STEP = Cfg::threads / VPP;
      static_assert(Cfg::threads % VPP == 0, "fam=grp: threads must cover whole pixels of the tile");
      const int v = threadIdx.x % VPP, c = it.c0 + v * 8;
      if (c < p.c) {
        const int row0 = ((it.n * p.out[0] + it.od) * p.out[1] + it.oh0) * p.out[2] + it.ow0;
        for (int m = threadIdx.x / VPP; m < Cfg::tile_h * TW; m += STEP) {
          const int r = m / TW, col = m - r * TW;
          if (it.oh0 + r < p.out[1] && it.ow0 + col < p.out[2])
            *reinterpret_cast<uint4*>(y + i64(row0 + r * p.out[2] + col) * p.c + c) =
                *reinterpret_cast<const uint4*>(s_out + m * PP + v * 8);
        }
      }
    }
    if (has_next && !prefetch) {  // one staged box, or the groups change: stage the next item now
      if (next.c0 != it.c0) stage_weights<Cfg>(s_w, p, next.c0, taps);
      stage(next, S == 2 ? slot ^ 1 : 0);
      dw::copy_commit();  // a group of its own: the next iteration's wait<1> leaves only its prefetch pending
    }
    it = next;
  }
}

}  // namespace tp
