// Pieces of the GBDT evaluator shared by the per-row and the batch paths. Internal to src/select.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tilepick/gbdt.hpp"

namespace tilepick {

// LightGBM's decision at node `n` of `t` for one (zero-banded) feature value; returns the child.
int gbdt_decide(const GbdtModel::Tree& t, const GbdtModel::Node& n, double v);
// A dense value as LightGBM reads it: inside the zero band -> exact 0 (NaN stays NaN).
double gbdt_zero_band(double v);

// Batches up to this many rows (without a flat form) are evaluated row by row: specializing the
// forest (~0.6 us per tree) costs more than it saves for them.
inline constexpr std::size_t kGbdtRowByRowMaxRows = 32;
// Forests up to this many trees, none deeper than kGbdtFlatMaxDepth, are precompiled into a flat
// form at load (gbdt_flat.cpp). Every row walks a flat tree's whole depth, so deep trees are faster
// through the per-call specialization, which drops the nodes on the batch's constant columns (a
// 128 x 31-leaf student: 1.5 ms flat vs 1.07 ms specialized on 823 rows).
inline constexpr std::size_t kGbdtFlatMaxTrees = 256;
inline constexpr std::int32_t kGbdtFlatMaxDepth = 8;
// The flat form of `trees`, or nullptr when a tree has a node it cannot take (categorical,
// zero-missing), is deeper than kGbdtFlatMaxDepth, or there are more than kGbdtFlatMaxTrees trees.
std::shared_ptr<const GbdtFlatForest> gbdt_build_flat(const std::vector<GbdtModel::Tree>& trees,
                                                      const std::vector<int>& used, std::size_t num_features);
// Row-major rows (n_cols columns) -> out, bit-identical to predict_row.
void gbdt_predict_flat(const GbdtFlatForest& f, const double* rows, std::size_t n_rows, std::size_t n_cols,
                       double* out);

}  // namespace tilepick
