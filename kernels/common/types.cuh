// Element types as raw bits, conversions through PTX, the epilogue activations, and programmatic dependent launch.
// Device-only and NVRTC-clean: no host headers, no cuda_fp16.h (it is heavy and not always present).
#pragma once

namespace tp {

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

struct f16 { u16 bits; };
struct bf16 { u16 bits; };

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
__device__ __forceinline__ float to_float(bf16 x) { return __uint_as_float(u32(x.bits) << 16); }

template <class T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ f16 from_float<f16>(float x) {
  f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) {
  bf16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

// Two floats packed into one 32-bit register of f16x2 / bf16x2 (lo = a).
template <class T> __device__ __forceinline__ u32 pack2(float a, float b);
template <> __device__ __forceinline__ u32 pack2<f16>(float a, float b) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
template <> __device__ __forceinline__ u32 pack2<bf16>(float a, float b) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}

// Activation ids match tilepick::Activation (none, relu, gelu_tanh, gelu_erf, silu, sigmoid, tanh).
enum Act { act_none = 0, act_relu, act_gelu_tanh, act_gelu_erf, act_silu, act_sigmoid, act_tanh };

// tanh.approx.f32 (one MUFU op; relative error below 2^-10.9): for outputs of 16 bits, whose
// rounding is as coarse or coarser.
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// FAST: tanh, gelu_tanh, silu and sigmoid through tanh_approx (sigmoid(x) = (1 + tanh(x / 2)) / 2);
// else the accurate libdevice functions (f32 outputs, references).
template <int A, bool FAST = false> __device__ __forceinline__ float activate(float x) {
  auto th = [](float v) { return FAST ? tanh_approx(v) : tanhf(v); };
  if (A == act_relu) return x > 0.f ? x : 0.f;
  if (A == act_gelu_tanh) return 0.5f * x * (1.f + th(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  if (A == act_gelu_erf) return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
  if (A == act_silu) return FAST ? x * (0.5f + 0.5f * tanh_approx(0.5f * x)) : x / (1.f + expf(-x));
  if (A == act_sigmoid) return FAST ? 0.5f + 0.5f * tanh_approx(0.5f * x) : 1.f / (1.f + expf(-x));
  if (A == act_tanh) return th(x);
  return x;
}

// Programmatic dependent launch (a launch with Launch::overlap_previous): allow_dependent_launch() lets the next
// grid start once every block of this one ran it; wait_for_previous_grid() waits until the previous grid completed
// and its writes are visible. No-ops without a dependent launch, and before sm_90.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace tp
