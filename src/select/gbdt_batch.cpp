// Evaluation over the load-time forest (gbdt_internal.hpp's GbdtForest). Rows go in groups of up
// to kGroup, each tree walked once per group with the set of rows at each node as a bit mask: a
// node on a column that is constant over the batch (one problem's candidates share every problem
// and device term) is decided once for the whole set; a node on a varying column splits the set by
// comparing the group's values, stored column by column. Every row reaches the same leaf as
// LightGBM and sums its leaves in tree order from 0: the scores are bit-identical.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "select/gbdt_internal.hpp"

namespace tilepick {
namespace {

constexpr std::size_t kPrefetchAhead = 4;            // trees
constexpr std::size_t kPrefetchMinNodes = 1u << 15;  // 512 KiB of nodes: smaller forests stay in cache
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// What a NaN reads as in each version of a column (see GbdtNode); version 2 is the plain value.
constexpr double kNanAs[3] = {0.0, -std::numeric_limits<double>::infinity(), kNaN};
constexpr std::int32_t kPlain = 2;

struct Context {
  const std::vector<GbdtModel::Tree>& trees;
  const GbdtForest& forest;
};

// Whether the row goes left at general node n (its plain value v).
bool general_goes_left(const Context& c, const GbdtNode& n, double v) {
  const auto g = c.forest.general[static_cast<std::size_t>(n.value)];
  const GbdtModel::Tree& t = c.trees[g.tree];
  const GbdtModel::Node& node = t.nodes[g.node];
  return gbdt_decide(t, node, v) == node.left;
}

// Appends the preorder form of `tree` from `node` (>= 0 node, < 0 ~leaf) to f; returns its depth.
std::size_t append_tree(GbdtForest& f, const std::vector<std::int32_t>& col_of, const GbdtModel::Tree& tree,
                 std::uint32_t tree_index, int node) {
  const auto index = static_cast<std::int32_t>(f.nodes.size());
  if (node < 0) {
    f.nodes.push_back({tree.leaves[static_cast<std::size_t>(~node)], index, 0});
    return 0;
  }
  const GbdtModel::Node& n = tree.nodes[static_cast<std::size_t>(node)];
  const int missing = (n.decision >> 2) & 3;
  const bool general = (n.decision & 1) || (missing != 0 && missing != 2) || std::isnan(n.threshold);
  const std::int32_t version = general || (missing == 2 && !(n.decision & 2)) ? kPlain : missing == 2 ? 1 : 0;
  const auto width = static_cast<std::int32_t>(f.columns.size());
  f.nodes.push_back({n.threshold, 0, version * width + col_of[static_cast<std::size_t>(n.feature)]});
  f.read[static_cast<std::size_t>(f.nodes.back().slot)] = 1;
  if (general) {
    f.nodes.back().value = static_cast<double>(f.general.size());
    f.general.push_back({tree_index, static_cast<std::uint32_t>(node)});
  }
  const std::size_t left = append_tree(f, col_of, tree, tree_index, n.left);
  const auto right = static_cast<std::int32_t>(f.nodes.size());
  f.nodes[static_cast<std::size_t>(index)].right = general ? ~right : right;
  return 1 + std::max(left, append_tree(f, col_of, tree, tree_index, n.right));
}

// A varying slot of the group's values: its column and what a NaN reads as in its version.
struct Fill {
  std::size_t slot, column;
  double nan_as;
};

// One call's rows: which slots are constant over the batch (and their value), and one group's
// varying values slot by slot (x[slot * group size + r]).
struct Workspace {
  std::vector<std::uint8_t> column_constant;  // per column
  std::vector<double> first;                  // per column: row 0's value
  std::vector<std::uint8_t> constant;         // per slot
  std::vector<double> value;                  // per slot: the constant value
  std::vector<Fill> fills;  // the slots that are not constant and that some node reads
  std::vector<double> x;
  std::vector<GbdtPending> stack;  // the right subtrees still to walk: at most one per level
};

// Bit r set iff v[r] <= t (false for NaN), r < kGroup.
template <std::size_t kGroup, class Mask>
Mask rows_le(const double* v, double t) {
  Mask m = 0;
#if defined(__SSE2__)
  const __m128d threshold = _mm_set1_pd(t);
#pragma GCC unroll 32
  for (std::size_t r = 0; r < kGroup; r += 2)
    m |= static_cast<Mask>(_mm_movemask_pd(_mm_cmple_pd(_mm_loadu_pd(v + r), threshold))) << r;
#else
  for (std::size_t r = 0; r < kGroup; ++r) m |= static_cast<Mask>(v[r] <= t) << r;
#endif
  return m;
}

// Sums of g <= kGroup rows (already in ws.x) into out. Mask: the rows as bits.
template <std::size_t kGroup, class Mask>
void eval_group(const Context& c, Workspace& ws, std::size_t g, double* out) {
  static_assert(kGroup <= 8 * sizeof(Mask));
  const GbdtNode* nodes = c.forest.nodes.data();
  const std::uint8_t* constant = ws.constant.data();
  const double* cval = ws.value.data();
  const double* x = ws.x.data();
  const Mask all = g >= 8 * sizeof(Mask) ? ~Mask{0} : (Mask{1} << g) - 1;
  double sum[kGroup] = {};
  GbdtPending* stack = ws.stack.data();
  const std::vector<std::int32_t>& roots = c.forest.roots;
  const bool prefetch = c.forest.nodes.size() > kPrefetchMinNodes;
  for (std::size_t t = 0; t < roots.size(); ++t) {
    // Node loads along a path depend on each other: fetch a later tree while this one is walked.
    if (prefetch && t + kPrefetchAhead + 1 < roots.size())
      for (std::int32_t p = roots[t + kPrefetchAhead]; p < roots[t + kPrefetchAhead + 1]; p += 4) __builtin_prefetch(nodes + p);
    std::size_t top = 0;
    std::int32_t i = roots[t];
    Mask rows = all;
    for (;;) {
      const GbdtNode& n = nodes[i];
      if (n.right == i) {  // leaf: each of the rows gets it
        for (Mask m = rows; m; m &= m - 1) sum[std::countr_zero(m)] += n.value;
        if (top == 0) break;
        --top, i = stack[top].node, rows = static_cast<Mask>(stack[top].rows);
        continue;
      }
      const bool general = n.right < 0;
      const std::int32_t right = general ? ~n.right : n.right;
      const auto slot = static_cast<std::size_t>(n.slot);
      if (constant[slot]) {
        i = (general ? general_goes_left(c, n, cval[slot]) : cval[slot] <= n.value) ? i + 1 : right;
        continue;
      }
      const double* v = x + slot * kGroup;
      Mask left = 0;
      if (!general) [[likely]] {
        left = rows_le<kGroup, Mask>(v, n.value);
      } else {
        for (Mask m = rows; m; m &= m - 1)
          left |= static_cast<Mask>(general_goes_left(c, n, v[std::countr_zero(m)])) << std::countr_zero(m);
      }
      gbdt_branch<Mask>(left & rows, rows, i, right, stack, top);
    }
  }
  for (std::size_t r = 0; r < g; ++r) out[r] = sum[r];
}

// Fills ws.x group by group (the varying slots that some node reads, row by row) and evaluates each group;
// at(i, j): row i, column j. The slots of rows past the group's end keep old values: no mask selects them.
template <std::size_t kGroup, class Mask, class At>
void predict_groups(const Context& c, Workspace& ws, const At& at, std::size_t n_rows, double* out) {
  const std::size_t width = c.forest.columns.size();
  ws.x.resize(3 * width * kGroup);
  ws.fills.clear();
  for (std::size_t slot = 0; slot < 3 * width; ++slot)
    if (!ws.constant[slot] && c.forest.read[slot]) ws.fills.push_back({slot, slot % width, kNanAs[slot / width]});
  for (std::size_t base = 0; base < n_rows; base += kGroup) {
    const std::size_t g = std::min(kGroup, n_rows - base);
    for (std::size_t r = 0; r < g; ++r)
      for (const Fill& f : ws.fills) {
        const double v = at(base + r, f.column);
        ws.x[f.slot * kGroup + r] = std::isnan(v) ? f.nan_as : v;
      }
    eval_group<kGroup, Mask>(c, ws, g, out + base);
  }
}

bool same(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

}  // namespace

void gbdt_constant_columns(const double* rows, std::size_t n_rows, std::size_t n_cols, const std::vector<int>& columns,
                           std::vector<std::uint8_t>& constant, std::vector<double>& first) {
  const std::size_t width = columns.size();
  constant.assign(width, 1);
  first.resize(width);
  thread_local std::vector<std::uint32_t> open;  // the columns still constant
  open.resize(width);
  for (std::size_t j = 0; j < width; ++j) {
    first[j] = gbdt_zero_band(rows[columns[j]]);
    open[j] = static_cast<std::uint32_t>(j);
  }
  std::size_t n_open = width;
  for (std::size_t i = 1; i < n_rows && n_open > 0; ++i) {
    const double* row = rows + i * n_cols;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < n_open; ++k) {
      const std::uint32_t j = open[k];
      const auto c = static_cast<std::size_t>(columns[j]);
      // equal bits are the common case; otherwise compare as LightGBM reads them
      if (std::bit_cast<std::uint64_t>(row[c]) == std::bit_cast<std::uint64_t>(rows[c]) ||
          same(gbdt_zero_band(row[c]), first[j]))
        open[kept++] = j;
      else
        constant[j] = 0;
    }
    n_open = kept;
  }
}

namespace {

// Whether the rank form is the faster one for this batch (both are exact). Turning values into ranks
// costs about what the byte compares save on a small forest over many rows (a 128-tree student over
// 823 conv candidates); large forests and small batches gain 1.3-1.8x (bench_select_latency
// BM_eval_form).
bool use_ranks(std::size_t n_rows, std::size_t n_trees) { return n_rows <= 16 || n_trees >= 512; }

}  // namespace

std::shared_ptr<const GbdtForest> gbdt_build_forest(const std::vector<GbdtModel::Tree>& trees,
                                                    const std::vector<int>& used_features, std::size_t num_features) {
  auto f = std::make_shared<GbdtForest>();
  f->columns = used_features;
  if (3 * f->columns.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw Unsupported("GBDT model with " + std::to_string(num_features) + " features: too many to evaluate");
  f->read.assign(3 * f->columns.size(), 0);
  std::vector<std::int32_t> col_of(num_features, -1);
  for (std::size_t j = 0; j < used_features.size(); ++j)
    col_of[static_cast<std::size_t>(used_features[j])] = static_cast<std::int32_t>(j);
  for (std::size_t t = 0; t < trees.size(); ++t) {
    f->roots.push_back(static_cast<std::int32_t>(f->nodes.size()));
    f->max_depth = std::max(f->max_depth, append_tree(*f, col_of, trees[t], static_cast<std::uint32_t>(t),
                                                      trees[t].nodes.empty() ? -1 : 0));
  }
  f->ranks = gbdt_build_rank_forest(*f);
  return f;
}

bool GbdtModel::has_rank_form() const { return forest_ && forest_->ranks; }

void GbdtModel::predict(const double* rows, std::size_t n_rows, std::size_t n_cols, double* out) const {
  predict(rows, n_rows, n_cols, out, EvalForm::automatic);
}

void GbdtModel::predict(const double* rows, std::size_t n_rows, std::size_t n_cols, double* out, EvalForm form) const {
  if (n_cols != feature_names_.size())
    throw ModelMismatch("rows have " + std::to_string(n_cols) + " columns but the model has " +
                        std::to_string(feature_names_.size()) + " features");
  if (!forest_ || n_rows == 0) {  // a default-constructed model scores 0
    std::fill_n(out, n_rows, 0.0);
    return;
  }
  if (form == EvalForm::ranks && !forest_->ranks) throw Unsupported("this GBDT model has no rank form");
  if (form == EvalForm::ranks || (form == EvalForm::automatic && forest_->ranks && use_ranks(n_rows, trees_.size()))) {
    gbdt_predict_ranks(*forest_, rows, n_rows, n_cols, out);
    return;
  }
  const Context c{trees_, *forest_};
  const std::vector<int>& columns = forest_->columns;
  const std::size_t width = columns.size();
  thread_local Workspace ws;
  ws.constant.assign(3 * width, 0);
  ws.value.assign(3 * width, 0.0);
  ws.stack.resize(forest_->max_depth + 1);
  // LightGBM reads a dense row as sparse pairs: values inside the zero band become exact zeros.
  auto at = [&](std::size_t i, std::size_t j) { return gbdt_zero_band(rows[i * n_cols + static_cast<std::size_t>(columns[j])]); };
  gbdt_constant_columns(rows, n_rows, n_cols, columns, ws.column_constant, ws.first);
  for (std::size_t j = 0; j < width; ++j)
    for (std::size_t version = 0; version < 3; ++version) {
      ws.constant[version * width + j] = ws.column_constant[j];
      ws.value[version * width + j] = std::isnan(ws.first[j]) ? kNanAs[version] : ws.first[j];
    }
  // Groups of 16 rows for small batches (the re-scoring of a student's top 16), of 64 for large ones
  // (fewer walks of each tree for the nodes on constant columns).
  if (n_rows <= 16) predict_groups<16, std::uint16_t>(c, ws, at, n_rows, out);
  else predict_groups<64, std::uint64_t>(c, ws, at, n_rows, out);
}

}  // namespace tilepick
