// What a sweep worker measures with: the real GPU backend, or a fake one whose timings come from a
// hash (for testing the sweep's process mechanics without a GPU).
//
// Items a backend measures for one problem: a canonical config string, `vendor=cublaslt` or
// `vendor=cudnn` (records vendor=<lib>:heur and :best / :exhaustive), or a fault-injection item
// `fault=trap` (a kernel that traps) / `fault=hang` (a kernel that never ends).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/records.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::sweep {

using Beat = std::function<void()>;  // "still alive": call at least once per launch timeout

// A vendor record that BackendOptions::vendor_heuristic_only leaves out.
inline void mark_not_run(Record& r) { r.status = "unsupported", r.detail = "not run (the heuristic choice alone)"; }

struct BackendOptions {
  std::string kind = "gpu";    // gpu | fake
  int gpu = 0;                 // device ordinal
  double min_timed_ms = 10;    // repeat until this much kernel time was timed ...
  int min_reps = 5, max_reps = 100;  // ... within these bounds
  double prune = 4;            // a config slower than prune x the problem's best so far gets min_reps (0 = off) ...
  int pruned_reps = -1;        // ... or this many (-1: min_reps; 0: its first timing stands alone, as dispatch does)
  // Each timed region is a CUDA graph (run/timing.hpp): of as many launches as copies of the
  // operands (inputs and output) fit into graph_mb MiB, at most graph_launches, else of one.
  // graph_mb 0: no graphs, one launch issued per region (the method of records before 2026-11-23).
  double graph_mb = 256;
  int graph_launches = 32;
  std::uint64_t seed = 1;      // input values
  // A vendor item checks and times the library's heuristic choice alone; its other algorithms and the fastest
  // record come out mark_not_run.
  bool vendor_heuristic_only = false;
  // A cuDNN set also runs cudnnFind*Ex for the record's "find chose" note (VendorSet::create's cudnn_find).
  bool vendor_find = true;
  // Fake backend: items whose config string contains these substrings crash / hang / come out wrong.
  std::string fake_crash, fake_hang, fake_wrong;
  double fake_pair_ms = 0;     // fake backend: wall time per measured item
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual nlohmann::json device() = 0;  // name, sm_count, clocks, memory, versions, target
  virtual void begin_problem(const Problem& p, const Beat& beat) = 0;
  // One or more records (vendor items give several); status and detail filled, problem/gpu/time not.
  virtual std::vector<Record> measure(const std::string& item, const Beat& beat) = 0;
  virtual void end_problem() = 0;
  // After a failure that leaves the device unusable (sticky CUDA error) the worker must restart.
  virtual bool must_restart() const { return false; }
};

std::unique_ptr<Backend> make_backend(const BackendOptions& opt);
std::unique_ptr<Backend> make_fake_backend(const BackendOptions& opt);
std::unique_ptr<Backend> make_gpu_backend(const BackendOptions& opt);

// True for items that are vendor or fault pseudo-configs rather than kernel configs.
bool is_pseudo_item(const std::string& item);
// The item a record belongs to ("vendor=cudnn:heur" -> "vendor=cudnn"; configs map to themselves).
std::string item_of_record_config(const std::string& config);
// The record config of a vendor item's fastest algorithm: "vendor=cudnn:exhaustive", "vendor=cublaslt:best".
std::string vendor_best_config(const std::string& item);

}  // namespace tilepick::sweep
