// make_plan: dispatch on the family of the config.
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick {

KernelPlan make_plan(const Problem& p, const KernelConfig& c) {
  const auto* gemm = std::get_if<GemmProblem>(&p);
  const auto* conv = std::get_if<ConvProblem>(&p);
  if (c.align_a == 0 && !c.direct())
    throw Unsupported("make_plan: config '" + to_string(c) + "' has align=auto; resolve() it for the problem first");
  switch (c.fam()) {
    case Family::sm80:
      if (gemm) return family::plan_gemm_sm80(*gemm, c);
      return family::plan_conv_sm80(*conv, c);
    case Family::dw:
      if (conv) return family::plan_dw(*conv, c);
      break;
    case Family::grp:
      if (conv) return family::plan_grp(*conv, c);
      break;
    case Family::sm90:
      if (gemm) return family::plan_gemm_sm90(*gemm, c);
      return family::plan_conv_sm90(*conv, c);
  }
  throw Unsupported("no kernel of family " + std::string(to_string(c.fam())) + " for '" + to_string(p) + "'");
}

}  // namespace tilepick
