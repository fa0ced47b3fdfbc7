// tilepick registry export
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/registry.hpp"

namespace tilepick::cli {

void add_registry_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("registry", "the kernel registry built from the default config spaces");
  cmd->require_subcommand(1);
  struct Args {
    std::string arch, out;
  };
  auto args = std::make_shared<Args>();
  auto* exp = cmd->add_subcommand("export", "write every kernel (op, arch, space, config, hash) as JSON");
  exp->add_option("--arch", args->arch, "only this arch spec or target (default: every target)");
  exp->add_option("-o,--output", args->out, "output file (default: stdout)");
  exp->callback([args] {
    std::vector<ArchSpec> archs;
    if (args->arch.empty()) archs = default_arch_specs();
    else archs.push_back(find_arch(default_arch_specs(), args->arch));
    auto j = Registry::default_registry().export_json(archs);
    if (args->out.empty()) {
      std::cout << j.dump(1) << "\n";
      return;
    }
    std::ofstream f(args->out);
    if (!f) throw Error(Status::io_error, "cannot write '" + args->out + "'");
    f << j.dump(1) << "\n";
    std::cerr << "wrote " << j["kernels"].size() << " kernels to " << args->out << "\n";
  });
}

}  // namespace tilepick::cli
