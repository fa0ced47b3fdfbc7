// NVRTC just-in-time compilation with a content-addressed disk cache, and the CUDA driver runtime
// that loads and launches the result. The driver (libcuda) is loaded with dlopen on first use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tilepick/kernel_plan.hpp"

namespace tilepick::jit {

struct CompiledKernel {
  std::string key;            // content hash (hex) of everything that determines the cubin
  std::string name;           // the kernel symbol
  std::string target;         // "sm_90a"
  std::vector<char> cubin;
  double compile_seconds = 0; // NVRTC time when it was built (kept in the cache entry)
  int registers = -1, spill_stores = -1, spill_loads = -1, stack_bytes = -1, static_smem = -1;
  std::string log;            // NVRTC + ptxas log
  bool from_cache = false;
};

// Key = kernel name + program text (config and specialization are in it) + NVRTC version + target
// + options + hash of the bundled headers. Never paths, never times.
std::string cache_key(const KernelSource& src, const std::string& target);
// FNV-1a 64 over every bundled header (path and content), hex.
const std::string& bundled_headers_hash();
// Paths of the bundled headers (under kernels/), for `tilepick jit headers` and tests.
std::vector<std::string> bundled_header_paths();

// Compiles (or loads from the disk cache) one program. Thread-safe. A corrupt or truncated cache
// entry is detected (checksum, size) and rebuilt. With TILEPICK_JIT_DISABLE=1 a miss throws an
// Error naming the kernel. NVRTC failures throw Error(cuda_error) with the log.
CompiledKernel compile(const KernelSource& src, const std::string& target);
// Parallel compile on `threads` workers (0 = env::num_threads()); order preserved; the first
// error is rethrown after all finish.
std::vector<CompiledKernel> compile_all(const std::vector<KernelSource>& srcs, const std::string& target,
                                        int threads = 0);

std::string cache_dir();  // TILEPICK_CACHE_DIR, else $XDG_CACHE_HOME/tilepick, else ~/.cache/tilepick

// Process-wide counters of compile() outcomes (tests, `tilepick jit build`).
struct JitStats {
  std::size_t memory_hits = 0, disk_hits = 0, compiles = 0;
  std::size_t corrupt_removed = 0;  // bad disk entries found, removed and (unless JIT is disabled) rebuilt
};
JitStats jit_stats();
// Forgets the compiled kernels kept in memory (the disk cache is untouched); cache_clear() calls it.
void clear_memory_cache();

struct CacheEntryInfo {
  std::string key, name, target;
  std::size_t cubin_bytes = 0;
  double compile_seconds = 0;
  int registers = -1, spill_stores = -1;
  bool valid = true;
};
std::vector<CacheEntryInfo> cache_list();
std::size_t cache_clear();  // returns entries removed
// Copies the entries of another cache directory (a kernel pack: `TILEPICK_CACHE_DIR=PACK tilepick jit
// build --picked K ...`) into cache_dir(): each one checked as a load checks it (format, key, size,
// checksum) and made by this build (same NVRTC and bundled headers, else no request would ever hit it);
// written through a temp directory renamed into place. Entries already present are left alone.
struct ImportStats {
  std::size_t imported = 0, present = 0, other_build = 0, invalid = 0;
  std::string first_invalid;  // "<path>: <why>" of the first invalid entry
};
ImportStats cache_import(const std::string& from);

}  // namespace tilepick::jit

namespace tilepick::cuda {

// A thin RAII layer over the driver API. Every failure throws Error(cuda_error) naming the call
// (and the kernel, where there is one) and the CUresult name. Without a driver, constructing any
// of these classes throws Error(cuda_error) with the reason. A thread with no current context
// gets the primary context of the device last passed to init_device() (device 0 by default).
bool driver_available(std::string* why = nullptr);
void init_device(int ordinal);  // retains the primary context and makes it current on this thread
std::string target_for_current_device();  // "sm_80", "sm_86", "sm_89", "sm_90a"
// The ordinal of the device whose context is current on this thread, or -1 when none is.
int current_device();

// Where a pointer lives, from cuPointerGetAttribute: device memory (or managed) and its ordinal.
struct PointerInfo {
  bool device_memory = false;  // false: host memory the driver does not know, or an invalid pointer
  int device = -1;
};
PointerInfo pointer_info(const void* p);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&&) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  void fill_bytes(unsigned char value);  // e.g. poison with 0xff (NaN for f16/bf16/f32)
  void fill_bytes_async(unsigned char value, void* stream = nullptr);  // returns once queued
  void copy_from(const DeviceBuffer& src);  // device to device; sizes must match

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A loaded kernel (module + function), with its dynamic shared-memory limit raised as needed.
// launch() checks the parameter size against the kernel's (where the driver reports it).
class LoadedKernel {
 public:
  explicit LoadedKernel(const jit::CompiledKernel& k);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  void launch(const Launch& l, void* stream = nullptr) const;  // stream: CUstream
  const std::string& name() const { return name_; }
  int registers() const;  // from the driver (cuFuncGetAttribute)

 private:
  void* module_ = nullptr;
  void* function_ = nullptr;
  std::string name_;
  std::size_t param_bytes_ = 0;  // 0: unknown
  unsigned sm_count_ = 0;        // of the module's device: bounds persistent grids
  bool overlap_ok_ = false;      // the device runs overlapped launches (programmatic dependent launch, cc >= 9.0)
  mutable std::mutex smem_mutex_;
  mutable unsigned smem_limit_ = 48 * 1024;
  // Clusters co-resident on the device for the last (shared memory, cluster size) launched.
  mutable unsigned cluster_fit_ = 0, cluster_fit_smem_ = 0, cluster_fit_size_ = 0;
  // Blocks co-resident on one SM for the last shared memory a resident grid launched with (0 = not asked yet).
  mutable unsigned resident_fit_ = 0, resident_fit_smem_ = 0;
};

// Compiles (cached), loads and runs a plan: zeroes workspace ranges as asked, issues every launch.
// Loaded modules are shared between executables of the same context while any of them lives.
class Executable {
 public:
  Executable(const KernelPlan& plan, const std::string& target);
  void run(const Operands& ops, void* stream = nullptr) const;
  std::size_t workspace_bytes() const { return plan_.workspace_bytes; }
  const std::vector<jit::CompiledKernel>& compiled() const { return compiled_; }

 private:
  KernelPlan plan_;
  std::vector<jit::CompiledKernel> compiled_;
  std::vector<std::shared_ptr<const LoadedKernel>> loaded_;
};

void synchronize();  // cuCtxSynchronize, with a check

// A CUDA graph of the work `body` issues on a private stream (stream capture, thread-local mode),
// instantiated once and replayable: short kernels are timed as one graph of many launches, so the
// launch overhead of each stays out of the timed region. Capture or instantiation failures (e.g. a
// library call that synchronizes) throw Error(cuda_error) naming the call.
class Graph {
 public:
  static Graph capture(const std::function<void(void* stream)>& body);
  Graph() = default;
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(void* stream = nullptr) const;  // asynchronous
  explicit operator bool() const { return exec_ != nullptr; }

 private:
  void* exec_ = nullptr;
};

// Events for timing on a stream.
class Timer {
 public:
  Timer();
  ~Timer();
  void start(void* stream = nullptr);
  float stop_ms(void* stream = nullptr);  // records, synchronizes, returns elapsed milliseconds

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace tilepick::cuda
