// Precompiled flat forest for small models (the distilled students): built once at load, so a batch
// pays no per-call specialization. Every node compares `v' <= threshold`, with v' the (zero-banded)
// value or, when it is NaN, nan_as (missing None: 0; NaN-missing default left: -inf, default right:
// NaN); leaves are nodes whose children are themselves, so each row takes the tree's depth in
// steps, 16 rows in lockstep. Rows reach the same leaves as predict_row and sum them in tree order:
// the scores are bit-identical.
#include <algorithm>
#include <cmath>
#include <limits>

#include "select/gbdt_internal.hpp"

namespace tilepick {

struct GbdtFlatForest {
  std::vector<double> threshold, nan_as, value;
  std::vector<std::int32_t> col, child;  // col: index into used (the compact row)
  std::vector<std::int32_t> root, depth;  // per tree
  std::vector<int> used;                  // feature of compact column j
};

namespace {

// Appends the subtree at `node` (>= 0 node, < 0 ~leaf); returns its flat index, or -1 when a node
// cannot be flattened (categorical, zero-missing, NaN threshold).
std::int32_t flatten(GbdtFlatForest& f, const GbdtModel::Tree& t, int node, const std::vector<std::int32_t>& col_of,
                     std::int32_t& depth) {
  const auto index = static_cast<std::int32_t>(f.threshold.size());
  f.threshold.push_back(0), f.nan_as.push_back(0), f.value.push_back(0), f.col.push_back(0);
  f.child.push_back(index), f.child.push_back(index);
  const auto i = static_cast<std::size_t>(index);
  if (node < 0) {
    f.value[i] = t.leaves[static_cast<std::size_t>(~node)];
    depth = 0;
    return index;
  }
  const GbdtModel::Node& n = t.nodes[static_cast<std::size_t>(node)];
  const int missing = (n.decision >> 2) & 3;
  if ((n.decision & 1) || missing == 1 || std::isnan(n.threshold)) return -1;
  f.threshold[i] = n.threshold;
  f.col[i] = col_of[static_cast<std::size_t>(n.feature)];
  f.nan_as[i] = missing == 0 ? 0.0
                : (n.decision & 2) ? -std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::quiet_NaN();
  std::int32_t dl = 0, dr = 0;
  const std::int32_t l = flatten(f, t, n.left, col_of, dl);
  if (l < 0) return -1;
  const std::int32_t r = flatten(f, t, n.right, col_of, dr);
  if (r < 0) return -1;
  f.child[2 * i] = l, f.child[2 * i + 1] = r;
  depth = 1 + std::max(dl, dr);
  return index;
}

}  // namespace

std::shared_ptr<const GbdtFlatForest> gbdt_build_flat(const std::vector<GbdtModel::Tree>& trees,
                                                      const std::vector<int>& used, std::size_t num_features) {
  if (trees.size() > kGbdtFlatMaxTrees) return nullptr;
  auto f = std::make_shared<GbdtFlatForest>();
  f->used = used;
  std::vector<std::int32_t> col_of(num_features, -1);
  for (std::size_t j = 0; j < used.size(); ++j) col_of[static_cast<std::size_t>(used[j])] = static_cast<std::int32_t>(j);
  for (const auto& t : trees) {
    std::int32_t depth = 0;
    const std::int32_t root = flatten(*f, t, t.nodes.empty() ? -1 : 0, col_of, depth);
    if (root < 0 || depth > kGbdtFlatMaxDepth) return nullptr;
    f->root.push_back(root), f->depth.push_back(depth);
  }
  return f;
}

void gbdt_predict_flat(const GbdtFlatForest& f, const double* rows, std::size_t n_rows, std::size_t n_cols,
                       double* out) {
  constexpr std::size_t kGroup = 16;
  const std::size_t width = f.used.size();
  thread_local std::vector<double> x;
  x.resize(n_rows * width);
  for (std::size_t i = 0; i < n_rows; ++i)
    for (std::size_t j = 0; j < width; ++j)
      x[i * width + j] = gbdt_zero_band(rows[i * n_cols + static_cast<std::size_t>(f.used[j])]);
  const double* thr = f.threshold.data();
  const double* nan_as = f.nan_as.data();
  const std::int32_t* col = f.col.data();
  const std::int32_t* child = f.child.data();
  for (std::size_t base = 0; base < n_rows; base += kGroup) {
    const std::size_t g = std::min(kGroup, n_rows - base);
    const double* block = x.data() + base * width;
    double sum[kGroup] = {};
    for (std::size_t t = 0; t < f.root.size(); ++t) {
      std::int32_t cur[kGroup];
      for (std::size_t r = 0; r < kGroup; ++r) cur[r] = f.root[t];
      for (std::int32_t step = 0; step < f.depth[t]; ++step)
        for (std::size_t r = 0; r < g; ++r) {
          const auto n = static_cast<std::size_t>(cur[r]);
          double v = block[r * width + static_cast<std::size_t>(col[n])];
          v = v != v ? nan_as[n] : v;
          cur[r] = child[2 * n + !(v <= thr[n])];
        }
      for (std::size_t r = 0; r < g; ++r) sum[r] += f.value[static_cast<std::size_t>(cur[r])];
    }
    for (std::size_t r = 0; r < g; ++r) out[base + r] = sum[r];
  }
}

}  // namespace tilepick
