// Sweep planning: which (problem, item) pairs a sweep measures, shards of it, resume, and merging
// record files.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sweep/records.hpp"
#include "sweep/supervisor.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::sweep {

struct PlanOptions {
  std::vector<std::string> configs;   // explicit config strings (default: the legal pool)
  // Per-problem explicit configs (--pairs): canonical problem -> config strings. A problem listed
  // here gets exactly these items (illegal ones skipped with a note); others follow the options above.
  std::map<std::string, std::vector<std::string>> pair_configs;
  std::vector<std::string> spaces;    // only these spaces: names of default spaces or .json space files (trial spaces)
  std::vector<std::string> families;  // only these families (sm80, dw, ...)
  int sample = 0;                     // > 0: this many configs per problem (a seeded hash; 4 groups of problems share samples)
  std::uint64_t seed = 1;
  bool vendor = true;                 // add vendor=cublaslt (GEMM) / vendor=cudnn (conv)
  bool vendor_only = false;           // the vendor item alone, no tilepick configs
  std::vector<std::string> inject_faults;  // "trap", "hang": fault items in the first problems
  int shard_index = 0, shard_count = 1;
  int repeat = 1;                     // measure every item this many times (repeatability checks)
};

// Unique problems (by canonical string) of this shard, each with its items. Illegal explicit
// configs are skipped with a note.
std::vector<SweepJob> plan_jobs(const std::vector<NamedProblem>& problems, const ArchSpec& arch,
                                const PlanOptions& opt, std::vector<std::string>* notes);

// Reads a pairs file (`tilepick search --out`): one `problem|config` per line, '#' comments. Adds
// each config to out[canonical problem] (in file order, unique) and returns the problems in first-
// seen order. Errors name "<path>:<line>".
std::vector<NamedProblem> load_pairs_file(const std::string& path, std::map<std::string, std::vector<std::string>>* out);

// Removes the pairs that `existing` already holds (any status); returns how many were removed.
std::size_t drop_done(std::vector<SweepJob>& jobs, const RecordFile& existing);

// The NVRTC programs of every config item (deduplicated by name), for the compile phase.
std::vector<KernelSource> kernel_sources(const std::vector<SweepJob>& jobs);

// "i/n" -> shard; throws ParseError.
void parse_shard(const std::string& text, int* index, int* count);
// out.csv.gz -> out.shard2of8.csv.gz
std::string shard_output_path(const std::string& path, int index, int count);

struct MergeSummary {
  std::size_t inputs = 0, records = 0, duplicates = 0;
};
// Merges record files into `output` (which must not exist). Files must come from the same device
// name unless allow_mixed. For a pair present twice an ok record wins over a failure, then the first.
MergeSummary merge_record_files(const std::vector<std::string>& inputs, const std::string& output, bool allow_mixed);

}  // namespace tilepick::sweep
