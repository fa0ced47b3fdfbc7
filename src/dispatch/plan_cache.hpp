// The plan-cache file (TILEPICK_PLAN_CACHE): tuned plans as JSON, shared between processes.
//   {"format": 1, "entries": [{"key", "problem", "kernel", "vendor", "selection_source", "pool_size",
//                              "candidates": [...], "stamps": {...}, "created"}...]}
// Entries whose stamps differ from this build (another tilepick version, feature schema, config
// space, kernel headers or vendor library version) are not used, but kept in the file untouched
// while the bound leaves room. A file that is not a plan cache is never overwritten.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tilepick/dispatch.hpp"

namespace tilepick {

struct PlanCacheEntry {
  std::string key, problem, kernel, selection_source;
  bool vendor = false;
  std::size_t pool_size = 0;
  std::vector<Candidate> candidates;
  nlohmann::json stamps;
  std::string created;
};

struct PlanCacheFile {
  std::map<std::string, PlanCacheEntry> entries;  // usable by this build, by key
  std::vector<nlohmann::json> foreign;            // entries of other builds, kept as they were
  std::size_t rejected = 0;                       // entries not usable (stamps, malformed)
  std::size_t max_entries = 4096;                 // what a save keeps, newest first
  // A missing file is empty; a malformed file is treated as empty with one warning.
  static PlanCacheFile load(const std::string& path);
  // Merges with what is in the file now (entries here win), keeps the newest max_entries (then
  // other builds' entries while there is room), under an advisory
  // lock on <path>.lock, through a temp file (mkstemp, same directory) renamed over it. Throws
  // Error(io_error) when it cannot write, or when the file holds something else than a plan cache.
  void save(const std::string& path);
};

// The file key: every part that decides the choice (the device ordinal is not part of it).
std::string plan_cache_key(const std::string& problem, const std::string& arch, const std::string& device_name,
                           const std::string& model_version, const std::string& strategy, const std::string& vendor_mode);
bool stamps_match(const PlanCacheEntry& e, const Problem& p);
PlanCacheEntry make_entry(const std::string& key, const PlanInfo& info, const Problem& p);

}  // namespace tilepick
