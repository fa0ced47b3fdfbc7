// Surrogate search: spaces over full field domains, determinism, legality, DE vs random search on
// a synthetic scorer with a known optimum, the shipped GEMM model, bad input, the CLI.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "test_util.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/search.hpp"

namespace tilepick {
namespace {

const char* const kGemm = "gemm rcr m1024 n4096 k4096 bf16";

search::DeOptions small_opts(int budget, std::uint64_t seed) {
  search::DeOptions o;
  o.budget = budget;
  o.seed = seed;
  return o;
}

// -sum |index - target| over the axes: separable, maximum 0 exactly at the target config.
search::Scorer distance_scorer(const search::Space& space, std::vector<int> target) {
  return [&space, target](std::span<const KernelConfig> configs) {
    std::vector<double> out;
    for (const auto& c : configs) {
      auto idx = space.encode(c);
      EXPECT_TRUE(idx.has_value()) << to_string(c);
      double s = 0;
      for (std::size_t d = 0; d < target.size(); ++d) s -= std::abs((*idx)[d] - target[d]);
      out.push_back(s);
    }
    return out;
  };
}

TEST(Search, FullSpaceCoversEveryFieldDomain) {
  const search::Space s = search::full_space(Family::sm80);
  std::vector<std::string> names;
  for (const auto& a : s.axes) names.push_back(a.name());
  EXPECT_EQ(names, (std::vector<std::string>{"tile_m", "tile_n", "tile_k", "warps_m", "warps_n", "stages", "splitk",
                                             "skmode", "raster", "swz", "align", "epi"}));
  // tile 16..256 pow2 (5 each), warps 1..8 pow2 (4 each), stages 1..16, splitk 1..64, 2 skmodes,
  // 2 rasters, swz 1..16 pow2 (5), align auto + 5^3 explicit tuples, 2 epilogues.
  EXPECT_DOUBLE_EQ(s.raw_size(), 125.0 * 16 * 16 * 64 * 2 * 2 * 5 * 126 * 2);
  EXPECT_EQ(search::format_count(s.raw_size()), "1.0e10");
  EXPECT_GT(search::full_space(Family::sm90).raw_size(), s.raw_size());  // + cluster
  EXPECT_EQ(search::full_space(Family::dw).axes.size(), 6u);             // splitk, dwtile x3, ppt, cpt

  // Every pool config encodes, and decodes back to itself.
  const Problem p = parse_problem(kGemm);
  for (const auto& e : Registry::default_registry().lookup(p, test::arch("h200"))) {
    if (e.config.fam() != Family::sm80) continue;
    auto idx = s.encode(e.config);
    ASSERT_TRUE(idx) << to_string(e.config);
    EXPECT_EQ(s.decode(*idx), e.config);
  }
  EXPECT_THROW(s.decode(std::vector<int>(3, 0)), InvalidArgument);
  std::vector<int> bad(s.axes.size(), 0);
  bad[0] = 5;
  EXPECT_THROW(s.decode(bad), InvalidArgument);
}

TEST(Search, SpaceFileNarrowsListedFieldsOnly) {
  const search::Space s = search::narrowed_space(find_space("gemm_sm80"), Family::sm80);
  std::map<std::string, std::size_t> sizes;
  for (const auto& a : s.axes) sizes[a.name()] = a.values.size();
  EXPECT_EQ(sizes["tile_m"], 3u);
  EXPECT_EQ(sizes["warps"], 3u);    // listed as whole values: one axis
  EXPECT_EQ(sizes.count("warps_m"), 0u);
  EXPECT_EQ(sizes["splitk"], 5u);
  EXPECT_EQ(sizes["align"], 1u);    // auto
  EXPECT_EQ(sizes["raster"], 2u);   // not listed: the full domain
  EXPECT_FALSE(s.filters.empty());
  EXPECT_THROW(search::narrowed_space(find_space("gemm_sm80"), Family::dw), InvalidArgument);
}

TEST(Search, DeterministicPerSeedLegalAndDistinct) {
  const Problem p = parse_problem(kGemm);
  const ArchSpec& arch = test::arch("h200");
  const search::Space space = search::full_space(Family::sm80);
  const search::Scorer scorer = search::selector_scorer(Selector::default_selector(), p, arch);
  for (const std::string method : {"de", "random"}) {
    auto opt = small_opts(400, 7);
    const search::Result a = search::run(method, p, arch, space, scorer, opt);
    const search::Result b = search::run(method, p, arch, space, scorer, opt);
    ASSERT_EQ(a.top.size(), 10u) << method;
    EXPECT_EQ(a.evaluations, 400u) << method;
    EXPECT_GT(a.illegal, 0u) << method;  // the full domains hold many illegal configs
    EXPECT_EQ(a.illegal, b.illegal);
    ASSERT_EQ(a.top.size(), b.top.size());
    std::set<std::string> seen;
    for (std::size_t i = 0; i < a.top.size(); ++i) {
      EXPECT_EQ(a.top[i].text, b.top[i].text) << method << " rank " << i;
      EXPECT_EQ(a.top[i].score, b.top[i].score);
      EXPECT_TRUE(legal(p, a.top[i].config, arch)) << a.top[i].text;
      EXPECT_EQ(a.top[i].text, to_string(a.top[i].config));
      EXPECT_TRUE(seen.insert(a.top[i].text).second) << "duplicate " << a.top[i].text;
      if (i) {
        EXPECT_GE(a.top[i - 1].score, a.top[i].score);
      }
    }
    opt.seed = 8;
    const search::Result c = search::run(method, p, arch, space, scorer, opt);
    EXPECT_NE(c.illegal, a.illegal) << method << ": another seed draws other configs";
  }
}

TEST(Search, DeFindsTheKnownOptimumAndBeatsRandom) {
  const Problem p = parse_problem(kGemm);
  const ArchSpec& arch = test::arch("h200");
  const search::Space space = search::full_space(Family::sm80);
  // An interior optimum, legal for the problem, outside the default pool (raster=col, swz=4).
  const KernelConfig best = resolve(
      parse_config("fam=sm80 tile=128x64x64 warps=2x2 stages=3 splitk=3 skmode=parallel raster=col swz=4 align=4x8x8"),
      p);
  ASSERT_TRUE(legal(p, best, arch)) << legal(p, best, arch).reason;
  const std::vector<int> target = *space.encode(best);
  const search::Scorer scorer = distance_scorer(space, target);
  int de_found = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto opt = small_opts(2000, seed);
    const search::Result de = search::differential_evolution(p, arch, space, scorer, opt);
    const search::Result rnd = search::random_search(p, arch, space, scorer, opt);
    EXPECT_EQ(rnd.evaluations, 2000u);
    EXPECT_LE(de.evaluations, rnd.evaluations);  // DE stops early once its population has converged
    EXPECT_GE(de.top[0].score, rnd.top[0].score) << "seed " << seed;
    de_found += de.top[0].text == to_string(best);
    if (de.top[0].text == to_string(best)) {
      EXPECT_EQ(de.top[0].score, 0);
      EXPECT_FALSE(de.top[0].in_pool);
      EXPECT_EQ(de.top[0].unseen, 4);  // splitk=3, raster=col, swz=4, align=4x8x8: values no pool config uses
    }
  }
  EXPECT_EQ(de_found, 5) << "DE finds the optimum for every seed";
}

// With the shipped GEMM model, DE over the full domains started from the model's best pool configs
// (`tilepick search --warm 8`) reaches at least the model's best score over the default pool; a cold
// DE reaches at least what random search reaches with the same budget. (A cold DE reaching the pool
// best is a property of one model's landscape, not of the search: the retrained model broke it.)
TEST(Search, ShippedModelDeReachesThePoolBest) {
  const Selector& sel = Selector::default_selector();
  const ArchSpec& arch = test::arch("h200");
  const Problem p = parse_problem(kGemm);
  std::string why;
  ASSERT_NE(sel.model_for(p, arch, &why), nullptr) << why;
  std::string source;
  const search::Scorer scorer = search::selector_scorer(sel, p, arch, &source);
  EXPECT_EQ(source, "model:gemm_half_h200");
  const double pool_best = sel.rank(p, arch, 1).at(0).score;
  search::DeOptions warm = small_opts(2000, 1);
  for (const Ranked& r : sel.rank(p, arch, 8)) warm.initial.push_back(r.config);
  const search::Result warm_de =
      search::differential_evolution(p, arch, search::full_space(Family::sm80), scorer, warm);
  EXPECT_GE(warm_de.best_any.score, pool_best);
  const search::Result de = search::differential_evolution(p, arch, search::full_space(Family::sm80), scorer,
                                                           small_opts(2000, 1));
  const search::Result rnd =
      search::random_search(p, arch, search::full_space(Family::sm80), scorer, small_opts(2000, 1));
  EXPECT_GE(de.best_any.score, rnd.best_any.score);
  // The scorer gives the selector's own scores: a pool config scores the same either way.
  const auto pool = Registry::default_registry().lookup(p, arch);
  const std::vector<KernelConfig> one{pool.at(0).config};
  EXPECT_DOUBLE_EQ(scorer(one).at(0), sel.rank_configs(p, arch, one).at(0).score);
}

// A warm start from the pool's best configs keeps the pool best in the population, so DE never
// ends below it, even on a problem where a random start does (m1: few configs score well).
TEST(Search, WarmStartNeverEndsBelowThePoolBest) {
  const Selector& sel = Selector::default_selector();
  const ArchSpec& arch = test::arch("h200");
  const Problem p = parse_problem("gemm rcr m1 n50400 k4096 bf16 ep=bias");
  const auto scorer = search::selector_scorer(sel, p, arch);
  const std::vector<Ranked> pool = sel.rank(p, arch, 8);
  auto opt = small_opts(500, 1);
  for (const auto& r : pool) opt.initial.push_back(r.config);
  const search::Result warm = search::differential_evolution(p, arch, search::full_space(Family::sm80), scorer, opt);
  EXPECT_GE(warm.best_any.score, pool[0].score);
  ASSERT_TRUE(warm.best_outside_pool);
  EXPECT_FALSE(warm.best_outside_pool->in_pool);
  EXPECT_EQ(warm.evaluations, 500u);
}

// Without a usable model the scorer is the analytic fallback, scoring exactly as rank_fallback.
TEST(Search, FallbackScorerWithoutModels) {
  const Selector none("");
  const Problem p = parse_problem(kGemm);
  const ArchSpec& arch = test::arch("h200");
  std::string source;
  const auto scorer = search::selector_scorer(none, p, arch, &source);
  EXPECT_EQ(source, "fallback");
  const auto r = search::differential_evolution(p, arch, search::full_space(Family::sm80), scorer, small_opts(300, 1));
  ASSERT_FALSE(r.top.empty());
  const std::vector<KernelConfig> best{r.top[0].config};
  EXPECT_DOUBLE_EQ(r.top[0].score, none.rank_fallback(p, arch, best).at(0).score);
  EXPECT_GT(r.top[0].score, 0);  // estimated TFLOP/s
}

TEST(Search, ExcludePoolListsOnlyNewConfigs) {
  const Problem p = parse_problem(kGemm);
  const ArchSpec& arch = test::arch("h200");
  auto opt = small_opts(300, 3);
  opt.exclude_pool = true;
  const search::Space space = search::narrowed_space(find_space("gemm_sm80"), Family::sm80);
  const auto r = search::run("de", p, arch, space, search::selector_scorer(Selector::default_selector(), p, arch), opt);
  ASSERT_FALSE(r.top.empty());
  for (const auto& f : r.top) EXPECT_FALSE(f.in_pool) << f.text;
  // Without the flag the same run lists pool configs too, and they use only pool values.
  opt.exclude_pool = false;
  const auto all = search::run("de", p, arch, space, search::selector_scorer(Selector::default_selector(), p, arch), opt);
  bool any_pool = false;
  for (const auto& f : all.top)
    if (f.in_pool) {
      any_pool = true;
      EXPECT_EQ(f.unseen, 0) << f.text;
    }
  EXPECT_TRUE(any_pool);
}

TEST(Search, BadInputIsAClearError) {
  const Problem p = parse_problem(kGemm);
  const ArchSpec& arch = test::arch("h200");
  const search::Space space = search::full_space(Family::sm80);
  const search::Scorer scorer = search::selector_scorer(Selector::default_selector(), p, arch);
  auto message = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THROW(search::run("anneal", p, arch, space, scorer, small_opts(100, 1)), InvalidArgument);
  EXPECT_NE(message([&] { search::run("anneal", p, arch, space, scorer, small_opts(100, 1)); }).find("'anneal' (de, random)"),
            std::string::npos);
  EXPECT_THROW(search::run("de", p, arch, space, scorer, small_opts(0, 1)), InvalidArgument);
  EXPECT_THROW(search::run("random", p, arch, space, scorer, small_opts(-5, 1)), InvalidArgument);
  auto tiny = small_opts(100, 1);
  tiny.population = 3;
  EXPECT_THROW(search::run("de", p, arch, space, scorer, tiny), InvalidArgument);
  // The depthwise family has no legal config for a GEMM: Unsupported, naming the family and rule.
  const std::string m = message([&] { search::run("de", p, arch, search::full_space(Family::dw), scorer, small_opts(100, 1)); });
  EXPECT_NE(m.find("no legal config of family dw"), std::string::npos) << m;
  EXPECT_NE(m.find("family_op "), std::string::npos) << m;  // the rules that rejected the draws, with counts
  EXPECT_THROW(search::run("random", p, arch, search::full_space(Family::dw), scorer, small_opts(100, 1)), Unsupported);
}

TEST(Search, Cli) {
  const std::string out = (std::filesystem::temp_directory_path() / "tilepick_search_test.txt").string();
  std::filesystem::remove(out);
  auto r = test::run_cli(std::string("search -p '") + kGemm + "' --arch h200 --budget 300 --top 4 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1.0e10 raw configs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scorer model:gemm_half_h200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank  score        in_pool  unseen  config"), std::string::npos) << r.out;
  // The summary's pool best is the header's (the shipped model's score of the pool's best config).
  const auto head = r.out.find("legal, best ");
  ASSERT_NE(head, std::string::npos) << r.out;
  const std::string best = r.out.substr(head + 12, r.out.find(' ', head + 12) - head - 12);
  EXPECT_NE(r.out.find("# pool best " + best + " | best found "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| best outside the pool "), std::string::npos) << r.out;
  std::ifstream in(out);
  std::string line;
  int pairs = 0;
  const Problem p = parse_problem(kGemm);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto bar = line.find('|');
    ASSERT_NE(bar, std::string::npos) << line;
    EXPECT_EQ(line.substr(0, bar), to_string(p));
    EXPECT_TRUE(legal(p, parse_config(line.substr(bar + 1)), test::arch("h200"))) << line;
    ++pairs;
  }
  EXPECT_EQ(pairs, 4);
  std::filesystem::remove(out);

  r = test::run_cli(std::string("search -p '") + kGemm + "' --budget 200 --warm 4 --exclude-pool --top 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("population 32 (4 from the pool)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 of the 3 listed are outside the pool"), std::string::npos) << r.out;

  r = test::run_cli(std::string("search -p '") + kGemm + "' --method anneal");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("unknown method 'anneal'"), std::string::npos) << r.out;
  r = test::run_cli(std::string("search -p '") + kGemm + "' --budget 0");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--budget 0"), std::string::npos) << r.out;
  r = test::run_cli(std::string("search -p '") + kGemm + "' --family dw --budget 50");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no legal config of family dw"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tilepick
