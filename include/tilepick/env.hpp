// The one place that reads TILEPICK_* environment variables (docs/usage.md has the table).
#pragma once
#include <string>

namespace tilepick::env {

// TILEPICK_DATA_DIR, else <prefix>/share/tilepick/data of an installed tree this binary lies in
// (<prefix>/lib or <prefix>/bin), else the source tree's data/ baked in at build time.
std::string data_dir();
// TILEPICK_MODELS_DIR, else <prefix>/share/tilepick/models the same way, else the source tree's models/.
std::string models_dir();
// TILEPICK_NUM_THREADS (CPU references, parallel compilation), else the hardware concurrency.
int num_threads();
// TILEPICK_LOG_LEVEL: error | warn | info | debug (default warn).
int log_level();  // 0 error, 1 warn, 2 info, 3 debug
// TILEPICK_CACHE_DIR: the JIT cache directory, or "" when unset (jit::cache_dir() picks the default).
std::string cache_dir_override();
// TILEPICK_JIT_DISABLE=1: never compile; a JIT cache miss is an error. 0 or unset: compile on a miss.
bool jit_disabled();
// A Slurm array task's shard of a sweep: SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (default 0)
// of SLURM_ARRAY_TASK_COUNT. {0, 0} outside an array job. (Not TILEPICK_: Slurm sets these.)
struct Shard {
  int index = 0, count = 0;
};
Shard slurm_array_shard();
// TILEPICK_CUBLASLT_LIB / TILEPICK_CUDNN_LIB: full path of the vendor library to dlopen (nothing else
// is tried), or "" when unset (run/vendor_lib.cpp searches the usual places).
std::string cublaslt_lib();
std::string cudnn_lib();
// TILEPICK_PLAN_CACHE: the dispatcher's plan-cache JSON file, "" when unset (memory only).
std::string plan_cache_file();
// TILEPICK_POLICY: the dispatcher's default policy (policy.hpp string form), "" when unset ("auto").
// Throws Error(invalid_argument) naming the TILEPICK_POLICY value to use when a variable it replaced is set
// (TILEPICK_VENDOR, TILEPICK_AUTO_TIME_US, TILEPICK_VENDOR_CHOICE).
std::string policy();
// The same without that check, nullptr when unset: for plan-cache hits (a plan made before checked it).
const char* policy_unchecked();

}  // namespace tilepick::env
