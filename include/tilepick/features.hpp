// Features of (problem, config, device): THE one function that training (through the Python
// bindings) and run-time selection both call. Python never re-implements a feature.
//
// A row is a fixed-length vector of doubles whose meaning is the schema: the ordered feature names
// plus a version number. The schema hash (FNV-1a 64 of version and names) is stored with every model;
// a model whose hash differs is refused. Bump kFeatureVersion whenever a formula changes without a
// name changing.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {

inline constexpr int kFeatureVersion = 1;

struct FeatureSchema {
  std::vector<std::string> names;  // ordered, unique
  int version = kFeatureVersion;
  std::string hash;                // 16 hex digits, feature_schema_hash(names, version)
  std::size_t problem_columns = 0; // the leading names, which depend on the problem and device alone

  std::size_t size() const { return names.size(); }
  int index(std::string_view name) const;  // -1 when absent
};

// The schema of this build: fixed problem / tiling / device terms, then one "cfg_<var>" per
// component of every config field (config_fields() order).
const FeatureSchema& feature_schema();
std::string feature_schema_hash(std::span<const std::string> names, int version);

// One row, named through the schema.
struct FeatureRow {
  std::vector<double> values;  // feature_schema().size() entries
  double operator[](std::size_t i) const { return values[i]; }
  double at(std::string_view name) const;  // throws NotFound naming the feature
};

// `config` should be resolved (resolve(c, p)); an align=auto config is resolved here. `device` is an
// arch spec, refined by the live device (match_arch) when there is one. Terms that do not apply
// (conv terms of a GEMM) are 0; terms that cannot be computed are NaN.
FeatureRow features(const Problem& problem, const KernelConfig& config, const ArchSpec& device);

// The leading feature_schema().problem_columns values of features(problem, any config, device): the
// terms of the problem and device alone (what a per-problem model, e.g. a vendor choice, reads).
std::vector<double> problem_features(const Problem& problem, const ArchSpec& device);

// Batch entry points: row-major rows into `out` (n x feature_schema().size() doubles), row i for
// pair i. `threads` <= 0: env::num_threads(); small batches run on the caller's thread.
void features_batch(std::span<const Problem> problems, std::span<const KernelConfig> configs,
                    const ArchSpec& device, double* out, int threads = 0);
// One problem, many configs (selection).
void features_batch(const Problem& problem, std::span<const KernelConfig> configs, const ArchSpec& device,
                    double* out, int threads = 0);

// Analytic fallback (src/select/heuristic.cpp): estimated useful TFLOP/s of the pair from a wave
// model, the padded-work efficiency and a roofline; higher is better. Used when no model is loaded.
double heuristic_score(const Problem& problem, const KernelConfig& config, const ArchSpec& device);
// The same model's estimated kernel time in microseconds (NaN where it has none: no block fits). On the
// README eval's held-out first choices it is within 0.84-1.08x of the measured time at the median
// (log correlation 0.94-0.99); dispatch's auto strategy times the plans it estimates long.
double estimated_time_us(const Problem& problem, const KernelConfig& config, const ArchSpec& device);
// Indices of `configs` ordered best first by heuristic_score (stable for ties).
std::vector<std::size_t> heuristic_rank(const Problem& problem, std::span<const KernelConfig> configs,
                                        const ArchSpec& device);

}  // namespace tilepick
