// LightGBM text-model evaluator: hand-computed predictions (missing values, categorical sets,
// single-leaf trees), gzip loading, schema checks and errors on malformed models.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "tilepick/features.hpp"
#include "tilepick/gbdt.hpp"

namespace tilepick {
namespace {

const double kNaN = std::nan("");

// Tree 0: f0 (NaN -> left) <= 0.5 ? [f1 (zero/NaN -> right) <= -1 ? 1 : 2] : 4.
// Tree 1: a single leaf 0.25. Tree 2: f2 in {0, 2, 32} ? 10 : 20.
const char* kModel = R"(tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=2
objective=regression
feature_names=a b c
feature_infos=[0:1] [-5:1] 0:1:2
tree_sizes=100 100 100

Tree=0
num_leaves=3
num_cat=0
split_feature=0 1
split_gain=1 1
threshold=0.5 -1
decision_type=10 4
left_child=1 -1
right_child=-3 -2
leaf_value=1 2 4
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=0 0
internal_count=2 2
is_linear=0
shrinkage=1


Tree=1
num_leaves=1
num_cat=0
split_feature=
split_gain=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.25
leaf_weight=
leaf_count=
internal_value=
internal_weight=
internal_count=
is_linear=0
shrinkage=1


Tree=2
num_leaves=2
num_cat=1
split_feature=2
split_gain=1
threshold=0
decision_type=1
left_child=-1
right_child=-2
leaf_value=10 20
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=0
internal_count=2
cat_boundaries=0 2
cat_threshold=5 1
is_linear=0
shrinkage=1


end of trees

feature_importances:
a=1

parameters:
[boosting: gbdt]
end of parameters

pandas_categorical:null
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(Gbdt, PredictsHandComputedScores) {
  GbdtModel m = GbdtModel::parse(kModel);
  EXPECT_EQ(m.num_trees(), 3u);
  EXPECT_EQ(m.objective(), "regression");
  EXPECT_EQ(m.feature_names(), (std::vector<std::string>{"a", "b", "c"}));
  struct Case {
    std::array<double, 3> row;
    double want;
  } cases[] = {
      {{0, -2, 0}, 1 + 0.25 + 10},      // f1 <= -1; category 0 is in the set
      {{kNaN, 0, 2}, 2 + 0.25 + 10},    // NaN goes left at a NaN-missing node; zero goes right at a zero node
      {{1, -5, 1}, 4 + 0.25 + 20},      // f0 > 0.5; category 1 is not in the set
      {{0.5, kNaN, 32}, 2 + 0.25 + 10}, // NaN at a zero-missing node is zero; category 32 in the second word
      {{0.2, 1e-36, -1}, 2 + 0.25 + 20},  // inside the zero band is zero; negative categories go right
      {{0.2, -1, kNaN}, 1 + 0.25 + 20},   // threshold is inclusive; NaN category goes right
      {{0.2, -1, 64}, 1 + 0.25 + 20},     // category beyond the bitset goes right
      {{0.2, -1, 2.9}, 1 + 0.25 + 10},    // categories truncate toward zero
  };
  std::vector<double> rows, out(std::size(cases));
  for (const auto& c : cases) {
    EXPECT_EQ(m.predict_row(c.row.data()), c.want) << c.row[0] << " " << c.row[1] << " " << c.row[2];
    rows.insert(rows.end(), c.row.begin(), c.row.end());
  }
  m.predict(rows.data(), std::size(cases), 3, out.data());
  for (std::size_t i = 0; i < std::size(cases); ++i) EXPECT_EQ(out[i], cases[i].want) << i;
  EXPECT_THROW(m.predict(rows.data(), 1, 4, out.data()), ModelMismatch);
}

TEST(Gbdt, LoadsPlainAndGzipFiles) {
  auto dir = std::filesystem::temp_directory_path() / ("tilepick_gbdt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string plain = (dir / "m.txt").string(), gz = (dir / "m.txt.gz").string();
  std::ofstream(plain) << kModel;
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzputs(f, kModel);
  gzclose(f);
  const double row[3] = {0, -2, 0};
  EXPECT_EQ(GbdtModel::load(plain).predict_row(row), 11.25);
  EXPECT_EQ(GbdtModel::load(gz).predict_row(row), 11.25);
  EXPECT_THROW(GbdtModel::load((dir / "absent.txt").string()), NotFound);
  // A path to an endless file is refused at the size cap instead of filling the memory.
  try {
    GbdtModel::load("/dev/zero");
    ADD_FAILURE() << "/dev/zero loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::io_error);
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Gbdt, ChecksFeatureNamesAgainstTheSchema) {
  GbdtModel m = GbdtModel::parse(kModel);
  EXPECT_NO_THROW(m.check_feature_names(std::vector<std::string>{"a", "b", "c"}));
  try {
    m.check_feature_names(std::vector<std::string>{"a", "x", "c"});
    FAIL() << "expected ModelMismatch";
  } catch (const ModelMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("model feature 1 is 'b' but the caller's is 'x'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.check_feature_names(std::vector<std::string>{"a", "b"}), ModelMismatch);
  try {
    m.check_schema(feature_schema());
    FAIL() << "expected ModelMismatch";
  } catch (const ModelMismatch& e) {
    EXPECT_NE(std::string(e.what()).find(feature_schema().hash), std::string::npos) << e.what();
  }
}

// Each malformed variant fails with a ParseError whose message names the line and the token.
TEST(Gbdt, MalformedModelsNameLineAndToken) {
  struct Case {
    std::string text, token, message;
  } cases[] = {
      {replace(kModel, "threshold=0.5 -1", "threshold=0.5 x1"), "x1", "src:17: 'threshold': 'x1' is not a number"},
      {replace(kModel, "leaf_value=1 2 4", "leaf_value=1 2"), "leaf_value", "src:21: 'leaf_value' has 2 values, expected 3"},
      {replace(kModel, "split_feature=0 1", "split_feature=0 7"), "7", "split_feature 7 of node 1 is not a feature index"},
      {replace(kModel, "right_child=-3 -2", "right_child=-3 -7"), "-7", "src:19: child -7 of node 1 is out of range"},
      {replace(kModel, "left_child=1 -1", "left_child=0 -1"), "0", "child 0 of node 0"},
      {std::string(kModel).substr(0, std::string(kModel).find("end of trees")), "", "missing 'end of trees' (truncated"},
      {replace(kModel, "Tree=1", "Tree=5"), "Tree=5", "src:31: tree 5 out of order (expected 1)"},
      {replace(kModel, "max_feature_idx=2", "max_feature_idx=3"), "feature_names", "3 feature names but max_feature_idx=3"},
      {replace(kModel, "num_class=1\n", ""), "num_class", "missing 'num_class='"},
      {replace(kModel, "cat_threshold=5 1", "cat_threshold=5"), "cat_boundaries", "cat_boundaries must rise"},
      {replace(kModel, "num_leaves=3", "num_leaves=0"), "num_leaves", "num_leaves must be at least 1"},
      {replace(kModel, "tree_sizes=100 100 100", "tree_sizes 100"), "tree_sizes 100", "expected key=value"},
      {std::string("booster\n") + kModel, "booster", "src:1: not a LightGBM text model"},
      // An edited model with non-finite leaves is refused, not used.
      {replace(kModel, "leaf_value=1 2 4", "leaf_value=1 inf 4"), "leaf_value", "src:21: leaf_value holds a non-finite value"},
      {replace(kModel, "leaf_value=1 2 4", "leaf_value=nan 2 4"), "leaf_value", "non-finite"},
  };
  for (const auto& c : cases) {
    try {
      GbdtModel::parse(c.text, "src");
      ADD_FAILURE() << "no error for case '" << c.message << "'";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_EQ(e.token(), c.token) << e.what();
    }
  }
}

TEST(Gbdt, RefusesWhatItDoesNotEvaluate) {
  EXPECT_THROW(GbdtModel::parse(replace(kModel, "objective=regression", "objective=binary sigmoid:1")), Unsupported);
  EXPECT_THROW(GbdtModel::parse(replace(kModel, "objective=regression", "objective=regression sqrt")), Unsupported);
  EXPECT_THROW(GbdtModel::parse(replace(kModel, "num_class=1", "num_class=3")), Unsupported);
  EXPECT_THROW(GbdtModel::parse(replace(kModel, "is_linear=0", "is_linear=1")), Unsupported);
  EXPECT_NO_THROW(GbdtModel::parse(replace(kModel, "objective=regression", "objective=lambdarank")));
}

}  // namespace
}  // namespace tilepick
