// Parallel split-K reduction and epilogue: D[i] = act(alpha * sum_s ws[s][i] + beta * C[i] + bias[...]).
// Elementwise over D in its own layout; each thread handles `vec` consecutive elements.
// R: vec, has_beta, has_bias, act, TC.
#pragma once
#include "common/types.cuh"
#include "gemm/params.cuh"

namespace tp {

template <class R> __device__ __forceinline__ void splitk_reduce(const ReduceParams& p) {
  typedef typename R::TC TC;
  constexpr int V = R::vec;
  const long long nvec = p.total / V;
  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += (long long)gridDim.x * blockDim.x) {
    const long long i = v * V;
    float acc[V];
#pragma unroll
    for (int q = 0; q < V; ++q) acc[q] = 0.f;
    for (int s = 0; s < p.splitk; ++s) {
      const float* w = p.ws + s * p.slice_stride + i;
      if (V % 4 == 0) {
#pragma unroll
        for (int q = 0; q < V; q += 4) {
          const float4 x = *reinterpret_cast<const float4*>(w + q);
          acc[q] += x.x, acc[q + 1] += x.y, acc[q + 2] += x.z, acc[q + 3] += x.w;
        }
      } else if (V == 2) {
        const float2 x = *reinterpret_cast<const float2*>(w);
        acc[0] += x.x, acc[1] += x.y;
      } else {
#pragma unroll
        for (int q = 0; q < V; ++q) acc[q] += w[q];
      }
    }
    const long long b0 = (i / p.bias_div) % p.bias_mod;  // V elements share a bias when bias_div > 1
#pragma unroll
    for (int q = 0; q < V; ++q) {
      float x = p.alpha * acc[q];
      if (R::has_beta) x += p.beta * to_float(static_cast<const TC*>(p.c)[i + q]);
      if (R::has_bias) x += to_float(static_cast<const TC*>(p.bias)[p.bias_div == 1 ? b0 + q : b0]);
      static_cast<TC*>(p.d)[i + q] = from_float<TC>(activate<R::act>(x));
    }
  }
}

}  // namespace tp
