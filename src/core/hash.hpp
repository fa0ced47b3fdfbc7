// FNV-1a 64: the short, stable identity hash of canonical strings (config hashes, space hashes,
// kernel symbol names). Not for the JIT cache key, which needs collision resistance (SHA-256).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tilepick {

inline std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

inline std::string hex16(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace tilepick
