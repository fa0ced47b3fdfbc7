// Kernel families: each turns (problem, resolved config) into NVRTC programs and launches.
#pragma once
#include <cstdint>
#include <string>

#include "tilepick/kernel_plan.hpp"

namespace tilepick::family {

KernelPlan plan_gemm_sm80(const GemmProblem& p, const KernelConfig& c);  // src/jit/family_gemm_sm80.cpp
KernelPlan plan_gemm_sm90(const GemmProblem& p, const KernelConfig& c);  // src/jit/family_gemm_sm90.cpp
// A convolution that is a plain GEMM (ConvProblem::pointwise_gemm) on the sm90 GEMM kernel.
KernelPlan plan_conv_sm90(const ConvProblem& p, const KernelConfig& c);  // src/jit/family_gemm_sm90.cpp
KernelPlan plan_conv_sm80(const ConvProblem& p, const KernelConfig& c);  // src/jit/family_conv_sm80.cpp
KernelPlan plan_dw(const ConvProblem& p, const KernelConfig& c);         // src/jit/family_dw.cpp
// Dynamic shared memory of the depthwise kernel (legality checks it against the arch); throws
// Unsupported when the family has no kernel for the pair.
std::int64_t dw_shared_bytes(const ConvProblem& p, const KernelConfig& c);
KernelPlan plan_grp(const ConvProblem& p, const KernelConfig& c);        // src/jit/family_grp.cpp
// Why fam=grp has no kernel for the problem ("runs fwd and bwd_data only", ...: the rule legality's family_runs
// applies), or "" when it has one.
std::string grp_refusal(const ConvProblem& p);
// Dynamic shared memory of the grouped direct kernel; throws Unsupported like dw_shared_bytes.
std::int64_t grp_shared_bytes(const ConvProblem& p, const KernelConfig& c);
// Blocks of the depthwise kernel's main launch (features use it); throws like dw_shared_bytes.
std::int64_t dw_grid_blocks(const ConvProblem& p, const KernelConfig& c);

}  // namespace tilepick::family
