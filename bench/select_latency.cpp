// Selection latency on one CPU thread: every legal candidate of one problem scored by the model
// (registry lookup + features_batch + GBDT predict + sort), for a GEMM and a conv problem on h200.
// With a model's candidates.txt (pruned pool) only its legal configs are scored: counters "pool"
// (the whole legal pool) and "scored" (what the selector scores); *_whole variants ignore the file.
// BM_select/<op>_{fast,full}: select(k=1) with the distilled student (models/<m>/fast/, its own
// candidate set) against the full model (ScoreMode); BM_fast_* are the stages of the fast path;
// BM_select/tf32_h100_*: the same for the tf32 GEMM model of the H100 (h100_sxm features).
// BM_plan_hit/*: Dispatcher::plan for a problem already planned (the in-memory plan cache; offline, h200,
// heuristic strategy, no cache file): what every call after a shape's first one costs.
// Everything but BM_select/*_fast runs the full models (ScoreMode::full), as before the students.
// Uses the shipped model of the problem's (op, dtype, arch) when one is usable, else a synthetic
// LightGBM text model written here (300 trees x 63 leaves over the feature schema, thresholds drawn
// from the pool's own feature values) so the number reflects a realistic model size; stderr says why.
//
//   ./build/bench/bench_select_latency [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "tilepick/arch.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

constexpr int kTrees = 300, kLeaves = 63;
const char* const kGemm = "gemm rcr m4096 n4096 k4096 bf16";
const char* const kGemmTf32 = "gemm rcr m4096 n4096 k4096 f32";
const char* const kConv = "fwd g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
const char* const kWgrad = "bwd_weight g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
const char* const kDgrad = "bwd_data g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16";

const ArchSpec& h200() { return find_arch(default_arch_specs(), "h200"); }

std::vector<KernelConfig> pool(const Problem& p, const ArchSpec& arch = h200()) {
  std::vector<KernelConfig> out;
  for (auto& e : Registry::default_registry().lookup(p, arch)) out.push_back(e.config);
  return out;
}

// One tree grown leaf-wise: a random leaf is split on a random feature at a value seen in `rows`.
std::string random_tree(int index, const std::vector<double>& rows, std::size_t width, std::mt19937_64& rng) {
  struct Split {
    int feature;
    double threshold;
    int left, right;
  };
  std::vector<Split> nodes;
  std::vector<std::pair<int, bool>> leaf_parent{{-1, false}};  // per leaf: parent node, is right child
  const std::size_t n_rows = rows.size() / width;
  while (static_cast<int>(leaf_parent.size()) < kLeaves) {
    const int leaf = static_cast<int>(rng() % leaf_parent.size());
    const int feature = static_cast<int>(rng() % width);
    const double threshold = rows[(rng() % n_rows) * width + static_cast<std::size_t>(feature)];
    const int node = static_cast<int>(nodes.size());
    const int new_leaf = static_cast<int>(leaf_parent.size());
    nodes.push_back({feature, std::isnan(threshold) ? 0.0 : threshold, ~leaf, ~new_leaf});
    auto [parent, right] = leaf_parent[static_cast<std::size_t>(leaf)];
    if (parent >= 0) (right ? nodes[parent].right : nodes[parent].left) = node;
    leaf_parent[static_cast<std::size_t>(leaf)] = {node, false};
    leaf_parent.push_back({node, true});
  }
  std::ostringstream t;
  std::uniform_real_distribution<double> value(-0.05, 0.05);
  t.precision(17);
  t << "Tree=" << index << "\nnum_leaves=" << kLeaves << "\nnum_cat=0\n";
  auto list = [&](const char* key, auto get) {
    t << key << "=";
    for (std::size_t i = 0; i < nodes.size(); ++i) t << (i ? " " : "") << get(nodes[i]);
    t << "\n";
  };
  list("split_feature", [](const Split& s) { return s.feature; });
  list("threshold", [](const Split& s) { return s.threshold; });
  list("decision_type", [](const Split&) { return 2; });  // numerical, default left
  list("left_child", [](const Split& s) { return s.left; });
  list("right_child", [](const Split& s) { return s.right; });
  t << "leaf_value=";
  for (int i = 0; i < kLeaves; ++i) t << (i ? " " : "") << value(rng);
  t << "\nis_linear=0\nshrinkage=1\n\n\n";
  return t.str();
}

// Writes a synthetic model folder for `p` under `root` and returns its path.
void write_synthetic_model(const fs::path& root, const Problem& p) {
  const FeatureSchema& schema = feature_schema();
  const auto configs = pool(p);
  std::vector<double> rows(configs.size() * schema.size());
  features_batch(p, configs, h200(), rows.data(), 1);
  std::mt19937_64 rng(42);
  std::ostringstream m;
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx="
    << schema.size() - 1 << "\nobjective=lambdarank\nfeature_names=";
  for (std::size_t i = 0; i < schema.size(); ++i) m << (i ? " " : "") << schema.names[i];
  m << "\n\n";
  for (int i = 0; i < kTrees; ++i) m << random_tree(i, rows, schema.size(), rng);
  m << "end of trees\n";
  const std::string op = op_name(p);
  const fs::path dir = root / (op + "_" + dtype_family(p) + "_h200");
  fs::create_directories(dir);
  std::ofstream(dir / "model.txt") << m.str();
  nlohmann::json spec = {{"feature_names", schema.names}, {"schema_hash", schema.hash},
                         {"feature_version", schema.version}, {"space_hash", config_space_hash(op)},
                         {"op", op}, {"dtype_family", dtype_family(p)}, {"arch", "h200"},
                         {"objective", "lambdarank"}, {"score", "higher_is_better"}};
  std::ofstream(dir / "feature_spec.json") << spec.dump(2);
}

// The shipped selector when it has usable models for both problems, else a synthetic one.
const Selector& selector();

// The same models with pruning off (the whole legal pool).
const Selector& whole_selector() {
  static const Selector s(selector().models_dir(), 1, false, ScoreMode::full);
  return s;
}

const Selector& selector() {
  static std::unique_ptr<Selector> synthetic;
  static const Selector* chosen = [] {
    static const Selector shipped(env::models_dir(), 1, true, ScoreMode::full);
    std::string why_gemm, why_conv;
    const bool gemm = shipped.model_for(parse_problem(kGemm), h200(), &why_gemm) != nullptr;
    const bool conv = shipped.model_for(parse_problem(kConv), h200(), &why_conv) != nullptr;
    if (gemm && conv) return &shipped;
    // Said loudly: numbers from the synthetic model are not the shipped models' latency.
    std::cerr << "bench_select_latency: timing synthetic " << kTrees << "x" << kLeaves << " models, the shipped ones in '"
              << shipped.models_dir() << "' are not usable: " << (gemm ? why_conv : why_gemm) << "\n";
    const fs::path root = fs::temp_directory_path() / ("tilepick_bench_models_" + std::to_string(::getpid()));
    write_synthetic_model(root, parse_problem(kGemm));
    write_synthetic_model(root, parse_problem(kConv));
    synthetic = std::make_unique<Selector>(root.string(), 1, true, ScoreMode::full);  // the folder stays for whole_selector()
    return static_cast<const Selector*>(synthetic.get());
  }();
  return *chosen;
}

void label(benchmark::State& state, const Problem& p, std::size_t scored) {
  const ModelEntry* m = selector().model_for(p, h200());
  state.SetLabel(m ? m->spec.name + (m->spec.dir.find("tilepick_bench_models_") != std::string::npos
                                         ? " (synthetic " + std::to_string(kTrees) + "x" + std::to_string(kLeaves) + ")"
                                         : " (shipped, " + std::to_string(m->model->num_trees()) + " trees)")
                   : std::string("fallback"));
  state.counters["pool"] = static_cast<double>(pool(p).size());
  state.counters["scored"] = static_cast<double>(scored);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * scored));
}

// The configs a selector scores for p (the pruned pool when the model has a candidates.txt).
std::vector<KernelConfig> scored_pool(const Problem& p, bool whole) {
  return (whole ? whole_selector() : selector()).pool(p, h200());
}

// The whole selection: registry lookup (legality) + features + predict + sort.
void BM_rank(benchmark::State& state, const char* text, bool whole) {
  const Problem p = parse_problem(text);
  const Selector& s = whole ? whole_selector() : selector();
  std::size_t n = 0;
  for (auto _ : state) {
    auto r = s.rank(p, h200());
    n = r.size();
    benchmark::DoNotOptimize(r.data());
  }
  label(state, p, n);
}

// The dispatch path: select(k=1), the best config and its confidence; only the top configs'
// strings are made (plus tied runs that reach them).
void BM_select_top1(benchmark::State& state, const char* text, bool whole) {
  const Problem p = parse_problem(text);
  const Selector& s = whole ? whole_selector() : selector();
  std::size_t n = 0;
  for (auto _ : state) {
    auto r = s.select(p, h200(), 1);
    n = r.pool_size;
    benchmark::DoNotOptimize(r.top.data());
  }
  label(state, p, n);
}

// The shipped models in one mode (fast: their students where valid).
const Selector& mode_selector(ScoreMode mode) {
  static const Selector fast(selector().models_dir(), 1, true, ScoreMode::fast);
  return mode == ScoreMode::fast ? fast : selector();
}

// select(k=1) fast vs full; counters: scored, fast (1 when the student scored), trees of the scorer. On
// another arch (BM_select/tf32_h100_*: the tf32 GEMM model trained on H100 records) only shipped models
// apply: a missing one shows as "fallback" in the label.
void BM_select(benchmark::State& state, const char* text, ScoreMode mode, const char* arch_name = "h200") {
  const Problem p = parse_problem(text);
  const ArchSpec& arch = find_arch(default_arch_specs(), arch_name);
  const Selector& s = mode_selector(mode);
  Selection r;
  for (auto _ : state) {
    r = s.select(p, arch, 1);
    benchmark::DoNotOptimize(r.top.data());
  }
  const ModelEntry* m = s.model_for(p, arch);
  const GbdtModel* scorer = m ? (r.fast ? &m->fast->model : &*m->model) : nullptr;
  state.SetLabel(std::string(score_mode_name(mode)) + " " + (m ? m->spec.name : "fallback") + " " +
                 (r.fast ? "student" : "model") + " (" + std::to_string(scorer ? scorer->num_trees() : 0) + " trees" +
                 (r.fast && m->fast->rescore_top ? ", top " + std::to_string(m->fast->rescore_top) + " re-scored" : "") + ")");
  state.counters["pool"] = static_cast<double>(pool(p, arch).size());
  state.counters["scored"] = static_cast<double>(r.pool_size);
  state.counters["fast"] = r.fast;
}

// Stages of the fast path: 0 pool (legality of the student's set), 1 features, 2 student predict.
void BM_fast_stage(benchmark::State& state, const char* text, int stage) {
  const Problem p = parse_problem(text);
  const Selector& s = mode_selector(ScoreMode::fast);
  const ModelEntry* m = s.model_for(p, h200());
  if (!m || !m->fast) return state.SkipWithError("no student");
  const auto configs = s.pool(p, h200());
  const std::size_t width = feature_schema().size();
  std::vector<double> rows(configs.size() * width), scores(configs.size());
  features_batch(p, configs, h200(), rows.data(), 1);
  for (auto _ : state) {
    if (stage == 0) {
      auto c = s.pool(p, h200());
      benchmark::DoNotOptimize(c.data());
    } else if (stage == 1) {
      features_batch(p, configs, h200(), rows.data(), 1);
    } else {
      m->fast->model.predict(rows.data(), configs.size(), width, scores.data());
    }
    benchmark::DoNotOptimize(scores.data());
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["scored"] = static_cast<double>(configs.size());
  state.SetLabel(m->spec.name + " student (" + std::to_string(m->fast->model.num_trees()) + " trees)");
}

// The full model over the first N rows of the pool (what re-scoring the student's top N costs):
// row by row (predict_row, the plain reference walk) or through predict() (the evaluation form built
// at load, the rows in one group of 16 up to 16 rows, else groups of 64).
void BM_teacher_rows(benchmark::State& state, const char* text, bool per_row) {
  const Problem p = parse_problem(text);
  const ModelEntry* m = selector().model_for(p, h200());
  if (!m) return state.SkipWithError("no model");
  const auto configs = scored_pool(p, false);
  const std::size_t n = std::min(configs.size(), static_cast<std::size_t>(state.range(0)));
  const std::size_t width = feature_schema().size();
  std::vector<double> rows(configs.size() * width), scores(n);
  features_batch(p, configs, h200(), rows.data(), 1);
  for (auto _ : state) {
    if (per_row)
      for (std::size_t i = 0; i < n; ++i) scores[i] = m->model->predict_row(rows.data() + i * width);
    else
      m->model->predict(rows.data(), n, width, scores.data());
    benchmark::DoNotOptimize(scores.data());
  }
  state.counters["rows"] = static_cast<double>(n);
  state.SetLabel(m->spec.name + " (" + std::to_string(m->model->num_trees()) + " trees)");
}

// One model (the teacher, or with `student` the fast student) on the first range(0) rows of the
// pool (0: all) in one evaluation form: values (double compares) against ranks (byte compares).
void BM_eval_form(benchmark::State& state, const char* text, bool student, GbdtModel::EvalForm form) {
  const Problem p = parse_problem(text);
  const ModelEntry* m = mode_selector(student ? ScoreMode::fast : ScoreMode::full).model_for(p, h200());
  if (!m || (student && !m->fast)) return state.SkipWithError("no model");
  const GbdtModel& model = student ? m->fast->model : *m->model;
  if (form == GbdtModel::EvalForm::ranks && !model.has_rank_form()) return state.SkipWithError("no rank form");
  const auto configs = scored_pool(p, false);
  const std::size_t n = state.range(0) ? std::min(configs.size(), static_cast<std::size_t>(state.range(0))) : configs.size();
  const std::size_t width = feature_schema().size();
  std::vector<double> rows(configs.size() * width), scores(n);
  features_batch(p, configs, h200(), rows.data(), 1);
  for (auto _ : state) {
    model.predict(rows.data(), n, width, scores.data(), form);
    benchmark::DoNotOptimize(scores.data());
  }
  state.counters["rows"] = static_cast<double>(n);
  state.SetLabel(m->spec.name + (student ? " student (" : " (") + std::to_string(model.num_trees()) + " trees)");
}

// Scoring a precomputed pool (the scored one): features + predict + sort.
void BM_score_pool(benchmark::State& state, const char* text, bool whole) {
  const Problem p = parse_problem(text);
  const Selector& s = whole ? whole_selector() : selector();
  const auto configs = scored_pool(p, whole);
  for (auto _ : state) {
    auto r = s.rank_configs(p, h200(), configs);
    benchmark::DoNotOptimize(r.data());
  }
  label(state, p, configs.size());
}

// The feature rows of a precomputed pool alone (the rest of BM_score_pool is predict + sort).
void BM_features(benchmark::State& state, const char* text, bool whole) {
  const Problem p = parse_problem(text);
  const auto configs = scored_pool(p, whole);
  std::vector<double> rows(configs.size() * feature_schema().size());
  for (auto _ : state) {
    features_batch(p, configs, h200(), rows.data(), 1);
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["pool"] = static_cast<double>(pool(p).size());
  state.counters["scored"] = static_cast<double>(configs.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * configs.size()));
}

// GBDT scoring over precomputed feature rows of the pool (the model part of BM_score_pool): the batch
// path, or (per_row) the plain per-row evaluator that the batch path must beat.
void predict_rows(benchmark::State& state, const char* text, bool whole, bool per_row) {
  const Problem p = parse_problem(text);
  const ModelEntry* m = selector().model_for(p, h200());
  if (!m) return state.SkipWithError("no model");
  const auto configs = scored_pool(p, whole);
  const std::size_t width = feature_schema().size();
  std::vector<double> rows(configs.size() * width), scores(configs.size());
  features_batch(p, configs, h200(), rows.data(), 1);
  for (auto _ : state) {
    if (per_row)
      for (std::size_t i = 0; i < configs.size(); ++i) scores[i] = m->model->predict_row(rows.data() + i * width);
    else
      m->model->predict(rows.data(), configs.size(), width, scores.data());
    benchmark::DoNotOptimize(scores.data());
  }
  label(state, p, configs.size());
}

void BM_predict(benchmark::State& state, const char* text, bool whole) { predict_rows(state, text, whole, false); }
void BM_predict_rows(benchmark::State& state, const char* text, bool whole) { predict_rows(state, text, whole, true); }

// The config strings (tie-break key and Ranked::text) of the pool alone.
void BM_config_text(benchmark::State& state, const char* text) {
  const Problem p = parse_problem(text);
  const auto configs = pool(p);
  for (auto _ : state) {
    std::vector<std::string> t;
    t.reserve(configs.size());
    for (const auto& c : configs) t.push_back(to_string(c));
    benchmark::DoNotOptimize(t.data());
  }
  state.counters["pool"] = static_cast<double>(configs.size());
}

// The pool the selector scores (the pruned lookup: legality of the candidate set's configs only).
void BM_pool(benchmark::State& state, const char* text) {
  const Problem p = parse_problem(text);
  std::size_t n = 0;
  for (auto _ : state) {
    auto c = selector().pool(p, h200());
    n = c.size();
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["pool"] = static_cast<double>(pool(p).size());
  state.counters["scored"] = static_cast<double>(n);
}

// The legal pool alone (registry lookup).
void BM_lookup(benchmark::State& state, const char* text) {
  const Problem p = parse_problem(text);
  std::size_t n = 0;
  for (auto _ : state) {
    auto e = Registry::default_registry().lookup(p, h200());
    n = e.size();
    benchmark::DoNotOptimize(e.data());
  }
  state.counters["pool"] = static_cast<double>(n);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

// A plan-cache hit: the problem was planned once (offline for h200, so nothing is compiled), then every call
// finds the plan in the dispatcher's memory.
void BM_plan_hit(benchmark::State& state, const char* text) {
  const Problem p = parse_problem(text);
  Dispatcher d(mode_selector(ScoreMode::fast));
  PlanOptions opt;
  opt.strategy = Strategy::heuristic;
  opt.offline_arch = "h200";
  d.plan(p, opt);
  for (auto _ : state) {
    auto plan = d.plan(p, opt);
    benchmark::DoNotOptimize(plan.get());
  }
  state.SetLabel(d.plan(p, opt)->info().kernel.substr(0, 40));
}

BENCHMARK_CAPTURE(BM_select, gemm_fast, kGemm, ScoreMode::fast)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, gemm_full, kGemm, ScoreMode::full)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, fwd_fast, kConv, ScoreMode::fast)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, fwd_full, kConv, ScoreMode::full)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, wgrad_fast, kWgrad, ScoreMode::fast)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, wgrad_full, kWgrad, ScoreMode::full)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, dgrad_fast, kDgrad, ScoreMode::fast)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, dgrad_full, kDgrad, ScoreMode::full)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, tf32_h100_fast, kGemmTf32, ScoreMode::fast, "h100_sxm")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select, tf32_h100_full, kGemmTf32, ScoreMode::full, "h100_sxm")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_plan_hit, gemm, kGemm)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_plan_hit, fwd, kConv)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, gemm_pool, kGemm, 0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, gemm_features, kGemm, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, gemm_predict, kGemm, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, fwd_pool, kConv, 0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, fwd_features, kConv, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_fast_stage, fwd_predict, kConv, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_teacher_rows, gemm_row, kGemm, true)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_teacher_rows, gemm_batch, kGemm, false)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_teacher_rows, fwd_row, kConv, true)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_teacher_rows, fwd_batch, kConv, false)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, gemm_teacher_values, kGemm, false, GbdtModel::EvalForm::values)->Arg(16)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, gemm_teacher_ranks, kGemm, false, GbdtModel::EvalForm::ranks)->Arg(16)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, fwd_teacher_values, kConv, false, GbdtModel::EvalForm::values)->Arg(16)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, fwd_teacher_ranks, kConv, false, GbdtModel::EvalForm::ranks)->Arg(16)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, gemm_student_values, kGemm, true, GbdtModel::EvalForm::values)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, gemm_student_ranks, kGemm, true, GbdtModel::EvalForm::ranks)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, fwd_student_values, kConv, true, GbdtModel::EvalForm::values)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_eval_form, fwd_student_ranks, kConv, true, GbdtModel::EvalForm::ranks)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, conv, kConv, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, wgrad, kWgrad, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, gemm_whole, kGemm, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, conv_whole, kConv, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_select_top1, wgrad_whole, kWgrad, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_rank, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_rank, conv, kConv, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_score_pool, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_score_pool, conv, kConv, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_features, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_features, conv, kConv, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_features, gemm_whole, kGemm, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_features, conv_whole, kConv, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, conv, kConv, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, gemm_whole, kGemm, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, conv_whole, kConv, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, wgrad, kWgrad, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict, wgrad_whole, kWgrad, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict_rows, gemm, kGemm, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict_rows, wgrad, kWgrad, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_predict_rows, gemm_whole, kGemm, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_config_text, gemm, kGemm)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_config_text, conv, kConv)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_pool, gemm, kGemm)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_pool, conv, kConv)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_pool, wgrad, kWgrad)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_lookup, gemm, kGemm)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_lookup, conv, kConv)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tilepick

BENCHMARK_MAIN();
