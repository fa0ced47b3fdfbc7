// Shared between vendor_lib.cpp and the per-library files (vendor_cublaslt.cpp, vendor_cudnn.cpp).
#pragma once
#include <dlfcn.h>

#include <memory>
#include <string>

#include "run/vendor.hpp"

namespace tilepick::run::vendor::detail {

// After dlopen succeeded: resolve the library's symbols (kept for the process) and check its
// version. Return "" and the version text, or why the library cannot be used.
std::string check_cublaslt(void* handle, std::string* version);
std::string check_cudnn(void* handle, std::string* version);

// `why_not` set and nullptr when unsupported or unavailable.
std::unique_ptr<VendorSet> create_cublaslt(const GemmProblem& p, std::string* why_not);
std::unique_ptr<VendorSet> create_cudnn(const ConvProblem& p, std::string* why_not, bool find);

template <class F>
bool resolve(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  return out != nullptr;
}

}  // namespace tilepick::run::vendor::detail
