#include "tilepick/env.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <thread>

#include "tilepick/error.hpp"

namespace tilepick::env {
namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// <prefix>/share/tilepick/<what> when the binary holding this code (libtilepick_c.so, or a program
// linked with the static library) lies in <prefix>/lib or <prefix>/bin of an installed tree
// (`cmake --install`), else "".
std::string installed_dir(const char* what) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&installed_dir), &info) || !info.dli_fname) return "";
  std::error_code ec;
  const std::filesystem::path binary = std::filesystem::weakly_canonical(info.dli_fname, ec);
  if (ec) return "";
  const std::filesystem::path dir = binary.parent_path().parent_path() / "share" / "tilepick" / what;
  return std::filesystem::is_directory(dir, ec) ? dir.string() : "";
}

}  // namespace

// Order: the environment, an installed tree's share/tilepick, the source tree this was built from.
std::string data_dir() {
  if (const char* v = get("TILEPICK_DATA_DIR")) return v;
  static const std::string installed = installed_dir("data");
  return installed.empty() ? TILEPICK_SOURCE_DATA_DIR : installed;
}

std::string models_dir() {
  if (const char* v = get("TILEPICK_MODELS_DIR")) return v;
  static const std::string installed = installed_dir("models");
  return installed.empty() ? TILEPICK_SOURCE_MODELS_DIR : installed;
}

int num_threads() {
  if (const char* v = get("TILEPICK_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096)
      throw Error(Status::invalid_problem,
                  std::string("TILEPICK_NUM_THREADS='") + v + "' is not an integer in [1, 4096]");
    return static_cast<int>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

int log_level() {
  const char* v = get("TILEPICK_LOG_LEVEL");
  if (!v) return 1;
  std::string_view s(v);
  if (s == "error") return 0;
  if (s == "warn") return 1;
  if (s == "info") return 2;
  if (s == "debug") return 3;
  throw Error(Status::invalid_problem,
              std::string("TILEPICK_LOG_LEVEL='") + v + "' is not one of error, warn, info, debug");
}

std::string cache_dir_override() {
  const char* v = get("TILEPICK_CACHE_DIR");
  return v ? v : "";
}

bool jit_disabled() {
  const char* v = get("TILEPICK_JIT_DISABLE");
  if (!v) return false;
  std::string_view s(v);
  if (s == "0") return false;
  if (s == "1") return true;
  throw Error(Status::invalid_problem, std::string("TILEPICK_JIT_DISABLE='") + v + "' is not 0 or 1");
}

Shard slurm_array_shard() {
  const char* count = get("SLURM_ARRAY_TASK_COUNT");
  const char* id = get("SLURM_ARRAY_TASK_ID");
  if (!count || !id) return {};
  auto number = [](const char* name, const char* v) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0 || n > 1000000)
      throw Error(Status::invalid_problem, std::string(name) + "='" + v + "' is not a non-negative integer");
    return static_cast<int>(n);
  };
  const char* min = get("SLURM_ARRAY_TASK_MIN");
  Shard s{number("SLURM_ARRAY_TASK_ID", id) - (min ? number("SLURM_ARRAY_TASK_MIN", min) : 0),
          number("SLURM_ARRAY_TASK_COUNT", count)};
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw Error(Status::invalid_problem, "Slurm array task " + std::string(id) + " is outside 0.." +
                                             std::to_string(s.count - 1) + " (SLURM_ARRAY_TASK_MIN/COUNT)");
  return s;
}

std::string cublaslt_lib() {
  const char* v = get("TILEPICK_CUBLASLT_LIB");
  return v ? v : "";
}

std::string cudnn_lib() {
  const char* v = get("TILEPICK_CUDNN_LIB");
  return v ? v : "";
}

std::string plan_cache_file() {
  const char* v = get("TILEPICK_PLAN_CACHE");
  return v ? v : "";
}

const char* policy_unchecked() { return get("TILEPICK_POLICY"); }

std::string policy() {
  // The variables TILEPICK_POLICY replaced: a clear error rather than a silent ignore.
  if (const char* v = get("TILEPICK_VENDOR")) {
    const std::string_view s(v);
    throw Error(Status::invalid_argument,
                std::string("TILEPICK_VENDOR is no longer read: set TILEPICK_POLICY=auto:vendor=") +
                    (s == "off" || s == "only" ? v : "auto") + " instead (docs/usage.md)");
  }
  if (const char* v = get("TILEPICK_AUTO_TIME_US"))
    throw Error(Status::invalid_argument,
                std::string("TILEPICK_AUTO_TIME_US is no longer read: set TILEPICK_POLICY=auto:time_us=") +
                    (std::string_view(v) == "off" ? "inf" : v) + " instead (docs/usage.md)");
  if (const char* v = get("TILEPICK_VENDOR_CHOICE"))
    throw Error(Status::invalid_argument,
                std::string("TILEPICK_VENDOR_CHOICE is no longer read: set TILEPICK_POLICY=auto:vendor_choice=") +
                    (std::string_view(v) == "off" ? "off" : "on") + " instead (docs/usage.md)");
  const char* v = get("TILEPICK_POLICY");
  return v ? v : "";
}

}  // namespace tilepick::env
