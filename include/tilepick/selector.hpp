// Learned selection: rank the legal kernel configs of a problem with the trained model of its
// (op, dtype family, arch), or with the analytic fallback when there is no usable model.
//
// Model folders (written by `python -m tilepick.train`), one per (op, dtype family, arch):
//   models/<name>/model.txt.gz (or model.txt)  LightGBM text model, feature_names = feature_schema().names
//   models/<name>/feature_spec.json            {"feature_names", "schema_hash", "feature_version",
//                                               "space_hash", "op", "dtype_family", "arch", "objective",
//                                               "score": "higher_is_better" | "lower_is_better"}
//   models/<name>/manifest.json                free-form training record (optional "eval" thresholds)
// op is op_name() (gemm, conv_fwd, conv_bwd_data, conv_bwd_weight), dtype_family is dtype_family()
// below, arch the arch spec name (ArchSpec::name, e.g. "h200"); space_hash is config_space_hash(op).
// A folder whose schema hash, feature names or space hash differ from this build is refused; its
// problems go to the fallback (heuristic_score) with one warning per (op, reason) per process.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/gbdt.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/space.hpp"

namespace tilepick {

// The dtype family that keys models, from the input dtype (GEMM A, conv x): "half" (f16 and bf16
// share a model), "tf32" (f32 inputs), "fp8" (e4m3, e5m2).
std::string dtype_family(const Problem& p);

// Identity of the config spaces that feed an op's candidates. Definition (stable, documented for
// the trainer): FNV-1a 64, as 16 hex digits, of the text made of one line "<space name> <space
// hash>\n" per space that lists `op`, in space-name order (the order load_spaces returns), where
// the space hash is ConfigSpace::hash, the FNV-1a 64 of the space JSON re-serialized compactly
// with sorted keys (nlohmann dump()) — so whitespace or key order in the file does not matter, any
// value, filter, op or arch change does. "" text (no space lists op) hashes to the FNV offset basis.
// `tilepick select --space-hash OP` prints it.
std::string config_space_hash(const std::string& op);  // over default_spaces()
std::string config_space_hash(const std::string& op, const std::vector<ConfigSpace>& spaces);

// feature_spec.json of one model folder.
struct ModelSpec {
  std::string name;  // folder name, e.g. "gemm_f16_h200"
  std::string dir;
  std::string op, dtype_family, arch;
  std::string objective;        // e.g. "regression", "lambdarank"
  bool higher_is_better = true; // "score"; lower_is_better models are negated on load
  std::string schema_hash, space_hash;
  int feature_version = 0;
  std::vector<std::string> feature_names;
  nlohmann::json manifest;      // manifest.json, or null when absent
  std::string version;          // "<name>@<FNV-1a 64 of the model file's bytes>": plan caches key on it
};

// One model folder found under the models dir; `rejected` says why it is not used ("" = usable).
struct ModelEntry {
  ModelSpec spec;
  std::optional<GbdtModel> model;  // set when usable
  std::string rejected;
  bool usable() const { return rejected.empty(); }
};

struct Ranked {
  KernelConfig config;  // resolved (align fixed for the problem)
  std::string text;     // to_string(config): the tie-break key and the records' config string
  double score = 0;     // model: predicted score (higher = better); fallback: heuristic TFLOP/s
  std::string source;   // "model:<folder name>" or "fallback"
};

struct Selection {
  std::vector<Ranked> top;      // best first, at most k
  std::size_t pool_size = 0;    // legal candidates scored
  bool from_model = false;
  std::string source;           // as in Ranked
  std::string reason;           // why the fallback was used ("" with a model)
  // Margin between the top-1 and top-2 scores (+inf with one candidate, 0 with none). Model: the raw
  // score difference in the objective's units (for regression on log time, a natural-log time ratio:
  // 0.05 = the runner-up is predicted ~5% slower; rank objectives: unitless). Fallback:
  // ln(score1 / score2), the log ratio of the estimated throughputs.
  double confidence = 0;
  std::string units;            // "model:<objective>" or "ln_ratio"
};

class Selector {
 public:
  // Loads every folder under `models_dir` that holds a feature_spec.json (a missing dir = no
  // models). Folders that cannot be read or do not match this build are kept with the reason.
  // `threads`: feature threads per call (1 = the caller's thread only; <= 0 = env::num_threads()).
  explicit Selector(std::string models_dir, int threads = 1);
  // env::models_dir(), loaded once per process.
  static const Selector& default_selector();

  // Every legal candidate (Registry::default_registry().lookup) scored in one batched call
  // (features_batch + predict), best first, ties broken by config string; k > 0 keeps the first k.
  std::vector<Ranked> rank(const Problem& p, const ArchSpec& arch, int k = 0) const;
  // The same over given configs (resolved for the problem here); used by `tilepick eval`.
  std::vector<Ranked> rank_configs(const Problem& p, const ArchSpec& arch, std::span<const KernelConfig> configs,
                                   int k = 0) const;
  // The analytic fallback's ranking of given configs, whatever models are loaded.
  std::vector<Ranked> rank_fallback(const Problem& p, const ArchSpec& arch,
                                    std::span<const KernelConfig> configs, int k = 0) const;
  Selection select(const Problem& p, const ArchSpec& arch, int k) const;

  // The usable model for (op, dtype family, arch name), or nullptr with the reason in *why.
  const ModelEntry* model_for(const Problem& p, const ArchSpec& arch, std::string* why = nullptr) const;
  const std::vector<ModelEntry>& models() const { return models_; }
  const std::string& models_dir() const { return dir_; }

 private:
  std::vector<Ranked> score(const Problem& p, const ArchSpec& arch, std::vector<KernelConfig> configs, int k,
                            bool allow_model, std::string* reason) const;
  std::string dir_;
  int threads_ = 1;
  std::vector<ModelEntry> models_;
};

// Reads one model folder (feature_spec.json, model.txt[.gz], manifest.json) and checks it against
// this build; never throws for a bad folder (the reason goes to `rejected`).
ModelEntry load_model_folder(const std::string& dir);

// Writes "tilepick: warning: ..." to stderr once per (op, reason) per process (when the log level
// is warn or more); returns whether it was written.
bool warn_fallback_once(const std::string& op, const std::string& reason);

}  // namespace tilepick
