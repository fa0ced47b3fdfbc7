// Pieces of the GBDT evaluator shared by the parser (gbdt.cpp) and the evaluation (gbdt_batch.cpp).
// Internal to src/select.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tilepick/gbdt.hpp"

namespace tilepick {

// LightGBM's decision at node `n` of `t` for one (zero-banded) feature value; returns the child.
int gbdt_decide(const GbdtModel::Tree& t, const GbdtModel::Node& n, double v);
// LightGBM's zero band: values within it are zeros (stored as 1e-35f widened to double).
inline const double kZeroThreshold = static_cast<double>(1e-35f);
// A dense value as LightGBM reads it: inside the zero band -> exact 0 (NaN stays NaN).
inline double gbdt_zero_band(double v) { return !(std::fabs(v) > kZeroThreshold) && !std::isnan(v) ? 0.0 : v; }

// Group walks (gbdt_batch.cpp, gbdt_rank.cpp): a right subtree still to walk with its rows as bits.
struct GbdtPending {
  std::int32_t node;
  std::uint64_t rows;
};
// One split of a group walk at node i: the `left` rows go on to node i + 1, the rest to `right`; with
// rows on both sides the right ones wait on the stack.
template <class Mask>
inline void gbdt_branch(Mask left, Mask& rows, std::int32_t& i, std::int32_t right, GbdtPending* stack,
                        std::size_t& top) {
  const Mask go_right = rows & ~left;
  if (!go_right) {
    ++i;
  } else if (!left) {
    i = right;
  } else {
    stack[top++] = {right, go_right};
    ++i, rows = left;
  }
}
// For each feature in `columns`: whether it holds one (zero-banded) value over the n row-major rows, bit for
// bit (NaNs alike), and first[j], that value of row 0. One pass over the rows in memory order.
void gbdt_constant_columns(const double* rows, std::size_t n_rows, std::size_t n_cols, const std::vector<int>& columns,
                           std::vector<std::uint8_t>& constant, std::vector<double>& first);

// The forest in evaluation form, built at load: 16-byte nodes, each tree in preorder (a node's left
// child is the next node), leaves are nodes whose right child is themselves. The columns some split
// uses are renumbered 0..n-1 and every one comes in three versions, by what a NaN value reads as: 0
// (missing None), -inf (NaN-missing, default left), NaN (NaN-missing, default right; the
// zero-banded value as it is). A numerical node reads the version its missing type needs and sends
// the row left iff that value <= value. Categorical, zero-missing and NaN-threshold nodes
// ("general") defer to gbdt_decide on the plain version of their column.
struct GbdtNode {
  double value;        // threshold; leaf: the leaf value; general: index into GbdtForest::general
  std::int32_t right;  // right child (absolute index); leaf: itself; general node: ~right child
  std::int32_t slot;   // version * columns.size() + column
};
static_assert(sizeof(GbdtNode) == 16);

// The same forest with every threshold replaced by its rank among the distinct thresholds of its
// column within its segment: consecutive trees where each column has at most 255 of them (one
// LightGBM booster with the default max_bin keeps it so; a bag of boosters binned apart takes one
// segment each). For forests with no general node and trees of at most 256 nodes. A value's rank is
// how many thresholds lie below it (NaN: 255); "value <= threshold j" is then exactly "rank <= j", a
// byte compare, so 16 rows are decided by one SSE2 compare and the nodes shrink to 4 bytes.
struct GbdtRankForest {
  static constexpr std::uint16_t kLeaf = 0xFFFF;
  struct Node {
    std::uint16_t slot;  // as GbdtNode::slot; kLeaf for a leaf
    std::uint8_t rank;   // threshold index in its column and segment; leaf: leaf index within its tree
    std::uint8_t right;  // right child - this node (the left child is the next node)
  };
  struct Segment {
    std::size_t tree_begin, tree_end;
    std::vector<std::vector<double>> thresholds;  // per column, ascending, distinct, at most 255
  };
  std::vector<Segment> segments;  // in tree order, covering every tree
  std::vector<Node> nodes;
  std::vector<std::int32_t> roots;      // per tree
  std::vector<std::uint32_t> leaf_base;  // per tree: its first entry in leaves
  std::vector<double> leaves;
};
static_assert(sizeof(GbdtRankForest::Node) == 4);

struct GbdtForest {
  struct General {
    std::uint32_t tree, node;  // in GbdtModel's trees
  };
  std::vector<int> columns;  // feature of each column (GbdtModel::used_features)
  std::vector<std::uint8_t> read;  // per slot: whether some node reads it
  std::vector<GbdtNode> nodes;
  std::vector<std::int32_t> roots;  // per tree
  std::size_t max_depth = 0;         // of the deepest tree
  std::vector<General> general;
  std::shared_ptr<const GbdtRankForest> ranks;  // null where the forest has no rank form
};
// The rank form of `f`, or null where it has none (see GbdtRankForest).
std::shared_ptr<const GbdtRankForest> gbdt_build_rank_forest(const GbdtForest& f);
// Raw scores by the rank form (bit-identical to predict_row); rows as in GbdtModel::predict.
void gbdt_predict_ranks(const GbdtForest& f, const double* rows, std::size_t n_rows, std::size_t n_cols, double* out);
std::shared_ptr<const GbdtForest> gbdt_build_forest(const std::vector<GbdtModel::Tree>& trees,
                                                    const std::vector<int>& used_features, std::size_t num_features);

}  // namespace tilepick
