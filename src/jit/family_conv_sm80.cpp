// mma.sync implicit-GEMM convolution family (fam=sm80): plan builder. Work in progress.
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::family {

KernelPlan plan_conv_sm80(const ConvProblem&, const KernelConfig&) {
  throw Unsupported("fam=sm80 conv: not implemented yet");
}

}  // namespace tilepick::family
