// Hopper (sm_90a) building blocks: mbarriers, TMA tensor copies, fences, register reallocation,
// cluster helpers and wgmma shared-memory descriptors. Small named wrappers around one PTX
// instruction each; the pipeline protocol that uses them is written once in gemm/sm90.cuh.
#pragma once
#include "common/cp_async.cuh"
#include "common/types.cuh"

namespace tp {

// ---- mbarrier: a transaction-counting barrier in shared memory. Each use is a phase; waiters name
// the parity (0/1) of the phase they wait for, so no barrier is ever re-initialized.
__device__ __forceinline__ void mbar_init(u32 bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals));
}
// Arrive once and add `bytes` to the transactions the current phase waits for (the producer).
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive on the barrier at the same offset in CTA `cta` of the cluster. Default (.release.cta)
// semantics: the arrival only says "done reading this stage"; a cluster-scope release would also
// wait for this thread's earlier global stores (the epilogue's) to become visible.
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// An arrival on `bar` once this thread's earlier cp.async copies have landed; .noinc: the barrier's
// expected count includes it (set at init).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// Blocks until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(u32 bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Makes barrier initialization visible to the async proxy (TMA) and to the cluster.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// ---- TMA: bulk tensor copies global -> shared completing on an mbarrier (coordinates innermost first).
__device__ __forceinline__ void tma_load_3d(u32 dst, const void* map, u32 bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(
          dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// The same box written into the shared memory (same offset) of every CTA in `mask` of the cluster;
// each destination CTA's barrier at offset `bar` receives the bytes.
__device__ __forceinline__ void tma_load_3d_multicast(u32 dst, const void* map, u32 bar, int c0, int c1, int c2,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}
// TMA im2col loads (convolution): `pixels` rows of 128 bytes of channels, for the output pixels that follow
// the one whose receptive field starts at input (w, h[, d]) of image n, each read at its start plus the
// filter-tap offsets (ow, oh[, od]); the tensor map (cuTensorMapEncodeIm2col) holds the box corners,
// the traversal (conv) strides and the pixel count. Rows past the tensor read zeros. mask != 0: to every
// CTA in `mask` of the cluster, as tma_load_3d_multicast.
__device__ __forceinline__ void tma_load_im2col_4d(u32 dst, const void* map, u32 bar, int c, int w, int h, int n,
                                                   unsigned short ow, unsigned short oh, unsigned short mask) {
  if (mask)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8}, %9;" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"(ow), "h"(oh), "h"(mask)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"(ow), "h"(oh)
        : "memory");
}
__device__ __forceinline__ void tma_load_im2col_5d(u32 dst, const void* map, u32 bar, int c, int w, int h, int d, int n,
                                                   unsigned short ow, unsigned short oh, unsigned short od,
                                                   unsigned short mask) {
  if (mask)
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2], {%8, %9, %10}, %11;" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "h"(ow), "h"(oh), "h"(od), "h"(mask)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2], {%8, %9, %10};" ::"r"(dst),
        "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "h"(ow), "h"(oh), "h"(od)
        : "memory");
}
// TMA store: a box of shared memory (this CTA) -> global; completion is tracked per thread in
// bulk groups: commit after issuing, wait_read before the shared memory is written again.
__device__ __forceinline__ void tma_store_3d(const void* map, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
}
template <int PENDING> __device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(PENDING) : "memory");
}
// Orders this thread's ordinary shared-memory writes before later async-proxy (TMA, wgmma) reads.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void tma_prefetch_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// ---- Register reallocation between warpgroups (needs a register cap at entry: __launch_bounds__(t, 1)).
template <int REGS> __device__ __forceinline__ void regs_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS> __device__ __forceinline__ void regs_claim() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}

// ---- Clusters.
__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Named barrier among `threads` threads (a multiple of 32) of the CTA; id 0 is __syncthreads.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- flags between CTAs in global memory: a release store after the writes it publishes, an
// acquire load before reading them (the waiter spins; a wait that never ends traps instead of hanging).
__device__ __forceinline__ void flag_release(int* flag, int value) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ int flag_acquire(const int* flag) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}
__device__ __forceinline__ void flag_wait(const int* flag, int value) {
  for (long long i = 0; flag_acquire(flag) != value; ++i) {
    if (i > (1ll << 26)) __trap();  // seconds: a schedule bug, reported as a launch failure
    __nanosleep(40);
  }
}

// ---- wgmma shared-memory matrix descriptors for operands in 128-byte swizzled rows (TMA's
// CU_TENSOR_MAP_SWIZZLE_128B; tiles 1024-byte aligned).
// K-major: rows of 64 K (128 bytes) per M/N index, 8-row groups 1024 bytes apart (stride offset);
//   the leading offset is unused. Advancing along K inside the row adds the byte offset.
__device__ __forceinline__ u64 smem_desc_k128(u32 addr) {
  return (u64((addr & 0x3FFFF) >> 4)) | (u64(1) << 16) | (u64(1024 >> 4) << 32) | (u64(1) << 62);
}
// M/N-major (16-bit only, wgmma's transpose bit): blocks of 64 M/N (128 bytes) x 64 K rows, one K
// row per 128 bytes; 8-K-row groups 1024 bytes apart (stride offset), the next block of 64 M/N
// 8192 bytes on (leading offset). Advancing along K adds 128 bytes per K row.
__device__ __forceinline__ u64 smem_desc_mn128(u32 addr) {
  return (u64((addr & 0x3FFFF) >> 4)) | (u64(8192 >> 4) << 16) | (u64(1024 >> 4) << 32) | (u64(1) << 62);
}

}  // namespace tp
