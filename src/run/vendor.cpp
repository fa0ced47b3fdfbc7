// VendorSet::create: cuBLASLt for GEMM, cuDNN for convolution (see vendor.hpp).
#include <algorithm>

#include "run/vendor.hpp"
#include "run/vendor_internal.hpp"

namespace tilepick::run::vendor {

std::unique_ptr<VendorSet> VendorSet::create(const Problem& p, std::string* why_not, bool cudnn_find) {
  std::string why;
  std::unique_ptr<VendorSet> set;
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    why = cublaslt_unsupported(*g);
    if (why.empty()) set = detail::create_cublaslt(*g, &why);
  } else {
    const auto& c = std::get<ConvProblem>(p);
    why = cudnn_unsupported(c);
    if (why.empty()) set = detail::create_cudnn(c, &why, cudnn_find);
  }
  if (!set && why_not) *why_not = why;
  return set;
}

std::size_t VendorSet::max_workspace_bytes() const {
  std::size_t m = 0;
  for (const auto& a : algos_) m = std::max(m, a.workspace_bytes);
  return m;
}

}  // namespace tilepick::run::vendor
