// fill_random_normal: N(0, 1) values rounded to the tensor's dtype, deterministic in (seed, index);
// with Cfg::scales, fp8 block scales exp(z / 2) of those normals z instead (positive; e^-1.5 .. e^1.5 for |z| < 3).
//
// Element group i4 (elements 4*i4 .. 4*i4+3) takes Philox4x32-10 of counter (i4 lo, i4 hi, 0, 0)
// under key (seed lo, seed hi); each pair of 32-bit words gives two normals by Box-Muller:
//   u1 = (w0 + 1/2) 2^-32 in (0, 1),  u2 = w1 2^-32,  r = sqrt(-2 ln u1),  (r cos 2 pi u2, r sin 2 pi u2).
// The result does not depend on the launch shape.
#pragma once
#include "ref/common.cuh"
#include "ref/philox.cuh"

namespace tp {
namespace refk {

template <int DT> __device__ __forceinline__ void store_rounded(void* base, i64 idx, double v) {
  const unsigned int bits = refnum::encode(DT, v);
  if (DT == dt_f32) ((unsigned int*)base)[idx] = bits;
  else if (DT == dt_f16 || DT == dt_bf16) ((unsigned short*)base)[idx] = (unsigned short)bits;
  else ((unsigned char*)base)[idx] = (unsigned char)bits;
}

template <class Cfg> __device__ void fill_random(const RefFillParams& p) {
  const unsigned long long groups = (p.n + 3) / 4;
  const unsigned int k0 = (unsigned int)p.seed, k1 = (unsigned int)(p.seed >> 32);
  for (unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; g < groups;
       g += (unsigned long long)gridDim.x * blockDim.x) {
    refnum::Philox4 ctr = {{(unsigned int)g, (unsigned int)(g >> 32), 0u, 0u}};
    const refnum::Philox4 r = refnum::philox4x32_10(ctr, k0, k1);
    double z[4];
    for (int h = 0; h < 2; ++h) {
      const double u1 = ((double)r.v[2 * h] + 0.5) * 2.3283064365386963e-10;  // 2^-32
      const double u2 = (double)r.v[2 * h + 1] * 2.3283064365386963e-10;
      const double radius = sqrt(-2.0 * log(u1));
      double s, c;
      sincospi(2.0 * u2, &s, &c);
      z[2 * h] = radius * c;
      z[2 * h + 1] = radius * s;
    }
    for (int j = 0; j < 4; ++j) {
      const unsigned long long idx = 4 * g + j;
      if (idx < p.n) store_rounded<Cfg::dtype>(p.dst, (i64)idx, Cfg::scales ? exp(kScaleLogSigma * z[j]) : z[j]);
    }
  }
}

}  // namespace refk
}  // namespace tp
