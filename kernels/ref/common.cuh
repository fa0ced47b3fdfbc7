// Device helpers of the GPU reference kernels: loads of any element type as double, and the
// epilogue activations in double precision (the formulas of tilepick::apply_activation).
#pragma once
#include "ref/numeric.cuh"
#include "ref/params.cuh"

namespace tp {
namespace refk {

typedef long long i64;
using refnum::dt_bf16;
using refnum::dt_e4m3;
using refnum::dt_e5m2;
using refnum::dt_f16;
using refnum::dt_f32;

__device__ __forceinline__ double f16_bits_to_f64(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return (double)f;
}

// Element idx of a tensor of dtype DT, exactly, as double.
template <int DT> __device__ __forceinline__ double load(const void* base, i64 idx) {
  if (DT == dt_f32) return (double)__ldg((const float*)base + idx);
  if (DT == dt_f16) return f16_bits_to_f64(__ldg((const unsigned short*)base + idx));
  if (DT == dt_bf16) return (double)__uint_as_float((unsigned int)__ldg((const unsigned short*)base + idx) << 16);
  const unsigned char byte = __ldg((const unsigned char*)base + idx);
  if (DT == dt_e5m2) return f16_bits_to_f64((unsigned short)(byte << 8));  // e5m2 is the top byte of f16
  return refnum::decode_narrow(refnum::fmt_of(DT), byte);
}

// Activation ids match tilepick::Activation (none, relu, gelu_tanh, gelu_erf, silu, sigmoid, tanh).
template <int A> __device__ __forceinline__ double activate(double x) {
  if (A == 1) return x > 0 ? x : 0;
  if (A == 2) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  if (A == 3) return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
  if (A == 4) return x / (1.0 + exp(-x));
  if (A == 5) return 1.0 / (1.0 + exp(-x));
  if (A == 6) return tanh(x);
  return x;
}

}  // namespace refk
}  // namespace tp
