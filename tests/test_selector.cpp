// Selector: model folders (hand-made LightGBM text over the real feature schema), hash checks with
// the fallback and its single warning, deterministic ranking, top-k and confidence; `tilepick eval`
// on a synthetic record file with hand-checked efficiencies and its threshold exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/hash.hpp"
#include "select/selector_eval.hpp"
#include "sweep/records.hpp"
#include "test_util.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/policy.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

const char* const kPoolProblem = "gemm rcr m1024 n1024 k1024 bf16";

// A LightGBM tree: splits "feature <= threshold" (left) in node order, children >= 0 nodes, < 0 ~leaf.
struct Tree {
  struct Split {
    std::string feature;
    double threshold;
    int left, right;
  };
  std::vector<Split> splits;
  std::vector<double> leaves;

  std::string text(int index) const {
    std::ostringstream t;
    t.precision(17);
    auto list = [&](const char* key, auto get) {
      t << key << "=";
      for (std::size_t i = 0; i < splits.size(); ++i) t << (i ? " " : "") << get(splits[i]);
      t << "\n";
    };
    t << "Tree=" << index << "\nnum_leaves=" << leaves.size() << "\nnum_cat=0\n";
    list("split_feature", [](const Split& s) { return feature_schema().index(s.feature); });
    list("threshold", [](const Split& s) { return s.threshold; });
    list("decision_type", [](const Split&) { return 2; });
    list("left_child", [](const Split& s) { return s.left; });
    list("right_child", [](const Split& s) { return s.right; });
    t << "leaf_value=";
    for (std::size_t i = 0; i < leaves.size(); ++i) t << (i ? " " : "") << leaves[i];
    t << "\nis_linear=0\nshrinkage=1\n\n\n";
    return t.str();
  }
};

// Score = 10 * [tile_m > 96] + [stages > 3].
std::vector<Tree> base_trees() {
  return {Tree{{{"cfg_tile_m", 96, ~0, ~1}}, {0, 10}}, Tree{{{"cfg_stages", 3.5, ~0, ~1}}, {0, 1}}};
}
double base_score(const KernelConfig& c) { return 10.0 * (c.tile_m > 96) + (c.stages > 3); }

// +1 for exactly `c`: a chain of splits over every cfg_* feature.
Tree isolate(const KernelConfig& c, const Problem& p) {
  const FeatureSchema& s = feature_schema();
  FeatureRow row = features(p, c, test::arch("h200"));
  Tree t;
  int leaf = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.names[i].rfind("cfg_", 0) != 0) continue;
    const int node = static_cast<int>(t.splits.size());
    // node: f <= v - 0.5 -> 0; else node+1: f <= v + 0.5 -> next : 0
    t.splits.push_back({s.names[i], row[i] - 0.5, ~leaf, node + 1});
    t.leaves.push_back(0);
    ++leaf;
    t.splits.push_back({s.names[i], row[i] + 0.5, node + 2, ~leaf});
    t.leaves.push_back(0);
    ++leaf;
  }
  t.splits.back().left = ~leaf;  // the end of the chain: exactly `c`
  t.leaves.push_back(1);
  return t;
}

std::string model_text(const std::vector<Tree>& trees, const std::string& objective = "regression") {
  const FeatureSchema& s = feature_schema();
  std::ostringstream m;
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=" << s.size() - 1
    << "\nobjective=" << objective << "\nfeature_names=";
  for (std::size_t i = 0; i < s.size(); ++i) m << (i ? " " : "") << s.names[i];
  m << "\n\n";
  for (std::size_t i = 0; i < trees.size(); ++i) m << trees[i].text(static_cast<int>(i));
  m << "end of trees\n";
  return m.str();
}

nlohmann::json spec_json(const std::string& op = "gemm") {
  const FeatureSchema& s = feature_schema();
  return {{"feature_names", s.names}, {"schema_hash", s.hash}, {"feature_version", s.version},
          {"space_hash", config_space_hash(op)}, {"op", op}, {"dtype_family", "half"}, {"arch", "h200"},
          {"objective", "regression"}, {"score", "higher_is_better"}};
}

class SelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepick-selector-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // models/<name>/ with a gzip model, the spec and an optional manifest.
  void write_model(const std::string& name, const std::string& text, const nlohmann::json& spec,
                   const nlohmann::json& manifest = nullptr) {
    const fs::path d = dir_ / "models" / name;
    fs::create_directories(d);
    std::ofstream(d / "model.txt.gz", std::ios::binary) << sweep::gzip_member(text);
    nlohmann::json s = spec;  // the text hash the trainer writes, unless the test sets one
    if (!s.contains("model_text_fnv")) s["model_text_fnv"] = hex16(fnv1a64(text));
    std::ofstream(d / "feature_spec.json") << s.dump(2);
    if (!manifest.is_null()) std::ofstream(d / "manifest.json") << manifest.dump(2);
  }
  std::string models() const { return (dir_ / "models").string(); }

  fs::path dir_;
};

TEST(SelectorHash, SpaceHashFollowsTheCoveringSpaces) {
  const std::string gemm = config_space_hash("gemm");
  EXPECT_EQ(gemm.size(), 16u);
  EXPECT_EQ(gemm, config_space_hash("gemm"));
  EXPECT_NE(gemm, config_space_hash("conv_fwd"));
  std::vector<ConfigSpace> spaces = default_spaces();
  EXPECT_EQ(config_space_hash("gemm", spaces), gemm);
  for (auto& s : spaces)
    if (s.has_op("gemm")) s.hash = "0000000000000000";  // any content change changes the space hash
  EXPECT_NE(config_space_hash("gemm", spaces), gemm);
  EXPECT_EQ(dtype_family(parse_problem("gemm rcr m8 n8 k8 e4m3:e4m3:bf16")), "fp8");
  EXPECT_EQ(dtype_family(parse_problem("fwd g1 mb1 ic8 ih4 iw4 oc8 kh1 kw1 sh1 sw1 ph0 pw0 f16")), "half");
}

TEST_F(SelectorTest, LoadsAFolderAndRanksEveryLegalCandidateWithTheModel) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  Selector sel(models());
  ASSERT_EQ(sel.models().size(), 1u);
  EXPECT_TRUE(sel.models()[0].usable()) << sel.models()[0].rejected;
  const Problem p = parse_problem(kPoolProblem);
  const ArchSpec& h200 = test::arch("h200");
  ASSERT_NE(sel.model_for(p, h200), nullptr);
  EXPECT_EQ(sel.model_for(parse_problem("gemm rcr m8 n8 k8 f32"), h200), nullptr);  // no tf32 model (f16 shares the half model)

  const auto ranked = sel.rank(p, h200);
  ASSERT_EQ(ranked.size(), Registry::default_registry().lookup(p, h200).size());
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_EQ(ranked[i].source, "model:gemm_half_h200");
    EXPECT_EQ(ranked[i].score, base_score(ranked[i].config)) << ranked[i].text;
    EXPECT_EQ(ranked[i].text, to_string(ranked[i].config));
    if (i) {  // best first; ties by config string
      EXPECT_GE(ranked[i - 1].score, ranked[i].score);
      if (ranked[i - 1].score == ranked[i].score) {
        EXPECT_LT(ranked[i - 1].text, ranked[i].text);
      }
    }
  }
  EXPECT_EQ(ranked.front().score, 11);
  // Deterministic: again, from another Selector, and the top-k is the prefix.
  Selector again(models());
  const auto twice = again.rank(p, h200);
  ASSERT_EQ(twice.size(), ranked.size());
  for (std::size_t i = 0; i < ranked.size(); ++i) EXPECT_EQ(twice[i].text, ranked[i].text);
  const auto top5 = sel.rank(p, h200, 5);
  ASSERT_EQ(top5.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(top5[i].text, ranked[i].text);
}

// "serves": a model selects for another arch spec where none of its own exists, with that arch's
// features; a model of the arch itself comes first; an unknown arch name refuses the folder.
TEST_F(SelectorTest, AModelServesTheArchsItListsAfterTheArchsOwnModels) {
  nlohmann::json spec = spec_json();
  spec["serves"] = {"h100_sxm"};
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  const Problem p = parse_problem(kPoolProblem);
  const ArchSpec &h100 = test::arch("h100_sxm"), &a100 = test::arch("a100_sxm");
  {
    Selector sel(models());
    const ModelEntry* m = sel.model_for(p, h100);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->spec.name, "gemm_half_h200");
    std::string why;
    EXPECT_EQ(sel.model_for(p, a100, &why), nullptr);
    EXPECT_NE(why.find("no model for gemm half a100_sxm"), std::string::npos) << why;
    const Selection s = sel.select(p, h100, 3);
    EXPECT_TRUE(s.from_model);
    EXPECT_EQ(s.source, "model:gemm_half_h200");
    EXPECT_EQ(s.pool_size, Registry::default_registry().lookup(p, h100).size());
  }
  nlohmann::json own = spec_json();
  own["arch"] = "h100_sxm";
  write_model("gemm_half_h100_sxm", model_text(base_trees()), own);
  {
    Selector sel(models());
    ASSERT_NE(sel.model_for(p, h100), nullptr);
    EXPECT_EQ(sel.model_for(p, h100)->spec.name, "gemm_half_h100_sxm");  // its own arch wins
    EXPECT_EQ(sel.model_for(p, test::arch("h200"))->spec.name, "gemm_half_h200");
  }
  spec["serves"] = {"h100_sxm", "h999"};
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  Selector bad(models());
  for (const auto& m : bad.models())
    if (m.spec.name == "gemm_half_h200") {
      EXPECT_FALSE(m.usable());
      EXPECT_NE(m.rejected.find("'serves' names 'h999', which is not an arch spec"), std::string::npos) << m.rejected;
    }
}

TEST_F(SelectorTest, AVendorFirstModelSaysSoInItsSelectionsAndDispatchHeuristicRunsTheVendor) {
  const Problem p = parse_problem(kPoolProblem);
  const ArchSpec& h200 = test::arch("h200");
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  const Selection plain = Selector(models()).select(p, h200, 3);
  ASSERT_TRUE(plain.from_model);
  EXPECT_FALSE(plain.vendor_first);
  EXPECT_FALSE(heuristic_runs_vendor(VendorMode::automatic, plain));
  EXPECT_TRUE(heuristic_runs_vendor(VendorMode::only, plain));

  nlohmann::json spec = spec_json();
  spec["vendor_first"] = true;
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  const Selection first = Selector(models()).select(p, h200, 3);
  ASSERT_TRUE(first.from_model);
  EXPECT_TRUE(first.vendor_first);
  EXPECT_EQ(first.top.front().text, plain.top.front().text);  // the ranking itself is the model's
  EXPECT_TRUE(heuristic_runs_vendor(VendorMode::automatic, first));
  EXPECT_FALSE(heuristic_runs_vendor(VendorMode::off, first));

  Selection fallback = plain;  // no usable model, or no legal tilepick kernel: the vendor with auto
  fallback.from_model = false;
  EXPECT_TRUE(heuristic_runs_vendor(VendorMode::automatic, fallback));
  EXPECT_TRUE(heuristic_runs_vendor(VendorMode::automatic, Selection{}));

  spec["vendor_first"] = "yes";
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  const Selector bad(models());
  ASSERT_EQ(bad.models().size(), 1u);
  EXPECT_FALSE(bad.models()[0].usable());
  EXPECT_NE(bad.models()[0].rejected.find("key 'vendor_first' has the wrong type"), std::string::npos)
      << bad.models()[0].rejected;
}

// ------------------------------------------------------------------------------ vendor choice

// A LightGBM text model over the leading problem columns (a vendor_choice model); `names` = the
// schema's first `columns` names (all of them: a model that reads the whole row).
std::string vendor_model_text(const std::vector<Tree>& trees, std::size_t columns = feature_schema().problem_columns) {
  const FeatureSchema& s = feature_schema();
  std::ostringstream m;
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=" << columns - 1
    << "\nobjective=regression\nfeature_names=";
  for (std::size_t i = 0; i < columns; ++i) m << (i ? " " : "") << s.names[i];
  m << "\n\n";
  for (std::size_t i = 0; i < trees.size(); ++i) m << trees[i].text(static_cast<int>(i));
  m << "end of trees\n";
  return m.str();
}

// y = ln(vendor time / pick time): -1 (vendor faster) for dense convs, +1 for depthwise ones.
std::vector<Tree> depthwise_trees() { return {Tree{{{"conv_depthwise", 0.5, ~0, ~1}}, {-1, 1}}}; }

const char* const kDenseConv = "fwd g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
const char* const kDepthwiseConv = "fwd g64 mb2 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16";

nlohmann::json vendor_spec(const std::string& op, const nlohmann::json& threshold = 0.0,
                           const std::string& file = "../conv_half_h200.vendor_choice.txt.gz",
                           const std::string& text = vendor_model_text(depthwise_trees())) {
  nlohmann::json spec = spec_json(op);
  spec["vendor_choice"] = {{"model_file", file}, {"threshold", threshold}, {"model_text_fnv", hex16(fnv1a64(text))}};
  return spec;
}

TEST_F(SelectorTest, AVendorChoicePicksTheVendorPerProblemAndPlansKeyOnIt) {
  const std::string text = vendor_model_text(depthwise_trees());
  std::ofstream(dir_ / "models" / "conv_half_h200.vendor_choice.txt.gz", std::ios::binary) << sweep::gzip_member(text);
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd"));
  write_model("conv_bwd_data_half_h200", model_text(base_trees()), vendor_spec("conv_bwd_data"));
  const Selector sel(models());
  ASSERT_EQ(sel.models().size(), 2u);
  const ModelEntry &dgrad = sel.models()[0], &fwd = sel.models()[1];
  ASSERT_TRUE(fwd.usable()) << fwd.rejected;
  ASSERT_NE(fwd.vendor_model, nullptr) << fwd.vendor_error;
  EXPECT_EQ(fwd.vendor_model.get(), dgrad.vendor_model.get());  // one file, parsed once
  EXPECT_EQ(fwd.vendor_version, "vendor_choice@" + hex16(fnv1a64(text)));
  EXPECT_EQ(fwd.spec.vendor_choice->model_file, (dir_ / "models" / "conv_half_h200.vendor_choice.txt.gz").string());
  EXPECT_EQ(fwd.spec.vendor_choice->threshold, 0);

  const ArchSpec& h200 = test::arch("h200");
  const Selection dense = sel.select(parse_problem(kDenseConv), h200, 3);
  ASSERT_TRUE(dense.from_model);
  EXPECT_EQ(dense.vendor_log_ratio, -1);
  EXPECT_TRUE(dense.vendor_first);
  EXPECT_TRUE(dense.vendor_chosen);
  EXPECT_TRUE(heuristic_runs_vendor(VendorMode::automatic, dense));
  EXPECT_FALSE(heuristic_runs_vendor(VendorMode::off, dense));
  const Selection dw = sel.select(parse_problem(kDepthwiseConv), h200, 3);
  ASSERT_TRUE(dw.from_model);
  EXPECT_EQ(dw.vendor_log_ratio, 1);
  EXPECT_FALSE(dw.vendor_first);
  EXPECT_FALSE(dw.vendor_chosen);
  EXPECT_FALSE(heuristic_runs_vendor(VendorMode::automatic, dw));

  // Offline plans keep the pick (no vendor without a GPU) but key on the vendor choice model.
  Dispatcher d(sel);
  PlanOptions o;
  o.offline_arch = "h200";
  const auto plan = d.plan(parse_problem(kDenseConv), o);
  EXPECT_EQ(plan->info().model_version, fwd.spec.version + "+" + fwd.vendor_version);
  EXPECT_EQ(plan->info().kernel, dense.top.front().text);

  // The spec's flag still sends every problem to the vendor; then the choice is not what decided.
  nlohmann::json first = vendor_spec("conv_fwd");
  first["vendor_first"] = true;
  write_model("conv_fwd_half_h200", model_text(base_trees()), first);
  const Selector flagged(models());
  for (const char* problem : {kDenseConv, kDepthwiseConv}) {
    const Selection s = flagged.select(parse_problem(problem), h200, 3);
    EXPECT_TRUE(s.vendor_first) << problem;
    EXPECT_FALSE(s.vendor_chosen) << problem;
    EXPECT_FALSE(std::isnan(s.vendor_log_ratio)) << problem;
  }
  // A threshold under the dense prediction: the pick runs everywhere.
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd", -1.5));
  const Selection strict = Selector(models()).select(parse_problem(kDenseConv), h200, 3);
  EXPECT_EQ(strict.vendor_log_ratio, -1);
  EXPECT_FALSE(strict.vendor_first);
  EXPECT_FALSE(strict.vendor_chosen);
}

// A policy with vendor_choice=off (TILEPICK_POLICY=auto:vendor_choice=off replaced TILEPICK_VENDOR_CHOICE=off)
// ignores the model's vendor choice where it decides what a plan runs; the selector still reports it.
TEST_F(SelectorTest, TheVendorChoiceCanBeSwitchedOffByPolicy) {
  std::ofstream(dir_ / "models" / "conv_half_h200.vendor_choice.txt.gz", std::ios::binary)
      << sweep::gzip_member(vendor_model_text(depthwise_trees()));
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd"));
  const Problem dense = parse_problem(kDenseConv);
  const Selector selector(models());
  ASSERT_TRUE(selector.models()[0].usable());
  ASSERT_NE(selector.models()[0].vendor_model, nullptr);
  EXPECT_TRUE(selector.select(dense, test::arch("h200"), 3).vendor_chosen);
  TimingContext ctx;
  ctx.vendor_can = [] { return true; };
  const Timing on = what_to_time(parse_policy("heuristic"), selector, dense, test::arch("h200"), ctx);
  EXPECT_TRUE(on.run_vendor);
  EXPECT_TRUE(on.check_vendor);
  EXPECT_TRUE(on.ranking.vendor_chosen);
  const Timing off = what_to_time(parse_policy("heuristic:vendor_choice=off"), selector, dense, test::arch("h200"), ctx);
  EXPECT_FALSE(off.run_vendor);
  EXPECT_FALSE(off.check_vendor);
  EXPECT_FALSE(off.ranking.vendor_first);
  EXPECT_FALSE(off.ranking.vendor_chosen);
  EXPECT_EQ(off.ranking.top.front().text, on.ranking.top.front().text);
  // The variable it replaced is refused, naming the replacement.
  setenv("TILEPICK_VENDOR_CHOICE", "off", 1);
  EXPECT_THROW(
      {
        try {
          environment_policy();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("TILEPICK_POLICY=auto:vendor_choice=off"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  unsetenv("TILEPICK_VENDOR_CHOICE");
}

TEST_F(SelectorTest, AVendorChoiceThatCannotBeUsedLeavesTheModelDecidingWithoutIt) {
  const ArchSpec& h200 = test::arch("h200");
  const Problem p = parse_problem(kDenseConv);
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd", 0.0, "../nowhere.txt.gz"));
  ::testing::internal::CaptureStderr();
  const Selector missing(models());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(missing.models().size(), 1u);
  const ModelEntry& m = missing.models()[0];
  EXPECT_TRUE(m.usable()) << m.rejected;
  EXPECT_EQ(m.vendor_model, nullptr);
  EXPECT_NE(m.vendor_error.find("nowhere.txt.gz"), std::string::npos) << m.vendor_error;
  EXPECT_NE(m.vendor_error.find("missing"), std::string::npos) << m.vendor_error;
  if (env::log_level() >= 1) {
    EXPECT_NE(err.find("model conv_fwd_half_h200 decides without its vendor choice: "), std::string::npos) << err;
  }
  const Selection s = missing.select(p, h200, 3);
  EXPECT_TRUE(s.from_model);
  EXPECT_FALSE(s.vendor_first);
  EXPECT_FALSE(s.vendor_chosen);
  EXPECT_TRUE(std::isnan(s.vendor_log_ratio));

  // A model over the whole row, not the leading problem columns.
  const std::string full = vendor_model_text(depthwise_trees(), feature_schema().size());
  std::ofstream(dir_ / "models" / "full.txt.gz", std::ios::binary) << sweep::gzip_member(full);
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd", 0.0, "../full.txt.gz", full));
  const Selector whole(models());
  const ModelEntry& w = whole.models()[0];
  EXPECT_TRUE(w.usable()) << w.rejected;
  EXPECT_EQ(w.vendor_model, nullptr);
  EXPECT_NE(w.vendor_error.find("must read the first " + std::to_string(feature_schema().problem_columns) +
                                " features of the schema"),
            std::string::npos)
      << w.vendor_error;
  EXPECT_NE(w.vendor_error.find("the model has " + std::to_string(feature_schema().size()) + " features"),
            std::string::npos)
      << w.vendor_error;
  EXPECT_TRUE(std::isnan(whole.select(p, h200, 3).vendor_log_ratio));

  // A vendor model file that is not the one the spec's hash names.
  write_model("conv_fwd_half_h200", model_text(base_trees()),
              vendor_spec("conv_fwd", 0.0, "../full.txt.gz", vendor_model_text(depthwise_trees())));
  const Selector swapped(models());
  EXPECT_TRUE(swapped.models()[0].usable()) << swapped.models()[0].rejected;
  EXPECT_EQ(swapped.models()[0].vendor_model, nullptr);
  EXPECT_NE(swapped.models()[0].vendor_error.find("vendor_choice.model_text_fnv"), std::string::npos)
      << swapped.models()[0].vendor_error;

  // A malformed key refuses the folder, naming it.
  for (const auto& [spec, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {vendor_spec("conv_fwd", "0.1"), "key 'vendor_choice.threshold' has the wrong type"},
           {vendor_spec("conv_fwd", true), "key 'vendor_choice.threshold' has the wrong type"},
           {vendor_spec("conv_fwd", nullptr), "key 'vendor_choice.threshold' has the wrong type"},
           {[] { auto j = spec_json("conv_fwd"); j["vendor_choice"] = "x.txt"; return j; }(),
            "key 'vendor_choice' has the wrong type"},
           {[] { auto j = spec_json("conv_fwd"); j["vendor_choice"] = {{"threshold", 0}}; return j; }(),
            "missing key 'vendor_choice.model_file'"},
           {[] { auto j = spec_json("conv_fwd"); j["vendor_choice"] = {{"model_file", 3}, {"threshold", 0}}; return j; }(),
            "key 'vendor_choice.model_file' has the wrong type"},
           {[] { auto j = vendor_spec("conv_fwd"); j["vendor_choice"].erase("model_text_fnv"); return j; }(),
            "missing key 'vendor_choice.model_text_fnv'"}}) {
    write_model("conv_fwd_half_h200", model_text(base_trees()), spec);
    const Selector bad(models());
    ASSERT_EQ(bad.models().size(), 1u);
    EXPECT_FALSE(bad.models()[0].usable());
    EXPECT_NE(bad.models()[0].rejected.find(want), std::string::npos) << bad.models()[0].rejected;
  }
}

TEST_F(SelectorTest, ConcurrentRankingMatchesSerial) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  const Selector sel(models());
  const ArchSpec& h200 = test::arch("h200");
  const std::vector<Problem> problems{parse_problem(kPoolProblem), parse_problem("gemm rcr m8 n4096 k4096 bf16"),
                                      parse_problem("fwd g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16")};
  std::vector<std::vector<std::string>> serial;
  for (const auto& p : problems) {
    serial.emplace_back();
    for (const auto& r : sel.rank(p, h200)) serial.back().push_back(r.text + " " + std::to_string(r.score));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep)
        for (std::size_t i = 0; i < problems.size(); ++i) {
          const auto r = sel.rank(problems[(i + t) % problems.size()], h200);
          const auto& want = serial[(i + t) % problems.size()];
          if (r.size() != want.size()) {
            ++mismatches[t];
            continue;
          }
          for (std::size_t j = 0; j < r.size(); ++j)
            mismatches[t] += r[j].text + " " + std::to_string(r[j].score) != want[j];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST_F(SelectorTest, SelectReturnsTopKAndTheMarginAsConfidence) {
  const Problem p = parse_problem(kPoolProblem);
  const ArchSpec& h200 = test::arch("h200");
  // A config of the top group (score 11) that is not first by string gets +1: a unique top with
  // a margin of exactly 1.
  const auto pool = Registry::default_registry().lookup(p, h200);
  std::vector<KernelConfig> top_group;
  for (const auto& e : pool)
    if (base_score(e.config) == 11) top_group.push_back(e.config);
  ASSERT_GE(top_group.size(), 3u);
  const KernelConfig chosen = top_group.back();
  auto trees = base_trees();
  trees.push_back(isolate(chosen, p));
  write_model("gemm_half_h200", model_text(trees), spec_json());
  Selector sel(models());
  const Selection s = sel.select(p, h200, 3);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.pool_size, pool.size());
  EXPECT_TRUE(s.from_model);
  EXPECT_EQ(s.source, "model:gemm_half_h200");
  EXPECT_EQ(s.units, "model:regression");
  EXPECT_EQ(s.top[0].config, chosen);
  EXPECT_EQ(s.top[0].score, 12);
  EXPECT_EQ(s.top[1].score, 11);
  EXPECT_DOUBLE_EQ(s.confidence, 1.0);
  EXPECT_EQ(sel.select(p, h200, 0).top.size(), pool.size());  // k = 0: all
}

TEST_F(SelectorTest, HashMismatchFallsBackWithOneWarning) {
  auto spec = spec_json();
  spec["space_hash"] = "0123456789abcdef";
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  Selector sel(models());
  ASSERT_EQ(sel.models().size(), 1u);
  EXPECT_FALSE(sel.models()[0].usable());
  EXPECT_NE(sel.models()[0].rejected.find("config space hash 0123456789abcdef"), std::string::npos)
      << sel.models()[0].rejected;
  const Problem p = parse_problem(kPoolProblem);
  const ArchSpec& h200 = test::arch("h200");
  std::string why;
  EXPECT_EQ(sel.model_for(p, h200, &why), nullptr);
  EXPECT_EQ(why, sel.models()[0].rejected);

  ::testing::internal::CaptureStderr();
  const auto ranked = sel.rank(p, h200);
  Selection s = sel.select(p, h200, 4);
  Selector(models()).rank(p, h200, 1);  // another instance: still the same process
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t warnings = 0;
  for (std::size_t at = err.find("uses the analytic fallback"); at != std::string::npos;
       at = err.find("uses the analytic fallback", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_NE(err.find("config space hash"), std::string::npos) << err;

  for (const auto& r : ranked) {
    EXPECT_EQ(r.source, "fallback");
    EXPECT_EQ(r.score, heuristic_score(p, r.config, h200));
  }
  EXPECT_FALSE(s.from_model);
  EXPECT_EQ(s.units, "ln_ratio");
  EXPECT_EQ(s.reason, sel.models()[0].rejected);
  ASSERT_EQ(s.top.size(), 4u);
  EXPECT_DOUBLE_EQ(s.confidence, std::log(s.top[0].score / s.top[1].score));
}

// A model file edited (a leaf negated) or replaced by another folder's after training, a missing
// text hash or a score direction other than higher_is_better: the folder is refused, saying why.
TEST_F(SelectorTest, EditedOrReplacedModelFilesAndOtherScoreDirectionsAreRefused) {
  const std::string trained = model_text(base_trees());
  std::string edited = trained;
  const std::size_t leaf = edited.find("leaf_value=");
  ASSERT_NE(leaf, std::string::npos);
  edited.insert(leaf + 11, "-");
  auto spec = spec_json();
  spec["model_text_fnv"] = hex16(fnv1a64(trained));
  write_model("gemm_half_h200", edited, spec);
  Selector sel(models());
  ASSERT_EQ(sel.models().size(), 1u);
  EXPECT_FALSE(sel.models()[0].usable());
  EXPECT_NE(sel.models()[0].rejected.find("edited or replaced after training"), std::string::npos) << sel.models()[0].rejected;
  EXPECT_NE(sel.models()[0].rejected.find(hex16(fnv1a64(trained))), std::string::npos) << sel.models()[0].rejected;
  EXPECT_EQ(sel.model_for(parse_problem(kPoolProblem), test::arch("h200")), nullptr);  // the fallback ranks

  // A spec that names another op, dtype family or arch than its folder.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"op", "conv_fwd"}, {"dtype_family", "tf32"}, {"arch", "h100_sxm"}}) {
    auto s = spec_json();
    s[key] = value;
    if (key == "op") s["space_hash"] = config_space_hash("conv_fwd");
    fs::remove_all(dir_ / "models");
    write_model("gemm_half_h200", trained, s);
    Selector moved(models());
    ASSERT_EQ(moved.models().size(), 1u);
    EXPECT_FALSE(moved.models()[0].usable()) << key;
    EXPECT_NE(moved.models()[0].rejected.find("but the folder is gemm_half_h200"), std::string::npos)
        << moved.models()[0].rejected;
  }

  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"model_text_fnv", nullptr, "missing key 'model_text_fnv'"},
           {"score", "lower_is_better", "higher_is_better"},
           {"score", 1, "higher_is_better"}}) {
    auto s = spec_json();
    s["model_text_fnv"] = hex16(fnv1a64(trained));
    if (value.is_null()) s.erase(key);
    else s[key] = value;
    fs::remove_all(dir_ / "models");
    fs::create_directories(dir_ / "models" / "gemm_half_h200");
    std::ofstream(dir_ / "models" / "gemm_half_h200" / "model.txt.gz", std::ios::binary) << sweep::gzip_member(trained);
    std::ofstream(dir_ / "models" / "gemm_half_h200" / "feature_spec.json") << s.dump(2);
    Selector bad(models());
    ASSERT_EQ(bad.models().size(), 1u);
    EXPECT_FALSE(bad.models()[0].usable()) << key;
    EXPECT_NE(bad.models()[0].rejected.find(want), std::string::npos) << bad.models()[0].rejected;
  }
}

TEST_F(SelectorTest, SchemaMismatchAndBrokenFoldersAreRefusedWithTheReason) {
  auto spec = spec_json();
  spec["schema_hash"] = "ffffffffffffffff";
  write_model("a_schema", model_text(base_trees()), spec);
  write_model("b_broken", "not a model", spec_json());
  fs::create_directories(dir_ / "models" / "c_no_spec");  // ignored: no feature_spec.json
  Selector sel(models());
  ASSERT_EQ(sel.models().size(), 2u);
  EXPECT_NE(sel.models()[0].rejected.find("feature schema hash ffffffffffffffff"), std::string::npos);
  EXPECT_NE(sel.models()[1].rejected.find("cannot be used"), std::string::npos) << sel.models()[1].rejected;
  EXPECT_EQ(sel.model_for(parse_problem(kPoolProblem), test::arch("h200")), nullptr);
  Selector none((dir_ / "absent").string());
  EXPECT_TRUE(none.models().empty());
  std::string why;
  EXPECT_EQ(none.model_for(parse_problem(kPoolProblem), test::arch("h200"), &why), nullptr);
  EXPECT_NE(why.find("no model for gemm half h200"), std::string::npos) << why;
}

TEST_F(SelectorTest, FoldersNamingOneModelFileShareItsParsedModel) {
  // The conv directions of a pooled model: one file at the models root, named by each feature_spec.
  std::ofstream(dir_ / "models" / "conv_half_h200.model.txt.gz", std::ios::binary)
      << sweep::gzip_member(model_text(base_trees()));
  for (const std::string op : {"conv_fwd", "conv_bwd_data"}) {
    const fs::path d = dir_ / "models" / (op + "_half_h200");
    fs::create_directories(d);
    auto spec = spec_json(op);
    spec["model_file"] = "../conv_half_h200.model.txt.gz";
    spec["model_text_fnv"] = hex16(fnv1a64(model_text(base_trees())));
    std::ofstream(d / "feature_spec.json") << spec.dump(2);
  }
  auto missing = spec_json("conv_bwd_weight");
  missing["model_file"] = "../nowhere.txt.gz";
  write_model("conv_bwd_weight_half_h200", model_text(base_trees()), missing);  // its own copy is not read
  Selector sel(models());
  ASSERT_EQ(sel.models().size(), 3u);
  const ModelEntry &dgrad = sel.models()[0], &wgrad = sel.models()[1], &fwd = sel.models()[2];
  ASSERT_TRUE(fwd.usable() && dgrad.usable()) << fwd.rejected << dgrad.rejected;
  EXPECT_EQ(fwd.model.get(), dgrad.model.get());  // parsed once
  EXPECT_EQ(fwd.spec.version.substr(fwd.spec.version.find('@')), dgrad.spec.version.substr(dgrad.spec.version.find('@')));
  EXPECT_NE(wgrad.rejected.find("names model_file"), std::string::npos) << wgrad.rejected;
  EXPECT_NE(wgrad.rejected.find("nowhere.txt.gz"), std::string::npos) << wgrad.rejected;
  Selector again(models());  // another Selector while the first holds it: the same parsed model
  EXPECT_EQ(again.models()[2].model.get(), fwd.model.get());
}

// ------------------------------------------------------------------------------ evaluation

const char* const kA = "fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct";  // model 11
const char* const kB = "fam=sm80 tile=64x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct";   // 1
const char* const kC = "fam=sm80 tile=64x64x32 warps=2x2 stages=2 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct";    // 0
const char* const kP1 = "gemm rcr m64 n256 k512 bf16";
const char* const kP2 = "gemm rcr m8 n256 k512 bf16";
const char* const kP3 = "gemm rcr m4096 n256 k512 bf16";

sweep::Record rec(const std::string& problem, const std::string& config, const std::string& status, double us) {
  sweep::Record r;
  r.problem = problem;
  r.config = config;
  r.status = status;
  r.median_us = us;
  return r;
}

// P1: A 12 us, B 10 (oracle), C 20; cuBLASLt heur 11, best 10.5.  P2: A wrong, B 10, C 9 (oracle).
// P3: only failures (skipped).
void write_records(const std::string& path) {
  sweep::RecordWriter w(path, {{"format", sweep::kRecordFormat}, {"options", {{"arch", "h200"}}}});
  for (const auto& r : {rec(kP1, kA, "ok", 12), rec(kP1, kB, "ok", 10), rec(kP1, kC, "ok", 20),
                        rec(kP1, "vendor=cublaslt:heur", "ok", 11), rec(kP1, "vendor=cublaslt:best", "ok", 10.5),
                        rec(kP2, kA, "wrong", 0), rec(kP2, kB, "ok", 10), rec(kP2, kC, "ok", 9),
                        rec(kP3, kA, "crash", 0), rec(kP3, kB, "error", 0)})
    w.append(r);
}

TEST_F(SelectorTest, EvalScoresChoicesAgainstTheOracleAndTheVendor) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  write_records((dir_ / "r.csv.gz").string());
  Selector sel(models());
  const ArchSpec& h200 = test::arch("h200");
  auto file = sweep::read_record_file((dir_ / "r.csv.gz").string());
  const auto report = eval::evaluate(sel, file.records, h200, {{kP1, "llm"}});
  EXPECT_EQ(report.skipped, 1u);
  ASSERT_EQ(report.problems.size(), 2u);

  const auto& p1 = report.problems[0];
  EXPECT_EQ(p1.problem, kP1);
  EXPECT_EQ(p1.candidates, 3u);
  EXPECT_EQ(p1.model.config, to_string(resolve(parse_config(kA), parse_problem(kP1))));
  EXPECT_EQ(p1.model.source, "model:gemm_half_h200");
  EXPECT_DOUBLE_EQ(p1.model.efficiency, 10.0 / 12.0);
  EXPECT_EQ(p1.model.oracle_rank, 2);
  EXPECT_FALSE(p1.model.top1);  // 12 > 10 * 1.02
  EXPECT_TRUE(p1.model.top5);
  EXPECT_EQ(p1.vendor, "cublaslt");
  EXPECT_DOUBLE_EQ(p1.vendor_best_us, 10.5);
  EXPECT_EQ(p1.slices, (std::vector<std::string>{"m=small", "net=llm"}));

  const auto& p2 = report.problems[1];
  EXPECT_TRUE(p2.model.failed);
  EXPECT_EQ(p2.model.status, "wrong");
  EXPECT_EQ(p2.model.efficiency, 0);
  EXPECT_EQ(p2.model.oracle_rank, 3);
  EXPECT_TRUE(p2.model.top5);
  EXPECT_EQ(p2.slices, (std::vector<std::string>{"m=tiny"}));

  // The analytic fallback's pick over the same candidates.
  for (const auto* p : {&p1, &p2}) {
    const Problem prob = parse_problem(p->problem);
    std::vector<std::pair<double, std::string>> scored;
    for (const char* c : {kA, kB, kC}) {
      KernelConfig r = resolve(parse_config(c), prob);
      scored.push_back({-heuristic_score(prob, r, h200), to_string(r)});
    }
    std::sort(scored.begin(), scored.end());
    EXPECT_EQ(p->fallback.config, scored.front().second);
    EXPECT_EQ(p->fallback.source, "fallback");
  }

  const eval::GroupEval* g = eval::find_group(report, "gemm");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->model.count, 2u);
  EXPECT_EQ(g->model.failed, 1u);
  EXPECT_DOUBLE_EQ(g->model.mean, 10.0 / 24.0);
  EXPECT_DOUBLE_EQ(g->model.median, 10.0 / 24.0);
  EXPECT_DOUBLE_EQ(g->model.p10, 0.1 * 10.0 / 12.0);
  EXPECT_DOUBLE_EQ(g->model.min, 0);
  EXPECT_DOUBLE_EQ(g->model.top1, 0);
  EXPECT_DOUBLE_EQ(g->model.top5, 1);
  EXPECT_DOUBLE_EQ(g->model.regret_us, 2);  // P1 only: P2's choice failed
  EXPECT_EQ(g->vendor_own.count, 1u);
  EXPECT_DOUBLE_EQ(g->vendor_own.mean, 10.5 / 11);
  EXPECT_DOUBLE_EQ(g->vendor_vs_oracle.mean, 10.0 / 11);
  EXPECT_DOUBLE_EQ(g->vendor_vs_oracle.regret_us, 1);
  EXPECT_TRUE(std::isnan(g->vendor_own.top5));
  ASSERT_NE(eval::find_group(report, "gemm net=llm"), nullptr);
  EXPECT_NE(eval::format_table(report).find("per network"), std::string::npos);
  EXPECT_EQ(eval::find_group(report, "gemm m=tiny")->model.count, 1u);
  EXPECT_EQ(eval::find_group(report, "source=model:gemm_half_h200")->model.count, 2u);
  EXPECT_EQ(eval::to_json(report)["skipped"], 1);
}

// Timed (dispatch top_k): the fastest of the model's first kTimedTopK ranked measured configs; own:
// whether the model's whole-pool choices are among the measured ones.
TEST_F(SelectorTest, EvalScoresTheTimedTopKAndWhetherTheModelsOwnChoicesWereMeasured) {
  EXPECT_EQ(eval::kTimedTopK, PlanOptions{}.k);
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  Selector sel(models());
  const ArchSpec& h200 = test::arch("h200");
  const auto top = sel.rank(parse_problem(kP1), h200, 6);
  ASSERT_EQ(top.size(), 6u);
  // The model's 5th choice is the oracle: beyond the timed 4.
  const std::array<double, 6> us = {15, 14, 13, 12, 5, 16};
  std::vector<sweep::Record> records;
  for (std::size_t i = 0; i < top.size(); ++i) records.push_back(rec(kP1, top[i].text, "ok", us[i]));
  // P2: only the model's 2nd and 3rd choices measured; the 2nd failed.
  const auto top2 = sel.rank(parse_problem(kP2), h200, 3);
  records.push_back(rec(kP2, top2[1].text, "wrong", 0));
  records.push_back(rec(kP2, top2[2].text, "ok", 8));
  const auto report = eval::evaluate(sel, records, h200, {});
  ASSERT_EQ(report.problems.size(), 2u);
  const auto& p1 = report.problems[0];
  EXPECT_EQ(p1.model.config, top[0].text);
  EXPECT_DOUBLE_EQ(p1.model.efficiency, 5.0 / 15);
  EXPECT_DOUBLE_EQ(p1.timed_us, 12);
  EXPECT_DOUBLE_EQ(p1.timed_efficiency, 5.0 / 12);
  EXPECT_TRUE(p1.own_first_measured);
  EXPECT_EQ(p1.own_top_k_measured, 4);
  const Selection own1 = sel.select(parse_problem(kP1), h200, 4);
  EXPECT_DOUBLE_EQ(p1.own_confidence, own1.confidence);
  EXPECT_FALSE(std::isnan(p1.own_confidence));  // set (NaN where no whole-pool choice)
  const auto& p2 = report.problems[1];
  EXPECT_EQ(p2.model.status, "wrong");
  EXPECT_DOUBLE_EQ(p2.timed_us, 8);
  EXPECT_DOUBLE_EQ(p2.timed_efficiency, 1);
  EXPECT_FALSE(p2.own_first_measured);
  EXPECT_EQ(p2.own_top_k_measured, 2);
  const eval::GroupEval* g = eval::find_group(report, "gemm");
  ASSERT_NE(g, nullptr);
  EXPECT_DOUBLE_EQ(g->timed.mean, (5.0 / 12 + 1) / 2);
  // Time-weighted: the problems' times add up (P1's 12 us weighs more than P2's 8), and a failed pick
  // (P2's first choice) leaves the group at 0.
  EXPECT_DOUBLE_EQ(g->timed.time_weighted, (5.0 + 8) / (12 + 8));
  EXPECT_DOUBLE_EQ(g->model.time_weighted, 0);
  EXPECT_DOUBLE_EQ(eval::to_json(report)["groups"][0]["model_timed_top_k"]["time_weighted"], 13.0 / 20);
  EXPECT_DOUBLE_EQ(g->own_first_measured, 0.5);
  EXPECT_DOUBLE_EQ(g->own_top_k_measured, 0.5);
  EXPECT_NE(eval::format_table(report).find(" t4 "), std::string::npos);
  // The whole-pool t4 names the shortlist rule it timed (dispatch's, varied, unless asked otherwise).
  EXPECT_EQ(eval::to_json(report)["shortlist"], "varied");
  EXPECT_NE(eval::format_table(report).find("top_k's shortlist, varied"), std::string::npos);
  EXPECT_EQ(eval::to_json(eval::evaluate(sel, records, h200, {}, {.shortlist = Shortlist::first}))["shortlist"], "first");
  EXPECT_EQ(eval::to_json(report)["groups"][0]["own_first_measured"], 0.5);
  // What dispatch runs: P1's whole-pool first choice and the fastest of its first 4 (all measured);
  // P2's first choice was not measured, so it is left out of those numbers.
  EXPECT_DOUBLE_EQ(p1.own_first_us, 15);
  EXPECT_FALSE(p1.own_first_failed);
  EXPECT_DOUBLE_EQ(p1.own_timed_us, 12);
  EXPECT_TRUE(std::isnan(p2.own_first_us));
  EXPECT_TRUE(std::isnan(p2.own_timed_us));
  EXPECT_EQ(g->own_first.count, 1u);
  EXPECT_DOUBLE_EQ(g->own_first.mean, 5.0 / 15);
  EXPECT_EQ(g->own_timed.count, 1u);
  EXPECT_DOUBLE_EQ(g->own_timed.mean, 5.0 / 12);
  EXPECT_DOUBLE_EQ(g->own_first.time_weighted, 5.0 / 15);
  EXPECT_EQ(eval::to_json(report)["groups"][0]["own_first_choice"]["count"], 1);
  EXPECT_NE(eval::format_table(report).find("whole-pool choices"), std::string::npos);
  EXPECT_NE(eval::to_csv(report).find(",own_first_us,own_first_efficiency,own_timed_us,own_timed_efficiency,"),
            std::string::npos);

  // k = 5 reaches P1's oracle; k = 1 is the first choice (P2's failed: nothing timed).
  const auto five = eval::evaluate(sel, records, h200, {}, {.timed_k = 5});
  EXPECT_DOUBLE_EQ(five.problems[0].timed_us, 5);
  EXPECT_EQ(five.problems[0].own_top_k_measured, 5);
  EXPECT_NE(eval::format_table(five).find(" t5 "), std::string::npos);
  const auto one = eval::evaluate(sel, records, h200, {}, {.timed_k = 1});
  EXPECT_DOUBLE_EQ(one.problems[0].timed_efficiency, one.problems[0].model.efficiency);
  EXPECT_TRUE(std::isnan(one.problems[1].timed_us));
  EXPECT_EQ(one.problems[1].timed_efficiency, 0);
  EXPECT_THROW(eval::evaluate(sel, records, h200, {}, {.timed_k = 0}), Error);
}

TEST_F(SelectorTest, EvalTimesARepeatedPairByItsFastestOrItsMedianRecord) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  Selector sel(models());
  const ArchSpec& h200 = test::arch("h200");
  const auto top = sel.rank(parse_problem(kP1), h200, 2);
  ASSERT_EQ(top.size(), 2u);
  // The model's choice ran three times (one lucky pass), the other config twice and once failed.
  std::vector<sweep::Record> records;
  for (double us : {9.0, 12.0, 11.0}) records.push_back(rec(kP1, top[0].text, "ok", us));
  for (double us : {10.0, 10.5}) records.push_back(rec(kP1, top[1].text, "ok", us));
  records.push_back(rec(kP1, top[1].text, "wrong", 0));
  records.push_back(rec(kP1, "vendor=cublaslt:heur", "ok", 20));
  records.push_back(rec(kP1, "vendor=cublaslt:heur", "ok", 30));
  records.push_back(rec(kP1, "vendor=cublaslt:heur", "ok", 25));

  const auto fastest = eval::evaluate(sel, records, h200, {});
  ASSERT_EQ(fastest.problems.size(), 1u);
  EXPECT_DOUBLE_EQ(fastest.problems[0].model.us, 9);
  EXPECT_DOUBLE_EQ(fastest.problems[0].oracle_us, 9);
  EXPECT_DOUBLE_EQ(fastest.problems[0].vendor_heur_us, 20);

  // Median: 11 for the choice, the lower middle 10 of the other config's two ok records: it is the oracle.
  const auto median = eval::evaluate(sel, records, h200, {}, {.repeats = eval::Repeats::median});
  const auto& p = median.problems[0];
  EXPECT_DOUBLE_EQ(p.model.us, 11);
  EXPECT_DOUBLE_EQ(p.oracle_us, 10);
  EXPECT_EQ(p.oracle_config, top[1].text);
  EXPECT_DOUBLE_EQ(p.model.efficiency, 10.0 / 11);
  EXPECT_DOUBLE_EQ(p.vendor_heur_us, 25);
}

// What dispatch's heuristic strategy runs with vendor auto: the model's first choice, or the vendor's
// heuristic kernel for a vendor_first model; against the fastest measured kernel, ours or the vendor's.
TEST_F(SelectorTest, EvalScoresWhatDispatchHeuristicRunsAgainstTheFastestKnownKernel) {
  const ArchSpec& h200 = test::arch("h200");
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  const auto top1 = Selector(models()).rank(parse_problem(kP1), h200, 2);
  const auto top2 = Selector(models()).rank(parse_problem(kP2), h200, 1);
  const auto top3 = Selector(models()).rank(parse_problem(kP3), h200, 1);
  ASSERT_EQ(top1.size(), 2u);
  // P1: our first choice 12, our oracle 10; cuBLASLt heur 9, best 8 (the fastest known).
  // P2: our first choice 10 (the oracle); cuBLASLt heur failed, no best row.  P3: no vendor rows.
  const std::vector<sweep::Record> records = {
      rec(kP1, top1[0].text, "ok", 12), rec(kP1, top1[1].text, "ok", 10), rec(kP1, "vendor=cublaslt:heur", "ok", 9),
      rec(kP1, "vendor=cublaslt:best", "ok", 8), rec(kP2, top2[0].text, "ok", 10),
      rec(kP2, "vendor=cublaslt:heur", "wrong", 0), rec(kP3, top3[0].text, "ok", 5)};
  auto same = [](const eval::Stats& a, const eval::Stats& b) {
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.failed, b.failed);
    EXPECT_DOUBLE_EQ(a.mean, b.mean);
    EXPECT_DOUBLE_EQ(a.min, b.min);
    EXPECT_DOUBLE_EQ(a.time_weighted, b.time_weighted);
  };

  const auto ours = eval::evaluate(Selector(models()), records, h200, {});
  ASSERT_EQ(ours.problems.size(), 3u);
  const auto& p1 = ours.problems[0];
  EXPECT_FALSE(p1.own_vendor_first);
  EXPECT_DOUBLE_EQ(p1.oracle_us, 10);
  EXPECT_DOUBLE_EQ(p1.best_known_us, 8);  // the vendor's best beats our oracle
  EXPECT_DOUBLE_EQ(p1.dispatch_us, 12);
  EXPECT_DOUBLE_EQ(ours.problems[1].best_known_us, 10);
  EXPECT_TRUE(ours.problems[1].dispatch_defined);
  EXPECT_FALSE(ours.problems[2].dispatch_defined);  // no vendor heuristic row
  const eval::GroupEval* g = eval::find_group(ours, "gemm");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->dispatch.count, 2u);
  EXPECT_DOUBLE_EQ(g->dispatch.mean, (8.0 / 12 + 1) / 2);
  EXPECT_DOUBLE_EQ(g->dispatch.time_weighted, (8.0 + 10) / (12 + 10));
  same(g->dispatch, g->ours_alone);
  EXPECT_EQ(g->vendor_alone.failed, 1u);
  EXPECT_DOUBLE_EQ(g->vendor_alone.mean, 8.0 / 9 / 2);
  EXPECT_DOUBLE_EQ(g->vendor_alone.time_weighted, 0);
  EXPECT_DOUBLE_EQ(g->dispatch_vendor_share, 0);
  // race: the faster of our first choice and the vendor's heuristic kernel that passed (P1 9, P2 10).
  EXPECT_DOUBLE_EQ(p1.race_us, 9);
  EXPECT_DOUBLE_EQ(ours.problems[1].race_us, 10);
  EXPECT_EQ(g->race.count, 2u);
  EXPECT_EQ(g->race.failed, 0u);
  EXPECT_DOUBLE_EQ(g->race.mean, (8.0 / 9 + 1) / 2);
  EXPECT_DOUBLE_EQ(g->race.time_weighted, (8.0 + 10) / (9 + 10));
  // auto: these small GEMMs are estimated under its default 100 us, so it runs what the heuristic runs
  for (const auto& p : ours.problems) {
    EXPECT_GT(p.own_first_est_us, 0);
    EXPECT_LT(p.own_first_est_us, 100);
    EXPECT_FALSE(p.auto_timed);
  }
  EXPECT_DOUBLE_EQ(p1.auto_us, 12);
  same(g->auto_, g->dispatch);
  EXPECT_DOUBLE_EQ(g->auto_timed_share, 0);
  // ... and with a threshold of 0 it times every plan as top_k with the vendor: P1's shortlist is not all measured,
  // so its first choice (12) against the vendor's best (8); P2 our 10 (the vendor's kernel failed, no best row)
  ::setenv("TILEPICK_POLICY", "auto:time_us=0", 1);
  const auto timed = eval::evaluate(Selector(models()), records, h200, {});
  ::unsetenv("TILEPICK_POLICY");
  EXPECT_DOUBLE_EQ(timed.auto_time_us, 0);
  EXPECT_TRUE(timed.problems[0].auto_timed);
  EXPECT_DOUBLE_EQ(timed.problems[0].auto_us, 8);
  EXPECT_DOUBLE_EQ(timed.problems[1].auto_us, 10);
  const eval::GroupEval* gt = eval::find_group(timed, "gemm");
  ASSERT_NE(gt, nullptr);
  EXPECT_DOUBLE_EQ(gt->auto_.mean, 1);
  EXPECT_DOUBLE_EQ(gt->auto_timed_share, 1);
  same(gt->dispatch, g->dispatch);

  nlohmann::json spec = spec_json();
  spec["vendor_first"] = true;
  write_model("gemm_half_h200", model_text(base_trees()), spec);
  // A vendor_first model is followed without dispatch's check of the vendor's kernel (only a vendor choice is
  // checked): the vendor's failed kernel is dispatch's failed pick.
  const auto vendor = eval::evaluate(Selector(models()), records, h200, {});
  ASSERT_EQ(vendor.problems.size(), 3u);
  EXPECT_TRUE(vendor.problems[0].own_vendor_first);
  EXPECT_FALSE(vendor.problems[0].own_vendor_chosen);
  EXPECT_DOUBLE_EQ(vendor.problems[0].dispatch_us, 9);
  const auto& p2 = vendor.problems[1];  // the vendor's failed kernel is a failed pick
  EXPECT_TRUE(p2.dispatch_failed);
  EXPECT_TRUE(std::isnan(p2.dispatch_us));
  const eval::GroupEval* v = eval::find_group(vendor, "gemm");
  ASSERT_NE(v, nullptr);
  same(v->dispatch, v->vendor_alone);
  same(v->ours_alone, g->ours_alone);
  EXPECT_EQ(v->dispatch.failed, 1u);
  EXPECT_DOUBLE_EQ(v->dispatch.min, 0);
  EXPECT_DOUBLE_EQ(v->dispatch.time_weighted, 0);
  EXPECT_DOUBLE_EQ(v->dispatch_vendor_share, 1);
  same(v->race, g->race);  // the race times both sides whatever the heuristic would run

  const auto j = eval::to_json(vendor)["groups"][0];
  EXPECT_EQ(j["dispatch"]["count"], 2);
  EXPECT_EQ(j["dispatch_vendor_share"], 1.0);
  EXPECT_TRUE(j.contains("ours_alone") && j.contains("vendor_alone"));
  EXPECT_EQ(j["race"]["count"], 2);
  const std::string csv = eval::to_csv(vendor);
  EXPECT_NE(csv.find(",own_vendor_first,own_vendor_chosen,best_known_us,dispatch_us,dispatch_efficiency,race_us,"
                     "race_efficiency,own_first_est_us,auto_timed,auto_us,auto_efficiency\n"),
            std::string::npos);
  EXPECT_NE(csv.find(",1,0,8.0000,9.0000,0.888889,9.0000,0.888889,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0,9.0000,0.888889\n"), std::string::npos) << csv;                         // auto untimed
  EXPECT_NE(csv.find(",1,0,10.0000,,0.000000,10.0000,1.000000,"), std::string::npos) << csv;  // failed: 0
  EXPECT_NE(csv.find(",0,,0.000000\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1,0,5.0000,,,,,"), std::string::npos) << csv;                          // undefined: empty
  EXPECT_NE(csv.find(",0,,\n"), std::string::npos) << csv;
  EXPECT_EQ(j["auto"]["count"], 2);
  EXPECT_EQ(eval::to_json(vendor)["auto_time_us"], 100.0);
  EXPECT_NE(eval::format_table(vendor).find("what dispatch's heuristic strategy runs"), std::string::npos);

  // auto's timed plan under a vendor_first model times the vendor alone: P1 with the vendor slower than our first
  // choice (12) runs the vendor's best (14); P2, where none of the vendor's passed, times ours (10).
  std::vector<sweep::Record> slow_vendor = records;
  for (auto& r : slow_vendor)
    if (r.problem == kP1 && r.config == "vendor=cublaslt:heur") r.median_us = 15;
    else if (r.problem == kP1 && r.config == "vendor=cublaslt:best") r.median_us = 14;
  ::setenv("TILEPICK_POLICY", "auto:time_us=0", 1);
  const auto vendor_timed = eval::evaluate(Selector(models()), slow_vendor, h200, {});
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  const auto ours_timed = eval::evaluate(Selector(models()), slow_vendor, h200, {});
  ::unsetenv("TILEPICK_POLICY");
  ASSERT_TRUE(vendor_timed.problems[0].auto_timed);
  EXPECT_DOUBLE_EQ(vendor_timed.problems[0].auto_us, 14);
  EXPECT_DOUBLE_EQ(vendor_timed.problems[1].auto_us, 10);
  EXPECT_DOUBLE_EQ(ours_timed.problems[0].auto_us, 12);  // without the flag: the faster of ours and the vendor's
}

// ------------------------------------------------------------------------------ CLI


TEST_F(SelectorTest, EvalCliWritesFilesAndChecksThresholds) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json(), {{"eval", {{"mean", 0.5}}}});
  write_records((dir_ / "r.csv.gz").string());
  std::ofstream(dir_ / "problems.txt") << "llama.l1: " << kP1 << "\n";
  const std::string base = "eval --no-plot --models " + models() + " --records " + (dir_ / "r.csv.gz").string();
  auto ok = test::run_cli(base + " --out " + (dir_ / "out").string() + " --problems-file " + (dir_ / "problems.txt").string() +
                " --min-mean 0.4 --min-p10 0.08");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("gemm net=llama"), std::string::npos) << ok.out;
  std::ifstream jf(dir_ / "out" / "eval.json");
  auto j = nlohmann::json::parse(jf);
  bool found = false;
  for (const auto& g : j["groups"])
    if (g["name"] == "gemm") {
      found = true;
      EXPECT_DOUBLE_EQ(g["model"]["mean"].get<double>(), 10.0 / 24.0);
      EXPECT_EQ(g["model"]["failed"], 1);
    }
  EXPECT_TRUE(found) << j.dump();
  std::ifstream cf(dir_ / "out" / "eval.csv");
  std::string header, row;
  std::getline(cf, header);
  std::getline(cf, row);
  EXPECT_EQ(header.rfind("op,problem,tag,source,", 0), 0u);
  EXPECT_NE(row.find("llama"), std::string::npos) << row;
  EXPECT_NE(row.find("0.833333"), std::string::npos) << row;

  EXPECT_EQ(test::run_cli(base + " --min-mean 0.42").code, 2);
  auto low = test::run_cli(base + " --min-p10 0.09");
  EXPECT_EQ(low.code, 2);
  EXPECT_NE(low.out.find("gemm: model p10"), std::string::npos) << low.out;
  // what dispatch runs: P1 alone has a vendor row; our pick (12 us) against the fastest known (ours, 10 us)
  EXPECT_EQ(test::run_cli(base + " --min-dispatch-mean 0.83 --min-dispatch-p10 0.83").code, 0);
  auto slow = test::run_cli(base + " --min-dispatch-mean 0.84");
  EXPECT_EQ(slow.code, 2);
  EXPECT_NE(slow.out.find("gemm: dispatch mean 0.833333 < 0.840000"), std::string::npos) << slow.out;
  // race: the faster of our pick (12 us) and cuBLASLt's heuristic kernel (11 us)
  EXPECT_EQ(test::run_cli(base + " --min-race-mean 0.909 --min-race-p10 0.909").code, 0);
  auto slow_race = test::run_cli(base + " --min-race-p10 0.91");
  EXPECT_EQ(slow_race.code, 2);
  EXPECT_NE(slow_race.out.find("gemm: race p10 0.909091 < 0.910000"), std::string::npos) << slow_race.out;
  EXPECT_EQ(test::run_cli(base + " --manifest-thresholds").code, 2);  // manifest mean 0.5 > 0.4167
  EXPECT_EQ(test::run_cli(base + " --manifest-thresholds --margin 0.1").code, 0);
  EXPECT_NE(test::run_cli("eval --records " + (dir_ / "missing.csv.gz").string()).code, 0);

  // --listed-only: the records of the listed problems only (kP1 of kP1..kP3), and a clear error when none is.
  auto listed = test::run_cli(base + " --listed-only --problems-file " + (dir_ / "problems.txt").string());
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("1 problems evaluated"), std::string::npos) << listed.out;
  EXPECT_NE(ok.out.find("2 problems evaluated"), std::string::npos) << ok.out;  // kP3 has no ok timing
  std::ofstream(dir_ / "other.txt") << "gemm rcr m5 n5 k5 f32\n";
  auto none = test::run_cli(base + " --listed-only --problems-file " + (dir_ / "other.txt").string());
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.out.find("no record is of a problem"), std::string::npos) << none.out;
  EXPECT_NE(test::run_cli(base + " --listed-only").code, 0);

  // Records of an arch the model serves: its manifest "serves_eval" entry for that arch holds, not "eval".
  nlohmann::json spec = spec_json();
  spec["serves"] = {"h100_sxm"};
  write_model("gemm_half_h200", model_text(base_trees()), spec,
              {{"eval", {{"mean", 0.3}}}, {"serves_eval", {{"h100_sxm", {{"mean", 0.45}, {"records", {"r.csv.gz"}}}}}}});
  const std::string served = base + " --arch h100_sxm --manifest-thresholds";
  auto high = test::run_cli(served);
  EXPECT_EQ(high.code, 2) << high.out;  // serves_eval mean 0.45 > 0.4167
  EXPECT_NE(high.out.find("source=model:gemm_half_h200: model mean"), std::string::npos) << high.out;
  EXPECT_NE(high.out.find("also serves h100_sxm"), std::string::npos) << high.out;
  EXPECT_EQ(test::run_cli(served + " --margin 0.05").code, 0);
  EXPECT_EQ(test::run_cli(base + " --manifest-thresholds").code, 0);  // its own arch: "eval" mean 0.3

  // A model used without floors for the records' arch (retrained, not stamped) fails the manifest check.
  write_model("gemm_half_h200", model_text(base_trees()), spec, {{"serves_eval", {{"h100_sxm", {{"mean", 0.3}}}}}});
  auto unstamped = test::run_cli(base + " --manifest-thresholds");
  EXPECT_EQ(unstamped.code, 2) << unstamped.out;
  EXPECT_NE(unstamped.out.find("source=model:gemm_half_h200: its manifest.json has no \"eval\""), std::string::npos)
      << unstamped.out;
  EXPECT_EQ(test::run_cli(served).code, 0);
}

TEST_F(SelectorTest, EvalDispatchRunsThePickWhereTheChosenVendorKernelFailedItsCheck) {
  std::ofstream(dir_ / "models" / "conv_half_h200.vendor_choice.txt.gz", std::ios::binary)
      << sweep::gzip_member(vendor_model_text(depthwise_trees()));
  write_model("conv_fwd_half_h200", model_text(base_trees()), vendor_spec("conv_fwd"));
  const ArchSpec& h200 = test::arch("h200");
  const auto pick = Selector(models()).rank(parse_problem(kDenseConv), h200, 1);
  ASSERT_EQ(pick.size(), 1u);
  // The vendor choice sends the dense conv to cuDNN, whose heuristic kernel failed its check there.
  const std::vector<sweep::Record> records = {rec(kDenseConv, pick[0].text, "ok", 10),
                                              rec(kDenseConv, "vendor=cudnn:heur", "wrong", 0),
                                              rec(kDenseConv, "vendor=cudnn:exhaustive", "ok", 8)};
  const auto checked = eval::evaluate(Selector(models()), records, h200, {});
  ASSERT_EQ(checked.problems.size(), 1u);
  const auto& p = checked.problems[0];
  EXPECT_TRUE(p.own_vendor_chosen);
  EXPECT_FALSE(p.dispatch_vendor);
  EXPECT_DOUBLE_EQ(p.dispatch_us, 10);
  const auto unchecked = eval::evaluate(Selector(models()), records, h200, {}, {.vendor_check = false});
  EXPECT_TRUE(unchecked.problems[0].dispatch_vendor);
  EXPECT_TRUE(unchecked.problems[0].dispatch_failed);
}

TEST_F(SelectorTest, EvalVendorRecordsReplaceTheVendorRowsOfTheirProblems) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  write_records((dir_ / "r.csv.gz").string());
  auto vendor_file = [&](const std::string& name, const std::string& arch, bool with_kernel) {
    sweep::RecordWriter w((dir_ / name).string(), {{"format", sweep::kRecordFormat}, {"options", {{"arch", arch}}}});
    w.append(rec(kP1, "vendor=cublaslt:heur", "ok", 5));
    w.append(rec(kP1, "vendor=cublaslt:best", "ok", 4));
    if (with_kernel) w.append(rec(kP1, kA, "ok", 3));
    return (dir_ / name).string();
  };
  const std::string base = "eval --no-plot --models " + models() + " --records " + (dir_ / "r.csv.gz").string();
  auto r = test::run_cli(base + " --out " + (dir_ / "out").string() + " --vendor-records " + vendor_file("v.csv.gz", "h200", false));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("vendor rows of 1 problems from --vendor-records (2 rows of --records replaced)"), std::string::npos) << r.out;
  std::ifstream cf(dir_ / "out" / "eval.csv");
  const std::string csv((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
  EXPECT_NE(csv.find(",cublaslt,5.0000,4.0000,"), std::string::npos) << csv;  // not the 11 / 10.5 of r.csv.gz
  auto kernel = test::run_cli(base + " --vendor-records " + vendor_file("k.csv.gz", "h200", true));
  EXPECT_NE(kernel.code, 0);
  EXPECT_NE(kernel.out.find("holds a kernel row"), std::string::npos) << kernel.out;
  auto other = test::run_cli(base + " --vendor-records " + vendor_file("h.csv.gz", "h100_sxm", false));
  EXPECT_NE(other.code, 0);
  EXPECT_NE(other.out.find("was measured on h100_sxm"), std::string::npos) << other.out;
}

TEST_F(SelectorTest, SelectCliPrintsRankedCandidatesWithMeasurements) {
  write_model("gemm_half_h200", model_text(base_trees()), spec_json());
  write_records((dir_ / "r.csv.gz").string());
  auto r = test::run_cli("select --models " + models() + " -p '" + kP1 + "' -k 3 --explain --records " +
               (dir_ / "r.csv.gz").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("model:gemm_half_h200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best tilepick config 10.000 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured_us"), std::string::npos) << r.out;
  std::size_t rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) ++rows;
  EXPECT_EQ(rows, 3u) << r.out;
  auto h = test::run_cli("select --space-hash gemm");
  EXPECT_EQ(h.code, 0);
  EXPECT_EQ(h.out, config_space_hash("gemm") + "\n");
}

}  // namespace
}  // namespace tilepick
