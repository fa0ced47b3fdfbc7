// Evaluation over the rank form of the forest (gbdt_internal.hpp's GbdtRankForest). Each value is
// turned into its rank among its column's thresholds once per segment; the trees are then walked as in
// gbdt_batch.cpp (a group of rows as a bit mask, batch-constant columns decided once) but on byte
// ranks and 4-byte nodes: a quarter of the forest's memory and one SSE2 compare per 16 rows. Every row
// reaches the same leaf as LightGBM and sums its leaves in tree order from 0: bit-identical scores.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "select/gbdt_internal.hpp"

namespace tilepick {
namespace {

using Node = GbdtRankForest::Node;
constexpr std::uint8_t kNanRank = 255;  // above every threshold: "NaN <= t" is false
constexpr std::size_t kMaxTreeNodes = 255;
constexpr std::size_t kPrefetchAhead = 4;            // trees
constexpr std::size_t kPrefetchMinNodes = 1u << 16;  // 256 KiB of nodes: smaller forests stay in cache
constexpr std::size_t kMinTreesPerSegment = 64;      // more segments than that: ranks cost more than they save

// How many thresholds lie below v (v not NaN): a branch-free lower bound.
std::uint8_t rank_of(const std::vector<double>& thresholds, double v) {
  const double* t = thresholds.data();
  std::size_t n = thresholds.size();
  if (n == 0) return 0;
  while (n > 1) {
    const std::size_t half = n / 2;
    t = t[half - 1] < v ? t + half : t;
    n -= half;
  }
  return static_cast<std::uint8_t>((t - thresholds.data()) + (*t < v));
}

// The rank of value v in version `version` of column `thresholds` (see GbdtNode for the versions).
std::uint8_t version_rank(const std::vector<double>& thresholds, double v, std::size_t version) {
  if (!std::isnan(v)) return rank_of(thresholds, v);
  return version == 0 ? rank_of(thresholds, 0.0) : version == 1 ? 0 : kNanRank;
}

// Bit r set iff rank[r] <= j, r < kGroup.
template <std::size_t kGroup, class Mask>
Mask ranks_le(const std::uint8_t* rank, std::uint8_t j) {
  Mask m = 0;
#if defined(__SSE2__)
  const __m128i limit = _mm_set1_epi8(static_cast<char>(j));
  for (std::size_t r = 0; r < kGroup; r += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rank + r));
    const __m128i le = _mm_cmpeq_epi8(_mm_min_epu8(x, limit), x);
    m |= static_cast<Mask>(static_cast<std::uint16_t>(_mm_movemask_epi8(le))) << r;
  }
#else
  for (std::size_t r = 0; r < kGroup; ++r) m |= static_cast<Mask>(rank[r] <= j) << r;
#endif
  return m;
}

struct Workspace {
  std::vector<std::uint8_t> column_constant;  // per column
  std::vector<double> first;                  // per column: row 0's value
  std::vector<std::uint8_t> constant;         // per slot
  std::vector<std::uint8_t> crank;     // per segment and slot: the constant rank
  std::vector<std::uint8_t> x;         // one group's ranks, slot by slot
  std::vector<std::uint32_t> varying;  // the columns that are not constant
  std::vector<GbdtPending> stack;
};

// The trees of segment `seg` over one group of g rows (ranks in ws.x), added to sum in tree order.
template <std::size_t kGroup, class Mask>
void eval_group(const GbdtRankForest& f, Workspace& ws, std::size_t seg, std::size_t g, double* sum) {
  static_assert(kGroup % 16 == 0 && kGroup <= 8 * sizeof(Mask));
  const Node* nodes = f.nodes.data();
  const std::uint8_t* constant = ws.constant.data();
  const std::uint8_t* crank = ws.crank.data() + seg * ws.constant.size();
  const std::uint8_t* x = ws.x.data();
  const Mask all = g >= 8 * sizeof(Mask) ? ~Mask{0} : (Mask{1} << g) - 1;
  GbdtPending* stack = ws.stack.data();
  const std::size_t trees = f.roots.size(), end = f.segments[seg].tree_end;
  const bool prefetch = f.nodes.size() > kPrefetchMinNodes;
  for (std::size_t t = f.segments[seg].tree_begin; t < end; ++t) {
    if (prefetch && t + kPrefetchAhead + 1 < trees) {
      for (std::int32_t p = f.roots[t + kPrefetchAhead]; p < f.roots[t + kPrefetchAhead + 1]; p += 16)
        __builtin_prefetch(nodes + p);
      for (std::uint32_t p = f.leaf_base[t + kPrefetchAhead]; p < f.leaf_base[t + kPrefetchAhead + 1]; p += 8)
        __builtin_prefetch(f.leaves.data() + p);
    }
    const double* leaves = f.leaves.data() + f.leaf_base[t];
    std::size_t top = 0;
    std::int32_t i = f.roots[t];
    Mask rows = all;
    for (;;) {
      const Node n = nodes[i];
      if (n.slot == GbdtRankForest::kLeaf) {
        const double v = leaves[n.rank];
        for (Mask m = rows; m; m &= m - 1) sum[std::countr_zero(m)] += v;
        if (top == 0) break;
        --top, i = stack[top].node, rows = static_cast<Mask>(stack[top].rows);
        continue;
      }
      const std::int32_t right = i + n.right;
      if (constant[n.slot]) {
        i = crank[n.slot] <= n.rank ? i + 1 : right;
        continue;
      }
      gbdt_branch<Mask>(ranks_le<kGroup, Mask>(x + static_cast<std::size_t>(n.slot) * kGroup, n.rank) & rows, rows, i,
                        right, stack, top);
    }
  }
}

// Per group of rows and per segment: the group's ranks of the varying columns, row by row (the rows
// are row-major), 3 versions each, then that segment's trees; sums carried across segments.
template <std::size_t kGroup, class Mask>
void predict_groups(const GbdtForest& f, Workspace& ws, const double* rows, std::size_t n_rows, std::size_t n_cols,
                    const std::vector<std::uint32_t>& varying, double* out) {
  const GbdtRankForest& rf = *f.ranks;
  const std::size_t width = f.columns.size();
  ws.x.assign(3 * width * kGroup, kNanRank);
  std::uint8_t* x = ws.x.data();
  for (std::size_t base = 0; base < n_rows; base += kGroup) {
    const std::size_t g = std::min(kGroup, n_rows - base);
    double sum[kGroup] = {};
    for (std::size_t seg = 0; seg < rf.segments.size(); ++seg) {
      for (std::size_t r = 0; r < g; ++r) {
        const double* row = rows + (base + r) * n_cols;
        for (const std::uint32_t j : varying) {
          const double v = gbdt_zero_band(row[f.columns[j]]);
          const std::vector<double>& thresholds = rf.segments[seg].thresholds[j];
          if (!std::isnan(v)) [[likely]] {
            const std::uint8_t rank = rank_of(thresholds, v);
            x[j * kGroup + r] = x[(width + j) * kGroup + r] = x[(2 * width + j) * kGroup + r] = rank;
          } else {
            for (std::size_t version = 0; version < 3; ++version)
              x[(version * width + j) * kGroup + r] = version_rank(thresholds, v, version);
          }
        }
      }
      eval_group<kGroup, Mask>(rf, ws, seg, g, sum);
    }
    for (std::size_t r = 0; r < g; ++r) out[base + r] = sum[r];
  }
}

}  // namespace

std::shared_ptr<const GbdtRankForest> gbdt_build_rank_forest(const GbdtForest& f) {
  if (!f.general.empty()) return nullptr;
  const std::size_t width = f.columns.size(), trees = f.roots.size();
  if (3 * width >= GbdtRankForest::kLeaf) return nullptr;
  auto rf = std::make_shared<GbdtRankForest>();
  std::vector<std::size_t> ends(f.roots.begin() + 1, f.roots.end());
  ends.push_back(f.nodes.size());
  // Segments: the longest runs of trees whose columns keep at most 255 distinct thresholds.
  std::vector<std::set<double>> open(width);  // the open segment's thresholds per column
  std::size_t open_begin = 0;
  auto close = [&](std::size_t end) {
    GbdtRankForest::Segment seg{open_begin, end, std::vector<std::vector<double>>(width)};
    for (std::size_t j = 0; j < width; ++j) seg.thresholds[j].assign(open[j].begin(), open[j].end());
    rf->segments.push_back(std::move(seg));
    open.assign(width, {});
    open_begin = end;
  };
  std::vector<std::pair<std::size_t, double>> splits;  // one tree's (column, threshold)
  for (std::size_t t = 0; t < trees; ++t) {
    const auto begin = static_cast<std::size_t>(f.roots[t]);
    if (ends[t] - begin > kMaxTreeNodes) return nullptr;
    splits.clear();
    for (std::size_t i = begin; i < ends[t]; ++i)
      if (f.nodes[i].right != static_cast<std::int32_t>(i))
        splits.emplace_back(static_cast<std::size_t>(f.nodes[i].slot) % width, f.nodes[i].value);
    std::sort(splits.begin(), splits.end());
    splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
    std::vector<std::size_t> added(width, 0);
    bool fits = true;
    for (const auto& [j, v] : splits)
      if (!open[j].contains(v)) fits = fits && open[j].size() + ++added[j] <= 255;
    if (!fits) close(t);
    for (const auto& [j, v] : splits) open[j].insert(v);
  }
  close(trees);
  if (rf->segments.size() > 1 + trees / kMinTreesPerSegment) return nullptr;
  for (const auto& seg : rf->segments)
    for (std::size_t t = seg.tree_begin; t < seg.tree_end; ++t) {
      const auto begin = static_cast<std::size_t>(f.roots[t]);
      rf->roots.push_back(static_cast<std::int32_t>(begin));
      rf->leaf_base.push_back(static_cast<std::uint32_t>(rf->leaves.size()));
      std::uint8_t leaf = 0;
      for (std::size_t i = begin; i < ends[t]; ++i) {
        const GbdtNode& n = f.nodes[i];
        if (n.right == static_cast<std::int32_t>(i)) {
          rf->nodes.push_back({GbdtRankForest::kLeaf, leaf++, 0});
          rf->leaves.push_back(n.value);
          continue;
        }
        const std::vector<double>& column = seg.thresholds[static_cast<std::size_t>(n.slot) % width];
        const auto rank = std::lower_bound(column.begin(), column.end(), n.value) - column.begin();
        rf->nodes.push_back({static_cast<std::uint16_t>(n.slot), static_cast<std::uint8_t>(rank),
                             static_cast<std::uint8_t>(static_cast<std::size_t>(n.right) - i)});
      }
    }
  return rf;
}

void gbdt_predict_ranks(const GbdtForest& f, const double* rows, std::size_t n_rows, std::size_t n_cols, double* out) {
  const GbdtRankForest& rf = *f.ranks;
  const std::vector<int>& columns = f.columns;
  const std::size_t width = columns.size(), slots = 3 * width;
  thread_local Workspace ws;
  ws.constant.assign(slots, 0);
  ws.crank.assign(rf.segments.size() * slots, 0);
  ws.stack.resize(f.max_depth + 1);
  gbdt_constant_columns(rows, n_rows, n_cols, columns, ws.column_constant, ws.first);
  for (std::size_t j = 0; j < width; ++j)
    for (std::size_t version = 0; version < 3; ++version) {
      ws.constant[version * width + j] = ws.column_constant[j];
      for (std::size_t seg = 0; seg < rf.segments.size() && ws.column_constant[j]; ++seg)
        ws.crank[seg * slots + version * width + j] = version_rank(rf.segments[seg].thresholds[j], ws.first[j], version);
    }
  std::vector<std::uint32_t>& varying = ws.varying;
  varying.clear();
  for (std::size_t j = 0; j < width; ++j)
    if (!ws.constant[j]) varying.push_back(static_cast<std::uint32_t>(j));
  if (n_rows <= 16) predict_groups<16, std::uint16_t>(f, ws, rows, n_rows, n_cols, varying, out);
  else predict_groups<64, std::uint64_t>(f, ws, rows, n_rows, n_cols, varying, out);
}

}  // namespace tilepick
