// sm90 GEMM: D[b] = act(alpha * A[b] x B[b] + beta * C[b] + bias) with TMA, an mbarrier pipeline and
// warp-specialized wgmma, persistent over output tiles.
//
// Block: 1 producer warpgroup + Cfg::consumers consumer warpgroups (128 threads each).
//   producer  one thread issues TMA loads of A (tile_m x 64) and B (tile_n x 64) into stage s of a
//             ring of Cfg::stages, then moves on; the other producer threads idle with few registers.
//   consumers cooperative (Cfg::pingpong off): each owns tile_m / consumers rows of every tile.
//             ping-pong (on, 2 consumers): each owns whole tiles, the two taking turns, so that one
//             runs its epilogue while the other keeps the tensor cores busy.
//             wgmma m64nN k16 from shared memory, f32 accumulators in registers; then the epilogue
//             stores from registers (epi=direct) or through shared memory and TMA store (epi=smem).
// Grid: min(tiles, SMs) blocks; block b takes tiles b, b + grid, ... (raster order of sm80_core);
// under ping-pong consumer 0 takes the 1st, 3rd, ... of those and consumer 1 the others.
//
// Pipeline protocol (one pair of mbarriers per stage; `it` counts k-tiles over all tiles of the block,
// stage s = it % stages, round r = it / stages, parity = r & 1):
//   full[s]   1 arrival (producer's arrive.expect_tx) + the TMA bytes; consumers wait parity r & 1.
//   empty[s]  one arrival per consumer warpgroup reading stage s (all of them, or under ping-pong
//             the one whose tile it holds) once its wgmmas completed; the producer waits parity
//             (r & 1) ^ 1, which a fresh barrier satisfies in round 0.
// A parity wait tells phases apart only if the waiter is at most one phase behind, so a ping-pong
// consumer, which steps `it` over the k-tiles of its partner's tiles, starts the main loop of a
// tile only after the partner's main loop waited for its last stage: order[c] (1 arrival) is
// completed by the partner once per tile it ran, and consumer c waits for it before each tile but
// consumer 0's first. The turns alternate strictly, so neither is more than one phase ahead.
// Consumers keep one k-tile of wgmma in flight: after issuing k-tile it they wait until at most one
// group is pending, which completes it - 1, and release that stage.
//
// Clusters (cluster_m x cluster_n CTAs, at most 2): the CTAs of a cluster take neighbouring tiles
// along M (cluster_m = 2, sharing B) or N (cluster_n = 2, sharing A). Each producer loads its own
// half of the shared operand and multicasts it to both CTAs, so full[s] of a CTA receives bytes
// from both producers, and a stage may be refilled only when the consumers of *both* CTAs released
// it: every consumer warpgroup arrives on empty[s] of each CTA in the cluster (count consumers x 2).
// A cluster sync after barrier init, and a producer that waits for the last releases before it
// exits, keep remote writes inside live CTAs.
//
// Layouts: A and B K-major, or (16-bit inputs) M/N-major (a_mn: A column-major, b_mn: B row-major)
// through wgmma's transpose bits; shared memory holds 8192 bytes per 64 rows of an operand either way.
// Inputs (Cfg::in_type, common/wgmma.cuh): f16 / bf16 with 64 K per stage, e4m3 / e5m2 with 128, f32
// (read as tf32) with 32; a stage row is 128 bytes of K either way, and a k-tile is 4 wgmma K steps
// of 32 bytes.
//
// Convolutions (Cfg::conv): the same kernel with the producer's loads by TMA im2col (Sm90Im2col).
//
// Split-K (Cfg::splitk, parallel mode): the grid walks (slice, tile) units; each stores its fp32
// partial tile to the workspace and gemm/splitk_reduce.cuh sums the slices in order.
// Stream-K (Cfg::stream_k, skmode=serial): whole waves data-parallel, the last partial wave split by K (Sm90StreamK).
//
// Cfg: tile_m, tile_n, stages, consumers, pingpong, cluster_m, cluster_n, raster, swizzle, epi_smem, epi_cols, epi_bufs,
// epi_block (bytes of a staged column block: 128, or 64 where tile_n is no multiple of 128 bytes of D),
// splitk (parallel split-K on), stream_k, a_mn, b_mn, c_colmajor, conv (0: GEMM; 2, 3: a convolution of that many
// spatial dims, Sm90Im2col), conv_dir (0 fwd, 1 bwd_data, 2 bwd_weight), phase_store (strided bwd_data),
// has_beta, has_bias, act, TC, in_type (WgmmaIn), block_scale (fp8 block scales, sm90_block_scaled_mainloop).
#pragma once
#include "common/hopper.cuh"
#include "common/wgmma.cuh"
#include "gemm/sm80_core.cuh"  // raster_tile, store1/store2, activate
#include "gemm/sm90_params.cuh"
#include "gemm/sm90_schedule.cuh"

namespace tp {

template <class Cfg> struct Sm90Shape {
  static constexpr int BK = 128 / wgmma_in_bytes<Cfg::in_type>;  // K per stage: one 128-byte swizzled row
  static constexpr int KSTEPS = 4;                                   // wgmma K steps of 32 bytes per stage
  static constexpr int WM = Cfg::pingpong ? Cfg::tile_m : Cfg::tile_m / Cfg::consumers;  // rows per consumer
  static constexpr int READERS = Cfg::pingpong ? 1 : Cfg::consumers;  // consumer warpgroups reading a stage
  static_assert(!Cfg::pingpong || Cfg::consumers == 2, "ping-pong runs two consumer warpgroups");
  // Short tiles (WM 16 or 32, one consumer: small-M GEMMs): the consumer's wgmmas still compute 64 rows; rows WM..63
  // read the stage's B rows that follow A in shared memory, and the epilogue drops them.
  static constexpr bool SHORT = WM < 64;
  static constexpr int MI = SHORT ? 1 : WM / 64;        // wgmma m64 blocks per consumer
  static constexpr int A_BYTES = Cfg::tile_m * 128;
  static constexpr int B_BYTES = Cfg::tile_n * 128;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  // Block scales (Cfg::block_scale): a scale slot per stage, after the barriers: tile_m of SA, two of SB, padded.
  static constexpr int SCALE_FLOATS = Cfg::block_scale ? Cfg::tile_m + 4 : 0;
  static_assert((SHORT ? (WM == 16 || WM == 32) && Cfg::consumers == 1 && !Cfg::epi_smem && !Cfg::stream_k &&
                             Cfg::tile_n >= 64 - WM && !Cfg::a_mn
                         : WM % 64 == 0 && MI <= 2),
                "consumer rows must be 64 or 128, or 16 / 32 (short tiles: one consumer, K-major A, epi=direct, no "
                "stream-K, B at least the 64 - WM rows the wgmma reads past A)");
  static constexpr int C_BYTES = sizeof(typename Cfg::TC);
  // epi=smem staging per consumer: epi_bufs buffers of epi_cols columns (src/core/legality.cpp, sm90_staging).
  static constexpr int EPI_BUFS = Cfg::epi_bufs > 1 ? Cfg::epi_bufs : 1;
  static constexpr int EPI_CONSUMER_BYTES = Cfg::epi_smem ? WM * Cfg::epi_cols * C_BYTES * EPI_BUFS : 0;
  static constexpr int EPI_BYTES = Cfg::consumers * EPI_CONSUMER_BYTES;
  static constexpr int CS = Cfg::cluster_m * Cfg::cluster_n;  // CTAs per cluster: 1 or 2
  static_assert(CS <= 2, "clusters of at most 2 CTAs");
  // Bytes of the shared operand each producer loads and multicasts (its half), and where.
  static constexpr int A_LOAD_ROWS = Cfg::cluster_n == 2 ? Cfg::tile_m / 2 : Cfg::tile_m;
  static constexpr int B_LOAD_ROWS = Cfg::cluster_m == 2 ? Cfg::tile_n / 2 : Cfg::tile_n;
  // Registers per thread after setmaxnreg (multiples of 8): the consumers' increase takes exactly what the
  // producer releases from the block's 384 x 168 at launch (a larger PRODUCER_REGS hangs setmaxnreg.inc).
  static constexpr int PRODUCER_REGS = 40;
  static constexpr int CONSUMER_REGS = 232;
};

// Cluster tile `tile` (tiles_m x tiles_n count cluster tiles of cluster_m x cluster_n CTA tiles) ->
// this CTA's batch and output origin. A CTA tile past M or N reads zeros and stores nothing.
template <class Cfg> __device__ __forceinline__ void sm90_tile_coords(const GemmSm90Params& p, int tile, u32 rank,
                                                                      int& batch, int& m0, int& n0) {
  const int per_batch = p.tiles_m * p.tiles_n;
  batch = tile / per_batch;
  int tm, tn;
  raster_tile<Cfg>(tile - batch * per_batch, p.tiles_m, p.tiles_n, tm, tn);
  m0 = (tm * Cfg::cluster_m + (Cfg::cluster_m == 2 ? int(rank) : 0)) * Cfg::tile_m;
  n0 = (tn * Cfg::cluster_n + (Cfg::cluster_n == 2 ? int(rank) : 0)) * Cfg::tile_n;
}

// Strided bwd_data (Cfg::phase_store): row m of a stride phase is dx pixel phase + phase_stride x (its
// coordinates over out[]); its offset in D.
__device__ __forceinline__ long long sm90_phase_row(const GemmSm90Params& p, int m) {
  const Sm90ConvParams& g = p.conv;
  const int x = m % g.out[0];
  m /= g.out[0];
  const int y = m % g.out[1];
  m /= g.out[1];
  const int z = m % g.out[2], img = m / g.out[2];
  const long long pixel =
      ((long long)(img * g.image[2] + g.phase[2] + g.phase_stride[2] * z) * g.image[1] + g.phase[1] + g.phase_stride[1] * y) *
          g.image[0] + g.phase[0] + g.phase_stride[0] * x;
  return pixel * p.ldc;
}

// One output value: act(alpha * acc + beta * C[at] + bias), `bias` from Sm90Bias; C is read only when `inside`. 16-bit outputs take the fast activations (their error is
// below the output's rounding; common/types.cuh).
template <class Cfg>
__device__ __forceinline__ float sm90_value(const GemmSm90Params& p, float acc, long long at, float bias, bool inside) {
  typedef typename Cfg::TC TC;
  float v = p.alpha * acc;
  if (Cfg::has_beta && inside) v += p.beta * to_float(static_cast<const TC*>(p.c)[at]);
  if (Cfg::has_bias) v += bias;
  return activate<Cfg::act, sizeof(TC) == 2>(v);
}

// The bias of one tile's tile_n columns, loaded into registers when a consumer starts the tile (the
// loads' latency hides behind the main loop) and handed out in the epilogue by warp shuffles: lane l
// holds column pairs l, l + 32, ... of the tile (past N the last column's: those outputs are dropped).
// The loaded bits are first used in the epilogue (pair()), so nothing at the tile's start waits for
// the loads. The epilogue's thread needs pairs j * 4 + lane % 4 for column groups j of 8.
template <class Cfg> struct Sm90Bias {
  typedef typename Cfg::TC TC;
  static constexpr int PAIRS = Cfg::has_bias ? (Cfg::tile_n + 63) / 64 : 0;  // pairs per lane
  u32 v[PAIRS > 0 ? PAIRS : 1][2];  // the bits of columns n and n + 1 (16-bit values in the low half)

  __device__ __forceinline__ void load(const GemmSm90Params& p, int n0) {
    if constexpr (PAIRS > 0) {
      const int lane = threadIdx.x % 32;
#pragma unroll
      for (int i = 0; i < PAIRS; ++i) {
        const int n = n0 + 2 * (lane + 32 * i);
        // Clamped indices keep the loads unconditional (no branch the compiler cannot hoist).
        if constexpr (sizeof(TC) == 4) {
          const u32* bias = static_cast<const u32*>(p.bias);
          v[i][0] = bias[min(n, p.n - 1)], v[i][1] = bias[min(n + 1, p.n - 1)];
        } else {
          const u16* bias = static_cast<const u16*>(p.bias);
          v[i][0] = bias[min(n, p.n - 1)], v[i][1] = bias[min(n + 1, p.n - 1)];
        }
      }
    }
  }
  // The bias of columns j * 8 + (lane % 4) * 2 and the next (0 without a bias).
  __device__ __forceinline__ void pair(int j, float& b0, float& b1) const {
    b0 = b1 = 0.f;
    if constexpr (PAIRS > 0) {
      const int src = (j % 8) * 4 + (threadIdx.x & 3), i = j / 8;
      const u32 lo = v[i][0], hi = v[i][1];
      if constexpr (sizeof(TC) == 4) {
        b0 = __uint_as_float(__shfl_sync(0xffffffffu, lo, src));
        b1 = __uint_as_float(__shfl_sync(0xffffffffu, hi, src));
      } else {
        const u32 w = __shfl_sync(0xffffffffu, lo | hi << 16, src);
        b0 = to_float(TC{u16(w & 0xffffu)}), b1 = to_float(TC{u16(w >> 16)});
      }
    }
  }
};

// Named barrier of consumer warpgroup `cons` (ids 1 and 2: constant ids, as a variable id reserves all 16).
__device__ __forceinline__ void sm90_consumer_sync(int cons) { cons == 0 ? named_barrier(1, 128) : named_barrier(2, 128); }

// One thread's two adjacent output values as staged: packed to TC when it is 16-bit. Staging writes have
// no "memory" clobber, so that the compiler may issue the epilogue's global loads (C, bias) ahead of
// them; the fence and barrier after the writes order them for the TMA store.
template <class T> struct Sm90StagedPair {
  u32 w;
  __device__ __forceinline__ void set(float a, float b) { w = pack2<T>(a, b); }
  __device__ __forceinline__ void store(u32 addr) const { asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(w)); }
};
template <> struct Sm90StagedPair<float> {
  float a, b;
  __device__ __forceinline__ void set(float x, float y) { a = x, b = y; }
  __device__ __forceinline__ void store(u32 addr) const {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b));
  }
};

// epi=smem: one consumer's tile rows go through shared memory and leave by TMA store, which runs
// on while the consumer starts its next tile. The warpgroup's staging area (`stage`: rows x
// Cfg::epi_cols of TC holding the whole tile_n, or, when shared memory is short, two buffers of
// epi_cols columns (part p is written while part p - 1 is stored) or one (reused once its store has
// read it)) is split into column blocks of Cfg::epi_block bytes, each rows x epi_block bytes with the
// swizzle that map_d's boxes use (16-byte chunk c of row r at c ^ (r % 8) for 128 bytes, c ^ (r / 2 % 4)
// for 64: the 8 rows a warp writes at once hit distinct banks). Rows or columns past D are dropped by
// the TMA store.
template <class Cfg>
__device__ __forceinline__ void sm90_store_staged(const GemmSm90Params& p,
                                                  const float (&acc)[Sm90Shape<Cfg>::MI][Cfg::tile_n / 2],
                                                  const Sm90Bias<Cfg>& bias, int batch, int row0, int n0, u32 stage,
                                                  int cons) {
  typedef typename Cfg::TC TC;
  typedef Sm90Shape<Cfg> S;
  constexpr int E = sizeof(TC), BB = Cfg::epi_block, SUB = BB / E;  // bytes and columns per block
  static_assert(BB == 128 || (BB == 64 && !Cfg::phase_store), "staged blocks of 128 bytes, or 64 (GEMM only)");
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const long long base = batch * p.batch_stride_c;
  constexpr int COLS = Cfg::epi_cols;
  static_assert(Cfg::tile_n % COLS == 0 && COLS % SUB == 0, "staging holds whole 128-byte column blocks");
  long long phase_row[S::WM / 16];  // Cfg::phase_store: where rows t / 8 + 16 i go
  if constexpr (Cfg::phase_store)
#pragma unroll
    for (int i = 0; i < S::WM / 16; ++i) phase_row[i] = sm90_phase_row(p, row0 + t / 8 + 16 * i);
#pragma unroll
  for (int part = 0; part < Cfg::tile_n / COLS; ++part) {
    const u32 buf = stage + (part % S::EPI_BUFS) * (S::WM * COLS * E);
    // The part's values first, then the wait for its buffer: the math overlaps the store that last read
    // it (with one buffer, the previous part's). Column pairs outermost: each thread's bias pair is taken
    // once for its 2 x MI rows.
    Sm90StagedPair<TC> v[COLS / 8][S::MI][2];  // constant trip counts: unrolled, acc and v stay in registers
#pragma unroll
    for (int jj = 0; jj < COLS / 8; ++jj) {
      const int j = part * (COLS / 8) + jj, n = n0 + j * 8 + (lane & 3) * 2;
      float b0, b1;
      bias.pair(j, b0, b1);
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int m = row0 + mi * 64 + warp * 16 + (lane >> 2) + h * 8;
          const long long at = base + (long long)m * p.ldc + n;
          v[jj][mi][h].set(sm90_value<Cfg>(p, acc[mi][j * 4 + 2 * h], at, b0, m < p.m && n < p.n),
                           sm90_value<Cfg>(p, acc[mi][j * 4 + 2 * h + 1], at + 1, b1, m < p.m && n + 1 < p.n));
        }
    }
    if (t == 0) bulk_wait_read<S::EPI_BUFS - 1>();  // the store that last used `buf` has read it
    sm90_consumer_sync(cons);
#pragma unroll
    for (int jj = 0; jj < COLS / 8; ++jj) {
      const int scol = jj * 8 + (lane & 3) * 2, cb = (scol % SUB) * E;  // cb: byte within the block's row
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mi * 64 + warp * 16 + (lane >> 2) + h * 8;
          const int chunk = (cb >> 4) ^ (BB == 128 ? r & 7 : (r >> 1) & 3);
          const u32 addr = buf + (scol / SUB) * (S::WM * BB) + r * BB + (chunk << 4) + (cb & 15);
          v[jj][mi][h].store(addr);
        }
    }
    if constexpr (Cfg::phase_store) {  // rows to their dx pixels: 8 threads a row, 16 bytes each, coalesced
      sm90_consumer_sync(cons);
#pragma unroll
      for (int i = 0; i < S::WM / 16; ++i) {
        const int r = t / 8 + 16 * i, q = t % 8;
        if (row0 + r >= p.m) continue;
        TC* row = static_cast<TC*>(p.d) + phase_row[i];
#pragma unroll
        for (int b = 0; b < COLS / SUB; ++b) {
          const int n = n0 + part * COLS + b * SUB + q * (16 / E);
          if (n >= p.n) continue;  // N x E is a multiple of 16 bytes (legality)
          uint4 v;
          asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                       : "r"(buf + b * (S::WM * 128) + r * 128 + ((q ^ (r & 7)) << 4)));
          *reinterpret_cast<uint4*>(row + n) = v;
        }
      }
      continue;
    }
    fence_proxy_async_shared();
    sm90_consumer_sync(cons);
    if (t == 0) {
#pragma unroll
      for (int b = 0; b < COLS / SUB; ++b)
        tma_store_3d(&p.map_d, buf + b * (S::WM * BB), n0 + part * COLS + b * SUB, row0, batch);
      bulk_commit();
    }
  }
}

// Split-K: one consumer's raw fp32 partial sums into slice `slice` of the workspace, at D's indices.
template <class Cfg>
__device__ __forceinline__ void sm90_store_partial(const GemmSm90Params& p,
                                                   const float (&acc)[Sm90Shape<Cfg>::MI][Cfg::tile_n / 2], int batch,
                                                   int row0, int n0, int slice) {
  typedef Sm90Shape<Cfg> S;
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  float* w = p.workspace + slice * p.slice_stride + batch * p.batch_stride_c;
  const long long cs = Cfg::c_colmajor ? p.ldc : 1;
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mi * 64 + warp * 16 + (lane >> 2) + h * 8, m = row0 + r;
      if (m >= p.m || (S::SHORT && r >= S::WM)) continue;
      const long long ro = Cfg::c_colmajor ? (long long)m : (long long)m * p.ldc;
#pragma unroll
      for (int j = 0; j < Cfg::tile_n / 8; ++j) {
        const int n = n0 + j * 8 + (lane & 3) * 2;
        const float v0 = acc[mi][j * 4 + 2 * h], v1 = acc[mi][j * 4 + 2 * h + 1];
        if (!Cfg::c_colmajor && n + 1 < p.n && (p.n & 1) == 0) {
          *reinterpret_cast<float2*>(w + ro + n) = make_float2(v0, v1);
        } else {
          if (n < p.n) w[ro + n * cs] = v0;
          if (n + 1 < p.n) w[ro + (n + 1) * cs] = v1;
        }
      }
    }
}

// Stores one consumer's accumulators: D = act(alpha * acc + beta * C + bias), bounds-checked.
template <class Cfg>
__device__ __forceinline__ void sm90_store(const GemmSm90Params& p, const float (&acc)[Sm90Shape<Cfg>::MI][Cfg::tile_n / 2],
                                           const Sm90Bias<Cfg>& bias, int batch, int row0, int n0) {
  typedef typename Cfg::TC TC;
  typedef Sm90Shape<Cfg> S;
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const long long base = batch * p.batch_stride_c;
  TC* d = static_cast<TC*>(p.d);
  const long long cs = Cfg::c_colmajor ? p.ldc : 1;
  const bool pair = !Cfg::c_colmajor && Cfg::align_c >= 2;
  // Column pairs outermost: each thread's bias pair is taken once for its 2 x MI rows.
  long long phase_row[S::MI][2];  // Cfg::phase_store: the thread's rows once per tile
  if constexpr (Cfg::phase_store)
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) phase_row[mi][h] = sm90_phase_row(p, row0 + mi * 64 + warp * 16 + (lane >> 2) + h * 8);
#pragma unroll
  for (int j = 0; j < Cfg::tile_n / 8; ++j) {
    const int n = n0 + j * 8 + (lane & 3) * 2;
    float b0, b1;
    bias.pair(j, b0, b1);  // a shuffle: every lane takes part
    if (n >= p.n) continue;
    const bool two = pair || n + 1 < p.n;
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = mi * 64 + warp * 16 + (lane >> 2) + h * 8, m = row0 + r;
        if (m >= p.m || (S::SHORT && r >= S::WM)) continue;  // short tiles: rows past WM are another tile's
        const long long ro =
            base + (Cfg::phase_store ? phase_row[mi][h] : Cfg::c_colmajor ? (long long)m : (long long)m * p.ldc);
        const float v0 = sm90_value<Cfg>(p, acc[mi][j * 4 + 2 * h], ro + n * cs, b0, true);
        const float v1 = sm90_value<Cfg>(p, acc[mi][j * 4 + 2 * h + 1], ro + (n + 1) * cs, b1, two);
        if (pair) {
          store2(d + ro + n, v0, v1);
        } else {
          store1(d + ro + n * cs, v0);
          if (two) store1(d + ro + (n + 1) * cs, v1);
        }
      }
    }
}

// Producer: one operand's rows [mn0, mn0 + ROWS) x K [k0, k0 + 64) into `dst`, to this CTA or (mask
// != 0) to every CTA in `mask`. Either layout fills 8192 bytes per 64 rows: K-major, one box of
// ROWS x 128-byte rows; M/N-major, boxes of 64 K rows x 64 M/N (128 bytes) per 64 rows.
template <bool MN_MAJOR, int ROWS>
__device__ __forceinline__ void load_operand(u32 dst, const void* map, u32 bar, int k0, int mn0, int batch,
                                             unsigned short mask) {
  if (!MN_MAJOR) {
    if (mask) tma_load_3d_multicast(dst, map, bar, k0, mn0, batch, mask);
    else tma_load_3d(dst, map, bar, k0, mn0, batch);
    return;
  }
  static_assert(!MN_MAJOR || ROWS % 64 == 0, "M/N-major loads come in blocks of 64 rows");
#pragma unroll
  for (int i = 0; i < ROWS / 64; ++i) {
    if (mask) tma_load_3d_multicast(dst + i * 8192, map, bar, mn0 + 64 * i, k0, batch, mask);
    else tma_load_3d(dst + i * 8192, map, bar, mn0 + 64 * i, k0, batch);
  }
}

// Convolutions (Cfg::conv = 2 or 3 spatial dims, Cfg::conv_dir 0 fwd, 1 bwd_data, 2 bwd_weight;
// GemmSm90Params::conv): the producer's loads of one k-tile, by TMA im2col.
//   fwd, bwd_data: A = the tile's pixels (their receptive fields start at pixel x stride - pad), shifted by
//     the filter tap's offsets (tap x dilation), 128 bytes of channels; k-tiles walk taps x channel blocks
//     (next() advances them, so the producer never divides inside its loop). B = the tap's weights (filter
//     index tap0 + tap x tap_step per dim) from (C, taps, K): fwd K-major (rows = K), bwd_data N-major 64 x 64
//     blocks (dx, or one stride phase of it, is the stride-1 convolution of dy over the taps that reach it,
//     with the filter turned around).
//   bwd_weight: A = dy as an M-major GEMM operand (the GEMM path); B = for each 64 columns (tap, channel
//     block) of the tile, the 64 pixels of the k-tile by im2col at that tap's offsets (N-major block).
// Channels past the tensors read zeros.
template <class Cfg> struct Sm90Im2col {
  int w, h, d, n;   // input coordinates where the first pixel's receptive field starts
  int cb, s, r, t;  // channel block and filter tap (w, h, d) of the current k-tile (bwd_weight: of the tile's
                    // first 64 columns, cb = the channel offset)
  int q, pp, z;     // bwd_weight: output coordinates (w, h, d) of the k-tile's first pixel (image n)
  int step_q, step_p, step_z, step_n;  // bwd_weight: 64 pixels in the radix (out[0], out[1], out[2], images)

  // Output coordinates (q, pp, z, n) of `pixel` (index over n, out[2], out[1], out[0]).
  __device__ __forceinline__ void split_pixel(const Sm90ConvParams& g, int pixel) {
    q = pixel % g.out[0];
    int rest = pixel / g.out[0];
    pp = rest % g.out[1];
    rest /= g.out[1];
    z = 0;
    if constexpr (Cfg::conv == 3) z = rest % g.out[2], rest /= g.out[2];
    n = rest;
  }
  // The receptive-field start of output (q, pp, z).
  __device__ __forceinline__ void receptive_start(const Sm90ConvParams& g) {
    w = q * g.stride[0] - g.pad[0], h = pp * g.stride[1] - g.pad[1], d = z * g.stride[2] - g.pad[2];
  }
  __device__ __forceinline__ void locate(const GemmSm90Params& p, int pixel) {
    split_pixel(p.conv, pixel);
    receptive_start(p.conv);
  }
  // Filter tap index (t, r, s) -> its (s, r, t) components.
  __device__ __forceinline__ static void split_tap(const Sm90ConvParams& g, int tap, int& ts, int& tr, int& tt) {
    ts = tap % g.filter[0], tr = tap / g.filter[0] % g.filter[1], tt = tap / (g.filter[0] * g.filter[1]);
  }
  __device__ __forceinline__ void start(const GemmSm90Params& p, int pixel, int kt) {
    const Sm90ConvParams& g = p.conv;
    locate(p, pixel);
    const int tap = kt / g.cblocks;
    cb = kt - tap * g.cblocks;
    split_tap(g, tap, s, r, t);
  }
  __device__ __forceinline__ void next(const GemmSm90Params& p) {
    const Sm90ConvParams& g = p.conv;
    if (++cb < g.cblocks) return;
    cb = 0;
    if (++s < g.filter[0]) return;
    s = 0;
    if (++r < g.filter[1]) return;
    r = 0, ++t;
  }
  // The map's pixels from (w, h, d, n) at tap (ts, tr, tt) and channel c into dst.
  __device__ __forceinline__ void im2col(const GemmSm90Params& p, const TensorMap* map, u32 dst, u32 bar, int c, int ts,
                                         int tr, int tt, unsigned short mask) const {
    const Sm90ConvParams& g = p.conv;
    const unsigned short ow = ts * g.dilation[0], oh = tr * g.dilation[1];
    if constexpr (Cfg::conv == 3)
      tma_load_im2col_5d(dst, map, bar, c, w, h, d, n, ow, oh, (unsigned short)(tt * g.dilation[2]), mask);
    else
      tma_load_im2col_4d(dst, map, bar, c, w, h, n, ow, oh, mask);
  }
  // fwd, bwd_data: the current k-tile; B rows n0.. (this producer's share of the tile's columns).
  __device__ __forceinline__ void load(const GemmSm90Params& p, u32 sa, u32 sb, u32 bar, int n0, unsigned short mask_a,
                                       unsigned short mask_b) const {
    const Sm90ConvParams& g = p.conv;
    constexpr int BK = Sm90Shape<Cfg>::BK;
    im2col(p, &p.map_a, sa, bar, cb * BK, s, r, t, mask_a);
    const int tap = ((g.tap0[2] + g.tap_step[2] * t) * g.wfilter[1] + g.tap0[1] + g.tap_step[1] * r) * g.wfilter[0] +
                    g.tap0[0] + g.tap_step[0] * s;
    if constexpr (Cfg::conv_dir == 0) {
      if (mask_b) tma_load_3d_multicast(sb, &p.map_b, bar, cb * BK, tap, n0, mask_b);
      else tma_load_3d(sb, &p.map_b, bar, cb * BK, tap, n0);
    } else {  // (C, tap, K) in 64 x 64 blocks: rows = K (the reduction), 128 bytes of C
#pragma unroll
      for (int i = 0; i < Sm90Shape<Cfg>::B_LOAD_ROWS / 64; ++i) {
        if (mask_b) tma_load_3d_multicast(sb + i * 8192, &p.map_b, bar, n0 + 64 * i, tap, cb * BK, mask_b);
        else tma_load_3d(sb + i * 8192, &p.map_b, bar, n0 + 64 * i, tap, cb * BK);
      }
    }
  }
  // bwd_weight: k-tile kt0 of a tile whose columns start at n0 (tap x C + channel, C % 64 == 0). The producer's
  // loop then only adds: next_wgrad() moves 64 pixels on by a mixed-radix add of the steps (each digit below
  // its radix, so one carry a digit), and load_wgrad_b() walks the tile's column blocks from (cb, s, r, t).
  __device__ __forceinline__ void start_wgrad(const GemmSm90Params& p, int kt0, int n0) {
    const Sm90ConvParams& g = p.conv;
    split_pixel(g, kt0 * Sm90Shape<Cfg>::BK);
    int rest = Sm90Shape<Cfg>::BK;
    step_q = rest % g.out[0], rest /= g.out[0];
    step_p = rest % g.out[1], rest /= g.out[1];
    step_z = 0;
    if constexpr (Cfg::conv == 3) step_z = rest % g.out[2], rest /= g.out[2];
    step_n = rest;
    const int taps = g.filter[0] * g.filter[1] * g.filter[2];
    const int tap = min(n0 / g.channels, taps - 1);
    cb = n0 - tap * g.channels;
    split_tap(g, tap, s, r, t);
  }
  __device__ __forceinline__ void next_wgrad(const GemmSm90Params& p) {
    const Sm90ConvParams& g = p.conv;
    q += step_q;
    int carry = q >= g.out[0];
    q -= carry ? g.out[0] : 0;
    pp += step_p + carry;
    carry = pp >= g.out[1];
    pp -= carry ? g.out[1] : 0;
    if constexpr (Cfg::conv == 3) {
      z += step_z + carry;
      carry = z >= g.out[2];
      z -= carry ? g.out[2] : 0;
    }
    n += step_n + carry;
  }
  // B of the current k-tile: each 64 columns (tap, channel block) the k-tile's 64 pixels by im2col at that
  // tap's offsets. Columns past N read the last tap (the epilogue drops them).
  __device__ __forceinline__ void load_wgrad_b(const GemmSm90Params& p, u32 sb, u32 bar, unsigned short mask_b) {
    const Sm90ConvParams& g = p.conv;
    receptive_start(g);
    int c = cb, ts = s, tr = r, tt = t;
#pragma unroll
    for (int i = 0; i < Sm90Shape<Cfg>::B_LOAD_ROWS / 64; ++i) {
      im2col(p, &p.map_b, sb + i * 8192, bar, c, ts, tr, tt, mask_b);
      if ((c += 64) < g.channels) continue;
      c = 0;
      if (++ts < g.filter[0]) continue;
      ts = 0;
      if (++tr < g.filter[1]) continue;
      tr = 0;
      if (++tt == g.filter[2]) tt = g.filter[2] - 1, tr = g.filter[1] - 1, ts = g.filter[0] - 1;
    }
  }
};

// What K step `kk` (32 bytes of K) adds to an operand tile's wgmma descriptor: the descriptor's low
// bits hold the address / 16, and no step leaves the 256 KB shared window, so steps add without carry.
template <bool MN_MAJOR> __device__ __forceinline__ constexpr u64 desc_k_step(int kk) {
  return MN_MAJOR ? u64(kk * 16 * 128 / 16) : u64(kk * 32 / 16);
}

// Stream-K (Cfg::stream_k): the schedule of gemm/sm90_schedule.cuh (whole waves data-parallel, the
// last partial wave split by K). A share starts inside a tile at most once (its first piece): that
// piece's partial sums go to the CTA's slot of the workspace and its flag is raised. The piece that
// starts a tile (k-tile 0) owns it: if the tile goes on past the piece, the owner waits for the flags
// of the CTAs whose shares start inside the tile (c + 1, c + 2, ... in K order), adds their slots in
// that order (the same sums every run: deterministic) and runs the epilogue. Nothing waits on a piece
// that waits, so every wait ends once all CTAs run (the grid is persistent).
// Workspace: kSkMaxCtas x consumers int flags (zeroed before each launch), then per CTA and consumer
// one slot of WM x tile_n floats in accumulator order (float4 q of thread t at (q * 128 + t) * 4).
constexpr int kSkFlagFloats = kSkMaxCtas * 2;
struct Sm90StreamK : Sm90SkSchedule {
  __device__ __forceinline__ Sm90StreamK(int tiles, int ktiles, int splitk, int g) : Sm90SkSchedule(tiles, ktiles, splitk, g) {}

  template <class Cfg> __device__ __forceinline__ static float4* slot(const GemmSm90Params& p, int c, int cons) {
    typedef Sm90Shape<Cfg> S;
    return reinterpret_cast<float4*>(p.workspace + kSkFlagFloats + (long long)(c * Cfg::consumers + cons) * S::WM * Cfg::tile_n);
  }
  __device__ __forceinline__ static int* flag(const GemmSm90Params& p, int c, int cons) {
    return reinterpret_cast<int*>(p.workspace) + c * 2 + cons;
  }

  template <class Cfg>
  __device__ __forceinline__ void publish(const GemmSm90Params& p, const float (&acc)[Sm90Shape<Cfg>::MI][Cfg::tile_n / 2],
                                          int c, int cons) const {
    const int t = threadIdx.x % 128;
    float4* w = slot<Cfg>(p, c, cons);
#pragma unroll
    for (int mi = 0; mi < Sm90Shape<Cfg>::MI; ++mi)
#pragma unroll
      for (int q = 0; q < Cfg::tile_n / 8; ++q)
        __stcg(w + (mi * (Cfg::tile_n / 8) + q) * 128 + t,
               make_float4(acc[mi][4 * q], acc[mi][4 * q + 1], acc[mi][4 * q + 2], acc[mi][4 * q + 3]));
    sm90_consumer_sync(cons);
    if (t == 0) {
      __threadfence();
      flag_release(flag(p, c, cons), 1);
    }
  }
  template <class Cfg>
  __device__ __forceinline__ void gather(const GemmSm90Params& p, float (&acc)[Sm90Shape<Cfg>::MI][Cfg::tile_n / 2], int c,
                                         int cons, int tile, int ktiles) const {
    const int t = threadIdx.x % 128;
    for (int c2 = c + 1; contributes(c2, tile, ktiles); ++c2) {
      if (t == 0) flag_wait(flag(p, c2, cons), 1);
      sm90_consumer_sync(cons);
      const float4* w = slot<Cfg>(p, c2, cons);
      // The whole partial in flight at once (at most 16 float4: stream-K runs <= 64 accumulators a thread),
      // so a contributor costs one round trip to L2, not several.
      constexpr int Q = Sm90Shape<Cfg>::MI * (Cfg::tile_n / 8);
      float4 v[Q];
#pragma unroll
      for (int q = 0; q < Q; ++q) v[q] = __ldcg(w + q * 128 + t);
#pragma unroll
      for (int mi = 0; mi < Sm90Shape<Cfg>::MI; ++mi)
#pragma unroll
        for (int q = 0; q < Cfg::tile_n / 8; ++q) {  // indices, not a pointer: acc must stay in registers
          const float4 x = v[mi * (Cfg::tile_n / 8) + q];
          acc[mi][4 * q] += x.x, acc[mi][4 * q + 1] += x.y, acc[mi][4 * q + 2] += x.z, acc[mi][4 * q + 3] += x.w;
        }
    }
  }
};

// Work unit `unit` (slice-major: unit = slice x tiles_total + tile, so neighbouring blocks share a slice of K):
// its tile, slice and k-tiles [kt0, kt1). Without split-K no division: between tiles the consumers' tensor cores
// would wait for it. A compile-time test, not p.splitk == 1: a run-time branch there makes ptxas serialize the
// split-K kernels' wgmmas (C7515). p.splitk is 1 unless Cfg::splitk (stream-K does not come here).
struct Sm90Unit {
  int tile, slice, kt0, kt1;
};
template <class Cfg> __device__ __forceinline__ Sm90Unit sm90_unit(const GemmSm90Params& p, int ktiles, int unit) {
  if constexpr (!Cfg::splitk) return {unit, 0, 0, ktiles};
  const int slice = unit / p.tiles_total;
  return {unit - slice * p.tiles_total, slice, int((long long)ktiles * slice / p.splitk),
          int((long long)ktiles * (slice + 1) / p.splitk)};
}

// A CTA's work as (tile, k-tiles [kt0, kt1), slice) pieces, in order: its units (every clusters-th,
// slice-major), or under stream-K its data-parallel tiles and then its share of the split ones (Sm90StreamK).
template <class Cfg, class F>
__device__ __forceinline__ void sm90_for_each_work(const GemmSm90Params& p, int ktiles, int cluster, int clusters, F&& f) {
  if constexpr (Cfg::stream_k) {
    const Sm90SkSchedule sk(p.tiles_total, ktiles, p.splitk, clusters);
    sk.for_each_piece(cluster, clusters, ktiles, [&](int tile, int kt0, int kt1) { f(tile, kt0, kt1, 0); });
  } else {
    for (int unit = cluster; unit < p.tiles_total * p.splitk; unit += clusters) {
      const Sm90Unit u = sm90_unit<Cfg>(p, ktiles, unit);
      f(u.tile, u.kt0, u.kt1, u.slice);
    }
  }
}

// C k-tiles from kt (pipeline step it) of sm90_block_scaled_pair_loop: the two partials take turns; kt and it move on.
template <int C, class Issue, class Promote, int R>
__device__ __forceinline__ void sm90_block_scaled_chunk(Issue& issue, Promote& promote, float (&part0)[R], float (&part1)[R],
                                                        int& kt, int& it) {
  issue(part0, kt, it);
#pragma unroll
  for (int j = 0; j < C; j += 2) {
    promote(part0, part1, kt + j, it + j, j + 1 < C);
    if (j + 1 < C) promote(part1, part0, kt + j + 1, it + j + 1, j + 2 < C);
  }
  kt += C, it += C;
}

// Cfg::block_scale (fp8, tilepick::GemmScale::block): warp 1 of the producer warpgroup copies each k-tile's
// scales by cp.async into its stage's scale slot (SA of the tile's tile_m rows, then SB of the two 128-column
// blocks the tile's columns start in: a tile_n of 192 spans two); each lane's copies arrive on the stage's full
// barrier when they land (32 arrivals beside the TMA thread's), so the consumers read the scales from shared
// memory as they read the operands, and the copies of several stages are in flight at once. Rows past M and
// blocks past N take the last scales (their outputs are dropped).
template <class Cfg>
__device__ __forceinline__ void sm90_block_scale_producer(const GemmSm90Params& p, int ktiles, int cluster, int clusters,
                                                          u32 rank, u32 slots, u32 full, u32 empty) {
  typedef Sm90Shape<Cfg> S;
  constexpr int ST = Cfg::stages;
  const int lane = threadIdx.x % 32, nblocks = (p.n + 127) / 128;
  int it = 0;
  sm90_for_each_work<Cfg>(p, ktiles, cluster, clusters, [&](int tile, int kt0, int kt1, int) {
    int batch, m0, n0;
    sm90_tile_coords<Cfg>(p, tile, rank, batch, m0, n0);
    const float* sa = p.scale_a + (long long)batch * p.kblocks * p.m;
    // lanes 0 and 1: SB of the tile's first and second column block
    const float* sb = p.scale_b + ((long long)batch * nblocks + min(n0 / 128 + (lane & 1), nblocks - 1)) * p.kblocks;
    for (int kt = kt0; kt < kt1; ++kt, ++it) {
      const int s = it % ST;
      mbar_wait(empty + 8 * s, ((it / ST) & 1) ^ 1);
      const u32 slot = slots + s * S::SCALE_FLOATS * 4;
#pragma unroll
      for (int j = 0; j < Cfg::tile_m / 32; ++j)
        cp_async<4>(slot + 4 * (lane + 32 * j), sa + (long long)kt * p.m + min(m0 + lane + 32 * j, p.m - 1), true);
      if (lane < 2) cp_async<4>(slot + 4 * (Cfg::tile_m + lane), sb + kt, true);
      cp_async_mbar_arrive_noinc(full + 8 * s);
    }
  });
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// The promotion factors of one k-tile for this thread's rows r and r + 8, per 64-column segment q of the tile:
// SA[kb][row] x SB[block][kb], where segment q lies in the tile's first column block or the next one: block
// offset (half + q) / 2, with half set where the tile starts half-way into a block (tile_n 192, n0 / 64 odd).
template <class Cfg> struct Sm90BlockFactors {
  static constexpr int SEGS = Cfg::tile_n / 64;
  float f[SEGS][2];
  __device__ __forceinline__ void read(const float* slot, int r, bool half) {
    const float a0 = slot[r], a1 = slot[r + 8], b0 = slot[Cfg::tile_m], b1 = slot[Cfg::tile_m + 1];
#pragma unroll
    for (int q = 0; q < SEGS; ++q) {
      const float b = q == 0 ? b0 : q == 1 ? (half ? b1 : b0) : b1;
      f[q][0] = a0 * b, f[q][1] = a1 * b;
    }
  }
  // acc[AT + i] += part[i] x factors (accumulator j: column group j / 4 of 8, row r for j % 4 < 2, else r + 8)
  template <int AT, int R, int P> __device__ __forceinline__ void promote(float (&acc)[R], const float (&part)[P]) const {
#pragma unroll
    for (int i = 0; i < P; ++i) acc[AT + i] += part[i] * f[((AT + i) / 4) / 8][(i % 4) < 2 ? 0 : 1];
  }
};

// Cfg::block_scale: each k-tile is one 128-K block of scales. Its wgmmas sum into a partial (the tensor
// cores' fast accumulation, restarted every block), which is then added to the fp32 accumulators times the
// block's factors (Sm90BlockFactors; DeepSeek-V3's promotion: full fp32 sums across blocks), read from the
// stage's scale slot (sm90_block_scale_producer). A stage is released once its wgmmas completed.
// Legality: 64 rows per consumer (MI = 1), tile_n 64, 128, 192 or 256.
//   tile_n <= 128 (sm90_block_scaled_pair_loop): two partials take turns (64 + 2 x 64 registers a thread).
//   tile_n 192 / 256 (sm90_block_scaled_single_loop): one partial of 96 / 64 (256 in two 128-column parts).
template <class Cfg> struct Sm90BlockScaled {
  static constexpr bool PAIRED = Cfg::tile_n <= 128;
  static constexpr int PARTS = Cfg::tile_n == 256 ? 2 : 1;  // column parts of the single loop
};

// Issues the wgmmas of one stage's k-tile into `part`: this consumer's 64 rows of A x columns [H PN, (H + 1) PN) of
// the tile (B's rows of them PN x 128 bytes on in the stage), every wgmma but the first adding; then commits them.
template <class Cfg, int H, int P>
__device__ __forceinline__ void sm90_block_scaled_issue(float (&part)[P], u32 stage, int row0) {
  typedef Sm90Shape<Cfg> S;
  constexpr int PN = 2 * P;
  wgmma_fence_regs(part);
  wgmma_fence();
  const u64 da = smem_desc_k128(stage + row0 * 128), db = smem_desc_k128(stage + S::A_BYTES + H * PN * 128);
#pragma unroll
  for (int kk = 0; kk < S::KSTEPS; ++kk)
    wgmma_m64<PN, Cfg::in_type, false, false>(part, da + desc_k_step<false>(kk), db + desc_k_step<false>(kk), kk > 0);
  wgmma_commit();
  wgmma_fence_regs(part);
}

// Part H of a k-tile in the single loop: issued, awaited and promoted into its columns' accumulators.
template <class Cfg, int H, int R, int P>
__device__ __forceinline__ void sm90_block_scaled_part(float (&acc)[R], float (&part)[P], u32 stage, int row0,
                                                       const Sm90BlockFactors<Cfg>& fac) {
  sm90_block_scaled_issue<Cfg, H>(part, stage, row0);
  wgmma_wait<0>();
  wgmma_fence_regs(part);
  fac.template promote<H * P>(acc, part);
}

// One partial: each k-tile's factors are read, then per column part its wgmmas issued and awaited and the
// partial promoted; the stage is released after the last part. With nothing in flight between k-tiles the loop
// needs no unrolling. The tensor cores wait for each promotion unless the other consumer's wgmmas fill that time.
template <class Cfg, class Release>
__device__ __forceinline__ void sm90_block_scaled_single_loop(float (&acc)[1][Cfg::tile_n / 2], u32 base, u32 full,
                                                              const float* slots, int row0, bool half, int kt0, int kt1,
                                                              int& it, bool signal, Release&& release) {
  typedef Sm90Shape<Cfg> S;
  constexpr int ST = Cfg::stages, PN = Cfg::tile_n / Sm90BlockScaled<Cfg>::PARTS;  // columns per part
  const int t = threadIdx.x % 128, r = row0 + (t / 32) * 16 + (t % 32) / 4;  // this thread's rows r and r + 8
  float part[PN / 2];
#pragma unroll
  for (int i = 0; i < PN / 2; ++i) part[i] = 0.f;
  for (int kt = kt0; kt < kt1; ++kt, ++it) {
    const int s = it % ST;
    mbar_wait(full + 8 * s, (it / ST) & 1);
    Sm90BlockFactors<Cfg> fac;
    fac.read(slots + s * S::SCALE_FLOATS, r, half);
    const u32 stage = base + s * S::STAGE_BYTES;
    sm90_block_scaled_part<Cfg, 0>(acc[0], part, stage, row0, fac);
    if constexpr (Sm90BlockScaled<Cfg>::PARTS == 2) sm90_block_scaled_part<Cfg, 1>(acc[0], part, stage, row0, fac);
    if (signal) release(s);
  }
}

// Two partials take turns: k-tile kt + 1's wgmmas are issued before kt's partial is promoted, so the tensor cores
// do not wait for the promotion (but at the end of a chunk, see below).
template <class Cfg, class Release>
__device__ __forceinline__ void sm90_block_scaled_pair_loop(float (&acc)[1][Cfg::tile_n / 2], u32 base, u32 full,
                                                            const float* slots, int row0, bool half, int kt0, int kt1,
                                                            int& it, bool signal, Release&& release) {
  typedef Sm90Shape<Cfg> S;
  constexpr int ST = Cfg::stages, BN = Cfg::tile_n;
  const int t = threadIdx.x % 128, r = row0 + (t / 32) * 16 + (t % 32) / 4;  // this thread's rows r and r + 8
  Sm90BlockFactors<Cfg> fac;  // the latest issued k-tile's factors
  // Issues k-tile kt (pipeline step `step`) into `part` once its stage is full (every wgmma but the first
  // adds), then reads its factors from the stage's scale slot.
  auto issue = [&](float (&part)[BN / 2], int kt, int step) __attribute__((always_inline)) {
    const int s = step % ST;
    mbar_wait(full + 8 * s, (step / ST) & 1);
    sm90_block_scaled_issue<Cfg, 0>(part, base + s * S::STAGE_BYTES, row0);
    fac.read(slots + s * S::SCALE_FLOATS, r, half);
  };
  // k-tile kt's wgmmas into `done` were issued as pipeline step `step` (the latest issue); `more`: issue
  // kt + 1's into `next` first. Then wait for kt's, release its stage, promote.
  auto promote = [&](float (&done)[BN / 2], float (&next)[BN / 2], int kt, int step, bool more) __attribute__((always_inline)) {
    const Sm90BlockFactors<Cfg> f = fac;
    if (more) {
      issue(next, kt + 1, step + 1);
      wgmma_wait<1>();
    } else {
      wgmma_wait<0>();
    }
    wgmma_fence_regs(done);
    if (signal) release(step % ST);
    f.template promote<0>(acc[0], done);
  };
  float part0[BN / 2], part1[BN / 2];  // overwritten by each block's first wgmma (scale-d 0)
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) part0[i] = part1[i] = 0.f;
  // k-tiles in chunks of 4, then one at a time, with no wgmma in flight between chunks: ptxas serializes
  // every wgmma (C7514) when a loop's back-edge or a branch's join carries one in flight while accumulators
  // are read. The last promotion of a chunk waits for the tensor cores. (Chunks of 8 ran no faster, each unrolled
  // promotion costs compile time, and starting consumer 1 with a chunk of 2, so that the two consumers' chunk ends
  // fall apart, ran 4% slower: experiments/2026-12-06-block-scale-loops.)
  int kt = kt0;
  while (kt + 4 <= kt1) sm90_block_scaled_chunk<4>(issue, promote, part0, part1, kt, it);
  while (kt < kt1) sm90_block_scaled_chunk<1>(issue, promote, part0, part1, kt, it);
}

template <class Cfg, class Release>
__device__ __forceinline__ void sm90_block_scaled_mainloop(float (&acc)[1][Cfg::tile_n / 2], u32 base, u32 full,
                                                           const float* slots, int row0, int n0, int kt0, int kt1,
                                                           int& it, bool signal, Release&& release) {
  static_assert(Sm90Shape<Cfg>::MI == 1 && Cfg::tile_n % 64 == 0, "block scales: 64 rows per consumer, tile_n 64 to 256");
  const bool half = Cfg::tile_n % 128 != 0 && ((n0 / 64) & 1);  // the tile starts half-way into a block of SB
  if constexpr (Sm90BlockScaled<Cfg>::PAIRED)
    sm90_block_scaled_pair_loop<Cfg>(acc, base, full, slots, row0, half, kt0, kt1, it, signal, release);
  else
    sm90_block_scaled_single_loop<Cfg>(acc, base, full, slots, row0, half, kt0, kt1, it, signal, release);
}

template <class Cfg> __device__ __forceinline__ void gemm_sm90(const GemmSm90Params& p) {
  typedef Sm90Shape<Cfg> S;
  constexpr int ST = Cfg::stages, BN = Cfg::tile_n;
  extern __shared__ unsigned char smem_raw[];
  // Shared memory: stages x [A tile_m x 64 | B tile_n x 64] (1024-byte aligned for the 128-byte
  // swizzle), the epi=smem staging, then full[stages], empty[stages] and order[2] mbarriers, then
  // with block scales the stages' scale slots.
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const u32 cstage = base + ST * S::STAGE_BYTES;  // epi=smem: tile_m x tile_n of TC
  const u32 full = cstage + S::EPI_BYTES, empty = full + 8 * ST, order = empty + 8 * ST;
  const u32 slots = order + 16;  // Cfg::block_scale: the stages' scale slots
  float* scale_slots = reinterpret_cast<float*>(smem_raw + (slots - smem_u32(smem_raw)));
  const int wg = threadIdx.x / 128;
  // Strided bwd_data: the stride phases' launches write disjoint dx pixels; the next one may start now
  // (its CTAs start once all of this grid's have started: this grid's CTAs never wait for it).
  if constexpr (Cfg::phase_store) allow_dependent_launch();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < ST; ++s) {
      mbar_init(full + 8 * s, Cfg::block_scale ? 33 : 1);  // the TMA thread [+ the scale warp's lanes' cp.async]
      mbar_init(empty + 8 * s, S::READERS * S::CS);
    }
    if (Cfg::pingpong) mbar_init(order, 1), mbar_init(order + 8, 1);
    fence_barrier_init();
  }
  if (S::CS > 1) cluster_sync();
  else __syncthreads();
  const int ktiles = (p.k + S::BK - 1) / S::BK;
  const u32 rank = S::CS > 1 ? cluster_cta_rank() : 0;
  const int cluster = blockIdx.x / S::CS, clusters = gridDim.x / S::CS;
  const int units = p.tiles_total * p.splitk;  // work units (sm90_unit)
  auto unit_ktiles = [&](int unit) {
    const Sm90Unit u = sm90_unit<Cfg>(p, ktiles, unit);
    return u.kt1 - u.kt0;
  };

  if (wg == 0) {  // ---- producer warpgroup
    regs_release<S::PRODUCER_REGS>();
    if constexpr (Cfg::block_scale)
      if (threadIdx.x / 32 == 1) sm90_block_scale_producer<Cfg>(p, ktiles, cluster, clusters, rank, slots, full, empty);
    if (threadIdx.x == 0) {
      tma_prefetch_map(&p.map_a);
      tma_prefetch_map(&p.map_b);
      int it = 0;
      sm90_for_each_work<Cfg>(p, ktiles, cluster, clusters, [&](int tile, int kt0, int kt1, int) {
        int batch, m0, n0;
        sm90_tile_coords<Cfg>(p, tile, rank, batch, m0, n0);
        // The operand a cluster shares: my half of its rows, to both CTAs (mask 3).
        const int half_a = Cfg::cluster_n == 2 ? int(rank) * S::A_LOAD_ROWS : 0;
        const int half_b = Cfg::cluster_m == 2 ? int(rank) * S::B_LOAD_ROWS : 0;
        const unsigned short mask_a = Cfg::cluster_n == 2 ? 3 : 0, mask_b = Cfg::cluster_m == 2 ? 3 : 0;
        Sm90Im2col<Cfg> im2col;
        if constexpr (Cfg::conv != 0 && Cfg::conv_dir != 2) im2col.start(p, m0 + half_a, kt0);
        if constexpr (Cfg::conv != 0 && Cfg::conv_dir == 2) im2col.start_wgrad(p, kt0, n0 + half_b);
        for (int kt = kt0; kt < kt1; ++kt, ++it) {
          const int s = it % ST, parity = (it / ST) & 1;
          mbar_wait(empty + 8 * s, parity ^ 1);
          const u32 sa = base + s * S::STAGE_BYTES, sb = sa + S::A_BYTES, bar = full + 8 * s;
          mbar_arrive_expect_tx(bar, S::STAGE_BYTES);
          if constexpr (Cfg::conv != 0 && Cfg::conv_dir != 2) {
            im2col.load(p, sa + half_a * 128, sb + half_b * 128, bar, n0 + half_b, mask_a, mask_b);
            im2col.next(p);
          } else {
            load_operand<Cfg::a_mn, S::A_LOAD_ROWS>(sa + half_a * 128, &p.map_a, bar, kt * S::BK, m0 + half_a, batch,
                                                    mask_a);
            if constexpr (Cfg::conv != 0) {  // bwd_weight: A = dy as in a GEMM, B = x by im2col
              im2col.load_wgrad_b(p, sb + half_b * 128, bar, mask_b);
              im2col.next_wgrad(p);
            } else
              load_operand<Cfg::b_mn, S::B_LOAD_ROWS>(sb + half_b * 128, &p.map_b, bar, kt * S::BK, n0 + half_b, batch,
                                                      mask_b);
          }
        }
      });
      // Cluster: wait until every stage was released by the consumers of both CTAs, so no remote
      // arrival can reach this CTA's barriers after it exits.
      if (S::CS > 1)
        for (int i = 0; i < ST; ++i, ++it) mbar_wait(empty + 8 * (it % ST), ((it / ST) & 1) ^ 1);
      // A stride phase that started early ends after the one before it: the last phase's end is the whole
      // plan's (a no-op for a launch without programmatic dependence).
      if constexpr (Cfg::phase_store) wait_for_previous_grid();
    }
    return;
  }

  // ---- consumer warpgroups
  regs_claim<S::CONSUMER_REGS>();
  const int cons = wg - 1;
  const int row0 = Cfg::pingpong ? 0 : cons * S::WM;  // this consumer's first row in the tile
  // One arrival per warpgroup on empty[s] of every CTA in the cluster (thread c of the warpgroup
  // signals CTA c).
  const int lane_wg = threadIdx.x % 128;
  const bool signal = lane_wg < S::CS;
  auto release = [&](int s) {
    if (S::CS == 1) mbar_arrive(empty + 8 * s);
    else mbar_arrive_cluster(empty + 8 * s, u32(lane_wg));
  };
  int it = 0;
  // One piece of work: k-tiles [kt0, kt1) of `tile` into acc, then its epilogue.
  auto run = [&](int tile, int kt0, int kt1, int slice) __attribute__((always_inline)) {  // inlined: acc stays in registers
    int batch, m0, n0;
    Sm90Bias<Cfg> bias;
    // The tile's place and bias are needed by the epilogue only: without block scales they are worked out
    // while the first k-tile's wgmmas run (the divisions and loads would otherwise keep the tensor cores idle).
    auto locate = [&]() __attribute__((always_inline)) {
      sm90_tile_coords<Cfg>(p, tile, rank, batch, m0, n0);
      if (!Cfg::splitk) bias.load(p, n0);
    };
    float acc[S::MI][BN / 2];
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[mi][i] = 0.f;
    if constexpr (Cfg::block_scale) {
      locate();
      sm90_block_scaled_mainloop<Cfg>(acc, base, full, scale_slots, row0, n0, kt0, kt1, it, signal, release);
    } else {
      for (int kt = kt0; kt < kt1; ++kt, ++it) {
        const int s = it % ST, parity = (it / ST) & 1;
        mbar_wait(full + 8 * s, parity);
        const u32 sa = base + s * S::STAGE_BYTES + row0 * 128, sb = base + s * S::STAGE_BYTES + S::A_BYTES;
#pragma unroll
        for (int mi = 0; mi < S::MI; ++mi) wgmma_fence_regs(acc[mi]);
        wgmma_fence();
        const u64 da = Cfg::a_mn ? smem_desc_mn128(sa) : smem_desc_k128(sa);
        const u64 db = Cfg::b_mn ? smem_desc_mn128(sb) : smem_desc_k128(sb);
#pragma unroll
        for (int kk = 0; kk < S::KSTEPS; ++kk)
#pragma unroll
          for (int mi = 0; mi < S::MI; ++mi)  // the next 64 rows of A: 8192 bytes on
            wgmma_m64<BN, Cfg::in_type, Cfg::a_mn, Cfg::b_mn>(acc[mi], da + desc_k_step<Cfg::a_mn>(kk) + mi * (8192 / 16),
                                                           db + desc_k_step<Cfg::b_mn>(kk), 1);
        wgmma_commit();
#pragma unroll
        for (int mi = 0; mi < S::MI; ++mi) wgmma_fence_regs(acc[mi]);
        if (kt == kt0) locate();
        wgmma_wait<1>();  // k-tile it - 1 is done: its stage may be refilled
        if (kt > kt0 && signal) release((it + ST - 1) % ST);
      }
      if (kt1 <= kt0) locate();
    }
    if (Cfg::pingpong && lane_wg == 0) mbar_arrive(order + 8 * (1 - cons));  // the partner's turn
    wgmma_wait<0>();
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi) wgmma_fence_regs(acc[mi]);
    if (!Cfg::block_scale && kt1 > kt0 && signal) release((it + ST - 1) % ST);
    if constexpr (Cfg::stream_k) {
      // Made here, not once per CTA: kept across the main loop, its fields cost registers.
      const Sm90StreamK sk(p.tiles_total, ktiles, p.splitk, clusters);
      if (kt0 > 0) {  // a later part of the tile: to the workspace, for the CTA that owns the tile
        sk.publish<Cfg>(p, acc, cluster, cons);
        return;
      }
      if (kt1 < ktiles) sk.gather<Cfg>(p, acc, cluster, cons, tile, ktiles);
    }
    if (Cfg::splitk)
      sm90_store_partial<Cfg>(p, acc, batch, m0 + row0, n0, slice);
    else if (Cfg::epi_smem)
      sm90_store_staged<Cfg>(p, acc, bias, batch, m0 + row0, n0, cstage + cons * S::EPI_CONSUMER_BYTES, cons);
    else
      sm90_store<Cfg>(p, acc, bias, batch, m0 + row0, n0);
  };
  if constexpr (Cfg::pingpong) {
    int unit = cluster, turn = 0;  // turn: tiles this consumer has run
    if (cons == 1 && unit < units) it += unit_ktiles(unit), unit += clusters;
    for (; unit < units; unit += 2 * clusters, ++turn) {
      if (cons == 1 || turn > 0) mbar_wait(order + 8 * cons, (turn - (cons == 0)) & 1);
      const Sm90Unit u = sm90_unit<Cfg>(p, ktiles, unit);
      run(u.tile, u.kt0, u.kt1, u.slice);
      if (unit + clusters < units) it += unit_ktiles(unit + clusters);  // the partner's tile
    }
  } else {
    sm90_for_each_work<Cfg>(p, ktiles, cluster, clusters, run);
  }
  if (Cfg::epi_smem && threadIdx.x % 128 == 0) bulk_wait<0>();  // stores done before the CTA exits
}

}  // namespace tp
