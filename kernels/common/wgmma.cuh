// wgmma.mma_async wrappers (sm_90a): D(64 x N, f32 registers) += A(64 x K, shared) x B(K x N, shared)
// with K = 16 (16-bit inputs) or 32 (8-bit), both operands through matrix descriptors. Accumulator layout per warp w of the warpgroup and lane l
// (g = l / 4, t = l % 4): d[j * 4 + r] holds row w * 16 + g + 8 * (r / 2), column j * 8 + 2 * t + r % 2.
// TRANS_A / TRANS_B: 0 = K-major operand in shared memory, 1 = M/N-major (16-bit types only).
// The register lists are spelled out (inline asm takes no loops), built from blocks of 32 columns below.
#pragma once
#include "common/types.cuh"
#include "common/wgmma_in.cuh"  // WgmmaIn: the input types

namespace tp {

// Register lists in blocks of 32 columns (16 accumulators): TP_WGMMA_R<b> names operands 16b..16b+15, TP_WGMMA_A<b>
// binds d[16b..16b+15]; an N's lists are its first N / 32 blocks.
#define TP_WGMMA_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define TP_WGMMA_R1 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TP_WGMMA_R2 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define TP_WGMMA_R3 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TP_WGMMA_R4 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define TP_WGMMA_R5 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define TP_WGMMA_R6 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define TP_WGMMA_R7 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TP_WGMMA_A0 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define TP_WGMMA_A1 \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define TP_WGMMA_A2 \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define TP_WGMMA_A3 \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define TP_WGMMA_A4 \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define TP_WGMMA_A5 \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define TP_WGMMA_A6 \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define TP_WGMMA_A7 \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define TP_WGMMA_REGS_32 TP_WGMMA_R0
#define TP_WGMMA_ACC_32 TP_WGMMA_A0
#define TP_WGMMA_REGS_64 TP_WGMMA_R0 ", " TP_WGMMA_R1
#define TP_WGMMA_ACC_64 TP_WGMMA_A0, TP_WGMMA_A1
#define TP_WGMMA_REGS_96 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2
#define TP_WGMMA_ACC_96 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2
#define TP_WGMMA_REGS_128 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2 ", " TP_WGMMA_R3
#define TP_WGMMA_ACC_128 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2, TP_WGMMA_A3
#define TP_WGMMA_REGS_160 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2 ", " TP_WGMMA_R3 ", " TP_WGMMA_R4
#define TP_WGMMA_ACC_160 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2, TP_WGMMA_A3, TP_WGMMA_A4
#define TP_WGMMA_REGS_192 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2 ", " TP_WGMMA_R3 ", " TP_WGMMA_R4 ", " TP_WGMMA_R5
#define TP_WGMMA_ACC_192 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2, TP_WGMMA_A3, TP_WGMMA_A4, TP_WGMMA_A5
#define TP_WGMMA_REGS_224 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2 ", " TP_WGMMA_R3 ", " TP_WGMMA_R4 ", " TP_WGMMA_R5 ", " TP_WGMMA_R6
#define TP_WGMMA_ACC_224 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2, TP_WGMMA_A3, TP_WGMMA_A4, TP_WGMMA_A5, TP_WGMMA_A6
#define TP_WGMMA_REGS_256 TP_WGMMA_R0 ", " TP_WGMMA_R1 ", " TP_WGMMA_R2 ", " TP_WGMMA_R3 ", " TP_WGMMA_R4 ", " TP_WGMMA_R5 ", " TP_WGMMA_R6 ", " TP_WGMMA_R7
#define TP_WGMMA_ACC_256 TP_WGMMA_A0, TP_WGMMA_A1, TP_WGMMA_A2, TP_WGMMA_A3, TP_WGMMA_A4, TP_WGMMA_A5, TP_WGMMA_A6, TP_WGMMA_A7

// One wgmma with scale-d as a predicate (0: D = A x B, 1: D += A x B); I_* are the operand numbers.
#define TP_WGMMA_16BIT(N, TYPE, I_A, I_B, I_S, I_TA, I_TB)                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I_S ", 0;\n"                                     \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" TP_WGMMA_REGS_##N  \
               "}, %" I_A ", %" I_B ", p, 1, 1, %" I_TA ", %" I_TB ";\n}\n"                        \
               : TP_WGMMA_ACC_##N                                                                   \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_A), "n"(TRANS_B))
// K-major only types (8-bit: k32, tf32: k8): no transpose operands.
#define TP_WGMMA_KMAJOR(N, K, TYPE, I_A, I_B, I_S)                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I_S ", 0;\n"                                     \
               "wgmma.mma_async.sync.aligned.m64n" #N "k" #K ".f32." TYPE "." TYPE " {" TP_WGMMA_REGS_##N \
               "}, %" I_A ", %" I_B ", p, 1, 1;\n}\n"                                             \
               : TP_WGMMA_ACC_##N                                                                   \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
// wgmma_m64n<N>: the five input types of one N (R accumulators; I_* its operand numbers).
#define TP_WGMMA_DEFINE(N, R, I_A, I_B, I_S, I_TA, I_TB)                                             \
  template <int IN, int TRANS_A, int TRANS_B>                                                        \
  __device__ __forceinline__ void wgmma_m64n##N(float (&d)[R], u64 desc_a, u64 desc_b, int scale_d) { \
    static_assert(IN < kWgE4m3 || (TRANS_A == 0 && TRANS_B == 0), "8-bit and tf32 wgmma read K-major operands"); \
    if constexpr (IN == kWgF16) TP_WGMMA_16BIT(N, "f16", I_A, I_B, I_S, I_TA, I_TB);               \
    else if constexpr (IN == kWgBf16) TP_WGMMA_16BIT(N, "bf16", I_A, I_B, I_S, I_TA, I_TB);        \
    else if constexpr (IN == kWgE4m3) TP_WGMMA_KMAJOR(N, 32, "e4m3", I_A, I_B, I_S);               \
    else if constexpr (IN == kWgE5m2) TP_WGMMA_KMAJOR(N, 32, "e5m2", I_A, I_B, I_S);               \
    else TP_WGMMA_KMAJOR(N, 8, "tf32", I_A, I_B, I_S);                                              \
  }
TP_WGMMA_DEFINE(32, 16, "16", "17", "18", "19", "20")
TP_WGMMA_DEFINE(64, 32, "32", "33", "34", "35", "36")
TP_WGMMA_DEFINE(96, 48, "48", "49", "50", "51", "52")
TP_WGMMA_DEFINE(128, 64, "64", "65", "66", "67", "68")
TP_WGMMA_DEFINE(160, 80, "80", "81", "82", "83", "84")
TP_WGMMA_DEFINE(192, 96, "96", "97", "98", "99", "100")
TP_WGMMA_DEFINE(224, 112, "112", "113", "114", "115", "116")
TP_WGMMA_DEFINE(256, 128, "128", "129", "130", "131", "132")
#undef TP_WGMMA_DEFINE

// D(64 x N) op= A x B (k16 for 16-bit inputs, k32 for 8-bit, k8 for tf32) for N a multiple of 32 in [32, 256]: the
// one entry point the kernels call.
template <int N, int IN, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void wgmma_m64(float (&d)[N / 2], u64 desc_a, u64 desc_b, int scale_d) {
  static_assert(N % 32 == 0 && N >= 32 && N <= 256, "wgmma_m64: N must be a multiple of 32 in [32, 256]");
  if constexpr (N == 32) wgmma_m64n32<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 64) wgmma_m64n64<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 96) wgmma_m64n96<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 128) wgmma_m64n128<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 160) wgmma_m64n160<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 192) wgmma_m64n192<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 224) wgmma_m64n224<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
  if constexpr (N == 256) wgmma_m64n256<IN, TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across an asynchronous wgmma.
template <int R> __device__ __forceinline__ void wgmma_fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace tp
