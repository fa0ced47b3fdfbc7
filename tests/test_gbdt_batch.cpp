// GbdtModel::predict (the load-time evaluation form, rows in groups, batch-constant columns) against
// predict_row on random forests: every decision type, categorical sets, NaN and zero-band values,
// constant and varying columns. Scores must be bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tilepick/gbdt.hpp"

namespace tilepick {
namespace {

constexpr int kFeatures = 7;

// `numeric_only`: no categorical or zero-missing splits, up to 40 leaves.
std::string random_forest(std::mt19937_64& rng, int trees, bool numeric_only = false) {
  std::ostringstream m;
  m.precision(17);
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=" << kFeatures - 1
    << "\nobjective=regression\nfeature_names=f0 f1 f2 f3 f4 f5 f6\n\n";
  std::uniform_real_distribution<double> leaf(-1, 1);
  for (int t = 0; t < trees; ++t) {
    const int leaves = 1 + static_cast<int>(rng() % (numeric_only ? 40 : 20));
    struct N {
      int feature, decision, left, right;
      double threshold;
    };
    std::vector<N> nodes;
    std::vector<std::pair<int, bool>> parent{{-1, false}};
    int num_cat = 0;
    std::vector<std::uint32_t> bounds{0}, bits;
    while (static_cast<int>(parent.size()) < leaves) {
      const int l = static_cast<int>(rng() % parent.size());
      N n{static_cast<int>(rng() % kFeatures), 0, ~l, ~static_cast<int>(parent.size()), 0};
      if (!numeric_only && rng() % 5 == 0) {  // categorical: a set of one or two words
        n.decision = 1 | static_cast<int>(rng() % 4) * 4;
        n.threshold = num_cat++;
        const int words = 1 + static_cast<int>(rng() % 2);
        for (int w = 0; w < words; ++w) bits.push_back(static_cast<std::uint32_t>(rng()));
        bounds.push_back(static_cast<std::uint32_t>(bits.size()));
      } else {
        n.decision = static_cast<int>(rng() % 2) * 2 + static_cast<int>(numeric_only ? (rng() % 2) * 2 : rng() % 3) * 4;
        n.threshold = static_cast<double>(static_cast<int>(rng() % 9) - 4) * 0.5;
      }
      const int index = static_cast<int>(nodes.size());
      nodes.push_back(n);
      auto [p, right] = parent[static_cast<std::size_t>(l)];
      if (p >= 0) (right ? nodes[p].right : nodes[p].left) = index;
      parent[static_cast<std::size_t>(l)] = {index, false};
      parent.push_back({index, true});
    }
    m << "Tree=" << t << "\nnum_leaves=" << leaves << "\nnum_cat=" << num_cat << "\n";
    auto list = [&](const char* key, auto get) {
      m << key << "=";
      for (std::size_t i = 0; i < nodes.size(); ++i) m << (i ? " " : "") << get(nodes[i]);
      m << "\n";
    };
    list("split_feature", [](const N& n) { return n.feature; });
    list("threshold", [](const N& n) { return n.threshold; });
    list("decision_type", [](const N& n) { return n.decision; });
    list("left_child", [](const N& n) { return n.left; });
    list("right_child", [](const N& n) { return n.right; });
    m << "leaf_value=";
    for (int i = 0; i < leaves; ++i) m << (i ? " " : "") << leaf(rng);
    m << "\n";
    if (num_cat > 0) {
      m << "cat_boundaries=";
      for (std::size_t i = 0; i < bounds.size(); ++i) m << (i ? " " : "") << bounds[i];
      m << "\ncat_threshold=";
      for (std::size_t i = 0; i < bits.size(); ++i) m << (i ? " " : "") << bits[i];
      m << "\n";
    }
    m << "is_linear=0\nshrinkage=1\n\n";
  }
  m << "end of trees\n";
  return m.str();
}

// Column c of the rows: kind 0 constant, 1 constant NaN, 2 varying, 3 varying with NaN and zero-band values,
// 4 constant as LightGBM reads it but not in its bits (zeros of the zero band; NaNs of other payloads).
double value(std::mt19937_64& rng, int kind, double constant) {
  const double vals[] = {-3, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 5, 40, 1e-36, -1e-36, -0.0};
  switch (kind) {
    case 0: return constant;
    case 1: return std::nan("");
    case 4:
      if (std::isnan(constant)) return std::nan(rng() % 2 ? "1" : "2");
      return std::fabs(constant) < 1e-30 ? vals[12 + rng() % 3] : constant;  // 1e-36, -1e-36, -0.0 read as 0
    case 2: return vals[rng() % 12];
    default: return rng() % 4 == 0 ? std::nan("") : vals[rng() % 15];
  }
}

bool identical(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One batched predict over `rows` (kFeatures per row) against predict_row, bit for bit, in every
// evaluation form the model has.
void expect_batch_matches_rows(const GbdtModel& m, const std::vector<double>& rows, int round) {
  const std::size_t n = rows.size() / kFeatures;
  using Form = GbdtModel::EvalForm;
  for (const Form form : {Form::automatic, Form::values, Form::ranks}) {
    if (form == Form::ranks && !m.has_rank_form()) continue;
    std::vector<double> batch(n);
    m.predict(rows.data(), n, kFeatures, batch.data(), form);
    for (std::size_t i = 0; i < n; ++i) {
      const double want = m.predict_row(rows.data() + i * kFeatures);
      ASSERT_TRUE(identical(batch[i], want)) << "round " << round << " form " << static_cast<int>(form) << " row " << i
                                             << ": " << batch[i] << " != " << want;
    }
  }
}

TEST(GbdtBatch, MatchesPredictRowBitForBit) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const GbdtModel m = GbdtModel::parse(random_forest(rng, 1 + static_cast<int>(rng() % 30)));
    const std::size_t n = 1 + rng() % 150;  // up to three groups of 64
    std::vector<int> kind(kFeatures);
    std::vector<double> constant(kFeatures);
    for (int f = 0; f < kFeatures; ++f) kind[f] = static_cast<int>(rng() % 5), constant[f] = value(rng, 3, 0);
    std::vector<double> rows(n * kFeatures);
    for (std::size_t i = 0; i < n; ++i)
      for (int f = 0; f < kFeatures; ++f) rows[i * kFeatures + f] = value(rng, kind[f], constant[f]);
    ASSERT_NO_FATAL_FAILURE(expect_batch_matches_rows(m, rows, round));
  }
}

// Numerical forests (every node in the compact form's single comparison) with deep trees, in
// batches on both sides of the group sizes (16 and 64 rows), single rows included.
TEST(GbdtBatch, NumericalForestsMatchPredictRowBitForBitAtEveryBatchSize) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    const GbdtModel m = GbdtModel::parse(random_forest(rng, 1 + static_cast<int>(rng() % 60), true));
    ASSERT_TRUE(m.has_rank_form()) << "round " << round;
    const std::size_t n = 1 + rng() % 70;
    std::vector<double> rows(n * kFeatures);
    for (auto& v : rows) v = value(rng, 3, 0);
    ASSERT_NO_FATAL_FAILURE(expect_batch_matches_rows(m, rows, round));
  }
}

// LightGBM text of `trees` chains over feature 0, each of `leaves` leaves: internal node i splits at
// a threshold of its own (tree t, node i: first + t * (leaves - 1) + i, times 0.25), its left child
// is leaf i, its right child node i + 1 (the last one's is the last leaf).
GbdtModel chain_forest(int trees, int leaves) {
  std::ostringstream m;
  m.precision(17);
  m << "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=0\nobjective=regression\n"
    << "feature_names=f0\n\n";
  auto list = [&](auto item) {
    for (int i = 0; i < leaves - 1; ++i) m << (i ? " " : "") << item(i);
    m << "\n";
  };
  for (int t = 0; t < trees; ++t) {
    m << "Tree=" << t << "\nnum_leaves=" << leaves << "\nsplit_feature=";
    list([](int) { return 0; });
    m << "threshold=";
    list([&](int i) { return 0.25 * (t * (leaves - 1) + i); });
    m << "decision_type=";
    list([](int) { return 2; });
    m << "left_child=";
    list([](int i) { return -(i + 1); });
    m << "right_child=";
    list([&](int i) { return i + 1 < leaves - 1 ? i + 1 : -leaves; });
    m << "leaf_value=";
    for (int i = 0; i < leaves; ++i) m << (i ? " " : "") << 0.5 * t - 0.125 * i;
    m << "\nshrinkage=1\n\n";
  }
  m << "end of trees\n";
  return GbdtModel::parse(m.str());
}

// The rank form is exact: each segment of consecutive trees (one per booster of a bag) ranks against
// at most 255 distinct thresholds per column, and every form equals predict_row bit for bit. Forests
// that would need a segment for fewer than 64 trees, or have a categorical split, have no rank form:
// asking for it is refused and the values form scores.
TEST(GbdtBatch, RankFormSegmentsEveryColumnTo255Thresholds) {
  const GbdtModel one_segment = chain_forest(255, 2), two_segments = chain_forest(256, 2),
                  three_segments = chain_forest(600, 2), too_many = chain_forest(12, 128);
  EXPECT_TRUE(one_segment.has_rank_form());
  EXPECT_TRUE(two_segments.has_rank_form());
  EXPECT_TRUE(three_segments.has_rank_form());
  EXPECT_FALSE(too_many.has_rank_form());  // a new segment every second tree
  std::vector<double> rows;
  for (int i = -2; i < 1600; ++i) rows.push_back(0.25 * i), rows.push_back(0.25 * i + 0.1);
  rows.push_back(std::nan(""));
  for (const GbdtModel* m : {&one_segment, &two_segments, &three_segments, &too_many}) {
    std::vector<double> batch(rows.size());
    m->predict(rows.data(), rows.size(), 1, batch.data());
    for (std::size_t i = 0; i < rows.size(); ++i) ASSERT_TRUE(identical(batch[i], m->predict_row(&rows[i]))) << i;
    if (!m->has_rank_form()) continue;
    for (std::size_t n : {std::size_t{16}, rows.size()}) {
      m->predict(rows.data(), n, 1, batch.data(), GbdtModel::EvalForm::ranks);
      for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(identical(batch[i], m->predict_row(&rows[i]))) << i;
    }
  }
  double out = 0;
  EXPECT_THROW(too_many.predict(rows.data(), 1, 1, &out, GbdtModel::EvalForm::ranks), Unsupported);
  std::mt19937_64 rng(5);
  bool categorical_seen = false;
  for (int round = 0; round < 20 && !categorical_seen; ++round) {
    const std::string text = random_forest(rng, 30);
    if (!std::regex_search(text, std::regex("num_cat=[1-9]"))) continue;
    categorical_seen = true;
    EXPECT_FALSE(GbdtModel::parse(text).has_rank_form());
  }
  EXPECT_TRUE(categorical_seen);
}

TEST(GbdtBatch, EmptyBatchesAndDefaultModels) {
  std::mt19937_64 rng(13);
  const GbdtModel m = GbdtModel::parse(random_forest(rng, 5));
  double out = 42;
  m.predict(nullptr, 0, kFeatures, &out);
  EXPECT_EQ(out, 42);  // nothing read or written
  const GbdtModel empty;
  empty.predict(nullptr, 1, 0, &out);
  EXPECT_EQ(out, 0.0);
}

TEST(GbdtBatch, ListsTheFeaturesSplitsUse) {
  std::mt19937_64 rng(3);
  const GbdtModel m = GbdtModel::parse(random_forest(rng, 5));
  std::vector<bool> used(kFeatures, false);
  for (int f : m.used_features()) {
    ASSERT_GE(f, 0);
    ASSERT_LT(f, kFeatures);
    used[static_cast<std::size_t>(f)] = true;
  }
  EXPECT_FALSE(m.used_features().empty());
  EXPECT_TRUE(std::is_sorted(m.used_features().begin(), m.used_features().end()));
}

}  // namespace
}  // namespace tilepick
