// The dispatcher: how a user runs one GEMM or convolution. plan(problem, options) picks a kernel as
// its Policy says (policy.hpp: the learned model's first choice, top-K timing on the device, exhaustive
// timing, a fixed config, or a vendor library), compiles it and returns a Plan that runs on device pointers or checked tensors.
//
// Flow for a fused op (the problem carries bias and activation, see problem.hpp):
//   check(problem)           -> applicable or the reason it is not
//   plan(problem, options)   -> Plan: candidates scored (and timed), winner compiled
//   plan->workspace_bytes()  -> the caller allocates that much device memory (256-byte aligned)
//   plan->run(tensors, ws, stream)
//
// Plans are cached in memory by (problem, device, model version, policy) and, when
// a cache file is set (TILEPICK_PLAN_CACHE), persisted as JSON that another process reloads, so a
// tuned choice survives restarts. File entries carry version stamps (tilepick, feature schema,
// config space, kernel headers, vendor library) and are ignored when any differs from this build.
// Selection is deterministic: the same problem, model and options give the same kernel everywhere.
// Dispatcher and Plan are safe to use from many host threads at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tilepick/arch.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/policy.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {

class Selector;

struct PlanOptions {
  // What the plan times on first use and whether vendor libraries take part (policy.hpp; docs/dispatch.md).
  // Unset: the environment's policy (TILEPICK_POLICY, default "auto") with the shorthand fields below applied.
  std::optional<Policy> policy;
  // Shorthand for the policy, kept for callers that set fields; with `policy` set they must keep their defaults.
  Strategy strategy = Strategy::automatic;  // not auto: that preset (the environment's vendor and vendor_choice kept)
  int k = 4;                          // not 4: the policy's k (top_k, auto: Selector::shortlist, the full model's
                                      // best k; for conv one per tile shape: Shortlist::varied)
  std::optional<double> auto_time_us; // set: the auto policy's time_us (>= 0; +infinity: never time)
  std::optional<VendorMode> vendor;   // set: the policy's vendor (off | auto | only)
  std::string config;                 // fixed: a config string, or a vendor algorithm ("cublaslt:algo0")
  int device = -1;                    // CUDA ordinal; -1: the calling thread's current device (else 0)
  // Plan without a GPU for this arch spec ("h200", "sm_90"): selection only, never compiled or run.
  // top_k, exhaustive and race need a GPU and are refused offline; auto plans offline are untimed.
  std::string offline_arch;
};
// The policy a plan follows: options.policy, else the environment's with the shorthand applied; normalized.
// Throws InvalidArgument where both are given, or a value is out of range.
Policy resolve_policy(const PlanOptions& options);

// A tensor as a caller holds it (DLPack-like): logical shape and strides in elements, any order of
// dimensions whose memory is the dense layout the operand needs (see operand_specs).
struct TensorArg {
  void* data = nullptr;
  DType dtype = DType::f16;
  std::vector<std::int64_t> shape, strides;  // strides empty: dense row-major of shape
  int device = 0;                             // CUDA ordinal; -1 = host memory
};

// What one operand of a problem must be: dtype and the dense memory layout, outermost first.
struct TensorSpec {
  std::string name;   // "A", "B", "C", "D", "bias", "x", "w", "y", "dy", "dx", "dw"
  std::string slot;   // Operands member: a, b, c, d, bias, scale_a, scale_b
  std::string dims;   // one letter per memory dim, e.g. "NHWC", "KYXC", "MK", "BMK" (batched)
  DType dtype = DType::f16;
  std::vector<std::int64_t> shape;  // memory-order sizes, matching dims
  bool output = false;
};
// The operands of a problem in slot order a, b, [c when beta != 0], d, [bias], [scale_a, scale_b with scale=block].
// GEMM: A is M x K (row: memory [M][K], col: [K][M]), B K x N, C/D M x N, a leading [batch] when
// batch > 1; fp8 block scales (scale=block) SA [K/128][M] and SB [N/128][K/128], fp32. Conv (channels-last, C and K over all groups): x [N][(D)][H][W][C], w [K][(Z)][Y][X][C/G],
// y [N][(D)][Ho][Wo][K]; bias [K].
std::vector<TensorSpec> operand_specs(const Problem& p);
// Throws Error(invalid_argument) naming the operand and what differs: dtype, shape or strides (not
// dense in the required layout, e.g. NCHW given where channels-last is needed), device, null data,
// or base alignment (`align_bytes`).
void check_tensor(const TensorSpec& spec, const TensorArg& t, int device, std::size_t align_bytes);

struct Candidate {
  std::string kernel;        // config string, or vendor algorithm name ("cublaslt:algo2")
  bool vendor = false;
  double score = 0;          // model (or analytic fallback) score, higher is better; 0 for vendor
  double time_us = -1;       // measured median (timed strategies), -1 when not timed
  std::string status;        // "" (not timed), ok, wrong, error, unsupported
};

struct PlanInfo {
  std::string problem;       // canonical string
  std::string kernel;        // the winner (config string or vendor algorithm)
  bool vendor = false;
  Strategy strategy = Strategy::heuristic;          // the policy's preset
  VendorMode vendor_mode = VendorMode::automatic;   // the policy's vendor
  std::string policy;        // the policy followed (to_string(Policy))
  std::string arch, device_name, selection_source;  // selection_source: "model:<folder>", "fallback", ...
  std::string model_version;  // "<folder>@<hash of the model file>", or "none"
  std::vector<Candidate> candidates;  // best first
  std::size_t pool_size = 0;  // legal tilepick candidates scored (the model's candidates.txt set when it prunes)
  std::string cache;          // where the plan came from: "new", "memory", "file"
  double plan_seconds = 0;    // selection + timing + compile when it was made
  std::size_t workspace_bytes = 0;
  int device = -1;            // -1: offline
};
nlohmann::json to_json(const PlanInfo& info);

class Plan {
 public:
  struct Impl;
  explicit Plan(std::shared_ptr<Impl> impl);
  const PlanInfo& info() const;
  std::size_t workspace_bytes() const;
  bool runnable() const;  // false for offline plans
  // Required base alignment of an operand slot ("a", "b", "c", "d", "bias"), in bytes.
  std::size_t alignment(std::string_view slot) const;
  // Runs on raw device pointers on `stream` (CUstream, null = default). Checks that the calling
  // thread's current device is the plan's, that the pointers are device memory of it, non-null and
  // aligned, and that the workspace is given when needed. Throws Error with the reason.
  void run(const Operands& ops, void* stream = nullptr) const;
  // The same after checking each tensor against operand_specs (order a, b, [c], d, [bias], as
  // there); the workspace is ops.workspace of at least workspace_bytes().
  void run(const std::vector<TensorArg>& tensors, void* workspace, void* stream = nullptr) const;
  // run(ops) with the pointers in operand_specs order (a, b, [c], d, [bias]): for callers that checked
  // the tensors' shapes and layouts once and run the same shapes again (tilepick.torch keeps them per
  // shape). Only the count, device and alignment are checked here.
  void run_pointers(const std::vector<const void*>& pointers, void* workspace, void* stream = nullptr) const;

 private:
  std::shared_ptr<Impl> impl_;
};

struct Applicability {
  bool ok = false;
  std::string reason;            // why not (no legal kernel and no vendor, invalid problem, ...)
  std::size_t tilepick_candidates = 0;
  bool vendor_candidate = false; // the vendor library can express the problem (when checked)
};

struct PlanCacheStats {
  std::size_t new_plans = 0, memory_hits = 0, file_hits = 0;
  std::size_t file_entries = 0, rejected_entries = 0;  // from the file at load time
  std::size_t save_failures = 0;  // plans made but not written to the file (each warned about; the plan is kept)
  std::size_t bad_entries = 0;    // file entries that no longer planned: planned anew and replaced
  std::string last_save_error;
};

class Dispatcher {
 public:
  // `selector` outlives the dispatcher. `cache_file` "" = memory only.
  Dispatcher(const Selector& selector, std::string cache_file = "");
  ~Dispatcher();
  // Selector::default_selector() and TILEPICK_PLAN_CACHE; created on first use.
  static Dispatcher& default_dispatcher();

  std::shared_ptr<const Plan> plan(const Problem& p, const PlanOptions& opt = {});
  Applicability check(const Problem& p, const PlanOptions& opt = {}) const;

  // Writes every persistable plan (all strategies but fixed) to the cache file, merged with what
  // other processes wrote there since (under an advisory lock; written to a temp file, renamed).
  // Called after each new plan; no-op without a cache file.
  void save() const;
  PlanCacheStats stats() const;
  void clear_memory();  // forgets plans kept in memory (the file is untouched)
  const std::string& cache_file() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Version stamps a cache-file entry must match (exposed for tests and `tilepick plan --json`).
nlohmann::json plan_cache_stamps(const Problem& p, const std::string& kernel, bool vendor);

}  // namespace tilepick
