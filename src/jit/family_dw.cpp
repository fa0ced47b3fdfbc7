// Depthwise convolution family (fam=dw): plan builder. Work in progress.
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::family {

KernelPlan plan_dw(const ConvProblem&, const KernelConfig&) {
  throw Unsupported("fam=dw: not implemented yet");
}

}  // namespace tilepick::family
