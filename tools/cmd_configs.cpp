// tilepick configs list|count|fields
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/space.hpp"

namespace tilepick::cli {
namespace {

struct ConfigsArgs {
  std::vector<std::string> spaces;  // empty: all default spaces
  std::vector<std::string> filters;
  std::string problem;
  std::string arch = "sm_90";
  bool json = false;
  bool reasons = false;
};

std::vector<ConfigSpace> chosen_spaces(const ConfigsArgs& a) {
  if (a.spaces.empty()) return default_spaces();
  std::vector<ConfigSpace> out;
  for (const auto& s : a.spaces) out.push_back(find_space(s));
  return out;
}

std::vector<expr::Expr> parse_filters(const ConfigsArgs& a) {
  std::vector<expr::Expr> out;
  for (const auto& f : a.filters) out.push_back(parse_config_filter(f));
  return out;
}

void list(const ConfigsArgs& a) {
  auto filters = parse_filters(a);
  nlohmann::json arr = nlohmann::json::array();
  std::optional<Problem> problem;
  if (!a.problem.empty()) problem = parse_problem(a.problem);
  const ArchSpec& arch = find_arch(default_arch_specs(), a.arch);
  for (const auto& space : chosen_spaces(a)) {
    if (problem && (!space.has_op(op_name(*problem)) || !space.has_arch(arch.sm))) continue;
    for (const auto& c : space.enumerate(filters)) {
      KernelConfig shown = c;
      if (problem) {
        Verdict v = legal(*problem, c, arch);
        if (!v) {
          if (a.reasons) std::cout << "# illegal [" << v.rule << "] " << to_string(c) << ": " << v.reason << "\n";
          continue;
        }
        shown = resolve(c, *problem);
      }
      if (a.json) arr.push_back({{"space", space.name}, {"config", to_string(shown)}, {"hash", config_hash(shown)}});
      else std::cout << to_string(shown) << "\n";
    }
  }
  if (a.json) std::cout << arr.dump(1) << "\n";
}

void count(const ConfigsArgs& a) {
  auto filters = parse_filters(a);
  auto archs = default_arch_specs();
  std::stable_sort(archs.begin(), archs.end(), [](const ArchSpec& x, const ArchSpec& y) { return x.sm < y.sm; });
  std::cout << std::left << std::setw(16) << "space" << std::setw(17) << "op" << std::setw(10) << "arch"
            << std::right << std::setw(10) << "enumerated" << std::setw(12) << "legal f16" << std::setw(12)
            << "legal f32" << "\n";
  for (const auto& space : chosen_spaces(a)) {
    auto configs = space.enumerate(filters);
    for (const auto& op : space.ops) {
      std::vector<std::string> done;
      for (const auto& arch : archs) {
        if (!space.has_arch(arch.sm) || std::find(done.begin(), done.end(), arch.sm) != done.end()) continue;
        done.push_back(arch.sm);
        int n16 = 0, n32 = 0;
        for (const auto& c : configs) {
          n16 += legal_on_arch(c, arch, DType::f16).ok;
          n32 += legal_on_arch(c, arch, DType::f32).ok;
        }
        std::cout << std::left << std::setw(16) << space.name << std::setw(17) << op << std::setw(10) << arch.sm
                  << std::right << std::setw(10) << configs.size() << std::setw(12) << n16 << std::setw(12) << n32
                  << "\n";
      }
    }
  }
}

void fields() {
  for (const auto& f : config_fields()) {
    std::string fams;
    for (auto fam : kFamilies)
      if (applies(f, fam)) fams += (fams.empty() ? "" : ",") + std::string(to_string(fam));
    std::string vars;
    for (int i = 0; i < f.arity; ++i) vars += (i ? " " : "") + std::string(f.vars[i]);
    std::cout << std::left << std::setw(8) << f.name << " " << f.help << "\n"
              << std::setw(9) << "" << "families: " << fams << "; filter variables: " << vars << "\n";
  }
  std::cout << "derived filter variables: threads warps warp_tile_m warp_tile_n\n";
}

}  // namespace

void add_configs_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("configs", "enumerate kernel configurations of config spaces");
  cmd->require_subcommand(1);
  auto args = std::make_shared<ConfigsArgs>();
  auto common = [&](CLI::App* sub) {
    sub->add_option("-s,--space", args->spaces, "space name or .json path (repeatable; default: all default spaces)");
    sub->add_option("--filter", args->filters, "extra filter expression, e.g. 'tile_m >= 128 && stages == 4'");
  };
  auto* list_cmd = cmd->add_subcommand("list", "print the configs of the spaces, one canonical string per line");
  common(list_cmd);
  list_cmd->add_option("-p,--problem", args->problem, "keep only configs legal for this problem (align resolved)");
  list_cmd->add_option("--arch", args->arch, "arch spec name or target used with --problem")->capture_default_str();
  list_cmd->add_flag("--json", args->json, "print a JSON list");
  list_cmd->add_flag("--reasons", args->reasons, "with --problem, also print why each rejected config is illegal");
  list_cmd->callback([args] { list(*args); });
  auto* count_cmd = cmd->add_subcommand("count", "pool sizes per space, op and arch (legal for f16/bf16 and f32 inputs)");
  common(count_cmd);
  count_cmd->callback([args] { count(*args); });
  cmd->add_subcommand("fields", "describe the config fields and filter variables")->callback(fields);
}

}  // namespace tilepick::cli
