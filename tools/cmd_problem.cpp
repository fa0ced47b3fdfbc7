// tilepick problem parse|show
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/registry.hpp"

namespace tilepick::cli {
namespace {

struct ProblemArgs {
  std::vector<std::string> problems;
  std::string file;
  std::string arch = "sm_90";
  bool json = false;
};

std::vector<NamedProblem> gather(const ProblemArgs& a) {
  auto out = gather_problems(a.problems, a.file);
  if (out.empty()) throw Error(Status::parse_error, "no problem given: pass problem strings or --file");
  return out;
}

void show(const NamedProblem& np, const ArchSpec& arch) {
  const Problem& p = np.problem;
  if (!np.name.empty()) std::cout << "name:       " << np.name << "\n";
  std::cout << "problem:    " << to_string(p) << "\n";
  std::cout << "op:         " << op_name(p) << "\n";
  std::cout << "key:        " << functional_key(p, arch) << "\n";
  double flops = 0, bytes = 0;
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    std::cout << "gemm:       M=" << g->m << " N=" << g->n << " K=" << g->k << " batch=" << g->batch << "\n";
    flops = g->flops(), bytes = g->min_bytes();
  } else {
    const auto& c = std::get<ConvProblem>(p);
    auto o = c.out();
    std::cout << "output:     " << (c.ndim == 3 ? "od" + std::to_string(o[0]) + " " : "") << "oh" << o[1] << " ow"
              << o[2] << "\n";
    std::cout << "groups:     G=" << c.g << " C/G=" << c.c_per_group() << " K/G=" << c.k_per_group()
              << (c.depthwise() ? " (depthwise)" : "") << "\n";
    auto v = c.gemm();
    std::cout << "gemm view:  M=" << v.m << " N=" << v.n << " K=" << v.k << " batch=" << v.batch << "\n";
    flops = c.flops(), bytes = c.min_bytes();
  }
  auto al = max_alignment(p);
  std::cout << "flops:      " << flops << "\n";
  std::cout << "min bytes:  " << bytes << "\n";
  std::cout << "intensity:  " << flops / bytes << " flop/byte (ridge on " << arch.name << ": "
            << arch.ridge_flops_per_byte(input_dtype(p))
            << ")\n";
  std::cout << "max align:  " << al[0] << "x" << al[1] << "x" << al[2] << " (A x B x C elements)\n";
  std::cout << "legal:      " << Registry::default_registry().lookup(p, arch).size() << " configs on " << arch.name
            << "\n";
}

}  // namespace

std::vector<NamedProblem> gather_problems(const std::vector<std::string>& strings, const std::string& file) {
  std::vector<NamedProblem> out;
  for (const auto& s : strings) out.push_back({"", parse_problem(s), 0});
  if (!file.empty())
    for (auto& p : load_problem_file(file)) out.push_back(std::move(p));
  return out;
}

void add_problem_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("problem", "parse and inspect problem strings");
  cmd->require_subcommand(1);
  auto args = std::make_shared<ProblemArgs>();
  auto add_inputs = [&](CLI::App* sub) {
    sub->add_option("problems", args->problems, "problem strings (quote each one)");
    sub->add_option("-f,--file", args->file, "problem file: one per line, '#' comments, optional 'name:' tag");
  };
  auto* parse = cmd->add_subcommand("parse", "validate problems and print their canonical strings");
  add_inputs(parse);
  parse->add_flag("--json", args->json, "print one JSON object per problem (fields and derived sizes)");
  parse->callback([args] {
    for (const auto& np : gather(*args)) {
      if (args->json) {
        auto j = nlohmann::json::parse(to_json_text(np.problem));
        j["name"] = np.name;
        std::cout << j.dump() << "\n";
      } else {
        std::cout << (np.name.empty() ? "" : np.name + ": ") << to_string(np.problem) << "\n";
      }
    }
  });
  auto* show_cmd = cmd->add_subcommand("show", "print derived sizes, the implicit-GEMM view and the legal pool size");
  add_inputs(show_cmd);
  show_cmd->add_option("--arch", args->arch, "arch spec name or target (see 'tilepick arch list')")
      ->capture_default_str();
  show_cmd->callback([args] {
    const ArchSpec& arch = find_arch(default_arch_specs(), args->arch);
    bool first = true;
    for (const auto& np : gather(*args)) {
      if (!first) std::cout << "\n";
      first = false;
      show(np, arch);
    }
  });
}

}  // namespace tilepick::cli
