// Evaluation of a Selector against measured sweep records (`tilepick eval`).
//
// Per problem, the candidates are the configs measured for it (ok or failed; vendor rows aside);
// the oracle is the fastest ok one. The model (and, as a baseline, the analytic fallback) picks
// the argmax over those candidates; efficiency = oracle_us / chosen_us, 0 when the chosen config
// failed. With a model candidates.txt (pruned pool), the model picks only among the measured
// configs in its set, as the selector would (all measured ones when none is in it, its fallback);
// the oracle stays the fastest of all measured, so a pruned-away winner costs efficiency. The
// pick is therefore always a measured config. Top-1: the choice is within the tie band (2%) of the oracle; top-5: one of the first 5
// ranked candidates is. The vendor heuristic's first choice is scored against the vendor's own best
// (min of the heuristic pick and cuBLASLt best / cuDNN exhaustive) and against our oracle. What dispatch's
// heuristic strategy runs (the model's first choice or, where vendor_first, the vendor's heuristic kernel)
// is scored beside either alone against the fastest measured kernel, ours or the vendor's.
#pragma once
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/records.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/policy.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::eval {

inline constexpr double kTieBand = 0.02;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The dispatcher's top_k mode times the model's first k on first use (PlanOptions::k, default 4);
// "timed" scores the fastest measured of the model's first timed_k ranked candidates.
inline constexpr int kTimedTopK = 4;

struct Pick {
  std::string config, status, source;  // status "ok" or the failure; source "model:<name>" | "fallback"
  double us = kNaN;                    // measured median of the chosen config (NaN when it failed)
  double efficiency = 0;               // oracle_us / us, 0 when failed
  int oracle_rank = 0;                 // 1-based rank of the oracle config in this ranking
  bool top1 = false, top5 = false, failed = false;
};

struct ProblemEval {
  std::string op, problem, tag;      // problem: canonical string; tag: `name:` prefix ("" if none)
  std::vector<std::string> slices;   // problem_slices() plus "net=<tag>"
  std::size_t candidates = 0;        // distinct measured configs (ok or failed)
  std::size_t model_candidates = 0;  // those the model chose among (fewer when its pool is pruned)
  bool pruned = false;               // the model's candidate set applied
  std::string oracle_config;
  double oracle_us = kNaN;
  Pick model, fallback;
  double timed_us = kNaN;            // fastest ok of the model's first timed_k ranked (NaN: none ran)
  double timed_efficiency = 0;       // oracle_us / timed_us
  // The model's own choices over its whole pool (Selector::select): is its first choice among the
  // measured configs, and how many of its first timed_k are. Where they are not, the model's
  // score above is its choice among what was measured, not what it would run.
  bool own_first_measured = false;
  int own_top_k_measured = 0;
  bool own_top_k_all = false;        // all of its first timed_k (or its whole pool, if smaller)
  double own_confidence = kNaN;      // Selection::confidence of that whole-pool choice (NaN: none)
  // What dispatch would run, where measured: the whole-pool first choice's time (NaN: unmeasured or
  // failed; own_first_failed tells them apart), and the fastest ok of its whole-pool first timed_k when
  // all of those are measured (NaN otherwise).
  double own_first_us = kNaN;
  bool own_first_failed = false;
  double own_timed_us = kNaN;
  std::string vendor;                // "cublaslt", "cudnn" or "" (no vendor rows)
  std::string vendor_heur_status;    // "ok", a failure, or "" when absent
  bool vendor_heur_failed = false;   // a vendor heuristic row is present and failed (its check, a crash, ...)
  double vendor_heur_us = kNaN;
  double vendor_best_us = kNaN;      // min(heur, best|exhaustive) over ok rows
  // What dispatch's heuristic strategy runs with vendor auto (heuristic_runs_vendor): the vendor's
  // heuristic kernel where the whole-pool choice is vendor_first (or not the model's), else that choice.
  bool own_vendor_first = false;     // Selection::vendor_first of the whole-pool choice
  bool own_vendor_chosen = false;    // Selection::vendor_chosen: by the model's per-problem vendor choice
  bool dispatch_vendor = false;      // heuristic + vendor auto runs the vendor's heuristic kernel
  bool auto_vendor_alone = false;    // auto's timed plan times the vendor's algorithms alone (auto_times_vendor_alone)
  bool dispatch_checks_vendor = false;  // ... after checking it (heuristic_checks_vendor)
  double best_known_us = kNaN;       // min(oracle_us, vendor_best_us): the fastest measured, ours or the vendor's
  // Defined where own_first_measured and a vendor heuristic row (ok or failed) is present; dispatch_us:
  // vendor_heur_us or own_first_us, NaN when that pick failed (dispatch_failed) or undefined.
  bool dispatch_defined = false;
  bool dispatch_failed = false;
  double dispatch_us = kNaN;
  // What dispatch's race strategy runs where dispatch_defined: the faster of the first choice and the vendor's
  // heuristic kernel among those that ran and passed (NaN when neither did).
  double race_us = kNaN;
  double race_ours_us = kNaN;        // the race's kernel of ours (what_to_time under race); NaN: unmeasured or failed
  // What dispatch's auto strategy runs where dispatch_defined: where auto_times (policy.hpp) holds for the
  // whole-pool first choice (its estimate: own_first_est_us) at EvalReport::auto_time_us it times as top_k (the
  // fastest of the shortlist, else the first choice, and the vendor's heuristic and best kernels; under a vendor_first
  // model the vendor's alone where one passed), else dispatch_us.
  double own_first_est_us = kNaN;
  bool auto_timed = false;
  double auto_us = kNaN;
};

struct Stats {
  std::size_t count = 0, failed = 0;
  double mean = kNaN, median = kNaN, p10 = kNaN, p1 = kNaN, min = kNaN;  // efficiency
  double top1 = kNaN, top5 = kNaN;  // fractions (top5 NaN where undefined, e.g. vendor)
  double regret_us = kNaN;          // mean of chosen_us - reference_us over picks that ran
  double time_weighted = kNaN;      // sum of reference_us / sum of chosen_us (0 when a pick failed)
};

struct GroupEval {
  std::string name;  // "all", "gemm", "gemm m=tiny", "conv_fwd filter=3x3", "source=model:<name>"
  Stats model, fallback;
  Stats vendor_own;        // vendor heuristic vs the vendor's own best
  Stats vendor_vs_oracle;  // vendor heuristic vs our oracle (efficiency may exceed 1)
  Stats timed;             // best of the model's first timed_k (dispatch top_k)
  double own_first_measured = kNaN;  // fraction of problems whose whole-pool first choice was measured
  double own_top_k_measured = kNaN;  // fraction whose whole-pool first timed_k all were
  Stats own_first;         // the whole-pool first choice (what dispatch runs), over problems where measured
  Stats own_timed;         // the fastest of the whole-pool first timed_k, over problems where all are measured
  // Over the problems with dispatch_defined, against best_known_us: what heuristic + vendor auto runs,
  // the model's whole-pool first choice alone, the vendor's heuristic kernel alone.
  Stats dispatch, ours_alone, vendor_alone;
  Stats race;  // what the race strategy runs, over the same problems
  Stats auto_;  // what the auto strategy runs, over the same problems
  double auto_timed_share = kNaN;  // fraction of those problems that auto times
  double dispatch_vendor_share = kNaN;  // fraction of those problems where the vendor runs
};

struct EvalReport {
  std::string arch;
  int timed_k = kTimedTopK;
  std::string shortlist;              // the shortlist rule evaluated: first | varied
  double auto_time_us = kNaN;         // the auto strategy's threshold when evaluated (EvalOptions::policy)
  std::vector<ProblemEval> problems;
  std::vector<GroupEval> groups;
  std::size_t skipped = 0;            // problems with no ok non-vendor timing
  std::size_t unparsed = 0;           // records whose problem or config did not parse (ignored)
};

// GEMM: "m=tiny" (M <= 16) | small (<= 256) | medium (<= 2048) | large. Conv: "conv=dense|grouped|
// depthwise", "filter=1x1|3x3|7x7" (3-D: 1x1x1 ...) or "filter=other", "stride=1|strided", "dims=2d|3d".
std::vector<std::string> problem_slices(const Problem& p);
// How a (problem, config) pair recorded more than once is timed: its fastest record (several sweep
// files), or the median of its records (a same-run recheck, `tilepick sweep --repeat`).
enum class Repeats { fastest, median };
// `tags`: canonical problem string -> network tag.
// How eval reads the records and models dispatch's choices (the defaults are dispatch's).
struct EvalOptions {
  int timed_k = kTimedTopK;                 // >= 1: how many of the model's first ranked configs "timed" and "own" see
  Repeats repeats = Repeats::fastest;
  Shortlist shortlist = Shortlist::varied;  // the rule that picks the k of top_k's own choices
  bool vendor_check = true;                 // the heuristic strategy checks a vendor-chosen kernel first
  // auto's time_us and every preset's vendor_choice (scored with vendor auto, k = timed_k); unset: the environment's
  // policy (TILEPICK_POLICY) where it is an auto one, else the auto preset with its vendor_choice.
  std::optional<Policy> policy = std::nullopt;
};
EvalReport evaluate(const Selector& selector, const std::vector<sweep::Record>& records, const ArchSpec& arch,
                    const std::map<std::string, std::string>& tags, const EvalOptions& options = {});
// Efficiency statistics; quantiles interpolate linearly (numpy's default).
Stats summarize(std::vector<double> efficiencies, const std::vector<double>& regrets, std::size_t failed,
                std::size_t top1, std::size_t top5, bool has_top5);

nlohmann::json to_json(const EvalReport& r);   // NaN -> null
std::string to_csv(const EvalReport& r);       // one row per problem
std::string format_table(const EvalReport& r);
const GroupEval* find_group(const EvalReport& r, const std::string& name);

}  // namespace tilepick::eval
