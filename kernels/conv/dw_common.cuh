// Shared pieces of the depthwise kernels: short vectors of elements <-> floats, cp.async with zero
// fill, and the staging of a channels-last box (with halo and padding) into shared memory.
// Device-only and NVRTC-clean.
#pragma once
#include "common/types.cuh"
#include "conv/dw_params.cuh"

namespace tp {
namespace dw {

template <int BYTES> struct Raw;
template <> struct Raw<2> { typedef unsigned short type; };
template <> struct Raw<4> { typedef unsigned int type; };
template <> struct Raw<8> { typedef uint2 type; };
template <> struct Raw<16> { typedef uint4 type; };

__host__ __device__ constexpr int align16(int bytes) { return (bytes + 15) & ~15; }

// floor(a / b) for b > 0.
__device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// N floats (16-byte aligned when N >= 4) from shared or global memory.
template <int N>
__device__ __forceinline__ void load_f32(const float* p, float (&v)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 q = *reinterpret_cast<const float4*>(p + i);
      v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
    }
  } else if constexpr (N == 2) {
    const float2 q = *reinterpret_cast<const float2*>(p);
    v[0] = q.x, v[1] = q.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = p[i];
  }
}

// Two 16-bit elements packed in one register (lo first) -> two floats.
__device__ __forceinline__ void unpack2(bf16, u32 w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void unpack2(f16, u32 w, float& lo, float& hi) {
  asm("{ .reg .f16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }" : "=f"(lo), "=f"(hi) : "r"(w));
}

// N consecutive elements of T (N * sizeof(T) in {2, 4, 8, 16} bytes, naturally aligned) -> N floats,
// one vector load.
template <class T, int N>
__device__ __forceinline__ void load_f(const T* p, float (&v)[N]) {
  if constexpr (sizeof(T) == 4) {
    load_f32(reinterpret_cast<const float*>(p), v);
  } else if constexpr (N == 1) {
    v[0] = to_float(*p);
  } else {
    constexpr int W = N / 2;  // 32-bit words
    u32 w[W];
    if constexpr (W == 1) {
      w[0] = *reinterpret_cast<const u32*>(p);
    } else if constexpr (W == 2) {
      const uint2 q = *reinterpret_cast<const uint2*>(p);
      w[0] = q.x, w[1] = q.y;
    } else {
      const uint4 q = *reinterpret_cast<const uint4*>(p);
      w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
    }
#pragma unroll
    for (int k = 0; k < W; ++k) unpack2(T{}, w[k], v[2 * k], v[2 * k + 1]);
  }
}

// N floats -> N consecutive elements of T (rounded to nearest even), one vector store.
template <class T, int N>
__device__ __forceinline__ void store_f(T* p, const float (&v)[N]) {
  typedef typename Raw<N * int(sizeof(T))>::type R;
  union {
    R r;
    T e[N];
    u32 w[N * sizeof(T) >= 4 ? N * sizeof(T) / 4 : 1];
  } u;
  if constexpr (sizeof(T) == 2 && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) u.w[i / 2] = pack2<T>(v[i], v[i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) u.e[i] = from_float<T>(v[i]);
  }
  *reinterpret_cast<R*>(p) = u.r;
}

__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

// Copies BYTES from global to shared memory, asynchronously where cp.async allows it (4, 8, 16
// bytes); writes zeros instead when !valid (src is then not read).
template <int BYTES>
__device__ __forceinline__ void copy_async(void* dst, const void* src, bool valid) {
  if constexpr (BYTES >= 4) {
    const u32 d = smem_u32(dst);
    const int n = valid ? BYTES : 0;
    if constexpr (BYTES == 16)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n) : "memory");
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES), "r"(n)
                   : "memory");
  } else {
    typedef typename Raw<BYTES>::type R;
    *reinterpret_cast<R*>(dst) = valid ? *reinterpret_cast<const R*>(src) : R(0);
  }
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Stages a box of the channels-last tensor g [N][D][H][W][C] into shared memory:
//   s_box[k][row][col][PP] = g[n][zof(k)][y0 + row][x0 + col][c0 .. c0 + TC)
// for k < slices, row < rows, col < cols, pixels PP >= TC
// elements apart; zeros outside the tensor (padding, ragged tiles, channels past C) and where zof(k) < 0. V
// channels per copy; consecutive threads take consecutive vectors of one pixel, then the next pixel: coalesced
// along channels.
template <class T, int TC, int V, int THREADS, int PP = TC, class ZOf>
__device__ __forceinline__ void stage_box(T* s_box, const T* g, const int (&dims)[3], int C, int n, int slices,
                                          ZOf zof, int y0, int rows, int x0, int cols, int c0) {
  constexpr int VPP = TC / V;  // vectors per pixel
  if constexpr (THREADS % VPP == 0) {
    // A thread keeps one vector of every pixel it stages and steps THREADS / VPP pixels at a time: its (slice,
    // row, col) advance by additions, with no division in the loop.
    constexpr int STEP = THREADS / VPP;
    const int v = threadIdx.x % VPP, first = threadIdx.x / VPP, ch = c0 + v * V;
    const int d_col = STEP % cols, d_kr = STEP / cols, d_row = d_kr % rows, d_k = d_kr / rows;
    int col = first % cols, row = first / cols % rows, k = first / cols / rows;
    const bool ch_ok = ch < C;
    const int total = slices * rows * cols;
    for (int pix = first; pix < total; pix += STEP) {
      const int z = zof(k), y = y0 + row, x = x0 + col;
      const bool ok = ch_ok && z >= 0 && z < dims[0] && y >= 0 && y < dims[1] && x >= 0 && x < dims[2];
      const T* src = ok ? g + ((((n * dims[0] + z) * dims[1] + y) * dims[2] + x) * C + ch) : g;
      copy_async<V * int(sizeof(T))>(s_box + pix * PP + v * V, src, ok);
      col += d_col, row += d_row, k += d_k;
      if (col >= cols) col -= cols, ++row;
      if (row >= rows) row -= rows, ++k;
    }
  } else {
    const int total = slices * rows * cols * VPP;
    for (int i = threadIdx.x; i < total; i += THREADS) {
      const int v = i % VPP;
      const int pix = i / VPP;  // (k, row, col) flattened, unpadded
      const int col = pix % cols;
      const int kr = pix / cols;
      const int row = kr % rows;
      const int z = zof(kr / rows), y = y0 + row, x = x0 + col, ch = c0 + v * V;
      const bool ok = z >= 0 && z < dims[0] && y >= 0 && y < dims[1] && x >= 0 && x < dims[2] && ch < C;
      const T* src = ok ? g + ((((n * dims[0] + z) * dims[1] + y) * dims[2] + x) * C + ch) : g;
      copy_async<V * int(sizeof(T))>(s_box + (kr * cols + col) * PP + v * V, src, ok);
    }
  }
}

// Stages the filter of channels [c0, c0 + TC) as floats, tap-major: s_w[tap][TC] (zeros past C).
// w is [C][taps] (taps = Z*Y*X); FLIP rotates the filter by 180 degrees in every dimension.
template <class T, int TC, int THREADS, bool FLIP>
__device__ __forceinline__ void stage_filter(float* s_w, const T* w, int C, int c0, int taps) {
  for (int i = threadIdx.x; i < TC * taps; i += THREADS) {
    const int cc = i / taps, t = i - cc * taps, ch = c0 + cc;
    const float v = ch < C ? to_float(w[ch * taps + t]) : 0.f;
    s_w[(FLIP ? taps - 1 - t : t) * TC + cc] = v;
  }
}

}  // namespace dw
}  // namespace tp
