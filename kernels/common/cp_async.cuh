// cp.async (global -> shared, asynchronous, zero-filled when the source is predicated off) and the
// shared-memory address helpers it needs.
#pragma once
#include "common/types.cuh"

namespace tp {

__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

// Copies BYTES (16, 8, 4 or 2) from src to shared address dst; writes zeros when !valid.
// 2-byte vectors have no cp.async form: they go through registers synchronously.
template <int BYTES> __device__ __forceinline__ void cp_async(u32 dst, const void* src, bool valid) {
  const int n = valid ? BYTES : 0;
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n));
  else if (BYTES == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(n));
  else if (BYTES == 4)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(n));
  else {
    u16 v = 0;
    if (valid) asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(src));
    asm volatile("st.shared.u16 [%0], %1;" ::"r"(dst), "h"(v));
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

__device__ __forceinline__ u32 lds_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

}  // namespace tp
