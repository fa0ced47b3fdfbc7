// Subcommand registration for the tilepick CLI; each cmd_*.cpp adds one command group.
#pragma once
#include <CLI/CLI.hpp>

#include "tilepick/error.hpp"

namespace tilepick::cli {

void add_problem_commands(CLI::App& app);
void add_configs_commands(CLI::App& app);
void add_registry_commands(CLI::App& app);
void add_arch_commands(CLI::App& app);
void add_jit_commands(CLI::App& app);  // jit build|headers, cache ls|clear
void add_verify_commands(CLI::App& app);

}  // namespace tilepick::cli
