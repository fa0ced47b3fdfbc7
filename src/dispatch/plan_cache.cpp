#include "dispatch/plan_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "run/vendor.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace fs = std::filesystem;

nlohmann::json plan_cache_stamps(const Problem& p, const std::string& kernel, bool vendor) {
  nlohmann::json s{{"tilepick", TILEPICK_VERSION},
                   {"feature_schema", feature_schema().hash},
                   {"config_space", config_space_hash(op_name(p))},
                   {"kernel_headers", jit::bundled_headers_hash()}};
  if (vendor) {
    const auto lib = kernel.rfind("cudnn:", 0) == 0 ? run::vendor::Lib::cudnn : run::vendor::Lib::cublaslt;
    s["vendor_library"] = std::string(run::vendor::lib_name(lib)) + " " + run::vendor::library(lib).version;
  }
  return s;
}

std::string plan_cache_key(const std::string& problem, const std::string& arch, const std::string& device_name,
                           const std::string& model_version, const std::string& strategy,
                           const std::string& vendor_mode) {
  return problem + " | " + arch + " | " + device_name + " | " + model_version + " | " + strategy + " | vendor=" +
         vendor_mode;
}

bool stamps_match(const PlanCacheEntry& e, const Problem& p) {
  return e.stamps == plan_cache_stamps(p, e.kernel, e.vendor);
}

PlanCacheEntry make_entry(const std::string& key, const PlanInfo& info, const Problem& p) {
  PlanCacheEntry e;
  e.key = key, e.problem = info.problem, e.kernel = info.kernel, e.vendor = info.vendor;
  e.selection_source = info.selection_source, e.pool_size = info.pool_size, e.candidates = info.candidates;
  e.stamps = plan_cache_stamps(p, e.kernel, e.vendor);
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  e.created = buf;
  return e;
}

namespace {

nlohmann::json entry_json(const PlanCacheEntry& e) {
  nlohmann::json c = nlohmann::json::array();
  for (const auto& x : e.candidates)
    c.push_back({{"kernel", x.kernel}, {"vendor", x.vendor}, {"score", x.score}, {"time_us", x.time_us}, {"status", x.status}});
  return {{"key", e.key},       {"problem", e.problem},     {"kernel", e.kernel},
          {"vendor", e.vendor}, {"selection_source", e.selection_source}, {"pool_size", e.pool_size},
          {"candidates", c},    {"stamps", e.stamps},       {"created", e.created}};
}

PlanCacheEntry entry_from_json(const nlohmann::json& j) {
  PlanCacheEntry e;
  e.key = j.at("key").get<std::string>();
  e.problem = j.at("problem").get<std::string>();
  e.kernel = j.at("kernel").get<std::string>();
  e.vendor = j.at("vendor").get<bool>();
  e.selection_source = j.value("selection_source", "");
  e.pool_size = j.value("pool_size", std::size_t{0});
  for (const auto& c : j.value("candidates", nlohmann::json::array()))
    e.candidates.push_back({c.at("kernel").get<std::string>(), c.value("vendor", false), c.value("score", 0.0),
                            c.value("time_us", -1.0), c.value("status", "")});
  e.stamps = j.at("stamps");
  e.created = j.value("created", "");
  return e;
}

// Parses the file's text into usable and foreign entries; throws on malformed JSON.
PlanCacheFile parse(const std::string& text, const std::string& path) {
  PlanCacheFile f;
  const auto j = nlohmann::json::parse(text);
  if (!j.is_object() || j.value("format", 0) != 1 || !j.contains("entries") || !j["entries"].is_array())
    throw ParseError("", "plan cache " + path + ": not a format-1 tilepick plan cache");
  for (const auto& ej : j["entries"]) {
    try {
      PlanCacheEntry e = entry_from_json(ej);
      const Problem p = parse_problem(e.problem);
      if (stamps_match(e, p)) {
        try {
          if (!e.vendor) parse_config(e.kernel);
        } catch (const std::exception&) {  // this build's entry with a damaged kernel: not a plan, dropped
          ++f.rejected;
          continue;
        }
        f.entries[e.key] = std::move(e);
        continue;
      }
    } catch (const std::exception&) {  // an entry this build cannot read (another format): kept as foreign
    }
    ++f.rejected;
    f.foreign.push_back(ej);
  }
  return f;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(Status::io_error, "plan cache: cannot open lock file " + path);
    ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

PlanCacheFile PlanCacheFile::load(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return {};
  try {
    return parse(read_all(path), path);
  } catch (const std::exception& e) {
    if (env::log_level() >= 1)
      std::cerr << "tilepick: warning: plan cache " << path << " is not usable (" << e.what()
                << "); plans stay in memory and the file is left as it is\n";
    return {};
  }
}


void PlanCacheFile::save(const std::string& path) {
  if (path.empty()) return;
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  FileLock lock(path + ".lock");
  PlanCacheFile now;
  if (fs::exists(path, ec)) {
    if (!fs::is_regular_file(path, ec))
      throw Error(Status::io_error, "plan cache: " + path + " is not a regular file; not written");
    try {
      now = parse(read_all(path), path);
    } catch (const std::exception& e) {  // someone else's file, or a damaged cache: never overwritten
      throw Error(Status::io_error, "plan cache: " + path + " holds something else than a tilepick plan cache (" +
                                        e.what() + "); not overwritten (move it away or point TILEPICK_PLAN_CACHE elsewhere)");
    }
  }
  for (auto& [k, e] : now.entries) entries.emplace(k, e);  // ours win
  // Bounded: the newest max_entries of this build, then other builds' while room is left, so that a
  // save costs at most that many entries.
  std::vector<const PlanCacheEntry*> newest;
  for (const auto& [k, e] : entries) newest.push_back(&e);
  std::stable_sort(newest.begin(), newest.end(), [](auto* a, auto* b) { return a->created > b->created; });
  const std::size_t cap = std::max<std::size_t>(max_entries, 1);
  if (newest.size() > cap) {
    for (std::size_t i = cap; i < newest.size(); ++i) entries.erase(newest[i]->key);
    newest.resize(cap);
  }
  nlohmann::json all = nlohmann::json::array();
  for (const auto* e : newest) all.push_back(entry_json(*e));
  for (const auto& j : now.foreign)
    if (all.size() < cap) all.push_back(j);
  // A fresh, exclusively created temp file in the target directory (no predictable name to follow).
  std::string tmp = path + ".tmpXXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error(Status::io_error, "plan cache: cannot create a temp file next to " + path);
  const std::string text = nlohmann::json{{"format", 1}, {"entries", all}}.dump(1) + "\n";
  bool written = true;
  for (std::size_t at = 0; written && at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    written = n > 0;
    at += written ? static_cast<std::size_t>(n) : 0;
  }
  written = ::fchmod(fd, 0644) == 0 && written;
  if (::close(fd) != 0 || !written) {
    fs::remove(tmp, ec);
    throw Error(Status::io_error, "plan cache: cannot write " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(Status::io_error, "plan cache: cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  foreign = std::move(now.foreign);
}

}  // namespace tilepick
