// Runtime arguments of the direct convolution kernels (fam=dw, and fam=grp: kernels/conv/grp_*.cuh, whose
// channels are TC / cpg whole groups): one by-value struct per launch.
// Plain C layout of fixed-width builtin types and pointers, shared by the host plan builder
// (src/jit/family_dw.cpp packs it into Launch::params) and the device code.
//
// Tensors are channels-last with one channel per group (G == C == K):
//   x [N][D][H][W][C]   w [C][Z][Y][X]   y [N][OD][OH][OW][C]   bias [C] (output dtype)
// Spatial triples are ordered (d, h, w); 2-D problems have d = 1, filter 1, stride 1, pad 0.
//
// Roles per kernel (src, src2 -> dst):
//   dw_fwd            x,  w  -> y        in = x dims,  out = y dims
//   dw_fwd (flip)     dy, w  -> dx       unit-stride bwd_data as a forward pass with the filter
//                                        rotated and pad' = (F - 1) * dil - pad; in = dy, out = dx
//   dw_bwd_data       dy, w  -> dx       any stride, one stride phase per block; in = dy, out = dx
//   dw_bwd_weight*    x,  dy -> workspace partials [parts][C][Z*Y*X] (fp32); in = x, out = dy
//   dw_bwd_weight_reduce     workspace -> dw, summing the parts in a fixed order (deterministic)
//   grp_fwd, grp_bwd_weight (+ grp_bwd_weight_reduce): the same roles, with cpg channels a group
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TP_DW_FN __host__ __device__ constexpr
#else
#define TP_DW_FN constexpr
#endif

namespace tp {

// fam=grp's shared-memory rows, in elements (the kernel's layout, the host's size): a staged pixel holds TC
// channels plus 8 (16 bytes: the 8 rows of one ldmatrix, 8 consecutive pixels, fall on 8 different 16-byte bank
// groups); a staged weight row (one output channel: taps x cpg inputs) is padded by 8 zeros, the chunk an odd K
// pairs with.
TP_DW_FN int grp_pixel_pitch(int tile_c) { return tile_c + 8; }
TP_DW_FN int grp_weight_row(int taps, int cpg) { return taps * cpg + 8; }
// Input rows (or columns) an output tile of `tile` pixels reads: the staged box's extent (host size, device layout).
TP_DW_FN long long box_extent(long long tile, long long stride, long long filter, long long dilation) {
  return (tile - 1) * stride + (filter - 1) * dilation + 1;
}

namespace grp {
// fam=grp bwd_weight: a warp's share of one group's dw rows (the kernel's shape, the host's register bound). The
// group's warps split its cpg output channels into n_warps parts (2 for 48 and 64, else 1) and its m blocks (pairs
// of 8-row chunks of (tap, input channel)) among the rest.
struct BwdWeightShape {
  int m_blocks;  // chunk pairs of one group: ceil(taps x cpg / 8 / 2)
  int n_warps;   // warps along the output channels
  int n_blocks;  // n8 blocks a warp: cpg / 8 / n_warps
  int per_warp;  // m blocks a warp owns: ceil(m_blocks / (warps a group / n_warps)); 0 if n_warps does not divide
  int accumulators;  // fp32 a thread: per_warp x n_blocks x 4
};
TP_DW_FN BwdWeightShape bwd_weight_shape(int taps, int cpg, int warps_a_group) {
  BwdWeightShape s{};
  s.m_blocks = (taps * (cpg / 8) + 1) / 2;
  s.n_warps = cpg == 48 || cpg == 64 ? 2 : 1;
  s.n_blocks = cpg / 8 / s.n_warps;
  const int wm = warps_a_group % s.n_warps == 0 ? warps_a_group / s.n_warps : 0;
  s.per_warp = wm > 0 ? (s.m_blocks + wm - 1) / wm : 0;
  s.accumulators = s.per_warp * s.n_blocks * 4;
  return s;
}
}  // namespace grp

struct DwParams {
  const void* src;   // input read with a halo (x, or dy for bwd_data)
  const void* src2;  // w (fwd, bwd_data) or dy (bwd_weight)
  const void* bias;  // [C] in the output dtype, or null
  void* dst;         // y, dx, or dw (reduce kernel)
  void* workspace;   // dw bwd_weight: float [parts][C][taps]; grp bwd_data: the flipped weights [C][taps][cpg]
  int n, c;          // batch, channels (== groups)
  int in[3];         // (d, h, w) extents of src
  int out[3];        // (d, h, w) extents of the pixel grid the blocks tile: y, dx, or dy
  int filter[3];
  int stride[3];
  int pad[3];
  int dilation[3];
  int halo[3];       // staged src box per block: (slices, rows, cols)
  int tiles_h, tiles_w, tiles_c;  // blocks along output rows, output cols, channels
  int splits;        // bwd_weight: blocks along the (n, od) reduction
  int iters;         // bwd_weight: (n, od) slices per split
  int passes;        // bwd_weight tap-owner kernel: blocks along the taps
  int parts;         // bwd_weight: partial sums per (c, tap) = splits * tiles_h * tiles_w
};

static_assert(sizeof(DwParams) == 160, "DwParams layout is shared by host and device");

}  // namespace tp
