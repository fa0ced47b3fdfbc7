// The kernels/ headers bundled into the library at build time, and their content hash.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "jit/jit_internal.hpp"

namespace tilepick::jit {
namespace detail {

extern const BundledHeader kBundledHeaders[];  // generated: build/generated/bundled_headers.cpp
extern const std::size_t kBundledHeaderCount;

std::span<const BundledHeader> bundled_headers() { return {kBundledHeaders, kBundledHeaderCount}; }

}  // namespace detail

namespace {

struct Fnv1a64 {
  std::uint64_t h = 1469598103934665603ull;
  void add(const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with the NUL: a separator
};

std::string compute_hash() {
  std::vector<detail::BundledHeader> hs(detail::bundled_headers().begin(), detail::bundled_headers().end());
  std::sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return std::string(a.path) < b.path; });
  Fnv1a64 f;
  for (const auto& h : hs) {
    f.add(std::string(h.path));
    f.add(std::to_string(h.size));
    f.add(h.data, h.size);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.h));
  return buf;
}

}  // namespace

const std::string& bundled_headers_hash() {
  static const std::string hash = compute_hash();
  return hash;
}

std::vector<std::string> bundled_header_paths() {
  std::vector<std::string> out;
  for (const auto& h : detail::bundled_headers()) out.emplace_back(h.path);
  return out;
}

}  // namespace tilepick::jit
