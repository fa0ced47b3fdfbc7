// Surrogate search: explore a family's full config-field domains (far too many configs to
// enumerate) with a scorer (the learned model, or the analytic fallback) and propose the best
// legal configs to measure next.
//
// A search space is one family plus one axis per field component that applies to it (tile_m,
// tile_n, tile_k, warps_m, ...), each with its value list: by default the whole domain of
// config_fields() (pow2 fields: their powers of two; `align` is one axis of auto plus every
// explicit width tuple). A config space file (space.hpp) narrows it: a field it lists takes the
// file's values, an unlisted field keeps its full domain, and its filters become constraints.
// A config is encoded as one value index per axis.
//
// Illegal draws (config_error, a space filter, or legal() false) score -inf: random search and
// the initial DE population resample them, DE retries an illegal trial a few times before keeping
// the target. They are counted, and they do not use the budget: the budget counts scored configs.
// Results are deterministic for a given seed (std::mt19937_64, no platform distributions).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/expr.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/selector.hpp"
#include "tilepick/space.hpp"

namespace tilepick::search {

struct Axis {
  const FieldDesc* field;
  int component;                           // -1: the whole field (values hold every component)
  std::vector<std::array<int, 3>> values;  // the axis domain, by index
  std::string name() const;                // "tile_m", or the field name for a whole-field axis
  std::array<int, 3> value_of(const KernelConfig& c) const;  // the config's value on this axis
};

struct Space {
  Family family = Family::sm80;
  std::vector<Axis> axes;
  std::vector<expr::Expr> filters;  // from a space file; [] for the full domains
  std::string source;               // "full field domains" or the space file's path

  double raw_size() const;          // product of the axis sizes
  // The config at one index per axis (fields without an axis keep their defaults). Throws
  // InvalidArgument when the vector has the wrong length or an index is out of range.
  KernelConfig decode(std::span<const int> index) const;
  // The index vector of a config, nullopt when one of its values is not on an axis.
  std::optional<std::vector<int>> encode(const KernelConfig& c) const;
};

// The full field domains of a family.
Space full_space(Family family);
// The full domains narrowed by a space file (see the top comment); `family` must be one the space
// lists (or sm80 when it lists no fam). Throws InvalidArgument otherwise.
Space narrowed_space(const ConfigSpace& file, Family family);
// "5.2e9"
std::string format_count(double n);

// Scores a batch of resolved legal configs of one problem: higher is better, one score per config.
using Scorer = std::function<std::vector<double>(std::span<const KernelConfig> configs)>;
// The selector's scores for the problem (its model through rank_configs, or the analytic fallback
// when it has no usable model); *source gets "model:<folder>" or "fallback".
Scorer selector_scorer(const Selector& selector, const Problem& p, const ArchSpec& arch, std::string* source = nullptr);

struct Options {
  int budget = 2000;           // configs scored (illegal draws not included)
  std::uint64_t seed = 1;
  int top_k = 10;              // distinct legal configs returned
  bool exclude_pool = false;   // leave configs of the default pool out of `top`
  // Draws in a row that add no new legal config before giving up: max(10000, budget x this).
  double max_illegal_ratio = 50;
};

struct DeOptions : Options {
  int population = 32;
  int generations = 0;  // most generations; 0 = until the budget is used (or the population converged)
  double F = 0.5;       // differential weight, (0, 2]
  double CR = 0.3;      // crossover probability, [0, 1]
  // Warm start: configs placed in the initial population first (those the space cannot encode or
  // that are illegal are skipped), e.g. the model's best pool configs; the rest is random.
  std::vector<KernelConfig> initial;
};

struct Found {
  KernelConfig config;  // resolved for the problem
  std::string text;     // to_string(config)
  double score = 0;
  bool in_pool = false;  // in Registry::default_registry().lookup(problem, arch)
  int unseen = 0;        // axes whose value no pool config of the problem uses (where the model extrapolates)
};

struct Result {
  std::string method;            // "random" or "de"
  // Best first; equal scores: pool configs, then fewer unseen values, then by text. Distinct, legal, <= top_k.
  std::vector<Found> top;
  std::size_t evaluations = 0;   // distinct configs scored
  std::size_t illegal = 0;       // draws rejected by config_error, a filter or legal()
  std::size_t generations = 0;   // DE generations run (0 for random)
  double raw_size = 0;           // the space's raw size
  Found best_any;                // the best scored config, in the pool or not
  std::optional<Found> best_outside_pool;  // the best scored config outside the default pool
};

Result random_search(const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer,
                     const Options& opt);
Result differential_evolution(const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer,
                              const DeOptions& opt);
// By method name: "de" or "random" (InvalidArgument names the method otherwise).
Result run(const std::string& method, const Problem& p, const ArchSpec& arch, const Space& space,
           const Scorer& scorer, const DeOptions& opt);

}  // namespace tilepick::search
