// Policy: what the dispatcher times on first use of a problem, from which estimated time, and whether vendor
// libraries (cuBLASLt for GEMM, cuDNN for conv) take part. One small value with one string form; the strategies
// (heuristic, top_k, exhaustive, fixed, race, auto) are its presets. what_to_time() is the one rule that turns a
// policy and a problem's ranking into what a plan runs or times: the dispatcher measures what it says, and
// `tilepick eval` looks the same candidates up in measured records, so the two cannot disagree.
//
// String form (TILEPICK_POLICY, `tilepick plan --policy`, tilepick.plan(policy=...); docs/dispatch.md):
//   <preset>[:<key>=<value>[,<key>=<value>]...]
//   preset         heuristic | top_k | exhaustive | fixed | race | auto
//   k=N            top_k, auto: how many of the ranking are timed (N >= 1; default 4)
//   time_us=T      top_k, exhaustive, race, auto: time only where the analytic model estimates the ranking's first
//                  choice at >= T microseconds, else run it untimed (T >= 0 or inf; default 100 for auto, else 0)
//   vendor=V       off | auto | only (default auto): whether vendor candidates take part (VendorMode)
//   vendor_choice  on | off (default on): off ignores a model's per-problem vendor choice (its "vendor_choice";
//                  a "vendor_first" model is still followed)
// e.g. "auto", "top_k:k=8", "auto:time_us=50,vendor=off", "heuristic:vendor_choice=off". to_string prints the
// preset and the keys that differ from its defaults, in the order above, so it round-trips.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {

enum class Strategy : std::uint8_t {
  heuristic,   // the ranking's first (no timing)
  top_k,       // time the ranking's k best (Selector::shortlist) on the device on first use, keep the fastest
  exhaustive,  // time every legal candidate
  fixed,       // PlanOptions::config names the kernel
  race,        // time the ranking's first against the vendor's heuristic kernel on first use, keep the faster
  automatic,   // "auto": top_k where the ranking's first is estimated at >= time_us (100), else heuristic
};
std::string_view to_string(Strategy s);
std::optional<Strategy> parse_strategy(std::string_view s);
std::string strategy_names();  // "heuristic, top_k, exhaustive, fixed, race, auto": what parse_strategy takes

// Whether vendor libraries take part:
//   off   tilepick kernels only;
//   auto  the vendor's heuristic choice is one more candidate in top_k / exhaustive timing (so a
//         timed plan is never slower than it), and the heuristic strategy uses it when there is no
//         usable model for the problem, no legal tilepick kernel, or the model is "vendor_first"
//         (measured slower than the vendor's choice: ModelSpec::vendor_first) or its "vendor_choice"
//         predicts the vendor faster on this problem (Selection::vendor_chosen);
//   only  vendor algorithms only (heuristic: the library's first choice; timed: its algorithms).
enum class VendorMode : std::uint8_t { off, automatic, only };
std::string_view to_string(VendorMode v);  // "off" "auto" "only"
std::optional<VendorMode> parse_vendor_mode(std::string_view s);

struct Policy {
  // Which of the ranking is timed on first use, as the preset says (time()).
  enum class Time : std::uint8_t { none, first, all };
  Strategy preset = Strategy::automatic;      // its rules: what_to_time() below, docs/dispatch.md
  int k = 4;                                  // top_k, auto: the first k of the ranking (Selector::shortlist)
  double time_us = 100;                       // timed presets: only where the first choice's estimate is >= this
  VendorMode vendor = VendorMode::automatic;  // whether vendor candidates take part
  bool vendor_choice = true;                  // false: a model's per-problem vendor choice is ignored
  // none: heuristic, fixed; first: top_k and auto (k), race (the first choice, against the vendor's heuristic
  // kernel); all: exhaustive.
  Time time() const;
  bool operator==(const Policy&) const = default;
};

// A preset's defaults: k 4, time_us 100 for auto and 0 for the other timed presets, vendor auto, vendor choice on.
Policy policy_preset(Strategy preset);
// The string form above. Throws ParseError naming what is wrong: the preset, a key, a value, a key the preset does
// not take, a key given twice.
Policy parse_policy(std::string_view text);
std::string to_string(const Policy& p);  // canonical; parse_policy(to_string(p)) == p for a normalized p
// The keys a preset does not take reset to its defaults (k of heuristic, time_us of fixed, ...).
Policy normalized(Policy p);
// Throws InvalidArgument naming what is wrong (k < 1, time_us < 0 or NaN).
void validate(const Policy& p);
// TILEPICK_POLICY parsed (env::policy()), else policy_preset(auto). Throws InvalidArgument naming the variable, or
// the TILEPICK_POLICY value to use where a variable it replaced is set (check_replaced false: not looked for, as
// on plan-cache hits).
Policy environment_policy(bool check_replaced = true);
// The grammar in a few lines, for --help texts.
std::string policy_help();

struct Selection;
// Whether the heuristic strategy runs the vendor's first choice (where the vendor can run the problem)
// rather than `sel`'s top tilepick kernel: the rule of VendorMode above.
bool heuristic_runs_vendor(VendorMode mode, const Selection& sel);
// Whether the heuristic strategy checks the vendor's heuristic kernel (fp64 GPU reference, random inputs) before it
// runs it, and runs `sel`'s top kernel where it fails: vendor auto sent there by the model's vendor choice
// (docs/dispatch.md).
bool heuristic_checks_vendor(VendorMode mode, const Selection& sel);
// Whether auto's timed plan times the vendor's algorithms alone (ours only where none passes): vendor auto under a
// vendor_first model (the flag, not a per-problem vendor choice). On its held-out records cuBLASLt's best beat our
// fastest on every long GEMM, and compiling ours is most of such a plan (docs/dispatch.md).
bool auto_times_vendor_alone(VendorMode mode, const Selection& sel);
// The time_us rule: a plan is timed where the analytic estimate of the ranking's first choice,
// estimated_time_us(p, first, arch), is at least limit_us. The estimate goes to *estimate_us (NaN: none, untimed).
bool auto_times(const Problem& p, const KernelConfig& first, const ArchSpec& arch, double limit_us, double* estimate_us);

// Where what_to_time() decides.
struct TimingContext {
  bool online = true;               // a plan for a GPU (offline plans are never timed: they say what a GPU plan does)
  std::function<bool()> vendor_can;  // the vendor library can run the problem here; asked only where it matters
  Shortlist shortlist = Shortlist::automatic;  // the rule that picks top_k's k (tilepick eval --shortlist)
  // Rankings already made for this problem (several decisions over one problem, as `tilepick eval` makes them),
  // keyed by (kind, k); nullptr: none kept.
  std::map<std::tuple<int, int, int>, Selection>* memo = nullptr;
};

// What a plan under a policy runs or times on first use.
struct Timing {
  Strategy run = Strategy::heuristic;  // heuristic (untimed), top_k, exhaustive, race or fixed: auto decided, and a
                                       // race without a vendor to race is heuristic
  bool ranked = false;                 // a ranking was made (not under vendor only or fixed)
  Selection ranking;                   // its candidates (vendor_first / vendor_chosen as the policy sees them)
  std::vector<std::string> ours;       // our kernels to time, best first (top_k: the shortlist; exhaustive: every
                                       // legal config; race: the first choice); empty where untimed
  bool vendor = false;                 // timed: the vendor's algorithms are timed too (it can run the problem)
  bool vendor_heuristic_only = false;  // race: of the vendor's, its heuristic kernel alone
  bool vendor_alone_first = false;     // auto under a vendor_first model: the vendor's alone, ours only where none passes
  bool run_vendor = false;             // heuristic: the vendor's heuristic kernel runs (where it can), not ours
  bool check_vendor = false;           // ... after its output check; the ranking's first where it fails
  double estimate_us = std::numeric_limits<double>::quiet_NaN();  // the first choice's estimate where time_us applied
  std::string note;                    // where time_us applied: the estimate and what followed
};

// The one decision: ranks the problem as the policy needs (Selector::select, shortlist, or the whole legal pool) and
// says what to run or time. Offline plans are never timed (auto says what a GPU plan would do; the callers refuse
// top_k, exhaustive and race offline).
Timing what_to_time(const Policy& policy, const Selector& selector, const Problem& p, const ArchSpec& arch,
                    const TimingContext& ctx);

}  // namespace tilepick
