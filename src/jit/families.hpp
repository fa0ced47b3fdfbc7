// Kernel families: each turns (problem, resolved config) into NVRTC programs and launches.
#pragma once
#include "tilepick/kernel_plan.hpp"

namespace tilepick::family {

KernelPlan plan_gemm_sm80(const GemmProblem& p, const KernelConfig& c);  // src/jit/family_gemm_sm80.cpp
KernelPlan plan_conv_sm80(const ConvProblem& p, const KernelConfig& c);  // src/jit/family_conv_sm80.cpp
KernelPlan plan_dw(const ConvProblem& p, const KernelConfig& c);         // src/jit/family_dw.cpp

}  // namespace tilepick::family
