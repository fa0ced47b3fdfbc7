// tilepick command-line tool.
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "tilepick/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tilepick: learned kernel selection for NVIDIA GPUs (GEMM and grouped convolution)", "tilepick"};
  app.require_subcommand(1);
  app.set_version_flag("--version", TILEPICK_VERSION);
  tilepick::cli::add_problem_commands(app);
  tilepick::cli::add_configs_commands(app);
  tilepick::cli::add_registry_commands(app);
  tilepick::cli::add_arch_commands(app);
  tilepick::cli::add_jit_commands(app);
  tilepick::cli::add_verify_commands(app);
  tilepick::cli::add_sweep_commands(app);
  tilepick::cli::add_report_commands(app);
  tilepick::cli::add_selftest_commands(app);
  tilepick::cli::add_vendor_commands(app);
  tilepick::cli::add_features_commands(app);
  tilepick::cli::add_gbdt_commands(app);
  tilepick::cli::add_select_commands(app);
  tilepick::cli::add_eval_commands(app);
  tilepick::cli::add_plan_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const tilepick::Error& e) {
    std::cerr << "tilepick: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tilepick: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
