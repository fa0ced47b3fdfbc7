// GbdtModel::predict (the load-time evaluation form, rows in groups, batch-constant columns) against
// predict_row on random forests: every decision type, categorical sets, NaN and zero-band values,
// constant and varying columns. Scores must be bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
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

// Column c of the rows: kind 0 constant, 1 constant NaN, 2 varying, 3 varying with NaN and zero-band values.
double value(std::mt19937_64& rng, int kind, double constant) {
  const double vals[] = {-3, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 5, 40, 1e-36, -1e-36};
  switch (kind) {
    case 0: return constant;
    case 1: return std::nan("");
    case 2: return vals[rng() % 12];
    default: return rng() % 4 == 0 ? std::nan("") : vals[rng() % 14];
  }
}

bool identical(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One batched predict over `rows` (kFeatures per row) against predict_row, bit for bit.
void expect_batch_matches_rows(const GbdtModel& m, const std::vector<double>& rows, int round) {
  const std::size_t n = rows.size() / kFeatures;
  std::vector<double> batch(n);
  m.predict(rows.data(), n, kFeatures, batch.data());
  for (std::size_t i = 0; i < n; ++i) {
    const double want = m.predict_row(rows.data() + i * kFeatures);
    ASSERT_TRUE(identical(batch[i], want)) << "round " << round << " row " << i << ": " << batch[i] << " != " << want;
  }
}

TEST(GbdtBatch, MatchesPredictRowBitForBit) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const GbdtModel m = GbdtModel::parse(random_forest(rng, 1 + static_cast<int>(rng() % 30)));
    const std::size_t n = 1 + rng() % 150;  // up to three groups of 64
    std::vector<int> kind(kFeatures);
    std::vector<double> constant(kFeatures);
    for (int f = 0; f < kFeatures; ++f) kind[f] = static_cast<int>(rng() % 4), constant[f] = value(rng, 3, 0);
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
    const std::size_t n = 1 + rng() % 70;
    std::vector<double> rows(n * kFeatures);
    for (auto& v : rows) v = value(rng, 3, 0);
    ASSERT_NO_FATAL_FAILURE(expect_batch_matches_rows(m, rows, round));
  }
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
