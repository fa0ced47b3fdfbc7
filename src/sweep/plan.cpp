#include "sweep/plan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/hash.hpp"
#include "core/text_file.hpp"
#include "sweep/backend.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

namespace tilepick::sweep {
namespace {

constexpr std::uint64_t kSampleGroups = 4;

bool wanted(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

std::vector<std::string> config_items(const Problem& p, const ArchSpec& arch, const PlanOptions& opt,
                                      const Registry& registry, std::vector<std::string>* notes) {
  std::vector<std::string> items;
  const auto pairs = opt.pair_configs.find(to_string(p));
  if (pairs != opt.pair_configs.end() || !opt.configs.empty()) {
    for (const auto& s : pairs != opt.pair_configs.end() ? pairs->second : opt.configs) {
      KernelConfig c = parse_config(s);
      if (Verdict v = legal(p, c, arch); !v) {
        if (notes) notes->push_back("skip " + s + " for " + to_string(p) + ": [" + v.rule + "] " + v.reason);
        continue;
      }
      items.push_back(to_string(resolve(c, p)));
    }
    return items;
  }
  std::vector<std::pair<std::uint64_t, std::string>> pool;
  const std::string key = to_string(p);
  for (const auto& e : registry.lookup(p, arch)) {
    if (!wanted(opt.families, std::string(to_string(e.config.fam())))) continue;
    std::string c = to_string(e.config);
    // Problems fall into kSampleGroups groups by hash and a group samples the same configs, so
    // kernels are shared across problems (bounded compile time) while the data covers more configs.
    std::string group = std::to_string(fnv1a64(key) % kSampleGroups);
    pool.emplace_back(fnv1a64(group + "|" + c, opt.seed * 0x9e3779b97f4a7c15ull + 1469598103934665603ull), c);
  }
  if (opt.sample > 0 && static_cast<int>(pool.size()) > opt.sample) {
    // A seeded hash order is a sample that does not depend on the platform's random engines.
    std::sort(pool.begin(), pool.end());
    pool.resize(opt.sample);
  }
  for (auto& [h, c] : pool) items.push_back(std::move(c));
  return items;
}

}  // namespace

std::vector<SweepJob> plan_jobs(const std::vector<NamedProblem>& problems, const ArchSpec& arch,
                                const PlanOptions& opt, std::vector<std::string>* notes) {
  if (opt.shard_count < 1 || opt.shard_index < 0 || opt.shard_index >= opt.shard_count)
    throw Error(Status::invalid_problem, "sweep: shard " + std::to_string(opt.shard_index) + "/" +
                                             std::to_string(opt.shard_count) + " is out of range");
  // The pool: the default spaces, or the --space ones (a name or a .json file; an unknown one is an error).
  std::optional<Registry> named;
  if (!opt.spaces.empty()) {
    std::vector<ConfigSpace> spaces;
    for (const auto& s : opt.spaces) spaces.push_back(find_space(s));
    named.emplace(std::move(spaces));
  }
  const Registry& registry = named ? *named : Registry::default_registry();
  std::vector<SweepJob> jobs;
  std::set<std::string> seen;
  std::size_t unique = 0;
  for (const auto& np : problems) {
    std::string key = to_string(np.problem);
    if (!seen.insert(key).second) continue;
    if (static_cast<int>(unique++ % opt.shard_count) != opt.shard_index) continue;
    SweepJob job{key, opt.vendor_only ? std::vector<std::string>{} : config_items(np.problem, arch, opt, registry, notes)};
    if (opt.vendor) job.items.push_back(std::holds_alternative<GemmProblem>(np.problem) ? "vendor=cublaslt" : "vendor=cudnn");
    // Repeats come as whole later passes, so the two timings of an item are apart in time.
    const auto once = job.items;
    for (int r = 1; r < opt.repeat; ++r) job.items.insert(job.items.end(), once.begin(), once.end());
    jobs.push_back(std::move(job));
  }
  // Fault items go in the middle of the first jobs, so that items before and after them are measured.
  for (std::size_t f = 0; f < opt.inject_faults.size() && !jobs.empty(); ++f) {
    const std::string& kind = opt.inject_faults[f];
    if (kind != "trap" && kind != "hang")
      throw Error(Status::parse_error, "sweep: --inject-fault '" + kind + "' is not trap or hang");
    auto& items = jobs[std::min(f, jobs.size() - 1)].items;
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(items.size() / 2), "fault=" + kind);
  }
  return jobs;
}

std::vector<NamedProblem> load_pairs_file(const std::string& path,
                                          std::map<std::string, std::vector<std::string>>* out) {
  std::istringstream in(read_text_file(path, "sweep --pairs file"));  // plain or gzip
  std::vector<NamedProblem> problems;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto bar = line.find('|');
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (bar == std::string::npos) throw ParseError(line, where + "expected 'problem|config'");
    Problem p;
    KernelConfig c;
    try {
      p = parse_problem(line.substr(0, bar));
      c = parse_config(line.substr(bar + 1));
    } catch (const Error& e) {
      throw ParseError(line, where + e.what());
    }
    const std::string key = to_string(p), config = to_string(c);
    auto [it, fresh] = out->try_emplace(key);
    if (fresh) problems.push_back({"", p, n});
    if (std::find(it->second.begin(), it->second.end(), config) == it->second.end()) it->second.push_back(config);
  }
  return problems;
}

std::size_t drop_done(std::vector<SweepJob>& jobs, const RecordFile& existing) {
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& r : existing.records) done.emplace(r.problem, item_of_record_config(r.config));
  std::size_t removed = 0;
  for (auto& j : jobs) {
    auto before = j.items.size();
    std::erase_if(j.items, [&](const std::string& item) { return done.count({j.problem, item}) > 0; });
    removed += before - j.items.size();
  }
  std::erase_if(jobs, [](const SweepJob& j) { return j.items.empty(); });
  return removed;
}

std::vector<KernelSource> kernel_sources(const std::vector<SweepJob>& jobs) {
  std::vector<KernelSource> out;
  std::set<std::string> names;
  for (const auto& j : jobs) {
    Problem p = parse_problem(j.problem);
    for (const auto& item : j.items) {
      if (is_pseudo_item(item)) continue;
      try {
        for (auto& k : make_plan(p, parse_config(item)).kernels)
          if (names.insert(k.name).second) out.push_back(std::move(k));
      } catch (const Error&) {
        // the worker records the error for this pair
      }
    }
  }
  return out;
}

void parse_shard(const std::string& text, int* index, int* count) {
  auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t a = 0, b = 0;
    *index = std::stoi(text.substr(0, slash), &a);
    *count = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw ParseError(text, "--shard takes i/n, e.g. 0/4");
  }
  if (*count < 1 || *index < 0 || *index >= *count)
    throw ParseError(text, "--shard i/n needs 0 <= i < n");
}

std::string shard_output_path(const std::string& path, int index, int count) {
  std::string tag = ".shard" + std::to_string(index) + "of" + std::to_string(count);
  const std::string ext = ".csv.gz";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size()) + tag + ext;
  return path + tag;
}

MergeSummary merge_record_files(const std::vector<std::string>& inputs, const std::string& output, bool allow_mixed) {
  if (inputs.empty()) throw Error(Status::invalid_problem, "sweep merge: no input files");
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0) throw Error(Status::invalid_problem, "sweep merge: " + output + " exists");
  MergeSummary s;
  nlohmann::json header;
  std::vector<Record> merged;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::string device;
  for (const auto& path : inputs) {
    RecordFile f = read_record_file(path);
    std::string name = f.header.contains("devices") && !f.header["devices"].empty()
                           ? f.header["devices"][0].value("name", "")
                           : "";
    if (s.inputs == 0) {
      header = f.header;
      header["merged_from"] = nlohmann::json::array();
      device = name;
    } else if (name != device && !allow_mixed) {
      throw Error(Status::invalid_problem, "sweep merge: " + path + " was recorded on '" + name + "', " + inputs[0] +
                                               " on '" + device + "' (--allow-mixed merges anyway)");
    }
    header["merged_from"].push_back({{"file", path},
                                     {"records", f.records.size()},
                                     {"host", f.header.value("host", "")},
                                     {"date", f.header.value("date", "")},
                                     {"shard", f.header.value("shard", "")},
                                     {"device", name}});
    ++s.inputs;
    for (auto& r : f.records) {
      auto key = std::make_pair(r.problem, r.config);
      auto it = index.find(key);
      if (it == index.end()) {
        index.emplace(key, merged.size());
        merged.push_back(std::move(r));
        continue;
      }
      ++s.duplicates;
      if (merged[it->second].status != "ok" && r.status == "ok") merged[it->second] = std::move(r);
    }
  }
  header.erase("shard");
  RecordWriter w(output, header);
  for (const auto& r : merged) w.append(r);
  w.flush();
  s.records = merged.size();
  return s;
}

}  // namespace tilepick::sweep
