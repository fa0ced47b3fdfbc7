// Learned selection: rank the legal kernel configs of a problem with the trained model of its
// (op, dtype family, arch), or with the analytic fallback when there is no usable model.
//
// Model folders (written by `python -m tilepick.train`), one per (op, dtype family, arch):
//   models/<name>/model.txt.gz (or model.txt)  LightGBM text model, feature_names = feature_schema().names
//   models/<name>/feature_spec.json            {"feature_names", "schema_hash", "feature_version",
//                                               "space_hash", "op", "dtype_family", "arch", "objective",
//                                               "model_text_fnv": FNV-1a 64 (hex) of the model's text,
//                                               checked at load (a model file edited or replaced after
//                                               training refuses the folder),
//                                               optional "score": "higher_is_better" (the only direction:
//                                               tilepick.train negates a lower-is-better objective),
//                                               optional "model_file": a model file relative to the
//                                               folder instead of model.txt.gz, e.g. the conv
//                                               directions' shared ../conv_half_h200.model.txt.gz,
//                                               optional "serves": other arch spec names the model
//                                               selects for where no model of their own exists, each
//                                               validated by measurements on that device (manifest
//                                               "serves_eval"),
//                                               optional "spaces": the config spaces the model was
//                                               trained over (its pool; default: every space of op),
//                                               optional "vendor_first": true (ModelSpec::vendor_first),
//                                               optional "vendor_choice": {"model_file": a LightGBM text
//                                               model relative to the folder (the conv directions may
//                                               share one), "threshold": ln ratio, "model_text_fnv": its
//                                               text's FNV-1a 64} (VendorChoiceSpec;
//                                               a model that cannot be used leaves the folder usable
//                                               without it: ModelEntry::vendor_error)}
//   models/<name>/manifest.json                free-form training record (optional "eval" thresholds)
//   models/<name>/candidates.txt               optional pruned pool (python -m tilepick.prune): '#'
//                                               comments, then one config per line (align=auto form);
//                                               the model then scores only the legal configs listed
//   models/<name>/fast/                        optional distilled student (python -m tilepick.distill):
//                                               model.txt, feature_spec.json (+ "teacher_version",
//                                               "rescore_top", "model_text_fnv"), candidates.txt, manifest.json
// op is op_name() (gemm, conv_fwd, conv_bwd_data, conv_bwd_weight), dtype_family is dtype_family()
// below, arch the arch spec name (ArchSpec::name, e.g. "h200"); space_hash is config_space_hash(op)
// over the model's spaces (a space added later, such as a new kernel family, leaves it valid and
// outside its pool until it is retrained).
// A folder whose schema hash, feature names or space hash differ from this build is refused; its
// problems go to the fallback (heuristic_score) with one warning per (op, reason) per process.
#pragma once
#include <array>
#include <cstddef>
#include <limits>
#include <memory>
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
// The names of the default spaces covering op, sorted: the pool a model trained now covers
// (feature_spec "spaces").
std::vector<std::string> config_space_names(const std::string& op);
// The hash over the default spaces named in `names` (all of op's when empty); an unknown name is a
// NotFound naming it.
std::string config_space_hash(const std::string& op, const std::vector<std::string>& names);

// feature_spec "vendor_choice": a per-problem vendor_first. A LightGBM regressor over the problem
// columns (feature_names = the first feature_schema().problem_columns names) predicts
// y = ln(vendor heuristic kernel time / the model's pick time); the vendor runs where y < threshold.
struct VendorChoiceSpec {
  std::string model_file;  // normalized path (the folder joined with the spec's relative path)
  double threshold = 0;
  std::string model_text_fnv;  // checked when the file is loaded
  bool vendor_faster(double y) const { return y < threshold; }  // the decision, for a prediction y
};

// feature_spec.json of one model folder.
struct ModelSpec {
  std::string name;  // folder name, e.g. "gemm_f16_h200"
  std::string dir;
  std::string op, dtype_family, arch;
  std::string objective;        // e.g. "regression", "lambdarank"
  std::string model_text_fnv;   // FNV-1a 64 (hex) of the model's text; the loaded file must match it
  std::string schema_hash, space_hash;
  int feature_version = 0;
  std::vector<std::string> feature_names;
  nlohmann::json manifest;      // manifest.json, or null when absent
  std::string version;          // "<name>@<model_text_fnv>": plan caches key on it
  std::string model_file;       // feature_spec "model_file" (relative to dir; the conv directions of a
                                // pooled model share one file) or dir/model.txt.gz, else dir/model.txt
  std::vector<std::string> serves;  // feature_spec "serves": arch spec names it also selects for
  std::vector<std::string> spaces;  // feature_spec "spaces": the model's pool; empty = every space of op
  bool covers(const std::string& space) const;
  // feature_spec "vendor_first": the vendor library's heuristic choice was measured faster than this model's
  // picks on its held-out problems, so dispatch's heuristic strategy (vendor auto) runs the vendor's choice;
  // the model still ranks for top_k / exhaustive (the vendor is timed beside it), vendor off, select and eval.
  bool vendor_first = false;
  std::optional<VendorChoiceSpec> vendor_choice;  // feature_spec "vendor_choice" (above)
};

// The pool form of a config: align reset to auto (sm80 family; dw configs have no align), so a
// record's config (align resolved for its problem) and a registry entry compare equal.
KernelConfig pool_form(const KernelConfig& c);

// A model's pruned pool: the configs of its candidates.txt, in pool form. Selection scores only the
// legal configs of the problem that are in the set (the whole legal pool when none is).
struct CandidateSet {
  std::string path;
  std::vector<KernelConfig> configs;  // file order, unique, pool form
  std::vector<KernelConfig> sorted;   // the same, sorted (membership)
  bool contains(const KernelConfig& c) const;  // c in any align form
  bool empty() const { return configs.empty(); }
};
// Reads a candidates file. Throws NotFound when it cannot be opened and ParseError naming
// "<path>:<line>" for a line that is not a config (or a config listed twice).
CandidateSet load_candidates(const std::string& path);

// How the selector scores a model's candidates. full: the model (the teacher). fast: its distilled
// student (models/<m>/fast/) over the student's candidate set when the folder is valid for this
// build and this teacher, then the student's top `rescore_top` re-scored by the teacher; the
// teacher otherwise. automatic: kDefaultScoreMode (`tilepick eval` / `select` / `plan`: --select).
enum class ScoreMode { automatic, full, fast };
inline constexpr ScoreMode kDefaultScoreMode = ScoreMode::fast;  // docs/selection.md: same held-out quality
ScoreMode resolve_score_mode(ScoreMode mode);  // automatic -> kDefaultScoreMode
const char* score_mode_name(ScoreMode mode);

// Which k configs Selector::shortlist returns (what dispatch's top_k strategy times). first: the full model's
// first k. varied (conv ops; GEMM gets its first k): a config whose tile_shape is already on the list is
// passed over while the full model's first max(k, kShortlistWindow) hold another shape, then the rest
// follow in rank order. A conv pool's first k often differ only in stages or swizzle of one shape and
// miss together (docs/selection.md, "Which k configs to time"). automatic: varied (`tilepick eval` / `select`:
// --shortlist).
enum class Shortlist { automatic, first, varied };
Shortlist resolve_shortlist(Shortlist how);  // automatic -> varied
const char* shortlist_name(Shortlist how);
// The shape a varied shortlist keeps one config of: sm80 / sm90 tile and warps, dw its output tile.
std::array<int, 6> tile_shape(const KernelConfig& c);

// A model folder's fast/ student, checked against this build and its teacher.
struct FastModel {
  std::string dir;
  GbdtModel model;
  std::optional<CandidateSet> candidates;  // fast/candidates.txt: the configs the student scores
  int rescore_top = 0;                     // the student's top M re-scored by the teacher (0: none)
  std::string version;                     // "fast@<FNV-1a 64 of the student file>"
  nlohmann::json manifest;
};
// Reads <teacher.dir>/fast; throws an Error naming what is wrong (missing file, schema / space hash,
// feature names, or a teacher_version other than teacher.version: the teacher was retrained).
FastModel load_fast_folder(const ModelSpec& teacher);

// One model folder found under the models dir; `rejected` says why it is not used ("" = usable).
struct ModelEntry {
  ModelSpec spec;
  std::shared_ptr<const GbdtModel> model;  // set when usable; folders naming one file share it
  std::string rejected;
  // candidates.txt: set when the file exists, parses and lists at least one config; otherwise
  // the whole legal pool is scored and, for a file that exists but cannot be used,
  // candidates_error says why (the Selector warns once).
  std::optional<CandidateSet> candidates;
  std::string candidates_error;
  // fast/ (only loaded by a Selector in fast mode): set when valid; fast_error says why not.
  std::optional<FastModel> fast;
  std::string fast_error;
  // spec.vendor_choice's model: set when the file loads and reads the problem columns; otherwise the
  // model decides without it (vendor_error says why; the Selector warns once).
  std::shared_ptr<const GbdtModel> vendor_model;  // folders naming one file share it
  std::string vendor_version;  // "vendor_choice@<FNV-1a 64 of the model's text>": plan caches key on it
  std::string vendor_error;
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
  bool pruned = false;          // pool_size counts only the model's candidates.txt configs
  bool fast = false;            // scored by the model's student (pool_size: its candidate set)
  bool from_model = false;
  bool vendor_first = false;    // the model's spec says "vendor_first" (ModelSpec::vendor_first), or
                                // its vendor choice predicts the vendor faster (vendor_chosen)
  bool vendor_chosen = false;   // vendor_first because the vendor choice predicted the vendor faster (not the spec flag)
  // vendor_choice's predicted ln(vendor heuristic time / the pick's time); NaN without one.
  double vendor_log_ratio = std::numeric_limits<double>::quiet_NaN();
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
  // `prune`: use the models' candidates.txt (false: always the whole legal pool).
  // `mode`: ScoreMode above. In fast mode a model's spec.version (the plan caches' key) gets
  // "+fast@<student hash>" appended when its student is used.
  explicit Selector(std::string models_dir, int threads = 1, bool prune = true,
                    ScoreMode mode = ScoreMode::automatic);
  // env::models_dir(), loaded once per process.
  static const Selector& default_selector();

  // Every legal candidate (Registry::default_registry().lookup; with a model that has a
  // candidates.txt, only the legal configs in it unless none is) scored in one batched call
  // (features_batch + predict), best first, ties broken by config string; k > 0 keeps the first k.
  std::vector<Ranked> rank(const Problem& p, const ArchSpec& arch, int k = 0) const;
  // The configs rank() scores, resolved, in registry order; *pruned says whether the candidate
  // set applied. Same set as lookup() filtered by the candidate set.
  std::vector<KernelConfig> pool(const Problem& p, const ArchSpec& arch, bool* pruned = nullptr) const;
  // The subset of given configs that the model's candidate set keeps (all of them when the model
  // has no set, pruning is off, or none is in the set); `tilepick eval` scores the model on it.
  // In fast mode the student's set comes first (the teacher's when none of them is in it).
  std::vector<KernelConfig> prune(const Problem& p, const ArchSpec& arch, std::span<const KernelConfig> configs,
                                  bool* pruned = nullptr) const;
  bool pruning() const { return prune_; }
  ScoreMode mode() const { return mode_; }  // full or fast (never automatic)
  // The same over given configs (resolved for the problem here); used by `tilepick eval`. In fast
  // mode the student scores them when every one is in its candidate set (prune() keeps that).
  std::vector<Ranked> rank_configs(const Problem& p, const ArchSpec& arch, std::span<const KernelConfig> configs,
                                   int k = 0) const;
  // The analytic fallback's ranking of given configs, whatever models are loaded.
  std::vector<Ranked> rank_fallback(const Problem& p, const ArchSpec& arch,
                                    std::span<const KernelConfig> configs, int k = 0) const;
  // `mode` full: the full model scores even when this selector is fast (what dispatch's top_k
  // strategy does: it compiles and times its first k anyway, and the teacher's first 4 beat the
  // student-then-teacher first 4, docs/selection.md); fast is the selector's own mode (a full
  // selector stays full); automatic: the selector's mode.
  Selection select(const Problem& p, const ArchSpec& arch, int k, ScoreMode mode = ScoreMode::automatic) const;
  // What dispatch's top_k strategy times: the full model's ranking cut to k by `how` (Shortlist above);
  // confidence and the vendor fields are select()'s.
  using Shortlist = tilepick::Shortlist;
  Selection shortlist(const Problem& p, const ArchSpec& arch, int k, Shortlist how = Shortlist::automatic) const;
  static constexpr int kShortlistWindow = 40;

  // The usable model for (op, dtype family, arch name), or nullptr with the reason in *why: one trained
  // for the arch, else one whose "serves" lists it (features are still computed for `arch`).
  const ModelEntry* model_for(const Problem& p, const ArchSpec& arch, std::string* why = nullptr) const;
  const std::vector<ModelEntry>& models() const { return models_; }
  const std::string& models_dir() const { return dir_; }

 private:
  std::vector<Ranked> score(const Problem& p, const ArchSpec& arch, std::vector<KernelConfig> configs, int k,
                            bool allow_model, bool use_fast, std::string* reason) const;
  struct PoolCache;  // per (model, arch target, set, input dtype): registry candidates in a candidate set
  // The registry's candidates for m's op on arch that are in `set` (all of them for nullptr) and
  // pass legal_on_arch for inputs of dtype `input`.
  const std::vector<KernelConfig>& set_candidates(const ModelEntry& m, const CandidateSet* set, const ArchSpec& arch,
                                                  DType input, bool* unique_pool_forms) const;
  // Legal configs of `set` (nullptr: the whole registry) resolved for p, in registry order.
  std::vector<KernelConfig> set_pool(const ModelEntry& m, const CandidateSet* set, const Problem& p,
                                     const ArchSpec& arch) const;
  // use_student false: the teacher's pool whatever the student's set.
  std::vector<KernelConfig> pool_impl(const Problem& p, const ArchSpec& arch, bool* pruned, bool* fast,
                                      bool use_student = true) const;
  std::string dir_;
  int threads_ = 1;
  bool prune_ = true;
  ScoreMode mode_ = ScoreMode::full;
  std::vector<ModelEntry> models_;
  std::shared_ptr<PoolCache> cache_;
};

// Reads one model folder (feature_spec.json, model.txt[.gz], manifest.json) and checks it against
// this build; never throws for a bad folder (the reason goes to `rejected`).
ModelEntry load_model_folder(const std::string& dir);
// The teacher file a model folder names (ModelSpec::model_file) without loading it; NotFound when
// it is missing. Python's tilepick.train.model_file reads this rule through the bindings.
std::string model_file_of(const std::string& dir);

// Writes "tilepick: warning: ..." to stderr once per (op, reason) per process (when the log level
// is warn or more); returns whether it was written.
bool warn_fallback_once(const std::string& op, const std::string& reason);

}  // namespace tilepick
