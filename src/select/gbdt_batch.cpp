// Batch prediction. Columns constant over the batch (every problem and device term when the rows
// are one problem's candidates) decide their nodes once: each tree is specialized to the nodes on
// varying columns, then evaluated tree by tree over all rows. Every row reaches the same leaves and
// sums them in the same tree order as predict_row, so the scores are bit-identical.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "select/gbdt_internal.hpp"

namespace tilepick {
namespace {

// How a specialized node compares its value; kGeneral defers to gbdt_decide.
enum Kind : std::uint8_t {
  kLe,         // left iff v <= t (no NaN in the column, or NaN-missing with default right)
  kNotGt,      // left iff !(v > t): NaN-missing, default left
  kNanZeroLe,  // NaN reads as 0, then v <= t: missing type None
  kGeneral,    // categorical or zero-missing
};

struct SpecNode {
  double threshold;
  std::int32_t col;          // column of the compact matrix
  std::int32_t left, right;  // >= 0: specialized node; < 0: ~index into Workspace::leaves
  std::uint8_t kind;
  const GbdtModel::Tree* tree;  // kGeneral: the original node
  const GbdtModel::Node* node;
};

struct Workspace {
  std::vector<double> x;            // rows x varying columns, zero-banded
  std::vector<std::int32_t> col_of; // feature -> compact column, -1 when constant or unused
  std::vector<double> const_value;  // feature -> value when constant
  std::vector<std::uint8_t> has_nan;
  std::vector<SpecNode> nodes;
  std::vector<double> leaves;
  std::vector<std::int32_t> roots;  // per tree
  // Branch-free form of the specialized trees without kGeneral nodes: leaves are nodes too, whose
  // children are themselves, so every row takes `depth` steps. next = child[2 i + !(v' <= threshold)]
  // with v' = the value, or nan_as[i] when it is NaN.
  std::vector<double> threshold, nan_as, value;
  std::vector<std::int32_t> col, child;
  struct Flat {
    std::int32_t root = 0, depth = 0;  // root < 0: a tree with kGeneral nodes (branchy path)
  };
  std::vector<Flat> flat;  // per tree
};

bool same(double a, double b) { return std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, sizeof a) == 0; }

class Specializer {
 public:
  Specializer(Workspace& ws, const GbdtModel::Tree& t) : ws_(ws), t_(t) {}

  // The specialized form of original child `child` (node >= 0 or ~leaf): constant nodes are
  // decided here, so the result is a node on a varying column or a leaf.
  std::int32_t child(int child) {
    while (child >= 0) {
      const GbdtModel::Node& n = t_.nodes[static_cast<std::size_t>(child)];
      if (ws_.col_of[static_cast<std::size_t>(n.feature)] >= 0) return emit(n);
      child = gbdt_decide(t_, n, ws_.const_value[static_cast<std::size_t>(n.feature)]);
    }
    ws_.leaves.push_back(t_.leaves[static_cast<std::size_t>(~child)]);
    return ~static_cast<std::int32_t>(ws_.leaves.size() - 1);
  }

 private:
  std::int32_t emit(const GbdtModel::Node& n) {
    const auto f = static_cast<std::size_t>(n.feature);
    const int missing = (n.decision >> 2) & 3;
    const bool categorical = n.decision & 1, default_left = n.decision & 2;
    std::uint8_t kind = kGeneral;
    if (!categorical && missing != 1 && !std::isnan(n.threshold)) {
      if (!ws_.has_nan[f] || (missing == 2 && !default_left)) kind = kLe;
      else if (missing == 2) kind = kNotGt;
      else kind = kNanZeroLe;  // missing None
    }
    const auto index = static_cast<std::int32_t>(ws_.nodes.size());
    ws_.nodes.push_back({n.threshold, ws_.col_of[f], 0, 0, kind, &t_, &n});
    const std::int32_t l = child(n.left), r = child(n.right);
    ws_.nodes[static_cast<std::size_t>(index)].left = l;
    ws_.nodes[static_cast<std::size_t>(index)].right = r;
    return index;
  }
  Workspace& ws_;
  const GbdtModel::Tree& t_;
};

// Appends specialized subtree `node` (or ~leaf) to the flat arrays; returns its flat index.
std::int32_t flatten(Workspace& ws, std::int32_t node, std::int32_t& depth, bool& general) {
  const auto index = static_cast<std::int32_t>(ws.threshold.size());
  ws.threshold.push_back(0), ws.nan_as.push_back(0), ws.value.push_back(0), ws.col.push_back(0);
  ws.child.push_back(index), ws.child.push_back(index);
  const auto i = static_cast<std::size_t>(index);
  if (node < 0) {
    ws.value[i] = ws.leaves[static_cast<std::size_t>(~node)];
    depth = 0;
    return index;
  }
  const SpecNode& s = ws.nodes[static_cast<std::size_t>(node)];
  general |= s.kind == kGeneral;
  ws.threshold[i] = s.threshold, ws.col[i] = s.col;
  ws.nan_as[i] = s.kind == kNotGt ? -std::numeric_limits<double>::infinity()
                 : s.kind == kNanZeroLe ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  std::int32_t dl = 0, dr = 0;
  const std::int32_t l = flatten(ws, s.left, dl, general), r = flatten(ws, s.right, dr, general);
  ws.child[2 * i] = l, ws.child[2 * i + 1] = r;
  depth = 1 + std::max(dl, dr);
  return index;
}

void build_flat(Workspace& ws) {
  ws.threshold.clear(), ws.nan_as.clear(), ws.value.clear(), ws.col.clear(), ws.child.clear();
  ws.flat.assign(ws.roots.size(), {});
  for (std::size_t t = 0; t < ws.roots.size(); ++t) {
    const std::size_t mark = ws.threshold.size();
    bool general = false;
    Workspace::Flat f;
    f.root = flatten(ws, ws.roots[t], f.depth, general);
    if (general) {  // the branchy path evaluates it; drop what was appended
      ws.threshold.resize(mark), ws.nan_as.resize(mark), ws.value.resize(mark), ws.col.resize(mark);
      ws.child.resize(2 * mark);
      f.root = -1;
    }
    ws.flat[t] = f;
  }
}

// One flat tree over all rows, kGroup rows in lockstep for instruction-level parallelism.
void flat_tree(const Workspace& ws, const Workspace::Flat& f, std::size_t width, std::size_t n_rows, double* out) {
  constexpr std::size_t kGroup = 16;
  const double* thr = ws.threshold.data();
  const double* nan_as = ws.nan_as.data();
  const std::int32_t* col = ws.col.data();
  const std::int32_t* child = ws.child.data();
  for (std::size_t base = 0; base < n_rows; base += kGroup) {
    const std::size_t g = std::min(kGroup, n_rows - base);
    const double* rows = ws.x.data() + base * width;
    std::int32_t cur[kGroup];
    for (std::size_t r = 0; r < kGroup; ++r) cur[r] = f.root;
    for (std::int32_t step = 0; step < f.depth; ++step)
      for (std::size_t r = 0; r < g; ++r) {
        const auto n = static_cast<std::size_t>(cur[r]);
        double v = rows[r * width + static_cast<std::size_t>(col[n])];
        v = v != v ? nan_as[n] : v;
        cur[r] = child[2 * n + !(v <= thr[n])];
      }
    for (std::size_t r = 0; r < g; ++r) out[base + r] += ws.value[static_cast<std::size_t>(cur[r])];
  }
}

}  // namespace

void GbdtModel::predict_batch(const double* rows, std::size_t n_rows, std::size_t n_cols, double* out) const {
  thread_local Workspace ws;
  // Columns: constant over the batch or varying (gathered into the compact matrix).
  ws.col_of.assign(n_cols, -1);
  ws.const_value.assign(n_cols, 0.0);
  ws.has_nan.assign(n_cols, 0);
  std::vector<int> varying;  // small: at most used_features_.size()
  varying.reserve(used_features_.size());
  for (int f : used_features_) {
    const auto fi = static_cast<std::size_t>(f);
    const double first = gbdt_zero_band(rows[fi]);
    bool constant = true, nan = false;
    for (std::size_t i = 0; i < n_rows; ++i) {
      const double v = gbdt_zero_band(rows[i * n_cols + fi]);
      constant &= same(v, first);
      nan |= std::isnan(v);
    }
    ws.has_nan[fi] = nan;
    if (constant) ws.const_value[fi] = first;
    else ws.col_of[fi] = static_cast<std::int32_t>(varying.size()), varying.push_back(f);
  }
  const std::size_t width = varying.size();
  ws.x.resize(n_rows * width);
  for (std::size_t i = 0; i < n_rows; ++i)
    for (std::size_t j = 0; j < width; ++j)
      ws.x[i * width + j] = gbdt_zero_band(rows[i * n_cols + static_cast<std::size_t>(varying[j])]);

  // The forest specialized to this batch.
  ws.nodes.clear(), ws.leaves.clear(), ws.roots.clear();
  for (const Tree& t : trees_) ws.roots.push_back(Specializer(ws, t).child(t.nodes.empty() ? -1 : 0));

  build_flat(ws);
  // Tree by tree over the rows; each row sums its leaves in tree order.
  for (std::size_t i = 0; i < n_rows; ++i) out[i] = 0.0;
  const SpecNode* nodes = ws.nodes.data();
  const double* leaves = ws.leaves.data();
  for (std::size_t t = 0; t < ws.roots.size(); ++t) {
    const std::int32_t root = ws.roots[t];
    if (ws.flat[t].root >= 0) {
      flat_tree(ws, ws.flat[t], width, n_rows, out);
      continue;
    }
    if (root < 0) {
      const double v = leaves[~root];
      for (std::size_t i = 0; i < n_rows; ++i) out[i] += v;
      continue;
    }
    const double* row = ws.x.data();
    for (std::size_t i = 0; i < n_rows; ++i, row += width) {
      std::int32_t node = root;
      do {
        const SpecNode& s = nodes[node];
        const double v = row[s.col];
        bool left;
        switch (s.kind) {
          case kLe: left = v <= s.threshold; break;
          case kNotGt: left = !(v > s.threshold); break;
          case kNanZeroLe: left = (std::isnan(v) ? 0.0 : v) <= s.threshold; break;
          default: left = gbdt_decide(*s.tree, *s.node, v) == s.node->left; break;
        }
        node = left ? s.left : s.right;
      } while (node >= 0);
      out[i] += leaves[~node];
    }
  }
}

}  // namespace tilepick
