// Small helpers shared by the CPU test files.
#pragma once
#include <ostream>
#include <string>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"

// Readable gtest failure output for configs.
namespace tilepick {
[[maybe_unused]] static void PrintTo(const KernelConfig& c, std::ostream* os) { *os << "'" << to_string(c) << "'"; }
}  // namespace tilepick

namespace tilepick::test {

inline const ArchSpec& arch(const std::string& name) { return find_arch(default_arch_specs(), name); }

}  // namespace tilepick::test
