// One NVRTC compile straight to cubin, with the bundled headers, automatic PCH and ptxas -v stats.
#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <cctype>
#include <shared_mutex>

#include "jit/jit_internal.hpp"
#include "tilepick/error.hpp"

namespace tilepick::jit::detail {
namespace {

// Automatic PCH is off by default: measured on this tree (NVRTC 13.0, sm_90a, 20-40 kernels per
// family) it saved nothing (GEMM 9.8 s without vs 10.2 s with; conv 5.0 vs 5.0; depthwise 2.0 vs
// 2.0), since front-end time is the program's own template instantiation, not header parsing; and
// it reserves a 256 MiB heap and leaves /tmp/__nvrtc_auto_pch_<pid> behind when a worker is killed.
std::atomic<bool> g_pch{false};
// Automatic PCH uses one process-wide heap; resizing frees it, so no compile may run meanwhile.
std::shared_mutex g_pch_heap_mutex;

class Program {
 public:
  Program(const KernelSource& src, const std::string& target) : what_(src.name + " (" + target + ")") {
    std::vector<const char*> contents, names;
    for (const auto& h : bundled_headers()) {
      contents.push_back(reinterpret_cast<const char*>(h.data));
      names.push_back(h.path);
    }
    std::string file = src.name + ".cu";
    check(nvrtcCreateProgram(&prog_, src.code.c_str(), file.c_str(), static_cast<int>(contents.size()),
                             contents.data(), names.data()),
          "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return prog_; }

  void check(nvrtcResult r, const char* call, const std::string& log = "") const {
    if (r == NVRTC_SUCCESS) return;
    throw Error(Status::cuda_error, std::string(call) + " failed for " + what_ + ": " + nvrtcGetErrorString(r) +
                                        (log.empty() ? "" : "\n" + log));
  }
  std::string log() const {
    std::size_t n = 0;
    if (nvrtcGetProgramLogSize(prog_, &n) != NVRTC_SUCCESS || n == 0) return "";
    std::string s(n, '\0');
    if (nvrtcGetProgramLog(prog_, s.data()) != NVRTC_SUCCESS) return "";
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n')) s.pop_back();
    return s;
  }

 private:
  nvrtcProgram prog_ = nullptr;
  std::string what_;
};

// Grows the PCH heap after NVRTC reported it too small; the next compile then creates the PCH.
std::string grow_pch_heap(nvrtcProgram prog) {
  std::size_t need = 0, have = 0;
  if (nvrtcGetPCHHeapSizeRequired(prog, &need) != NVRTC_SUCCESS) return "PCH heap exhausted; required size unknown";
  std::unique_lock lock(g_pch_heap_mutex);
  nvrtcGetPCHHeapSize(&have);
  if (need > have && nvrtcSetPCHHeapSize(need) != NVRTC_SUCCESS)
    return "PCH heap exhausted; resizing to " + std::to_string(need) + " bytes failed";
  return "PCH heap exhausted; resized from " + std::to_string(have) + " to " + std::to_string(need) + " bytes";
}

// The number just before `suffix` at its first occurrence, e.g. ("Used 40 registers", " registers").
int number_before(const std::string& log, const std::string& suffix, int missing) {
  std::size_t pos = log.find(suffix);
  if (pos == std::string::npos) return missing;
  std::size_t b = pos;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(log[b - 1]))) --b;
  return b == pos ? missing : std::stoi(log.substr(b, pos - b));
}

}  // namespace

void set_pch_enabled(bool on) { g_pch = on; }
bool pch_enabled() { return g_pch; }

std::size_t pch_heap_size() {
  std::size_t n = 0;
  nvrtcGetPCHHeapSize(&n);
  return n;
}

void set_pch_heap_size(std::size_t bytes) {
  std::unique_lock lock(g_pch_heap_mutex);
  if (nvrtcResult r = nvrtcSetPCHHeapSize(bytes); r != NVRTC_SUCCESS)
    throw Error(Status::cuda_error, std::string("nvrtcSetPCHHeapSize failed: ") + nvrtcGetErrorString(r));
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> codegen_options(const std::string& target) {
  // No fast math: IEEE division, square root and denormals, so that results match the references.
  return {"--gpu-architecture=" + target, "-std=c++17", "--ptxas-options=-v"};
}

void parse_ptxas_log(const std::string& log, CompiledKernel& k) {
  k.registers = number_before(log, " registers", -1);
  k.stack_bytes = number_before(log, " bytes stack frame", 0);
  k.spill_stores = number_before(log, " bytes spill stores", 0);
  k.spill_loads = number_before(log, " bytes spill loads", 0);
  k.static_smem = number_before(log, " bytes smem", 0);  // ptxas omits it when zero
}

CompiledKernel nvrtc_compile(const KernelSource& src, const std::string& target) {
  std::vector<std::string> opts = codegen_options(target);
  const bool pch = pch_enabled();
  // Automatic PCH: NVRTC reuses the parsed #include prefix across compiles of this process (its
  // files live in a per-process temp dir). "created/used" messages would only clutter the logs.
  if (pch) opts.insert(opts.end(), {"--pch", "--pch-messages=false"});
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  Program prog(src, target);
  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult r;
  {
    std::shared_lock lock(g_pch_heap_mutex);
    r = nvrtcCompileProgram(prog.get(), static_cast<int>(argv.size()), argv.data());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string log = prog.log();
  prog.check(r, "nvrtcCompileProgram", log);

  if (pch) {
    nvrtcResult s = nvrtcGetPCHCreateStatus(prog.get());
    if (s == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED)
      log += "\n[tilepick] " + grow_pch_heap(prog.get());
    else if (s != NVRTC_SUCCESS && s != NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED)
      log += std::string("\n[tilepick] PCH not created: ") + nvrtcGetErrorString(s);
  }

  CompiledKernel k;
  k.name = src.name;
  k.target = target;
  k.compile_seconds = seconds;
  std::size_t size = 0;
  prog.check(nvrtcGetCUBINSize(prog.get(), &size), "nvrtcGetCUBINSize", log);
  k.cubin.resize(size);
  prog.check(nvrtcGetCUBIN(prog.get(), k.cubin.data()), "nvrtcGetCUBIN", log);
  parse_ptxas_log(log, k);
  k.log = std::move(log);
  return k;
}

}  // namespace tilepick::jit::detail
