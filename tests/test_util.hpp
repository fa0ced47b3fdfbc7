// Small helpers shared by the CPU test files.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
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

struct CliResult {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs the built tilepick CLI with `args` (shell words).
inline CliResult run_cli(const std::string& args) {
  std::string cmd = std::string(TILEPICK_CLI_PATH) + " " + args + " 2>&1";
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace tilepick::test
