// tilepick select: the ranked legal candidates of a problem (model or analytic fallback), with
// measured times from sweep records when given.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "sweep/records.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::cli {
namespace {

struct SelectArgs {
  std::vector<std::string> problems;
  std::string file;
  std::string arch = "h200";
  int k = 10;
  bool explain = false;
  std::vector<std::string> records;
  std::string models;
  std::string space_hash_op;
  std::string select;  // "", fast, full or shortlist
  std::string shortlist = "varied";  // --select shortlist: the rule (Shortlist)
};

struct Timing {
  double us = NAN;
  std::string status;
};

// Canonical problem -> config text (resolved) -> best ok time, or the first failure.
using Measurements = std::map<std::string, std::map<std::string, Timing>>;

Measurements read_measurements(const std::vector<std::string>& files) {
  Measurements out;
  for (const auto& f : files) {
    for (const auto& r : sweep::read_record_file(f).records) {
      Problem p;
      std::string config = r.config;
      try {
        p = parse_problem(r.problem);
        if (config.rfind("vendor=", 0) != 0) config = to_string(resolve(parse_config(config), p));
      } catch (const Error&) {
        continue;  // not a problem or config of this build
      }
      Timing& t = out[to_string(p)][config];
      if (r.status == "ok") {
        t.us = std::isnan(t.us) ? r.median_us : std::min(t.us, r.median_us);
        t.status = "ok";
      } else if (t.status.empty()) {
        t.status = r.status;
      }
    }
  }
  return out;
}

// What dispatch's heuristic strategy (vendor auto) runs for a model's selection: the model's
// vendor_first flag, its vendor choice's prediction and decision.
void print_vendor_choice(const ModelEntry* m, const Selection& s) {
  if (!m) return;
  if (m->spec.vendor_first) std::cout << "#   vendor_first: the heuristic strategy runs the vendor's choice for every problem\n";
  if (m->vendor_model)
    std::cout << "#   vendor choice (" << m->vendor_version << "): predicted ln(vendor heuristic time / pick time) "
              << fmt(s.vendor_log_ratio, "%.4f") << ", threshold " << fmt(m->spec.vendor_choice->threshold, "%.4g")
              << ": " << (m->spec.vendor_choice->vendor_faster(s.vendor_log_ratio) ? "the vendor runs" : "the pick runs")
              << (m->spec.vendor_first ? " (vendor_first decides)" : "") << "\n";
  else if (!m->vendor_error.empty())
    std::cout << "#   vendor choice not used: " << m->vendor_error << "\n";
  else if (m->spec.vendor_choice)
    std::cout << "#   vendor choice not loaded (" << m->vendor_error << "): the pick runs\n";
}

// Why a problem has no legal config: the rule that rejects most of the registry's candidates, with
// the reason it gave the first of them. Candidates that no problem of this input dtype could run
// (e.g. fam=sm90's tile_k of the other element size) count only when nothing else was rejected.
std::string no_config_reason(const Problem& p, const ArchSpec& arch) {
  std::map<std::string, std::pair<int, std::string>> rules, dtype_rules;
  for (const auto& e : Registry::default_registry().candidates(op_name(p), arch)) {
    const Verdict v = legal(p, e.config, arch);
    if (v) continue;
    auto& [count, reason] = (legal_on_arch(e.config, arch, input_dtype(p)) ? rules : dtype_rules)[v.rule];
    if (count++ == 0) reason = v.reason;
  }
  if (rules.empty()) rules = std::move(dtype_rules);
  if (rules.empty()) return "no config space covers " + op_name(p) + " on " + arch.sm;
  auto most = std::max_element(rules.begin(), rules.end(),
                               [](const auto& x, const auto& y) { return x.second.first < y.second.first; });
  return "rule " + most->first + " rejects " + std::to_string(most->second.first) + " candidates, e.g. " +
         most->second.second;
}

// Prints one problem's ranking; false when it has no legal candidate.
bool print_problem(const SelectArgs& a, const Selector& selector, const NamedProblem& np, const ArchSpec& arch,
                   const Measurements& measured) {
  const Problem& p = np.problem;
  const std::string key = to_string(p);
  const bool shortlist = a.select == "shortlist";
  Selection s = shortlist ? selector.shortlist(p, arch, a.k, a.shortlist == "first" ? Shortlist::first : Shortlist::varied)
                          : selector.select(p, arch, a.k, a.select == "full" ? ScoreMode::full : ScoreMode::automatic);
  std::cout << "# " << (np.name.empty() ? "" : np.name + ": ") << key << " | arch " << arch.name << " | "
            << s.pool_size << (s.pruned ? " legal candidates of the model's candidates.txt | " : " legal candidates | ")
            << (s.from_model ? s.source + (s.fast ? " (fast: student, best re-scored)"
                                              : shortlist ? " (full model; top_k's shortlist, " + a.shortlist + ")"
                                                          : " (full model)")
                             : std::string("fallback (analytic)"))
            << " | confidence " << fmt(s.confidence, "%.4g") << " (" << s.units << ")\n";
  if (a.explain) {
    std::cout << "#   op " << op_name(p) << ", dtype family " << dtype_family(p) << ", feature schema "
              << feature_schema().hash << ", space hash " << config_space_hash(op_name(p)) << ", models '"
              << selector.models_dir() << "'\n";
    if (!s.from_model) std::cout << "#   fallback because: " << s.reason << "\n";
    if (s.from_model) print_vendor_choice(selector.model_for(p, arch), s);
  }
  const std::map<std::string, Timing>* times = nullptr;
  double best_us = NAN;
  if (auto it = measured.find(key); it != measured.end()) {
    times = &it->second;
    for (const auto& [config, t] : it->second)
      if (config.rfind("vendor=", 0) != 0 && t.status == "ok" && !(t.us >= best_us)) best_us = t.us;
    std::cout << "#   measured: " << it->second.size() << " rows";
    if (!std::isnan(best_us)) std::cout << ", best tilepick config " << fmt(best_us, "%.3f") << " us";
    for (const auto& [config, t] : it->second)
      if (config.rfind("vendor=", 0) == 0)
        std::cout << ", " << config.substr(7) << " "
                  << (t.status == "ok" ? fmt(t.us, "%.3f") + " us" : t.status);
    std::cout << "\n";
  } else if (!a.records.empty()) {
    std::cout << "#   no records for this problem\n";
  }
  std::cout << "rank  score        " << (a.explain ? "analytic_tflops  " : "")
            << (times ? "measured_us  efficiency  " : "") << "config\n";
  int rank = 0;
  for (const auto& r : s.top) {
    std::cout << fmt(++rank, "%-4.0f") << "  " << fmt(r.score, "%-11.5g") << "  ";
    if (a.explain) std::cout << fmt(heuristic_score(p, r.config, arch), "%-15.4g") << "  ";
    if (times) {
      auto t = times->find(r.text);
      std::string us = "-", eff = "-";
      if (t != times->end() && t->second.status == "ok") {
        us = fmt(t->second.us, "%.3f");
        eff = fmt(best_us / t->second.us, "%.4f");
      } else if (t != times->end()) {
        us = t->second.status;  // failed: efficiency 0
        eff = "0";
      }
      std::cout << std::string(us).append(us.size() < 11 ? 11 - us.size() : 0, ' ') << "  "
                << eff.append(eff.size() < 10 ? 10 - eff.size() : 0, ' ') << "  ";
    }
    std::cout << r.text << "\n";
  }
  return s.pool_size > 0;
}

void run(const SelectArgs& a) {
  if (!a.space_hash_op.empty()) {
    std::cout << config_space_hash(a.space_hash_op) << "\n";
    return;
  }
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw Error(Status::parse_error, "select: give --problem or --file (or --space-hash OP)");
  const ArchSpec& arch = find_arch(default_arch_specs(), a.arch);
  std::unique_ptr<Selector> own;
  // --select fast needs a fast selector; full is asked per selection (a fast selector can do both).
  if (!a.models.empty() || a.select == "fast")
    own = std::make_unique<Selector>(a.models.empty() ? env::models_dir() : a.models, 1, true,
                                     a.select == "fast" ? ScoreMode::fast : ScoreMode::automatic);
  const Selector& selector = own ? *own : Selector::default_selector();
  const Measurements measured = read_measurements(a.records);
  std::vector<std::string> none;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (i) std::cout << "\n";
    if (!print_problem(a, selector, problems[i], arch, measured))
      none.push_back("'" + to_string(problems[i].problem) + "': " + no_config_reason(problems[i].problem, arch));
  }
  if (!none.empty())
    throw Error(Status::unsupported, "select: no legal config on " + arch.name + " for " + std::to_string(none.size()) +
                                         " problem(s); first " + none.front());
}

}  // namespace

void add_select_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("select", "rank the legal kernel configs of a problem with the learned model "
                                           "(or the analytic fallback), best first");
  auto args = std::make_shared<SelectArgs>();
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("--arch", args->arch, "arch spec name or target")->capture_default_str();
  cmd->add_option("-k", args->k, "candidates to print (0 = all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--explain", args->explain, "model or fallback reason, hashes, vendor_first and the vendor choice (prediction, threshold, "
                "decision), analytic score per candidate");
  cmd->add_option("--records", args->records, "sweep record files: print measured times and efficiency")->expected(1, -1);
  cmd->add_option("--select", args->select,
                  "fast (the student, its best 16 re-scored: the heuristic strategy), full (the full model's ranking) "
                  "or shortlist (what the top_k strategy times: the full model's first k, for conv one per tile shape "
                  "unless --shortlist first); default fast")
      ->check(CLI::IsMember({"fast", "full", "shortlist"}));
  cmd->add_option("--shortlist", args->shortlist,
                  "--select shortlist: varied (dispatch's rule: conv one config per tile shape) or first (the first k)")
      ->check(CLI::IsMember({"first", "varied"}))
      ->capture_default_str();
  cmd->add_option("--models", args->models, "models folder (default: TILEPICK_MODELS_DIR or the source tree's models/)");
  cmd->add_option("--space-hash", args->space_hash_op, "print the config-space hash of an op (for training) and exit");
  cmd->callback([args] { run(*args); });
}

}  // namespace tilepick::cli
