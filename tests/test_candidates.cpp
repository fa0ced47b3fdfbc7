// Pruned pools: candidates.txt loading, the selector's use of it (and its fallbacks), scores on the
// pruned set bit-identical to the same configs' scores in the whole pool, and eval on pruned pools.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "select/selector_eval.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

const fs::path kShipped = fs::path(TILEPICK_TEST_GOLDEN_DIR) / ".." / ".." / "models";
const char* const kGemm = "gemm rcr m4096 n4096 k4096 bf16";
const char* const kGemmOdd = "gemm rcr m77 n1001 k333 bf16";  // align 1x1x1: not every config is legal

const ArchSpec& h200() { return find_arch(default_arch_specs(), "h200"); }
bool identical(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The legal pool a selection scores: the shipped GEMM model covers gemm_sm80 alone (feature_spec
// "spaces"), so gemm_sm90 configs are outside it; other ops and dtypes see the whole registry.
std::vector<KernelConfig> legal_pool(const char* problem) {
  std::vector<KernelConfig> out;
  for (auto& e : Registry::default_registry().lookup(parse_problem(problem), h200()))
    if (e.space != "gemm_sm90") out.push_back(e.config);
  return out;
}

class Candidates : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepick_candidates_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(models());
    for (const char* f : {"feature_spec.json", "model.txt.gz"})
      fs::copy_file(kShipped / "gemm_half_h200" / f, model_dir() / f);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path models() const { return dir_ / "models"; }
  fs::path model_dir() const {
    fs::create_directories(dir_ / "models" / "gemm_half_h200");
    return dir_ / "models" / "gemm_half_h200";
  }
  void write_candidates(const std::string& text) const { std::ofstream(model_dir() / "candidates.txt") << text; }
  fs::path dir_;
};

TEST_F(Candidates, LoadsPoolFormsSkippingComments) {
  write_candidates(
      "# header\n\n"
      "fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=8x8x8 epi=direct\n"
      "  fam=sm80 tile=64x64x32 warps=2x2 stages=2 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct  \n");
  const CandidateSet s = load_candidates((model_dir() / "candidates.txt").string());
  ASSERT_EQ(s.configs.size(), 2u);
  EXPECT_EQ(to_string(s.configs[0]),
            "fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct");
  // Membership ignores the resolved alignment: a record's config and the registry's auto entry match.
  EXPECT_TRUE(s.contains(parse_config(
      "fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=2x2x2 epi=direct")));
  EXPECT_FALSE(s.contains(parse_config(
      "fam=sm80 tile=128x128x32 warps=2x2 stages=3 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct")));
}

TEST_F(Candidates, MalformedOrDuplicateLinesNameTheLine) {
  const std::string path = (model_dir() / "candidates.txt").string();
  write_candidates("# x\nfam=sm80 tile=64x64x32\nfam=sm80 tile=banana\n");
  try {
    load_candidates(path);
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3: not a kernel config"), std::string::npos) << e.what();
  }
  write_candidates("fam=sm80 tile=64x64x32 align=8x8x8\nfam=sm80 tile=64x64x32 align=4x4x4\n");
  try {
    load_candidates(path);
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: config listed twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_candidates((dir_ / "absent.txt").string()), NotFound);
}

// The pruned selection scores exactly the legal configs of the set, each with the score it has in
// the whole pool (bit for bit), in the whole pool's order.
TEST_F(Candidates, PrunedSelectionIsTheWholeRankingFiltered) {
  const Problem p = parse_problem(kGemmOdd);
  const auto all_gemm = Registry::default_registry().candidates("gemm", h200());
  std::string text = "# every 7th registry config\n";
  std::vector<KernelConfig> listed;
  for (std::size_t i = 0; i < all_gemm.size(); i += 7) {
    listed.push_back(all_gemm[i].config);
    text += to_string(all_gemm[i].config) + "\n";
  }
  write_candidates(text);
  const Selector pruned(models().string()), whole(models().string(), 1, false);
  ASSERT_TRUE(pruned.models().at(0).candidates.has_value()) << pruned.models().at(0).candidates_error;
  const auto full = whole.rank(p, h200());
  const auto got = pruned.rank(p, h200());
  std::vector<Ranked> want;
  for (const auto& r : full)
    if (std::find(listed.begin(), listed.end(), pool_form(r.config)) != listed.end()) want.push_back(r);
  ASSERT_FALSE(want.empty());
  ASSERT_LT(want.size(), listed.size());  // some listed configs are illegal for this problem
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].text, want[i].text) << i;
    EXPECT_TRUE(identical(got[i].score, want[i].score)) << i;
  }
  const Selection s = pruned.select(p, h200(), 1);
  EXPECT_TRUE(s.pruned);
  EXPECT_EQ(s.pool_size, want.size());
  EXPECT_EQ(s.top.at(0).text, want[0].text);
  EXPECT_TRUE(identical(s.confidence, want[0].score - want[1].score));
  bool flag = false;
  EXPECT_EQ(pruned.pool(p, h200(), &flag).size(), want.size());
  EXPECT_TRUE(flag);
  const Selection w = whole.select(p, h200(), 1);
  EXPECT_FALSE(w.pruned);
  EXPECT_EQ(w.pool_size, legal_pool(kGemmOdd).size());
}

TEST_F(Candidates, MissingEmptyOrMalformedFilesScoreTheWholePool) {
  const Problem p = parse_problem(kGemm);
  const std::size_t n = legal_pool(kGemm).size();
  {
    const Selector s(models().string());
    EXPECT_FALSE(s.models().at(0).candidates.has_value());
    EXPECT_EQ(s.models().at(0).candidates_error, "");
    const Selection sel = s.select(p, h200(), 1);
    EXPECT_FALSE(sel.pruned);
    EXPECT_EQ(sel.pool_size, n);
  }
  write_candidates("# nothing listed\n\n");
  {
    const Selector s(models().string());
    EXPECT_TRUE(s.models().at(0).usable());
    EXPECT_NE(s.models().at(0).candidates_error.find("lists no config"), std::string::npos);
    EXPECT_EQ(s.select(p, h200(), 1).pool_size, n);
  }
  write_candidates("fam=sm80 tile=1x2x3\n");
  {
    const Selector s(models().string());
    EXPECT_TRUE(s.models().at(0).usable());  // the model is fine, only its pruning is off
    EXPECT_FALSE(s.models().at(0).candidates.has_value());
    EXPECT_NE(s.models().at(0).candidates_error.find("candidates.txt:1: not a kernel config"), std::string::npos)
        << s.models().at(0).candidates_error;
    const Selection sel = s.select(p, h200(), 1);
    EXPECT_FALSE(sel.pruned);
    EXPECT_EQ(sel.pool_size, n);
    EXPECT_TRUE(sel.from_model);
  }
}

TEST_F(Candidates, NoLegalConfigInTheSetFallsBackToTheWholePool) {
  // One registry config that is illegal for the problem, listed alone: nothing of the set is legal.
  const auto all_gemm = Registry::default_registry().candidates("gemm", h200());
  const Problem p = parse_problem(kGemmOdd);
  const ArchSpec& arch = h200();
  std::string text;
  for (const auto& e : all_gemm)
    if (!legal(p, e.config, arch)) {
      text = to_string(e.config) + "\n";
      break;
    }
  ASSERT_FALSE(text.empty());
  write_candidates(text);
  const Selector s(models().string());
  ASSERT_TRUE(s.models().at(0).candidates.has_value());
  const Selection sel = s.select(p, arch, 2);
  EXPECT_FALSE(sel.pruned);
  EXPECT_EQ(sel.pool_size, legal_pool(kGemmOdd).size());
}

TEST_F(Candidates, OtherDtypeFamiliesAndOpsAreUntouched) {
  write_candidates(to_string(Registry::default_registry().candidates("gemm", h200()).front().config) + "\n");
  const Selector s(models().string());
  for (const char* text : {"gemm rcr m4096 n4096 k4096 f32", "fwd g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"}) {
    const Selection sel = s.select(parse_problem(text), h200(), 1);
    EXPECT_FALSE(sel.pruned) << text;
    EXPECT_FALSE(sel.from_model) << text;
    EXPECT_EQ(sel.pool_size, legal_pool(text).size()) << text;
  }
}

// prune() keeps given (resolved) configs that are in the set; eval scores the model among them while
// the oracle stays the fastest of all measured configs.
TEST_F(Candidates, EvalChoosesAmongMeasuredConfigsOfTheSet) {
  const Problem p = parse_problem(kGemm);
  const auto pool = legal_pool(kGemm);
  ASSERT_GE(pool.size(), 10u);
  const Selector whole(models().string(), 1, false);
  const auto ranked = whole.rank(p, h200());
  // Measured: the model's top 6; the set keeps ranks 3-5 only, and rank 6 is the fastest.
  std::vector<sweep::Record> records;
  for (int i = 0; i < 6; ++i) {
    sweep::Record r;
    r.problem = kGemm;
    r.config = ranked[i].text;
    r.status = "ok";
    r.median_us = i == 5 ? 50.0 : 100.0 + i;
    records.push_back(r);
  }
  write_candidates(ranked[2].text + "\n" + ranked[3].text + "\n" + ranked[4].text + "\n");
  const Selector pruned(models().string());
  bool flag = false;
  const auto kept = pruned.prune(p, h200(), pool, &flag);
  EXPECT_TRUE(flag);
  EXPECT_EQ(kept.size(), 3u);
  const auto rep = eval::evaluate(pruned, records, h200(), {});
  ASSERT_EQ(rep.problems.size(), 1u);
  const auto& e = rep.problems[0];
  EXPECT_TRUE(e.pruned);
  EXPECT_EQ(e.candidates, 6u);
  EXPECT_EQ(e.model_candidates, 3u);
  EXPECT_EQ(e.model.config, ranked[2].text);
  EXPECT_DOUBLE_EQ(e.model.efficiency, 50.0 / 102.0);
  const auto rep_whole = eval::evaluate(whole, records, h200(), {});
  EXPECT_FALSE(rep_whole.problems.at(0).pruned);
  EXPECT_EQ(rep_whole.problems.at(0).model.config, ranked[0].text);
}

// The selection path's lookup (no entry strings, whole families skipped) keeps exactly the legal
// configs, the same as checking legal() on every registry candidate.
TEST(RegistryLookup, ConfigsEqualTheLegalCandidates) {
  const Registry& reg = Registry::default_registry();
  for (const char* text : {kGemmOdd, "fwd g96 mb8 ic96 ih56 iw56 oc96 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                           "bwd_weight g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"}) {
    const Problem p = parse_problem(text);
    std::vector<KernelConfig> want;
    for (const auto& e : reg.candidates(op_name(p), h200()))
      if (legal(p, e.config, h200()) && std::find(want.begin(), want.end(), resolve(e.config, p)) == want.end())
        want.push_back(resolve(e.config, p));
    EXPECT_EQ(reg.lookup_configs(p, h200()), want) << text;
    const auto entries = reg.lookup(p, h200());
    ASSERT_EQ(entries.size(), want.size()) << text;
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(entries[i].config, want[i]) << text;
  }
}

}  // namespace
}  // namespace tilepick
