// The fast selection path: a model folder's distilled student (models/<m>/fast/). Loading and the
// checks that tie it to this build and its teacher, the fallback to the teacher, the plan-cache
// version key, the teacher's re-scoring of the student's top M, determinism, and (on the shipped
// students) agreement with the teacher on problems the student was fitted on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/hash.hpp"
#include "tilepick/features.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

const ArchSpec& h200() { return find_arch(default_arch_specs(), "h200"); }
const char* const kGemm = "gemm rcr m1024 n1024 k1024 bf16";

// A LightGBM text model of `trees` random stumps-of-depth-3 on config and tiling features: distinct
// scores for most configs (seeded).
std::string random_model(std::uint64_t seed, int trees) {
  const FeatureSchema& s = feature_schema();
  const char* feats[] = {"cfg_tile_m", "cfg_tile_n", "cfg_tile_k", "cfg_stages", "waves", "ctas", "pad_eff"};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> leaf(-1, 1);
  std::ostringstream m;
  m.precision(17);
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=" << s.size() - 1
    << "\nobjective=regression\nfeature_names=";
  for (std::size_t i = 0; i < s.size(); ++i) m << (i ? " " : "") << s.names[i];
  m << "\n\n";
  const Problem p = parse_problem(kGemm);
  const auto pool = Registry::default_registry().lookup_configs(p, h200());
  std::vector<double> rows(pool.size() * s.size());
  features_batch(p, pool, h200(), rows.data(), 1);
  for (int t = 0; t < trees; ++t) {
    // node 0 splits to nodes 1 and 2; each of those to two leaves.
    int f[3];
    double thr[3];
    for (int i = 0; i < 3; ++i) {
      f[i] = s.index(feats[rng() % 7]);
      thr[i] = rows[(rng() % pool.size()) * s.size() + static_cast<std::size_t>(f[i])];
    }
    m << "Tree=" << t << "\nnum_leaves=4\nnum_cat=0\nsplit_feature=" << f[0] << " " << f[1] << " " << f[2]
      << "\nthreshold=" << thr[0] << " " << thr[1] << " " << thr[2] << "\ndecision_type=2 2 2\nleft_child=1 -1 -3"
      << "\nright_child=2 -2 -4\nleaf_value=";
    for (int i = 0; i < 4; ++i) m << (i ? " " : "") << leaf(rng);
    m << "\nis_linear=0\nshrinkage=1\n\n\n";
  }
  return m.str() + "end of trees\n";
}

nlohmann::json spec_json() {
  const FeatureSchema& s = feature_schema();
  return {{"feature_names", s.names}, {"schema_hash", s.hash}, {"feature_version", s.version},
          {"space_hash", config_space_hash("gemm")}, {"op", "gemm"}, {"dtype_family", "half"}, {"arch", "h200"},
          {"objective", "regression"}, {"score", "higher_is_better"}};
}

class Student : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepick-student-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    teacher_ = dir_ / "gemm_half_h200";
    fs::create_directories(teacher_ / "fast");
    teacher_text_ = random_model(1, 40);
    std::ofstream(teacher_ / "model.txt") << teacher_text_;
    nlohmann::json teacher_spec = spec_json();
    teacher_spec["model_text_fnv"] = hex16(fnv1a64(teacher_text_));
    std::ofstream(teacher_ / "feature_spec.json") << teacher_spec.dump();
    student_text_ = random_model(2, 8);
    std::ofstream(teacher_ / "fast" / "model.txt") << student_text_;
    write_student_spec({});
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string teacher_version() const { return "gemm_half_h200@" + hex16(fnv1a64(teacher_text_)); }
  void write_student_spec(const nlohmann::json& changes) {
    nlohmann::json spec = spec_json();
    spec["teacher_version"] = teacher_version();
    spec["rescore_top"] = 0;
    spec["model_text_fnv"] = hex16(fnv1a64(student_text_));
    if (changes.is_object()) spec.update(changes);
    std::ofstream(teacher_ / "fast" / "feature_spec.json") << spec.dump();
  }
  // Student candidate set: every 3rd legal config of kGemm, in pool form.
  std::vector<KernelConfig> write_candidates() {
    std::ofstream out(teacher_ / "fast" / "candidates.txt");
    out << "# test set\n";
    std::vector<KernelConfig> set;
    const auto pool = Registry::default_registry().lookup_configs(parse_problem(kGemm), h200());
    for (std::size_t i = 0; i < pool.size(); i += 3) {
      set.push_back(pool[i]);
      out << to_string(pool_form(pool[i])) << "\n";
    }
    return set;
  }
  std::string models() const { return dir_.string(); }

  fs::path dir_, teacher_;
  std::string teacher_text_, student_text_;
};

// A one-tree student scores the pool with at most 4 values: long tied runs cross every top-k
// boundary. select(k) must still give the first k of a full sort by (score, config string).
TEST_F(Student, TopKOfTiedScoresFollowsTheConfigStrings) {
  student_text_ = random_model(3, 1);
  std::ofstream(teacher_ / "fast" / "model.txt") << student_text_;
  write_student_spec({});  // its text hash
  const Selector fast(models(), 1, true, ScoreMode::fast);
  const Problem p = parse_problem(kGemm);
  const GbdtModel student = GbdtModel::parse(student_text_);
  std::vector<std::pair<double, std::string>> want;
  for (const auto& c : Registry::default_registry().lookup_configs(p, h200()))
    want.emplace_back(student.predict_row(features(p, c, h200()).values.data()), to_string(c));
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  ASSERT_GT(want.size(), 40u);
  for (int k : {1, 2, 5, 17, 40}) {
    const Selection s = fast.select(p, h200(), k);
    ASSERT_TRUE(s.fast);
    ASSERT_EQ(s.top.size(), static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(s.top[i].text, want[i].second) << "k=" << k << " rank " << i;
      EXPECT_EQ(s.top[i].score, want[i].first) << "k=" << k << " rank " << i;
    }
  }
}

TEST_F(Student, LoadsAndScoresWithTheStudentKeyedByItsHash) {
  const Selector fast(models(), 1, true, ScoreMode::fast), full(models(), 1, true, ScoreMode::full);
  const ModelEntry* m = fast.model_for(parse_problem(kGemm), h200());
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->fast) << m->fast_error;
  EXPECT_EQ(m->fast->model.num_trees(), 8u);
  EXPECT_EQ(m->spec.version, teacher_version() + "+fast@" + hex16(fnv1a64(student_text_)));
  const ModelEntry* t = full.model_for(parse_problem(kGemm), h200());
  EXPECT_FALSE(t->fast);
  EXPECT_EQ(t->spec.version, teacher_version());

  // The student's scores are its model's over the whole legal pool (no candidates.txt).
  const Problem p = parse_problem(kGemm);
  const Selection s = fast.select(p, h200(), 3);
  EXPECT_TRUE(s.fast);
  const auto pool = Registry::default_registry().lookup_configs(p, h200());
  EXPECT_EQ(s.pool_size, pool.size());
  const GbdtModel student = GbdtModel::parse(student_text_);
  for (const auto& r : s.top) {
    const FeatureRow row = features(p, r.config, h200());
    EXPECT_EQ(r.score, student.predict_row(row.values.data())) << r.text;
  }
  EXPECT_FALSE(full.select(p, h200(), 1).fast);
}

TEST_F(Student, MismatchedOrMissingStudentsFallBackToTheTeacher) {
  const Problem p = parse_problem(kGemm);
  const Selector full(models(), 1, true, ScoreMode::full);
  const auto want = full.rank(p, h200(), 5);
  auto check = [&](const std::string& expect_in_error) {
    const Selector fast(models(), 1, true, ScoreMode::fast);
    const ModelEntry* m = fast.model_for(p, h200());
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(m->fast);
    EXPECT_NE(m->fast_error.find(expect_in_error), std::string::npos) << m->fast_error;
    EXPECT_EQ(m->spec.version, teacher_version());
    const Selection s = fast.select(p, h200(), 5);
    EXPECT_FALSE(s.fast);
    ASSERT_EQ(s.top.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(s.top[i].text, want[i].text);
  };
  write_student_spec({{"teacher_version", "gemm_half_h200@0000000000000000"}});
  check("teacher_version");
  write_student_spec({{"schema_hash", "0123456789abcdef"}});
  check("feature schema hash");
  write_student_spec({{"space_hash", "0123456789abcdef"}});
  check("config space hash");
  write_student_spec({{"rescore_top", -1}});
  check("rescore_top");
  write_student_spec({{"model_text_fnv", "0123456789abcdef"}});  // the student file changed after distillation
  check("edited or replaced");
  write_student_spec({{"score", "lower_is_better"}});
  check("higher_is_better");
  write_student_spec({});
  fs::remove(teacher_ / "fast" / "model.txt");
  check("model");
  fs::remove_all(teacher_ / "fast");
  check("no student folder");
}

TEST_F(Student, ScoresOnlyItsCandidateSetAndEvalKeepsIt) {
  const std::vector<KernelConfig> set = write_candidates();
  const Selector fast(models(), 1, true, ScoreMode::fast);
  const Problem p = parse_problem(kGemm);
  bool pruned = false;
  const auto pool = fast.pool(p, h200(), &pruned);
  EXPECT_TRUE(pruned);
  EXPECT_EQ(pool.size(), set.size());
  const Selection s = fast.select(p, h200(), 1);
  EXPECT_TRUE(s.fast);
  EXPECT_EQ(s.pool_size, set.size());
  // prune() (tilepick eval) keeps the measured configs in the student's set; rank_configs then uses
  // the student, as select does, and the teacher for configs outside the set.
  const auto all = Registry::default_registry().lookup_configs(p, h200());
  const auto kept = fast.prune(p, h200(), all);
  EXPECT_EQ(kept.size(), set.size());
  EXPECT_EQ(fast.rank_configs(p, h200(), kept, 1).front().text, s.top.front().text);
  const Selector full(models(), 1, true, ScoreMode::full);
  EXPECT_EQ(fast.rank_configs(p, h200(), all, 1).front().score, full.rank_configs(p, h200(), all, 1).front().score);
}

// select(..., ScoreMode::full) on a fast selector (dispatch's top_k) is the full selector's selection:
// the teacher over the teacher's pool, even where the student has a set of its own.
TEST_F(Student, SelectInFullModeIsTheTeachersSelection) {
  write_candidates();
  const Selector fast(models(), 1, true, ScoreMode::fast), full(models(), 1, true, ScoreMode::full);
  for (const char* text : {kGemm, "gemm rrr m77 n1000 k333 f16"}) {
    const Problem p = parse_problem(text);
    const Selection want = full.select(p, h200(), 4), got = fast.select(p, h200(), 4, ScoreMode::full);
    const Selection student = fast.select(p, h200(), 4);
    EXPECT_FALSE(got.fast);
    EXPECT_TRUE(student.fast);
    EXPECT_EQ(got.pool_size, want.pool_size);
    EXPECT_LT(student.pool_size, got.pool_size);  // the student's set, against the teacher's whole pool
    ASSERT_EQ(got.top.size(), want.top.size());
    for (std::size_t i = 0; i < got.top.size(); ++i) {
      EXPECT_EQ(got.top[i].text, want.top[i].text) << text << " #" << i;
      EXPECT_EQ(got.top[i].score, want.top[i].score) << text << " #" << i;
    }
    EXPECT_EQ(got.confidence, want.confidence);
    EXPECT_EQ(full.select(p, h200(), 4, ScoreMode::fast).top.front().text, want.top.front().text);
  }
}

TEST_F(Student, RescoringEveryCandidateGivesTheTeachersRanking) {
  write_candidates();
  write_student_spec({{"rescore_top", 1000}});
  const Selector fast(models(), 1, true, ScoreMode::fast), full(models(), 1, true, ScoreMode::full);
  const Problem p = parse_problem(kGemm);
  const auto configs = fast.pool(p, h200());
  const auto mine = fast.rank(p, h200(), 0);
  const auto teacher = full.rank_configs(p, h200(), configs, 0);
  ASSERT_EQ(mine.size(), teacher.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(mine[i].text, teacher[i].text) << i;
    EXPECT_EQ(mine[i].score, teacher[i].score) << i;
  }
  // Top 3 only: those three, ordered by the teacher, lead the student's ranking.
  write_student_spec({{"rescore_top", 3}});
  const Selector three(models(), 1, true, ScoreMode::fast);
  const auto r = three.rank(p, h200(), 0);
  const auto student_only = [&] {
    write_student_spec({{"rescore_top", 0}});
    return Selector(models(), 1, true, ScoreMode::fast).rank(p, h200(), 0);
  }();
  std::vector<std::string> head{student_only[0].text, student_only[1].text, student_only[2].text};
  std::sort(head.begin(), head.end());
  std::vector<std::string> got{r[0].text, r[1].text, r[2].text};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, head);
  EXPECT_GE(r[0].score, r[1].score);
  EXPECT_GE(r[1].score, r[2].score);
  for (std::size_t i = 3; i < r.size(); ++i) EXPECT_EQ(r[i].text, student_only[i].text);
}

TEST_F(Student, DeterministicAcrossCallsAndSelectors) {
  write_candidates();
  const Problem p = parse_problem(kGemm);
  const auto a = Selector(models(), 1, true, ScoreMode::fast).rank(p, h200(), 0);
  const Selector s(models(), 1, true, ScoreMode::fast);
  for (int i = 0; i < 3; ++i) {
    const auto b = s.rank(p, h200(), 0);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
      EXPECT_EQ(a[j].text, b[j].text);
      EXPECT_EQ(std::memcmp(&a[j].score, &b[j].score, sizeof(double)), 0);
    }
  }
}

TEST(ScoreModes, AutomaticIsTheDefaultWhateverTheEnvironment) {
  EXPECT_EQ(resolve_score_mode(ScoreMode::automatic), kDefaultScoreMode);
  EXPECT_EQ(resolve_score_mode(ScoreMode::full), ScoreMode::full);
  EXPECT_EQ(resolve_score_mode(ScoreMode::fast), ScoreMode::fast);
  ::setenv("TILEPICK_SELECT", "full", 1);  // a research switch, now `--select` of eval / select
  EXPECT_EQ(resolve_score_mode(ScoreMode::automatic), kDefaultScoreMode);
  ::unsetenv("TILEPICK_SELECT");
}

// The shipped students on training problems (the ones they were fitted on): the student's pick is
// the teacher's or one the teacher scores within 2% (log time ratio x bag) of its best.
TEST(ShippedStudents, PicksMatchTheTeacherOnFittedProblems) {
  const std::string dir = (fs::path(TILEPICK_TEST_GOLDEN_DIR) / ".." / ".." / "models").string();
  const Selector fast(dir, 1, true, ScoreMode::fast), full(dir, 1, true, ScoreMode::full);
  const char* problems[] = {
      "gemm rcr m4096 n4096 k4096 bf16", "gemm rcr m1 n4096 k4096 bf16", "gemm rcr m64 n4096 k4096 bf16",
      "gemm rcr m8 n4096 k14336 bf16",   "gemm rcr m2 n6144 k4096 bf16",
      "bwd_weight g1 mb8 ic128 ih28 iw28 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
  };
  int checked = 0, same = 0;
  for (const char* text : problems) {
    const Problem p = parse_problem(text);
    const ModelEntry* m = fast.model_for(p, h200());
    if (!m || !m->fast) continue;  // no student shipped for this op (or stale: the teacher is used)
    const Selection s = fast.select(p, h200(), 1);
    ASSERT_TRUE(s.fast) << text;
    const auto teacher = full.rank(p, h200(), 0);  // the teacher over its own (pruned) pool
    const double bag = m->spec.manifest.is_object() ? m->spec.manifest.value("bag", 1.0) : 1.0;
    double pick_score = std::nan("");
    for (const auto& r : teacher)
      if (r.text == s.top.front().text) pick_score = r.score;
    if (std::isnan(pick_score)) {  // outside the teacher's pool: score it alone
      pick_score = full.rank_configs(p, h200(), std::vector<KernelConfig>{s.top.front().config}, 1).front().score;
    }
    ++checked;
    same += s.top.front().text == teacher.front().text;
    EXPECT_LE(teacher.front().score - pick_score, 0.02 * bag) << text << ": student picks " << s.top.front().text;
  }
  if (checked == 0) GTEST_SKIP() << "no usable shipped student";
  EXPECT_GE(same * 2, checked) << "the student's pick is the teacher's on " << same << " of " << checked;
}

}  // namespace
}  // namespace tilepick
