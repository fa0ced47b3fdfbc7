// The sweep supervisor: hands jobs (one problem, its items) to one worker process per GPU, watches
// them with a per-launch timeout, restarts them after a crash or hang, and appends every record.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/records.hpp"

namespace tilepick::sweep {

struct SweepJob {
  std::string problem;             // canonical problem string
  std::vector<std::string> items;  // configs and pseudo items, measured in this order
};

struct SupervisorOptions {
  std::string output;                    // record file (created or appended to)
  std::vector<int> gpus{0};              // one worker per entry
  std::string worker_exe;                // the tilepick binary
  std::vector<std::string> worker_args;  // after "sweep-worker --gpu N"
  double launch_timeout_s = 10;          // no beat for this long while on an item: hang
  double setup_timeout_s = 300;          // start-up and per-problem setup (inputs, reference)
  nlohmann::json header;                 // written when the file is created; "devices" is added
  std::string expect_device;             // existing file's device name must match (empty: no check)
  double time_limit_s = 0;               // > 0: stop (as on SIGINT) after this long; re-run to resume
  bool progress = true;
  bool verbose = false;                  // forward the workers' stderr
};

struct SweepSummary {
  std::size_t pairs = 0, records = 0, ok = 0, wrong = 0, crash = 0, timeout = 0, error = 0, unsupported = 0;
  std::size_t restarts = 0;
  double seconds = 0;
  bool interrupted = false;
};

// Runs every job; returns when all are measured, or after SIGINT/SIGTERM (records kept).
SweepSummary run_supervisor(const std::vector<SweepJob>& jobs, const SupervisorOptions& opt);

}  // namespace tilepick::sweep
