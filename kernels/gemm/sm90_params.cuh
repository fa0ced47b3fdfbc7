// Kernel parameters of the sm90 GEMM. Passed as one __grid_constant__ struct so that TMA can read
// the tensor maps from parameter space; the host packs it byte for byte (and static_asserts its size).
#pragma once

namespace tp {

// A CUtensorMap as kernels see it: 128 opaque bytes made on the host by cuTensorMapEncodeTiled and
// passed inside the __grid_constant__ parameter struct, where TMA reads it.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// D = act(alpha * A x B + beta * C + bias) for `batch` products. A is read through map_a as
// (K, M, batch) and B through map_b as (K, N, batch): both K-major, boxes of 64 x tile rows.
// C and D share a layout and leading dimension (elements); the persistent grid walks
// tiles_m * tiles_n * batch output tiles, each split into `splitk` slices of K when splitk > 1
// (fp32 partials in the workspace, summed in order with the epilogue by gemm/splitk_reduce.cuh).
// Stream-K grids run at most this many CTAs (the workspace holds a flag and a partial-sum slot for each).
constexpr int kSkMaxCtas = 256;

// A convolution as this GEMM (Cfg::conv = 2 or 3 spatial dims, Cfg::conv_dir; kernels/gemm/sm90.cuh,
// Sm90Im2col; the host's Sm90Im2colWalk). fwd: M = N x output pixels, N = K, k-tiles = filter taps x channel
// blocks of BK; bwd_data: M = N x dx pixels (of one stride phase), N = C, k-tiles = the phase's taps x blocks of
// K; bwd_weight: M = K, N = taps x C, K = N x output pixels. `out`, `stride` and `pad` describe the pixels the
// im2col loads walk; the k-tiles walk `filter` taps per dim, tap v at im2col offset v x dilation with the
// weights of filter index tap0 + v x tap_step (of wfilter). Spatial arrays are (w, h, d).
struct Sm90ConvParams {
  int out[3];
  int stride[3];
  int pad[3];
  int dilation[3];
  int filter[3];        // taps walked per dim
  int tap0[3];
  int tap_step[3];
  int wfilter[3];       // the weights' filter (S, R, T)
  int phase[3];         // bwd_data (Cfg::phase_store): row m is dx pixel phase + phase_stride x (its phase coordinates)
  int phase_stride[3];
  int image[3];         // dx's spatial sizes
  int cblocks;          // fwd, bwd_data: channel blocks per tap, ceil(reduced channels / BK)
  int channels;         // bwd_weight: C (a multiple of 64)
};

struct GemmSm90Params {
  TensorMap map_a;
  TensorMap map_b;
  TensorMap map_d;        // epi=smem: D as (N, M, batch), boxes of 128 bytes x rows per consumer
  const void* c;
  void* d;
  const void* bias;       // N values, dtype of D
  float* workspace;       // split-K: splitk fp32 slices of D, slice_stride elements apart; stream-K: flags + slots
  long long batch_stride_c;
  long long slice_stride;
  int m, n, k, batch;
  int ldc, tiles_m, tiles_n, tiles_total;
  int splitk;             // parallel split-K: slices of K; work units = tiles_total x splitk (else 1)
  float alpha, beta;
  Sm90ConvParams conv;    // Cfg::conv only
  // Cfg::block_scale: fp32 scales of A's 1 x 128 blocks, [batch][kblocks][m], and of B's 128 x 128 blocks,
  // [batch][ceil(n / 128)][kblocks] (tilepick::GemmScale::block).
  const float* scale_a;
  const float* scale_b;
  int kblocks;
};

}  // namespace tp
