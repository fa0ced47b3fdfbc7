// The selector's fast paths (batch predict, config strings only for tied runs, select's top-k)
// against a plain reference: features_batch, predict_row per row, a full sort by (NaN last, score,
// config string). Rankings and scores must be identical, on the shipped models.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {

const std::string kModels = (std::filesystem::path(TILEPICK_TEST_GOLDEN_DIR) / ".." / ".." / "models").string();

// GEMM in three layouts and both half dtypes, f32 (no shipped model), conv in every direction.
const char* const kProblems[] = {
    "gemm rcr m4096 n4096 k4096 bf16",
    "gemm rrr m77 n1000 k333 f16",
    "gemm crr m8 n8192 k1024 bf16",
    "gemm rcr m1000 n1000 k1000 f32",
    "fwd g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "fwd g1 mb1 ic3 ih224 iw224 oc64 kh7 kw7 sh2 sw2 ph3 pw3 f16",
    "fwd g64 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 f16",
    "bwd_data g1 mb16 ic64 ih28 iw28 oc128 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
    "bwd_weight g32 mb4 ic32 ih14 iw14 oc32 kh3 kw3 sh1 sw1 ph1 pw1 f16",
};

struct Ref {
  std::string text;
  double score;
};

std::vector<Ref> reference(const Selector& s, const Problem& p, const ArchSpec& arch) {
  std::vector<KernelConfig> configs, in_set;
  for (auto& e : Registry::default_registry().lookup(p, arch)) configs.push_back(e.config);
  const ModelEntry* m = s.model_for(p, arch);
  if (m->candidates) {  // a pruned pool: the legal configs of candidates.txt, when there are any
    for (const auto& c : configs)
      if (m->candidates->contains(c)) in_set.push_back(c);
    if (!in_set.empty()) configs = in_set;
  }
  const std::size_t width = feature_schema().size();
  std::vector<double> rows(configs.size() * width);
  features_batch(p, configs, arch, rows.data(), 1);
  std::vector<Ref> out;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const double v = m->model->predict_row(rows.data() + i * width);
    out.push_back({to_string(configs[i]), v});
  }
  std::sort(out.begin(), out.end(), [](const Ref& a, const Ref& b) {
    const bool an = std::isnan(a.score), bn = std::isnan(b.score);
    if (an != bn) return bn;
    if (!an && a.score != b.score) return a.score > b.score;
    return a.text < b.text;
  });
  return out;
}

bool identical(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(SelectorFast, RankingsEqualThePlainReference) {
  const Selector s(kModels, 1, true, ScoreMode::full);
  const ArchSpec& h200 = find_arch(default_arch_specs(), "h200");
  int with_model = 0;
  for (const char* text : kProblems) {
    const Problem p = parse_problem(text);
    if (!s.model_for(p, h200)) continue;
    ++with_model;
    const auto want = reference(s, p, h200);
    const auto got = s.rank(p, h200);
    ASSERT_EQ(got.size(), want.size()) << text;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].text, want[i].text) << text << " rank " << i;
      ASSERT_TRUE(identical(got[i].score, want[i].score)) << text << " rank " << i;
      ASSERT_EQ(to_string(got[i].config), got[i].text);
    }
    for (int k : {1, 2, 5}) {
      const Selection sel = s.select(p, h200, k);
      ASSERT_EQ(sel.top.size(), std::min<std::size_t>(k, want.size())) << text;
      for (std::size_t i = 0; i < sel.top.size(); ++i) EXPECT_EQ(sel.top[i].text, want[i].text) << text << " k=" << k;
      EXPECT_EQ(sel.pool_size, want.size());
      if (want.size() >= 2) {
        EXPECT_TRUE(identical(sel.confidence, want[0].score - want[1].score)) << text;
      }
      const auto top = s.rank(p, h200, k);
      ASSERT_EQ(top.size(), sel.top.size());
      for (std::size_t i = 0; i < top.size(); ++i) EXPECT_EQ(top[i].text, want[i].text);
    }
  }
  EXPECT_GE(with_model, 2);  // the shipped gemm and conv_fwd models
}

// The whole legal pool (no candidates.txt, or pruning off) comes from the selector's cached
// registry candidates: the same configs in the same order as Registry::lookup, over the spaces the
// model covers (feature_spec "spaces"; every space without a model).
TEST(SelectorFast, WholePoolEqualsTheRegistryLookup) {
  const Selector s(kModels, 1, false, ScoreMode::full);
  const ArchSpec& h200 = find_arch(default_arch_specs(), "h200");
  int with_model = 0;
  for (const char* text : kProblems) {
    const Problem p = parse_problem(text);
    const ModelEntry* m = s.model_for(p, h200);
    std::vector<KernelConfig> want;
    for (const auto& e : Registry::default_registry().lookup(p, h200))
      if (!m || m->spec.covers(e.space)) want.push_back(e.config);
    for (int round = 0; round < 2; ++round) {  // the second call reads the cache
      const auto got = s.pool(p, h200);
      ASSERT_EQ(got.size(), want.size()) << text;
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(to_string(got[i]), to_string(want[i])) << text << " " << i;
    }
    with_model += s.model_for(p, h200) != nullptr;
  }
  EXPECT_GE(with_model, 6);
}

// features_batch for one problem computes the problem's leading features once and copies them into
// every row: its rows must be bit-identical to features() of each pair, for random problems.
TEST(SelectorFast, BatchFeatureRowsEqualSingleRows) {
  const ArchSpec& h200 = find_arch(default_arch_specs(), "h200");
  std::mt19937_64 rng(17);
  auto pick = [&](std::initializer_list<const char*> xs) { return *(xs.begin() + rng() % xs.size()); };
  auto dim = [&] { return std::to_string(1 + rng() % 3000); };
  const std::size_t width = feature_schema().size();
  int problems = 0;
  for (int round = 0; round < 24; ++round) {
    std::string text;
    if (round % 2 == 0) {
      text = std::string("gemm ") + pick({"rcr", "rrr", "crr", "ccc"}) + " m" + dim() + " n" + dim() + " k" + dim() + " " +
             pick({"f16", "bf16", "f32"});
    } else {
      const int c = 1 + static_cast<int>(rng() % 128), hw = 1 + static_cast<int>(rng() % 64);
      const int g = rng() % 3 == 0 ? c : 1, k = g == c ? c : 1 + static_cast<int>(rng() % 256);
      const int f = static_cast<int>(rng() % 2) * 2 + 1;
      text = std::string(pick({"fwd", "bwd_data", "bwd_weight"})) + " g" + std::to_string(g) + " mb" +
             std::to_string(1 + rng() % 16) + " ic" + std::to_string(c) + " ih" + std::to_string(hw) + " iw" +
             std::to_string(hw) + " oc" + std::to_string(k) + " kh" + std::to_string(f) + " kw" + std::to_string(f) +
             " sh" + std::to_string(1 + rng() % 2) + " sw1 ph" + std::to_string(f / 2) + " pw" + std::to_string(f / 2) +
             " " + pick({"f16", "bf16"});
    }
    const Problem p = parse_problem(text);
    const auto configs = Registry::default_registry().lookup_configs(p, h200);
    if (configs.empty()) continue;
    ++problems;
    std::vector<double> rows(configs.size() * width);
    features_batch(p, configs, h200, rows.data(), 1);
    for (std::size_t i = 0; i < configs.size(); i += 7) {
      const FeatureRow want = features(p, configs[i], h200);
      ASSERT_EQ(std::memcmp(rows.data() + i * width, want.values.data(), width * sizeof(double)), 0)
          << text << " " << to_string(configs[i]);
    }
  }
  EXPECT_GE(problems, 16);
}

// A varied conv shortlist takes the full model's ranking in order but passes over a config whose tile shape
// is already on the list, and fills in rank order once the window runs out of shapes; GEMM's, and a first
// shortlist, are the full model's first k.
TEST(SelectorFast, ShortlistKeepsOneConfigPerTileShapeForConv) {
  const Selector sel(kModels, 1, true, ScoreMode::fast);
  const ArchSpec& h200 = find_arch(default_arch_specs(), "h200");
  int varied = 0;
  for (const char* text : kProblems) {
    const Problem p = parse_problem(text);
    if (!sel.model_for(p, h200)) continue;
    const Selection ranked = sel.select(p, h200, Selector::kShortlistWindow, ScoreMode::full);
    for (const int k : {1, 4, Selector::kShortlistWindow}) {
      SCOPED_TRACE(std::string(text) + " k=" + std::to_string(k));
      const Selection s = sel.shortlist(p, h200, k, Selector::Shortlist::varied);
      const Selection first = sel.shortlist(p, h200, k, Selector::Shortlist::first);
      ASSERT_EQ(first.top.size(), s.top.size());
      for (std::size_t i = 0; i < first.top.size(); ++i) EXPECT_EQ(first.top[i].text, ranked.top[i].text);
      ASSERT_EQ(s.top.size(), std::min<std::size_t>(k, ranked.top.size()));
      EXPECT_EQ(s.top[0].text, ranked.top[0].text);
      EXPECT_EQ(s.confidence, ranked.confidence);
      if (std::holds_alternative<GemmProblem>(p)) {
        for (std::size_t i = 0; i < s.top.size(); ++i) EXPECT_EQ(s.top[i].text, ranked.top[i].text);
        continue;
      }
      // Expected: the first of each shape in rank order, then the rest in rank order.
      std::vector<std::string> firsts, rest;
      std::vector<std::array<int, 6>> seen;
      for (const auto& r : ranked.top) {
        const bool fresh = std::find(seen.begin(), seen.end(), tile_shape(r.config)) == seen.end();
        if (fresh) seen.push_back(tile_shape(r.config));
        (fresh ? firsts : rest).push_back(r.text);
      }
      firsts.insert(firsts.end(), rest.begin(), rest.end());
      for (std::size_t i = 0; i < s.top.size(); ++i) EXPECT_EQ(s.top[i].text, firsts[i]) << i;
      if (k == 4) varied += s.top[3].text != ranked.top[3].text;
    }
  }
  EXPECT_GE(varied, 1);  // some conv problem's first 4 shared a shape
}

TEST(SelectorFast, ShortlistFollowsTheEnvironmentAndRefusesABadValue) {
  const Selector sel(kModels, 1, true, ScoreMode::fast);
  const ArchSpec& h200 = find_arch(default_arch_specs(), "h200");
  const Problem p = parse_problem(kProblems[4]);  // a conv problem whose first 4 share a shape
  const auto texts = [](const Selection& s) {
    std::vector<std::string> out;
    for (const auto& r : s.top) out.push_back(r.text);
    return out;
  };
  const auto first = texts(sel.shortlist(p, h200, 4, Selector::Shortlist::first));
  const auto varied = texts(sel.shortlist(p, h200, 4, Selector::Shortlist::varied));
  ASSERT_NE(first, varied);
  EXPECT_EQ(texts(sel.shortlist(p, h200, 4)), varied);  // the default, dispatch's rule
  // A research switch, not a runtime variable: the environment changes nothing.
  ::setenv("TILEPICK_SHORTLIST", "first", 1);
  EXPECT_EQ(texts(sel.shortlist(p, h200, 4)), varied);
  ::unsetenv("TILEPICK_SHORTLIST");
}

}  // namespace
}  // namespace tilepick
