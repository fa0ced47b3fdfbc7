// Runtime arguments of the GPU reference kernels (kernels/ref/*.cuh): one by-value struct per
// launch. Plain C layout of fixed-width builtin types and pointers, shared by the host
// (src/ref/gpu_ref.cpp packs them into Launch::params) and the device code.
//
// Layouts are those of the CPU references (include/tilepick/ref.hpp):
//   GEMM  element (i, k) of A at i * a_row + k * a_col (likewise B, C/D); batches contiguous;
//         block scales SA [batch][k_blocks][m], SB [batch][ceil(n / 128)][k_blocks] (problem.hpp).
//   Conv  x [N][D][H][W][G][Cg]   w [G][Kg][Z][Y][X][Cg]   y [N][Do][Ho][Wo][G][Kg]   bias [G*Kg]
// Spatial triples are (d, h, w); 2-D problems have d = 1, filter 1, stride 1, pad 0, dilation 1.
#pragma once

namespace tp {

struct RefFillParams {
  void* dst;
  unsigned long long n;     // elements
  unsigned long long seed;
};

struct RefGemmParams {
  const void* a;
  const void* b;
  const void* c;     // read when Cfg::has_beta
  const void* bias;  // [N] in C's dtype, read when Cfg::has_bias
  const float* scale_a;  // read when Cfg::block_scale
  const float* scale_b;
  double* d;
  long long m, n, k, batch;
  long long k_blocks;  // ceil(k / 128)
  long long a_row, a_col, b_row, b_col, c_row, c_col;  // element strides
  long long tiles_m, tiles_n;
  double alpha, beta;
};

struct RefConvParams {
  const void* src0;  // fwd x, bwd_data dy, bwd_weight x
  const void* src1;  // fwd w, bwd_data w, bwd_weight dy
  const void* bias;  // fwd: [G*Kg] in y's dtype, read when Cfg::has_bias
  double* dst;       // y, dx or dw
  long long n, g, cg, kg;
  long long in[3], out[3], filter[3], stride[3], pad[3], dil[3];
  long long total;   // elements of dst
  double* partials;  // bwd_weight with runs > 1: [runs][total] run sums (conv_ref.cuh)
  long long runs, run_pixels;  // bwd_weight: its output pixels summed in `runs` runs of run_pixels
};

// Partial sums of one block of the compare kernel; the final kernel writes the total to
// partials[blocks]. Nonfinite outputs are counted and left out of the sums and maxima.
struct RefCompareSums {
  double err2, ref2, max_err, max_ref;  // sum (o-r)^2, sum r^2, max |o-r|, max |r|
  long long nonfinite, count;           // NaN/Inf outputs, elements seen
};

struct RefCompareParams {
  const void* out;   // the kernel's output, in its dtype
  const double* ref;
  long long n;
  RefCompareSums* partials;  // [blocks + 1]
  int blocks, pad_;
};

// Test inputs' fp8 block scales: exp(kScaleLogSigma z), z ~ N(0, 1) (fill.cuh on the GPU, run::random_scales on the host).
constexpr double kScaleLogSigma = 0.5;

static_assert(sizeof(RefFillParams) == 24, "RefFillParams layout is shared by host and device");
static_assert(sizeof(RefGemmParams) == 176, "RefGemmParams layout is shared by host and device");
static_assert(sizeof(RefConvParams) == 240, "RefConvParams layout is shared by host and device");
static_assert(sizeof(RefCompareSums) == 48, "RefCompareSums layout is shared by host and device");
static_assert(sizeof(RefCompareParams) == 40, "RefCompareParams layout is shared by host and device");

}  // namespace tp
