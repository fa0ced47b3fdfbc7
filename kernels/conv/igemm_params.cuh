// Kernel parameters of the sm80 implicit-GEMM convolution (one struct for fwd, bwd_data, bwd_weight;
// 2-D problems have depth 1). Plain C: shared with the host, which packs it into Launch::params.
//
// Tensors (channels-last, grouped): x[n][d][h][w][g][c], w[g][k][z][y][x][c], y[n][od][oh][ow][g][k].
// GEMM view per group (the group is the batch index of the grid):
//   fwd        M = N*Do*Ho*Wo (pixel)      N = K/G              K = Z*Y*X*C/G (tap, c)
//   bwd_data   M = N*qd*qh*qw (dx pixels   N = C/G              K = taps(phase)*K/G (tap, k)
//              of one stride phase)
//   bwd_weight M = K/G                     N = Z*Y*X*C/G (tap,c) K = N*Do*Ho*Wo (pixel)
// Packed groups (Cfg::pack): one block runs 2^pack_lp consecutive groups as one GEMM whose weight operand (fwd,
// bwd_data) is block-diagonal, zeros between groups, or whose output (bwd_weight) is, the off-diagonal blocks
// not stored; so that a tile is not mostly padding when the channels per group are few and the loads of a pixel's
// channels are P times wider. g, c and k then count the packs and their channels: g = G/P, c = P*C/G, k = P*K/G.
#pragma once

namespace tp {

// q = n / d for 0 <= n < 2^31: q = (n * mul) >> shift with shift = 31 + ceil(log2 d), mul = ceil(2^shift / d).
struct FastDiv {
  unsigned d, mul, shift, pad_;
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__device__ __forceinline__ int fdiv(int n, const FastDiv& f) {
  return int((unsigned long long)(unsigned)n * f.mul >> f.shift);
}
#endif

struct ConvParams {
  const void* a;        // fwd: x   bwd_data: dy   bwd_weight: dy
  const void* b;        // fwd: w   bwd_data: w    bwd_weight: x
  void* d;              // fwd: y   bwd_data: dx   bwd_weight: dw
  const void* bias;     // fwd: K values (all groups), dtype of y
  void* workspace;
  long long slice_stride;  // parallel split-K: elements of the output tensor
  int n, g, c, k;          // batch, groups, channels per group in (C/G) and out (K/G)
  int in_d, in_h, in_w;    // x / dx spatial
  int out_d, out_h, out_w; // y / dy spatial
  int flt_z, flt_y, flt_x;
  int str_d, str_h, str_w;
  int pad_d, pad_h, pad_w;
  int dil_d, dil_h, dil_w;
  int gm, gn, gk;          // GEMM view of this launch
  int tiles_m, tiles_n, splitk;
  // Pixel decomposition of the GEMM row (fwd) or K (bwd_weight) index: by out_w, out_h, out_d;
  // bwd_data: by the phase's pixel counts q_w, q_h, q_d.
  FastDiv div_pw, div_ph, div_pd;
  // (tap, channel) decomposition: channel by c (fwd, bwd_weight) or k (bwd_data); tap by
  // flt_x, flt_y (fwd, bwd_weight) or the phase's tap counts ntap_x, ntap_y (bwd_data).
  FastDiv div_ch, div_tx, div_ty;
  // bwd_data stride phase: dx coordinate = q * stride + phase; its taps are tap0 + j * tapstep, j < ntap,
  // and tap j reaches dy coordinate q + doff0 - j * doffstep
  // (= q + (phase + pad - (tap0 + j * tapstep) * dil) / stride, exact).
  int phase_d, phase_h, phase_w;
  int q_d, q_h, q_w;
  int tap0_z, tap0_y, tap0_x;
  int tapstep_z, tapstep_y, tapstep_x;
  int ntap_z, ntap_y, ntap_x;
  int doff0_d, doff0_h, doff0_w;
  int doffstep_d, doffstep_h, doffstep_w;
  float alpha;
  unsigned char pack_lp, pack_lc, pack_lk;  // log2 of the groups per pack and of one group's c and k (Cfg::pack)
  unsigned char pad_;
};

}  // namespace tp
