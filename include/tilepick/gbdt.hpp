// Dependency-free evaluator of LightGBM's text model format (plain or gzip): gradient-boosted trees
// with numerical splits (missing values None / Zero / NaN, default direction) and categorical
// splits. Predictions are LightGBM's raw scores, bit for bit: the sum of the trees' leaf values in
// tree order, in double (shrinkage is already folded into the leaf values by LightGBM).
//
// Supported: one output (num_class=1) with objectives whose prediction is the raw score
// (regression, regression_l1, huber, fair, quantile, mape, lambdarank, rank_xendcg). Objectives that
// transform the score (binary, poisson, ...), linear trees and random-forest averaging are refused.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilepick/error.hpp"

namespace tilepick {

struct FeatureSchema;
struct GbdtForest;  // src/select/gbdt_internal.hpp

// A model's feature names do not match what the caller computes.
class ModelMismatch : public Error {
 public:
  explicit ModelMismatch(const std::string& msg) : Error(Status::unsupported, msg) {}
};

class GbdtModel {
 public:
  // Reads `path` (gzip-compressed or plain text; zlib tells them apart). Throws NotFound when the
  // file cannot be opened, Error(io_error) on a corrupt gzip stream, ParseError naming
  // "<path>:<line>" and the token for a malformed model, Unsupported for what is not evaluated.
  static GbdtModel load(const std::string& path);
  static GbdtModel parse(std::string_view text, const std::string& source = "<model>");

  const std::vector<std::string>& feature_names() const { return feature_names_; }
  std::size_t num_features() const { return feature_names_.size(); }
  std::size_t num_trees() const { return trees_.size(); }
  const std::string& objective() const { return objective_; }  // e.g. "lambdarank"

  // Throws ModelMismatch naming the first differing position (or the counts) when the model's
  // feature names are not exactly `names` in order.
  void check_feature_names(std::span<const std::string> names) const;
  void check_schema(const FeatureSchema& schema) const;  // check_feature_names(schema.names)

  // One row (num_features() values) by a plain walk of the parsed trees: the reference that
  // predict() is tested against, not the fast path.
  double predict_row(const double* row) const;
  // Row-major rows (n_cols must equal num_features()); out[i] = raw score of row i, bit-identical to
  // predict_row. Evaluates a compact form of the forest built at load; rows go in groups (16 for
  // up to 16 rows, else 64), each tree walked once per group with the group's rows as a bit mask,
  // nodes on columns constant over the batch (one problem's candidates share every problem and
  // device term) decided once for all of them.
  void predict(const double* rows, std::size_t n_rows, std::size_t n_cols, double* out) const;
  // The same with the evaluation form named (tests and benchmarks; every form gives the same bits):
  // `values` compares doubles; `ranks` compares each value's rank among its column's thresholds
  // (built at load when every column has at most 255 distinct thresholds, no categorical or
  // zero-missing split and no tree over 255 nodes; Unsupported otherwise); `automatic` picks.
  enum class EvalForm { automatic, values, ranks };
  void predict(const double* rows, std::size_t n_rows, std::size_t n_cols, double* out, EvalForm form) const;
  bool has_rank_form() const;
  // Feature indices some split uses, ascending.
  const std::vector<int>& used_features() const { return used_features_; }

  struct Node {
    double threshold = 0;     // numerical: value; categorical: index into the model's bitsets
    int feature = 0;
    int left = 0, right = 0;  // >= 0: node index; < 0: ~leaf index
    std::uint8_t decision = 0;  // LightGBM decision_type bits
  };
  struct Tree {
    std::vector<Node> nodes;                 // empty for a single-leaf tree
    std::vector<double> leaves;
    std::vector<std::uint32_t> cat_bounds;   // num_cat + 1 offsets into cat_bits
    std::vector<std::uint32_t> cat_bits;     // category bitsets (32 categories per word)
  };

 private:
  std::vector<std::string> feature_names_;
  std::string objective_;
  std::vector<Tree> trees_;
  std::vector<int> used_features_;
  std::shared_ptr<const GbdtForest> forest_;  // evaluation form of trees_ (general nodes refer to them)
};

}  // namespace tilepick
