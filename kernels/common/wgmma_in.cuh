// Input types of wgmma (Cfg::in_type of the sm90 kernels): 16-bit f16 / bf16 (k16 per instruction,
// either operand K- or M/N-major), 8-bit e4m3 / e5m2 (k32 per instruction, K-major only) and f32 read
// as tf32 (k8 per instruction, K-major only). Each instruction takes 32 bytes of K per row. Plain
// C++: the host's plan builder (src/jit/family_gemm_sm90.cpp) includes it too.
#pragma once

namespace tp {

enum WgmmaIn : int { kWgF16 = 0, kWgBf16 = 1, kWgE4m3 = 2, kWgE5m2 = 3, kWgTf32 = 4 };
template <int IN> inline constexpr int wgmma_in_bytes = IN == kWgTf32 ? 4 : IN >= kWgE4m3 ? 1 : 2;

}  // namespace tp
