// The sm80 mainloop shared by GEMM and implicit-GEMM convolution: a block computes a
// tile_m x tile_n tile of C over a range of K tiles with mma.sync, fed by a `stages`-deep cp.async
// pipeline through swizzled shared memory and ldmatrix; then a direct (registers -> global)
// epilogue, with serial (in-kernel) or parallel (workspace) split-K.
//
// Cfg (baked into each program by the plan builder):
//   tile_m, tile_n, tile_k, warps_m, warps_n, stages, align_a, align_b, align_c, raster, swizzle
//   a_kmajor, b_kmajor  shared-memory tile orientation: A is [tile_m][tile_k] (K contiguous) or
//                       [tile_k][tile_m]; B is [tile_n][tile_k] or [tile_k][tile_n]
//   splitk_mode         0 none, 1 serial, 2 parallel
//   has_beta, has_bias, act
//   TA (== TB: f16, bf16, or float for tf32), TC (output: f16, bf16, float)
#pragma once
#include "common/cp_async.cuh"
#include "common/mma.cuh"
#include "common/smem.cuh"
#include "common/types.cuh"

namespace tp {

template <class Cfg> struct Sm80Shape {
  typedef typename Cfg::TA T;
  static constexpr int E = sizeof(T);
  static constexpr int THREADS = Cfg::warps_m * Cfg::warps_n * 32;
  static constexpr int WM = Cfg::tile_m / Cfg::warps_m, WN = Cfg::tile_n / Cfg::warps_n;  // warp tile
  static constexpr int MI = WM / 16, NI = WN / 8;   // m16 x n8 mma tiles per warp
  static constexpr int KSTEP = 32 / E;               // mma K: 16 (f16/bf16) or 8 (tf32)
  static constexpr int KS = Cfg::tile_k / KSTEP;
  static constexpr int A_BYTES = Cfg::tile_m * Cfg::tile_k * E;
  static constexpr int B_BYTES = Cfg::tile_n * Cfg::tile_k * E;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int NACC = MI * NI * 4;           // accumulators per thread
};

// Thread -> vector assignment for loading a ROWS x COLS tile (COLS contiguous, E-byte elements) as
// VEC-element vectors: vector j of this thread is number threadIdx.x + j * THREADS in row-major order.
template <int ROWS, int COLS, int VEC, int E, int THREADS> struct TileMap {
  static constexpr int VPR = COLS / VEC;             // vectors per row
  static constexpr int NV = ROWS * VPR;
  static constexpr int ITERS = (NV + THREADS - 1) / THREADS;
  static constexpr bool COL_FIXED = THREADS % VPR == 0;  // every vector of a thread in one column
  __device__ static bool active(int j) { return NV % THREADS == 0 || int(threadIdx.x) + j * THREADS < NV; }
  __device__ static int row(int j) {
    return COL_FIXED ? int(threadIdx.x) / VPR + j * (THREADS / VPR) : (int(threadIdx.x) + j * THREADS) / VPR;
  }
  __device__ static int col(int j) {
    return (COL_FIXED ? int(threadIdx.x) % VPR : (int(threadIdx.x) + j * THREADS) % VPR) * VEC;
  }
  __device__ static int smem(int j) { return tile_offset<COLS, E>(row(j), col(j)); }
};

// A dense matrix operand: element (mn, k) at ptr[mn * ld + k] (KMAJOR) or ptr[k * ld + mn].
// Shared tile: [TMN][TK] (KMAJOR) or [TK][TMN]. When every vector of a thread lies in one tile
// column (Map::COL_FIXED), vector j sits RS rows below vector 0 in global and in shared memory, so
// the loader keeps one offset, one column and one bound instead of per-vector state.
template <class T, bool KMAJOR, int TMN, int TK, int VEC, int THREADS> struct PlainLoader {
  typedef TileMap<KMAJOR ? TMN : TK, KMAJOR ? TK : TMN, VEC, sizeof(T), THREADS> Map;
  static constexpr int COLS = KMAJOR ? TK : TMN;
  static constexpr int RS = THREADS / Map::VPR;  // rows between a thread's vectors (COL_FIXED)
  static constexpr int CPR = COLS * int(sizeof(T)) / 16;
  // Moving RS rows down keeps the swizzle pattern (common/smem.cuh) iff RS % 8 == 0 (CPR >= 8) or
  // RS * CPR % 64 == 0 (narrower rows).
  static constexpr bool FAST = Map::COL_FIXED && (CPR >= 8 ? RS % 8 == 0 : RS * CPR % 64 == 0);
  static constexpr int N = FAST ? 1 : Map::ITERS;
  const T* ptr;
  int ld;
  int goff[N];      // global offset of vector j (FAST: vector 0) in K tile 0
  int row_left[N];  // rows (mn or k) from the vector's row to the operand's end
  int col_left[N];  // columns (k or mn) from the vector's column to the operand's end
  int soff;         // FAST: shared offset of vector 0

  __device__ PlainLoader(const T* p, int ld_, int mn_end, int k_end, int mn0) : ptr(p), ld(ld_) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int r = Map::row(j), c = Map::col(j);
      goff[j] = r * ld + c + (KMAJOR ? mn0 * ld : mn0);
      row_left[j] = KMAJOR ? mn_end - mn0 - r : k_end - r;
      col_left[j] = KMAJOR ? k_end - c : mn_end - mn0 - c;
    }
    soff = Map::smem(0);
  }
  __device__ void load(u32 s, int kt) const {
    const int k0 = kt * TK;
    const int koff = KMAJOR ? k0 : k0 * ld;
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      if (!Map::active(j)) continue;
      const int q = FAST ? 0 : j, dr = FAST ? j * RS : 0;  // vector j = vector q moved down dr rows
      const bool ok = KMAJOR ? (row_left[q] > dr && col_left[q] > k0) : (col_left[q] > 0 && row_left[q] - dr > k0);
      const int off = goff[q] + dr * ld + koff;
      const int so = FAST ? soff + dr * COLS * int(sizeof(T)) : Map::smem(j);
      cp_async<VEC * int(sizeof(T))>(s + so, ok ? ptr + off : ptr, ok);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Fragments of one mma K step of a warp: A af[MI][4] (m16 x k), B bf[NI][2] (k x n8), read from the
// stage at shared address sA (A tile) / sB (B tile).
template <class Cfg> struct Sm80Frags {
  typedef Sm80Shape<Cfg> S;
  u32 a[S::MI][4], b[S::NI][2];

  __device__ __forceinline__ void load(u32 sA, u32 sB, int ks, int wm0, int wn0, int lane) {
    constexpr int TM = Cfg::tile_m, TN = Cfg::tile_n, TK = Cfg::tile_k, E = S::E;
    constexpr int CPR_A = (Cfg::a_kmajor ? TK : TM) * E / 16, CPR_B = (Cfg::b_kmajor ? TK : TN) * E / 16;
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi) {
      const int m = wm0 + mi * 16;
      if (Cfg::a_kmajor) {  // [tile_m][tile_k]: matrices (m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15) (m8-15,k8-15)
        ldsm_x4(a[mi], sA + swizzle_chunk<CPR_A>(m + (lane & 15), ks * 2 + (lane >> 4)) * 16);
      } else if (E == 2) {  // [tile_k][tile_m], transposed on the way in
        ldsm_x4_trans(a[mi], sA + swizzle_chunk<CPR_A>(ks * 16 + (lane >> 4) * 8 + (lane & 7),
                                                       (m + ((lane >> 3) & 1) * 8) / 8) * 16);
      } else {  // tf32, M contiguous: no transposing ldmatrix for 32-bit elements
        const int k = ks * 8 + (lane & 3), mm = m + (lane >> 2);
        a[mi][0] = lds_u32(sA + tile_offset<TM, 4>(k, mm));
        a[mi][1] = lds_u32(sA + tile_offset<TM, 4>(k, mm + 8));
        a[mi][2] = lds_u32(sA + tile_offset<TM, 4>(k + 4, mm));
        a[mi][3] = lds_u32(sA + tile_offset<TM, 4>(k + 4, mm + 8));
      }
    }
#pragma unroll
    for (int nj = 0; nj < S::NI / 2; ++nj) {  // two n8 tiles per ldmatrix.x4
      const int n = wn0 + nj * 16;
      if (Cfg::b_kmajor || E == 2) {
        u32 r[4];
        if (Cfg::b_kmajor)  // [tile_n][tile_k]: (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15)
          ldsm_x4(r, sB + swizzle_chunk<CPR_B>(n + (lane >> 4) * 8 + (lane & 7), ks * 2 + ((lane >> 3) & 1)) * 16);
        else  // [tile_k][tile_n], transposed
          ldsm_x4_trans(r, sB + swizzle_chunk<CPR_B>(ks * 16 + ((lane >> 3) & 1) * 8 + (lane & 7),
                                                     (n + (lane >> 4) * 8) / 8) * 16);
        b[2 * nj][0] = r[0], b[2 * nj][1] = r[1], b[2 * nj + 1][0] = r[2], b[2 * nj + 1][1] = r[3];
      } else {  // tf32, N contiguous
        const int k = ks * 8 + (lane & 3), nn = n + (lane >> 2);
        b[2 * nj][0] = lds_u32(sB + tile_offset<TN, 4>(k, nn));
        b[2 * nj][1] = lds_u32(sB + tile_offset<TN, 4>(k + 4, nn));
        b[2 * nj + 1][0] = lds_u32(sB + tile_offset<TN, 4>(k, nn + 8));
        b[2 * nj + 1][1] = lds_u32(sB + tile_offset<TN, 4>(k + 4, nn + 8));
      }
    }
  }

  __device__ __forceinline__ void mma_into(float (&acc)[S::MI][S::NI][4]) {
    typedef typename S::T T;
    if (S::E == 4) {  // fp32 bits -> tf32
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int q = 0; q < 4; ++q) a[mi][q] = to_tf32(a[mi][q]);
#pragma unroll
      for (int ni = 0; ni < S::NI; ++ni) b[ni][0] = to_tf32(b[ni][0]), b[ni][1] = to_tf32(b[ni][1]);
    }
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < S::NI; ++ni) mma<T>(acc[mi][ni], a[mi], b[ni]);
  }
};

// Mainloop: acc[MI][NI][4] += A[m0.., kt0 * tile_k ..] x B[.., n0..] over K tiles [kt0, kt1).
// Shared memory: `stages` x (A tile | B tile). K tile t lives in stage t % stages.
// Iteration i (K tile i): step 0 issues the cp.async of tile i + stages - 1 into the stage that
// tile i - 1 used; each step ks loads the fragments of step ks + 1 while the mma of step ks runs;
// the last step waits for tile i + 1 and syncs (one barrier per K tile), then prefetches its first
// fragments, so the tensor cores never wait on the barrier's shared-memory round trip.
template <class Cfg, class LA, class LB>
__device__ __forceinline__ void sm80_mainloop(const LA& la, const LB& lb, int kt0, int kt1,
                                              float (&acc)[Sm80Shape<Cfg>::MI][Sm80Shape<Cfg>::NI][4],
                                              unsigned char* smem) {
  typedef Sm80Shape<Cfg> S;
  constexpr int ST = Cfg::stages;
  const u32 s0 = smem_u32(smem);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm0 = (warp / Cfg::warps_n) * S::WM, wn0 = (warp % Cfg::warps_n) * S::WN;
  const int ntiles = kt1 - kt0;

  // Prologue: K tiles 0 .. stages - 2 in flight; wait for tile 0.
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < ntiles) {
      la.load(s0 + s * S::STAGE_BYTES, kt0 + s);
      lb.load(s0 + s * S::STAGE_BYTES + S::A_BYTES, kt0 + s);
    }
    cp_async_commit();
  }
  cp_async_wait<ST - 2>();
  __syncthreads();

  Sm80Frags<Cfg> frag[2];
  frag[0].load(s0, s0 + S::A_BYTES, 0, wm0, wn0, lane);
  int read_stage = 0;                // stage of tile i
  int write_stage = ST - 1;          // stage of tile i + stages - 1
  for (int i = 0; i < ntiles; ++i) {
    const u32 sA = s0 + read_stage * S::STAGE_BYTES;
    read_stage = read_stage == ST - 1 ? 0 : read_stage + 1;
    const u32 nA = s0 + read_stage * S::STAGE_BYTES;  // stage of tile i + 1
#pragma unroll
    for (int ks = 0; ks < S::KS; ++ks) {
      if (ks == 0) {
        if (i + ST - 1 < ntiles) {
          la.load(s0 + write_stage * S::STAGE_BYTES, kt0 + i + ST - 1);
          lb.load(s0 + write_stage * S::STAGE_BYTES + S::A_BYTES, kt0 + i + ST - 1);
        }
        cp_async_commit();
        write_stage = write_stage == ST - 1 ? 0 : write_stage + 1;
      }
      if (ks == S::KS - 1) {
        cp_async_wait<ST - 2>();  // tile i + 1 has landed (this thread) ...
        __syncthreads();          // ... for all threads; every warp is done reading tile i - 1
        if (i + 1 < ntiles) frag[(ks + 1) % 2].load(nA, nA + S::A_BYTES, 0, wm0, wn0, lane);
      } else {
        frag[(ks + 1) % 2].load(sA, sA + S::A_BYTES, ks + 1, wm0, wn0, lane);
      }
      frag[ks % 2].mma_into(acc);
    }
    if (S::KS % 2) frag[0] = frag[1];  // the next tile's first fragments went to buffer KS % 2
  }
  cp_async_wait<0>();
  __syncthreads();  // shared memory may now be reused
}

// ---------------------------------------------------------------------------------------------
// Block rasterization: linear tile t -> (tm, tn). raster=row walks N first within bands of
// `swizzle` tile rows (M); raster=col walks M first within bands of `swizzle` tile columns.
template <class Cfg> __device__ __forceinline__ void raster_tile(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int S = Cfg::swizzle;
  if (Cfg::raster == 0) {
    if (S == 1) { tm = t / tiles_n, tn = t - tm * tiles_n; return; }
    const int band = t / (S * tiles_n), w = t - band * S * tiles_n;
    const int rows = min(S, tiles_m - band * S);
    tm = band * S + w % rows, tn = w / rows;
  } else {
    if (S == 1) { tn = t / tiles_m, tm = t - tn * tiles_m; return; }
    const int band = t / (S * tiles_m), w = t - band * S * tiles_m;
    const int cols = min(S, tiles_n - band * S);
    tn = band * S + w % cols, tm = w / cols;
  }
}

// Output addressing: element (m, n) of D (and C) is at row(m) + n * col_stride; of a MAPPED output at
// row(m) + col(n).off, stored only where row_key(m) == col(n).key.
struct OutRowMajor {
  long long base;
  int ld;
  static constexpr bool ROW_CONTIG = true, MAPPED = false;
  __device__ long long row(int m) const { return base + (long long)m * ld; }
  __device__ long long col_stride() const { return 1; }
};
struct OutColMajor {
  long long base;
  int ld;
  static constexpr bool ROW_CONTIG = false, MAPPED = false;
  __device__ long long row(int m) const { return base + m; }
  __device__ long long col_stride() const { return ld; }
};

__device__ __forceinline__ void store1(float* p, float a) { *p = a; }
__device__ __forceinline__ void store1(f16* p, float a) { *p = from_float<f16>(a); }
__device__ __forceinline__ void store1(bf16* p, float a) { *p = from_float<bf16>(a); }
__device__ __forceinline__ void store2(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
__device__ __forceinline__ void store2(f16* p, float a, float b) { *reinterpret_cast<u32*>(p) = pack2<f16>(a, b); }
__device__ __forceinline__ void store2(bf16* p, float a, float b) { *reinterpret_cast<u32*>(p) = pack2<bf16>(a, b); }

struct EpiArgs {
  void* d;
  const void* c;
  const void* bias;  // already offset to this block's group
  void* workspace;
  long long slice_stride;
  float alpha, beta;
  int m, n;          // GEMM view bounds
  int splitk, slice, tile_id, tiles_total;
};

// sm80_store of an output addressed by rows (Out::row, Out::col_stride).
template <class Cfg, class TO, bool BETA, bool BIAS, int ACT, class Out>
__device__ __forceinline__ void sm80_store_rows(const float (&acc)[Sm80Shape<Cfg>::MI][Sm80Shape<Cfg>::NI][4],
                                                const Out& out, int m0, int n0, TO* d, const TO* c, const TO* bias,
                                                float alpha, float beta, int M, int N) {
  typedef Sm80Shape<Cfg> S;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm0 = (warp / Cfg::warps_n) * S::WM, wn0 = (warp % Cfg::warps_n) * S::WN;
  const long long cs = out.col_stride();
  const bool pair = Out::ROW_CONTIG && Cfg::align_c >= 2;
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm0 + mi * 16 + (lane >> 2) + h * 8;
      if (m >= M) continue;
      const long long ro = out.row(m);
#pragma unroll
      for (int ni = 0; ni < S::NI; ++ni) {
        const int n = n0 + wn0 + ni * 8 + (lane & 3) * 2;
        if (n >= N) continue;
        const bool two = pair || n + 1 < N;
        float v0 = alpha * acc[mi][ni][2 * h], v1 = alpha * acc[mi][ni][2 * h + 1];
        if (BETA) {
          v0 += beta * to_float(c[ro + n * cs]);
          if (two) v1 += beta * to_float(c[ro + (n + 1) * cs]);
        }
        if (BIAS) {
          v0 += to_float(bias[n]);
          if (two) v1 += to_float(bias[n + 1]);
        }
        v0 = activate<ACT>(v0), v1 = activate<ACT>(v1);
        if (pair) {
          store2(d + ro + n, v0, v1);
        } else {
          store1(d + ro + n * cs, v0);
          if (two) store1(d + ro + (n + 1) * cs, v1);
        }
      }
    }
}

// sm80_store of a MAPPED output: one element at a time, where the row's and the column's keys agree.
template <class Cfg, class TO, bool BETA, bool BIAS, int ACT, class Out>
__device__ __forceinline__ void sm80_store_mapped(const float (&acc)[Sm80Shape<Cfg>::MI][Sm80Shape<Cfg>::NI][4],
                                                  const Out& out, int m0, int n0, TO* d, const TO* c, const TO* bias,
                                                  float alpha, float beta, int M, int N) {
  typedef Sm80Shape<Cfg> S;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm0 = (warp / Cfg::warps_n) * S::WM, wn0 = (warp % Cfg::warps_n) * S::WN;
#pragma unroll
  for (int ni = 0; ni < S::NI; ++ni)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int n = n0 + wn0 + ni * 8 + (lane & 3) * 2 + q;
      if (n >= N) continue;
      const typename Out::Col col = out.col(n);
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int m = m0 + wm0 + mi * 16 + (lane >> 2) + h * 8;
          if (m >= M || out.row_key(m) != col.key) continue;
          const long long o = out.row(m) + col.off;
          float v = alpha * acc[mi][ni][2 * h + q];
          if (BETA) v += beta * to_float(c[o]);
          if (BIAS) v += to_float(bias[n]);
          store1(d + o, activate<ACT>(v));
        }
    }
}

// D = act(alpha * acc + beta * C + bias) (or raw fp32 partial sums for parallel split-K).
template <class Cfg, class TO, bool BETA, bool BIAS, int ACT, class Out>
__device__ __forceinline__ void sm80_store(const float (&acc)[Sm80Shape<Cfg>::MI][Sm80Shape<Cfg>::NI][4], const Out& out,
                                           int m0, int n0, TO* d, const TO* c, const TO* bias, float alpha, float beta,
                                           int M, int N) {
  if constexpr (Out::MAPPED)
    sm80_store_mapped<Cfg, TO, BETA, BIAS, ACT>(acc, out, m0, n0, d, c, bias, alpha, beta, M, N);
  else
    sm80_store_rows<Cfg, TO, BETA, BIAS, ACT>(acc, out, m0, n0, d, c, bias, alpha, beta, M, N);
}

__device__ __forceinline__ float4 ldcg4(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}

// After the mainloop: split-K reduction (by mode) and the epilogue.
// Serial workspace: [2 counters per tile, padded to 256 B][tiles][splitk][THREADS * NACC floats];
// every slice but the last to arrive parks its accumulators, the last sums all slices in slice
// order (deterministic) and runs the epilogue. No block ever waits on one that has not started.
template <class Cfg, class Out>
__device__ __forceinline__ void sm80_finish(float (&acc)[Sm80Shape<Cfg>::MI][Sm80Shape<Cfg>::NI][4], const Out& out,
                                            int m0, int n0, const EpiArgs& e, unsigned char* smem) {
  typedef Sm80Shape<Cfg> S;
  typedef typename Cfg::TC TC;
  if (Cfg::splitk_mode == 2) {
    float* ws = static_cast<float*>(e.workspace) + e.slice * e.slice_stride;
    sm80_store<Cfg, float, false, false, 0>(acc, out, m0, n0, ws, (const float*)0, (const float*)0, 1.f, 0.f, e.m, e.n);
    return;
  }
  if (Cfg::splitk_mode == 1 && e.splitk > 1) {
    unsigned* cnt = static_cast<unsigned*>(e.workspace) + 2 * e.tile_id;
    const long long cnt_bytes = ((long long)e.tiles_total * 8 + 255) / 256 * 256;
    float4* part = reinterpret_cast<float4*>(static_cast<unsigned char*>(e.workspace) + cnt_bytes) +
                   (long long)e.tile_id * e.splitk * (S::THREADS * S::NACC / 4);
    int* ticket = reinterpret_cast<int*>(smem);
    if (threadIdx.x == 0) *ticket = atomicAdd(&cnt[0], 1u);
    __syncthreads();
    if (*ticket != e.splitk - 1) {  // not last: park the partial tile
      float4* mine = part + e.slice * (S::THREADS * S::NACC / 4);
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < S::NI; ++ni)
          mine[(mi * S::NI + ni) * S::THREADS + threadIdx.x] = make_float4(acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3]);
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) atomicAdd(&cnt[1], 1u);
      return;
    }
    if (threadIdx.x == 0) {
      while (*static_cast<volatile unsigned*>(&cnt[1]) < unsigned(e.splitk - 1)) __nanosleep(64);
      cnt[0] = 0, cnt[1] = 0;  // ready for the next launch
    }
    __threadfence();
    __syncthreads();
#pragma unroll
    for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < S::NI; ++ni) {
        float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int s = 0; s < e.splitk; ++s) {
          float4 v = s == e.slice ? make_float4(acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3])
                                  : ldcg4(part + s * (S::THREADS * S::NACC / 4) + (mi * S::NI + ni) * S::THREADS + threadIdx.x);
          t.x += v.x, t.y += v.y, t.z += v.z, t.w += v.w;
        }
        acc[mi][ni][0] = t.x, acc[mi][ni][1] = t.y, acc[mi][ni][2] = t.z, acc[mi][ni][3] = t.w;
      }
  }
  sm80_store<Cfg, TC, Cfg::has_beta, Cfg::has_bias, Cfg::act>(acc, out, m0, n0, static_cast<TC*>(e.d),
                                                              static_cast<const TC*>(e.c), static_cast<const TC*>(e.bias),
                                                              e.alpha, e.beta, e.m, e.n);
}

}  // namespace tp
