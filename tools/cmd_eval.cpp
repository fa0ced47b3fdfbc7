// tilepick eval: model choices over measured candidates vs the oracle, the analytic fallback and the
// vendor heuristic; eval.json / eval.csv / eval_cdf.png; threshold checks for CI.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "commands.hpp"
#include "select/selector_eval.hpp"
#include "sweep/records.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::cli {
namespace {
namespace fs = std::filesystem;

struct EvalArgs {
  std::string models;
  std::vector<std::string> records;
  std::vector<std::string> vendor_records;  // vendor rows replacing those of `records` for the problems they hold
  std::string arch;
  std::string out;
  std::vector<std::string> problem_files;
  double min_mean = NAN, min_p10 = NAN;
  double min_dispatch_mean = NAN, min_dispatch_p10 = NAN;  // what dispatch's heuristic strategy runs, per op
  double min_race_mean = NAN, min_race_p10 = NAN;          // what its race strategy runs, per op
  double min_auto_mean = NAN, min_auto_p10 = NAN, min_auto_tw = NAN;  // what its auto strategy runs, per op
  bool manifest_thresholds = false;
  double margin = 0;
  bool no_plot = false;
  bool no_prune = false;
  bool listed_only = false;
  int timed_k = eval::kTimedTopK;
  std::string repeats = "fastest";
  std::string select;  // "", full or fast (fast when "")
  std::string shortlist = "varied";  // the rule of top_k's own choices (Shortlist)
  bool no_vendor_check = false;
};

constexpr int kThresholdExit = 2;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(Status::io_error, "eval: cannot write " + path.string());
}

// The records' arch (header options.arch, else the first device's arch), or "".
std::string header_arch(const nlohmann::json& h) {
  if (h.contains("options") && h["options"].is_object() && h["options"].value("arch", std::string()) != "")
    return h["options"]["arch"].get<std::string>();
  if (h.contains("devices") && h["devices"].is_array() && !h["devices"].empty() && h["devices"][0].is_object())
    return h["devices"][0].value("arch", std::string());
  return "";
}

void plot(const fs::path& csv, const fs::path& png) {
  try {
    auto check = run_python({"-c", "import importlib.util as u\nprint(u.find_spec('matplotlib') is not None)"}, true);
    if (check.exit_code != 0 || check.out.rfind("True", 0) != 0) {
      std::cout << "eval: no efficiency plot: python3 lacks matplotlib (python3 -m pip install -r requirements.txt)\n";
      return;
    }
  } catch (const NotFound&) {
    std::cout << "eval: no efficiency plot: python3 is not on PATH\n";
    return;
  }
  int rc = run_python({"-m", "tilepick.eval_plot", csv.string(), "-o", png.string()}, false).exit_code;
  if (rc != 0) std::cerr << "eval: warning: python3 -m tilepick.eval_plot exited with " << rc << "\n";
  else std::cout << "wrote " << png.string() << "\n";
}

// --vendor-records: their vendor rows replace every vendor row of the problems they hold (a library re-measured,
// e.g. cuDNN through its graph API); kernel rows belong in --records.
void replace_vendor_rows(std::vector<sweep::Record>& records, const std::vector<std::string>& files, const std::string& arch) {
  if (files.empty()) return;
  auto is_vendor = [](const sweep::Record& r) { return r.config.rfind("vendor=", 0) == 0; };
  std::vector<sweep::Record> vendor;
  for (const auto& f : files) {
    auto file = sweep::read_record_file(f);
    if (const std::string a = header_arch(file.header); !a.empty() && a != arch)
      throw Error(Status::invalid_argument, "eval: --vendor-records " + f + " was measured on " + a + ", the records on " + arch);
    for (auto& r : file.records) {
      if (!is_vendor(r))
        throw Error(Status::invalid_argument, "eval: --vendor-records " + f + " holds a kernel row (" + r.problem + " | " +
                                                  r.config + "); give kernel records with --records");
      vendor.push_back(std::move(r));
    }
  }
  std::set<std::string> covered;
  for (const auto& r : vendor) covered.insert(r.problem);
  const auto before = records.size();
  std::erase_if(records, [&](const sweep::Record& r) { return is_vendor(r) && covered.count(r.problem); });
  std::cout << "vendor rows of " << covered.size() << " problems from --vendor-records (" << before - records.size()
              << " rows of --records replaced)\n";
  records.insert(records.end(), std::make_move_iterator(vendor.begin()), std::make_move_iterator(vendor.end()));
}

// One failed check per line; "" when all pass.
std::string check_thresholds(const EvalArgs& a, const eval::EvalReport& r, const Selector& selector) {
  std::string failures;
  auto check = [&](const std::string& group, const std::string& what, double value, double limit) {
    if (std::isnan(limit)) return;
    if (!(value >= limit))
      failures += "  " + group + ": " + what + " " + std::to_string(value) + " < " + std::to_string(limit) + "\n";
  };
  for (const auto& g : r.groups) {
    if (g.name.find(' ') != std::string::npos || g.name.rfind("source=", 0) == 0 || g.name == "all") continue;
    check(g.name, "model mean", g.model.mean, a.min_mean);
    check(g.name, "model p10", g.model.p10, a.min_p10);
    if (g.dispatch.count == 0) continue;  // no problem with both our pick and a vendor heuristic row measured
    check(g.name, "dispatch mean", g.dispatch.mean, a.min_dispatch_mean);
    check(g.name, "dispatch p10", g.dispatch.p10, a.min_dispatch_p10);
    check(g.name, "race mean", g.race.mean, a.min_race_mean);
    check(g.name, "race p10", g.race.p10, a.min_race_p10);
    check(g.name, "auto mean", g.auto_.mean, a.min_auto_mean);
    check(g.name, "auto p10", g.auto_.p10, a.min_auto_p10);
    check(g.name, "auto time-weighted", g.auto_.time_weighted, a.min_auto_tw);
  }
  if (!a.manifest_thresholds) return failures;
  for (const auto& m : selector.models()) {
    // The model's own arch: manifest "eval"; an arch it serves: manifest "serves_eval"[arch].
    const nlohmann::json& manifest = m.spec.manifest;
    const bool own = r.arch == m.spec.arch;
    const bool serves = std::find(m.spec.serves.begin(), m.spec.serves.end(), r.arch) != m.spec.serves.end();
    if (!m.usable() || !manifest.is_object() || !(own || serves)) continue;
    const std::string group = "source=model:" + m.spec.name;
    const eval::GroupEval* g = eval::find_group(r, group);
    if (!g) {
      std::cout << "eval: manifest thresholds of " << m.spec.name << " not checked: no problem used the model\n";
      continue;
    }
    // A model that selected here without floors for this arch (e.g. retrained, not yet stamped) fails the check.
    if (own ? !manifest.contains("eval") : !(manifest.contains("serves_eval") && manifest["serves_eval"].contains(r.arch))) {
      failures += "  " + group + ": its manifest.json has no " + (own ? std::string("\"eval\"") : "\"serves_eval\"." + r.arch) +
                  " to check (tilepick eval --out DIR, then python -m tilepick.train --stamp-eval DIR/eval.json)\n";
      continue;
    }
    const auto& t = own ? manifest["eval"] : manifest["serves_eval"][r.arch];
    const std::pair<const char*, double> stats[] = {{"mean", g->model.mean}, {"median", g->model.median},
                                                     {"p10", g->model.p10},   {"p1", g->model.p1},
                                                     {"min", g->model.min},   {"top1", g->model.top1},
                                                     {"top5", g->model.top5}};
    for (const auto& [key, value] : stats)
      if (t.contains(key) && t[key].is_number()) check(group, std::string("model ") + key, value, t[key].get<double>() - a.margin);
  }
  return failures;
}

void run(const EvalArgs& a) {
  std::vector<sweep::Record> records;
  std::string arch_name = a.arch;
  for (const auto& f : a.records) {
    auto file = sweep::read_record_file(f);
    // Scores come from whole files only: a file that is not a record file, or whose gzip data stops
    // or breaks partway, is refused rather than read in part.
    if (file.header.is_null())
      throw ParseError(f, f + ": not a sweep record file: no complete gzip member with a header (empty, not gzip, "
                              "truncated or corrupt from the start, or a Git LFS pointer?)");
    if (file.truncated_tail || file.damaged_members > 0)
      throw ParseError(f, f + ": the gzip data is " +
                              (file.damaged_members > 0 ? "corrupt in " + std::to_string(file.damaged_members) + " member(s)"
                                                        : "truncated or corrupt after byte " + std::to_string(file.good_bytes)) +
                              " (" + std::to_string(file.records.size()) +
                              " records readable); resuming the sweep into it repairs the file");
    if (arch_name.empty()) arch_name = header_arch(file.header);
    records.insert(records.end(), std::make_move_iterator(file.records.begin()),
                   std::make_move_iterator(file.records.end()));
  }
  if (arch_name.empty()) arch_name = "h200";
  replace_vendor_rows(records, a.vendor_records, arch_name);
  const ArchSpec& arch = find_arch(default_arch_specs(), arch_name);
  std::map<std::string, std::string> tags;
  std::set<std::string> listed;
  for (const auto& f : a.problem_files)
    for (const auto& np : load_problem_file(f)) {
      listed.insert(to_string(np.problem));
      if (!np.name.empty()) tags.emplace(to_string(np.problem), np.name.substr(0, np.name.find('.')));
    }
  if (a.listed_only) {
    if (a.problem_files.empty()) throw Error(Status::invalid_argument, "eval: --listed-only needs --problems-file");
    std::erase_if(records, [&](const sweep::Record& r) { return !listed.count(r.problem); });
    if (records.empty())
      throw Error(Status::invalid_argument, "eval: --listed-only: no record is of a problem in the --problems-file files");
  }

  const ScoreMode mode = a.select == "full" ? ScoreMode::full : a.select == "fast" ? ScoreMode::fast : ScoreMode::automatic;
  const Selector selector(a.models.empty() ? env::models_dir() : a.models, 1, !a.no_prune, mode);
  std::cout << "selection: " << score_mode_name(selector.mode()) << "\n";
  std::cout << "models '" << selector.models_dir() << "' (feature schema " << feature_schema().hash << "):";
  if (selector.models().empty()) std::cout << " none";
  std::cout << "\n";
  auto serves = [](const ModelSpec& spec) {
    std::string out;
    for (const auto& arch : spec.serves) out += (out.empty() ? "" : " ") + arch;
    return out;
  };
  for (const auto& m : selector.models())
    std::cout << "  " << m.spec.name << ": " << (m.usable() ? "ok, objective " + m.spec.objective : m.rejected)
              << (m.candidates && selector.pruning()
                      ? ", candidates.txt: " + std::to_string(m.candidates->configs.size()) + " configs"
                      : std::string())
              << (m.fast ? ", fast/ student: " + std::to_string(m.fast->model.num_trees()) + " trees" +
                               (m.fast->candidates ? ", " + std::to_string(m.fast->candidates->configs.size()) + " configs" : "")
                         : std::string())
              << (m.spec.serves.empty() ? std::string() : ", also serves " + serves(m.spec))
              << "\n";
  eval::EvalOptions options;
  options.timed_k = a.timed_k;
  options.repeats = a.repeats == "median" ? eval::Repeats::median : eval::Repeats::fastest;
  options.shortlist = a.shortlist == "first" ? Shortlist::first : Shortlist::varied;
  options.vendor_check = !a.no_vendor_check;
  const eval::EvalReport report = eval::evaluate(selector, records, arch, tags, options);
  std::cout << "arch " << arch.name << ", " << records.size() << " records\n" << eval::format_table(report);
  // A quality gate must not pass on no data (an empty or unreadable file, a Git LFS pointer).
  if (report.problems.empty())
    throw Error(Status::invalid_argument, "eval: no problem could be scored (" + std::to_string(records.size()) +
                                              " records, " + std::to_string(report.skipped) +
                                              " problems without an ok tilepick timing, " +
                                              std::to_string(report.unparsed) + " unparsed records)");

  if (!a.out.empty()) {
    fs::create_directories(a.out);
    nlohmann::json j = eval::to_json(report);
    j["records"] = a.records;
    if (!a.vendor_records.empty()) j["vendor_records"] = a.vendor_records;
    j["repeats"] = a.repeats;
    j["models_dir"] = selector.models_dir();
    j["feature_schema"] = feature_schema().hash;
    j["models"] = nlohmann::json::array();
    for (const auto& m : selector.models())
      j["models"].push_back({{"name", m.spec.name}, {"op", m.spec.op}, {"usable", m.usable()},
                             {"rejected", m.rejected}, {"objective", m.spec.objective},
                             {"candidates", m.candidates && selector.pruning() ? m.candidates->configs.size() : 0}});
    j["pruning"] = selector.pruning();
    write_file(fs::path(a.out) / "eval.json", j.dump(2) + "\n");
    write_file(fs::path(a.out) / "eval.csv", eval::to_csv(report));
    std::cout << "wrote " << (fs::path(a.out) / "eval.json").string() << ", " << (fs::path(a.out) / "eval.csv").string()
              << "\n";
    if (!a.no_plot) plot(fs::path(a.out) / "eval.csv", fs::path(a.out) / "eval_cdf.png");
  }
  const std::string failures = check_thresholds(a, report, selector);
  if (!failures.empty()) {
    std::cerr << "eval: thresholds not met:\n" << failures;
    throw CLI::RuntimeError(kThresholdExit);
  }
}

}  // namespace

void add_eval_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "eval", "score the selector's choices over measured sweep records: efficiency vs the oracle per op and "
              "slice, the analytic fallback and the vendor heuristic as baselines");
  auto args = std::make_shared<EvalArgs>();
  cmd->add_option("--models", args->models, "models folder (default: TILEPICK_MODELS_DIR or the source tree's models/)");
  cmd->add_option("--records", args->records, "sweep record files (*.csv.gz)")->required()->expected(1, -1);
  cmd->add_option("--vendor-records", args->vendor_records,
                  "record files of vendor rows alone (sweep --vendor-only) that replace the vendor rows of --records for "
                  "the problems they hold (a library re-measured, e.g. cuDNN through its graph API)")
      ->expected(1, -1);
  cmd->add_option("--arch", args->arch, "arch spec name (default: the records' arch, else h200)");
  cmd->add_option("--out", args->out, "write eval.json, eval.csv and eval_cdf.png here");
  cmd->add_option("--problems-file", args->problem_files,
                  "problem files whose `name:` tags (prefix before the first '.') name the networks")
      ->expected(1, -1);
  cmd->add_option("--min-mean", args->min_mean, "exit 2 when an op's mean model efficiency is below this");
  cmd->add_option("--min-p10", args->min_p10, "exit 2 when an op's P10 model efficiency is below this");
  cmd->add_option("--min-dispatch-mean", args->min_dispatch_mean,
                  "exit 2 when the mean efficiency of what dispatch's heuristic strategy runs (vs the fastest kernel "
                  "measured, ours or the vendor's) is below this for an op");
  cmd->add_option("--min-dispatch-p10", args->min_dispatch_p10, "the same for its P10");
  cmd->add_option("--min-race-mean", args->min_race_mean,
                  "the same for what dispatch's race strategy runs (the faster of the first choice and the vendor's "
                  "heuristic kernel)");
  cmd->add_option("--min-race-p10", args->min_race_p10, "the same for its P10");
  cmd->add_option("--min-auto-mean", args->min_auto_mean,
                  "the same for what dispatch's auto strategy runs (top_k with the vendor's kernels where the first "
                  "choice is estimated at >= the time_us of TILEPICK_POLICY where it is an auto policy, default 100 us; else "
                  "the heuristic's; TILEPICK_POLICY's vendor_choice applies to every preset scored)");
  cmd->add_option("--min-auto-p10", args->min_auto_p10, "the same for its P10");
  cmd->add_option("--min-auto-tw", args->min_auto_tw, "the same for its time-weighted efficiency");
  cmd->add_flag("--manifest-thresholds", args->manifest_thresholds,
                "also check each model's manifest.json \"eval\" numbers (\"serves_eval\".<arch> for an arch it "
                "serves) on the problems it chose for; a model that chose without them fails");
  cmd->add_option("--margin", args->margin, "tolerance subtracted from manifest thresholds")->capture_default_str();
  cmd->add_flag("--no-plot", args->no_plot, "do not run python3 -m tilepick.eval_plot");
  cmd->add_option("--timed-k", args->timed_k,
                  "t<K> column: the fastest measured of the model's first K (dispatch top_k's k; in the whole-pool block ranked by the full model, as top_k does)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--repeats", args->repeats,
                  "a pair recorded more than once: its fastest record (several sweep files), or the median of its "
                  "records (a same-run recheck, `sweep --repeat`)")
      ->check(CLI::IsMember({"fastest", "median"}))
      ->capture_default_str();
  cmd->add_flag("--listed-only", args->listed_only,
                "score only the records of problems listed in the --problems-file files (e.g. one dtype of mixed files)");
  cmd->add_flag("--no-prune", args->no_prune,
                "ignore the models' candidates.txt: the model chooses among every measured config");
  cmd->add_option("--select", args->select,
                  "full: the models; fast: their fast/ students where valid (default fast)")
      ->check(CLI::IsMember({"full", "fast"}));
  cmd->add_option("--shortlist", args->shortlist,
                  "the k configs of top_k's own choices: varied (dispatch's rule: conv one per tile shape) or first")
      ->check(CLI::IsMember({"first", "varied"}))
      ->capture_default_str();
  cmd->add_flag("--no-vendor-check", args->no_vendor_check,
                "score dispatch's heuristic strategy as if it followed a vendor choice without checking the vendor's "
                "kernel first (dispatch always checks)");
  cmd->callback([args] { run(*args); });
}

}  // namespace tilepick::cli
