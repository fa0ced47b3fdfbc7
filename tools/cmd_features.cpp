// tilepick features: the feature rows of (problem, config) pairs, named by the schema.
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/features.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/space.hpp"

namespace tilepick::cli {
namespace {

struct FeaturesArgs {
  std::vector<std::string> problems;
  std::string file;
  std::vector<std::string> configs;
  std::string space;
  std::string arch = "h200";
  bool csv = false;
  bool schema = false;
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The configs to featurize for one problem: the given ones, else the legal pool of the space(s).
std::vector<KernelConfig> configs_for(const FeaturesArgs& a, const Problem& p, const ArchSpec& arch) {
  std::vector<KernelConfig> out;
  for (const auto& text : a.configs) out.push_back(resolve(parse_config(text), p));
  if (a.space.empty()) return out;
  auto entries = a.space == "all" ? Registry::default_registry().lookup(p, arch)
                                  : Registry({find_space(a.space)}).lookup(p, arch);
  for (const auto& e : entries) out.push_back(e.config);
  return out;
}

void run(const FeaturesArgs& a) {
  const FeatureSchema& schema = feature_schema();
  if (a.schema) {
    std::cout << "# feature schema " << schema.hash << " version " << schema.version << ", " << schema.size()
              << " features\n";
    for (const auto& n : schema.names) std::cout << n << "\n";
    return;
  }
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw Error(Status::parse_error, "features: give --problem or --file (or --schema)");
  if (a.configs.empty() && a.space.empty())
    throw Error(Status::parse_error, "features: give --config (repeatable) or --space NAME|all");
  const ArchSpec& arch = find_arch(default_arch_specs(), a.arch);
  if (a.csv) {
    std::cout << "problem,config";
    for (const auto& n : schema.names) std::cout << "," << n;
    std::cout << "\n";
  }
  std::vector<double> rows;
  for (const auto& np : problems) {
    auto configs = configs_for(a, np.problem, arch);
    rows.resize(configs.size() * schema.size());
    features_batch(np.problem, configs, arch, rows.data());
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const double* row = rows.data() + i * schema.size();
      if (a.csv) {
        std::cout << "\"" << to_string(np.problem) << "\",\"" << to_string(configs[i]) << "\"";
        for (std::size_t j = 0; j < schema.size(); ++j) std::cout << "," << number(row[j]);
        std::cout << "\n";
        continue;
      }
      std::cout << "# " << to_string(np.problem) << " | " << to_string(configs[i]) << " | " << arch.name
                << " | schema " << schema.hash << "\n";
      for (std::size_t j = 0; j < schema.size(); ++j) {
        std::string name = schema.names[j];
        name.resize(std::max<std::size_t>(name.size(), 28), ' ');
        std::cout << "  " << name << number(row[j]) << "\n";
      }
    }
  }
}

}  // namespace

void add_features_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("features", "feature rows of (problem, config) pairs, named by the feature schema");
  auto args = std::make_shared<FeaturesArgs>();
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("-c,--config", args->configs, "config string (repeatable; align=auto is resolved)");
  cmd->add_option("-s,--space", args->space, "every legal config of this space, or 'all' spaces");
  cmd->add_option("--arch", args->arch, "arch spec name or target")->capture_default_str();
  cmd->add_flag("--csv", args->csv, "one CSV row per pair (problem, config, then the features)");
  cmd->add_flag("--schema", args->schema, "print the schema: hash, version and names");
  cmd->callback([args] { run(*args); });
}

}  // namespace tilepick::cli
