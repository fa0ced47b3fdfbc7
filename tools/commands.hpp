// Subcommand registration for the tilepick CLI; each cmd_*.cpp adds one command group.
#pragma once
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "tilepick/error.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::cli {

// printf-style formatting of one number (table cells).
inline std::string fmt(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Problems from strings (-p) and a problem file (--file), in that order; [] when none is given.
std::vector<NamedProblem> gather_problems(const std::vector<std::string>& strings, const std::string& file);

// python3 ARGS with the source tree's python/ first on PYTHONPATH (tools/cmd_report.cpp); waits.
// Throws NotFound when python3 is not on PATH.
struct ChildResult {
  int exit_code = 0;
  std::string out;  // captured stdout (only when asked for)
};
ChildResult run_python(const std::vector<std::string>& args, bool capture_stdout);

void add_problem_commands(CLI::App& app);
void add_configs_commands(CLI::App& app);
void add_registry_commands(CLI::App& app);
void add_arch_commands(CLI::App& app);
void add_jit_commands(CLI::App& app);  // jit build|headers, cache ls|clear
void add_verify_commands(CLI::App& app);
void add_sweep_commands(CLI::App& app);  // sweep, sweep merge, sweep-worker
void add_report_commands(CLI::App& app);  // python3 -m tilepick.report, arguments forwarded
void add_selftest_commands(CLI::App& app);  // hidden: selftest gpu-ref, selftest dispatch
void add_selftest_dispatch(CLI::App* selftest);  // tools/cmd_selftest_dispatch.cpp
void add_vendor_commands(CLI::App& app);  // vendor list|check (cuBLASLt, cuDNN)
void add_features_commands(CLI::App& app);  // features
void add_gbdt_commands(CLI::App& app);      // gbdt predict|info (hidden)
void add_select_commands(CLI::App& app);    // select
void add_eval_commands(CLI::App& app);      // eval
void add_plan_commands(CLI::App& app);      // plan, run (the dispatcher)
void add_search_commands(CLI::App& app);    // search (surrogate search over full field domains)

}  // namespace tilepick::cli
