// The CUDA driver runtime: device buffers, loaded kernels, plan execution and timing events.
#include "core/cuda_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"

namespace tilepick::cuda {
namespace detail {
namespace {

std::atomic<int> g_default_ordinal{0};

}  // namespace

CUcontext ensure_context(const std::string& what) {
  const Driver& d = require_driver(what);
  CUcontext ctx = nullptr;
  check(d.ctx_get_current(&ctx), "cuCtxGetCurrent", what);
  if (ctx) return ctx;
  init_device(g_default_ordinal);
  check(d.ctx_get_current(&ctx), "cuCtxGetCurrent", what);
  return ctx;
}

}  // namespace detail

using detail::check;
using detail::driver;

bool driver_available(std::string* why) {
  const auto& d = driver();
  if (why) *why = d.error;
  return d.error.empty();
}

void init_device(int ordinal) {
  const auto& d = detail::require_driver("init_device(" + std::to_string(ordinal) + ")");
  // Primary contexts are retained once per device and kept for the process lifetime.
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;
  CUcontext ctx = nullptr;
  {
    std::lock_guard lock(mutex);
    auto it = retained.find(ordinal);
    if (it == retained.end()) {
      CUdevice dev = 0;
      check(d.device_get(&dev, ordinal), "cuDeviceGet", "device " + std::to_string(ordinal));
      check(d.primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain", "device " + std::to_string(ordinal));
      it = retained.emplace(ordinal, ctx).first;
    }
    ctx = it->second;
  }
  check(d.ctx_set_current(ctx), "cuCtxSetCurrent", "device " + std::to_string(ordinal));
  detail::g_default_ordinal = ordinal;
}

std::string target_for_current_device() {
  detail::ensure_context("target_for_current_device");
  const auto& d = driver();
  CUdevice dev = 0;
  int major = 0, minor = 0;
  check(d.ctx_get_device(&dev), "cuCtxGetDevice");
  check(d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check(d.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  // sm_90a: wgmma, setmaxnreg and friends exist only in the arch-specific target of Hopper.
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 && minor == 0 ? "a" : "");
}

int current_device() {
  const auto& d = detail::require_driver("current_device");
  CUcontext ctx = nullptr;
  check(d.ctx_get_current(&ctx), "cuCtxGetCurrent");
  if (!ctx) return -1;
  CUdevice dev = 0;
  check(d.ctx_get_device(&dev), "cuCtxGetDevice");
  return static_cast<int>(dev);
}

PointerInfo pointer_info(const void* p) {
  const auto& d = detail::require_driver("pointer_info");
  PointerInfo info;
  if (!p) return info;
  const auto ptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  unsigned type = 0;
  int managed = 0, ordinal = -1;
  if (d.pointer_get_attributes) {  // one driver call per pointer on the run path; unknown pointers get zeros
    CUpointer_attribute which[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* out[3] = {&type, &managed, &ordinal};
    if (d.pointer_get_attributes(3, which, out, ptr) != CUDA_SUCCESS) return info;
  } else if (d.pointer_get_attribute) {
    if (d.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS) return info;
    d.pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
    if (d.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) != CUDA_SUCCESS) ordinal = -1;
  } else {
    return info;
  }
  info.device_memory = type == CU_MEMORYTYPE_DEVICE || managed;
  if (info.device_memory && ordinal >= 0) info.device = ordinal;
  return info;
}

void synchronize() {
  detail::ensure_context("synchronize");
  check(driver().ctx_synchronize(), "cuCtxSynchronize");
}

// ---- DeviceBuffer ----

namespace {
CUdeviceptr dptr(const void* p, std::size_t offset = 0) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)) + offset;
}
void check_range(const char* what, std::size_t offset, std::size_t bytes, std::size_t size) {
  if (offset > size || bytes > size - offset)
    throw Error(Status::internal, std::string("DeviceBuffer::") + what + ": bytes [" + std::to_string(offset) + ", " +
                                      std::to_string(offset + bytes) + ") outside the buffer of " +
                                      std::to_string(size) + " bytes");
}
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  std::string what = "DeviceBuffer(" + std::to_string(bytes) + " bytes)";
  detail::ensure_context(what);
  if (bytes == 0) return;
  CUdeviceptr p = 0;
  check(driver().mem_alloc(&p, bytes), "cuMemAlloc", what);
  ptr_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().mem_free(dptr(ptr_));  // errors ignored: nothing sensible to do in a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().mem_free(dptr(ptr_));
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  check_range("upload", offset, bytes, bytes_);
  if (bytes) check(driver().memcpy_htod(dptr(ptr_, offset), host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  check_range("download", offset, bytes, bytes_);
  if (bytes) check(driver().memcpy_dtoh(host, dptr(ptr_, offset), bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_) check(driver().memset_d8(dptr(ptr_), value, bytes_), "cuMemsetD8");
}

void DeviceBuffer::fill_bytes_async(unsigned char value, void* stream) {
  if (bytes_)
    check(driver().memset_d8_async(dptr(ptr_), value, bytes_, static_cast<CUstream>(stream)), "cuMemsetD8Async");
}

// ---- LoadedKernel ----

LoadedKernel::LoadedKernel(const jit::CompiledKernel& k) : name_(k.name) {
  detail::ensure_context("loading " + k.name);
  const auto& d = driver();
  CUmodule mod = nullptr;
  check(d.module_load_data(&mod, k.cubin.data()), "cuModuleLoadData", k.name + " (" + k.target + ")");
  module_ = mod;
  CUfunction fn = nullptr;
  if (CUresult r = d.module_get_function(&fn, mod, k.name.c_str()); r != CUDA_SUCCESS) {
    d.module_unload(mod);
    check(r, "cuModuleGetFunction", k.name);
  }
  function_ = fn;
  std::size_t offset = 0, size = 0;
  if (d.func_get_param_info && d.func_get_param_info(fn, 0, &offset, &size) == CUDA_SUCCESS) param_bytes_ = size;
  CUdevice dev = 0;
  int sms = 0;
  check(d.ctx_get_device(&dev), "cuCtxGetDevice", k.name);
  check(d.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute", k.name);
  sm_count_ = static_cast<unsigned>(sms);
  int major = 0;
  check(d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute", k.name);
  overlap_ok_ = major >= 9;
}

LoadedKernel::~LoadedKernel() {
  if (module_) driver().module_unload(static_cast<CUmodule>(module_));
}

void LoadedKernel::launch(const Launch& l, void* stream) const {
  const auto& d = driver();
  auto fn = static_cast<CUfunction>(function_);
  if (param_bytes_ && l.params.size() != param_bytes_)
    throw Error(Status::internal, "launch of " + name_ + ": " + std::to_string(l.params.size()) +
                                      " parameter bytes given, the kernel takes " + std::to_string(param_bytes_));
  if (l.smem_bytes > 48 * 1024) {
    std::lock_guard lock(smem_mutex_);
    if (l.smem_bytes > smem_limit_) {
      check(d.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem_bytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=" + std::to_string(l.smem_bytes) + ")", name_);
      smem_limit_ = l.smem_bytes;
    }
  }
  void* args[] = {const_cast<unsigned char*>(l.params.data())};
  // A persistent grid runs one block per SM at most (clusters along x: whole clusters).
  unsigned grid_x = l.grid[0];
  if (l.persistent) grid_x = std::min(grid_x, l.cluster[0] * std::max(1u, sm_count_ / l.cluster[0]));
  if (l.resident) {
    std::lock_guard lock(smem_mutex_);
    if (resident_fit_ == 0 || resident_fit_smem_ != l.smem_bytes) {
      int blocks = 0;
      check(d.occupancy_max_blocks(&blocks, fn, static_cast<int>(l.block[0] * l.block[1] * l.block[2]), l.smem_bytes),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor", name_);
      resident_fit_ = static_cast<unsigned>(std::max(blocks, 1)), resident_fit_smem_ = l.smem_bytes;
    }
    grid_x = std::min(grid_x, resident_fit_ * std::max(1u, sm_count_));
  }
  const bool cluster = l.cluster[0] * l.cluster[1] * l.cluster[2] > 1;
  const bool overlap = l.overlap_previous && overlap_ok_;  // before sm_90: in stream order
  if (cluster || overlap) {
    if (!d.launch_kernel_ex)
      throw Error(Status::cuda_error, "launch of " + name_ + ": the driver has no cuLaunchKernelEx (clusters, overlapped launches)");
    CUlaunchAttribute attrs[2]{};
    unsigned n = 0;
    if (cluster) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = l.cluster[0], attrs[n].value.clusterDim.y = l.cluster[1];
      attrs[n++].value.clusterDim.z = l.cluster[2];
    }
    if (overlap) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n++].value.programmaticStreamSerializationAllowed = 1;
    }
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid_x, cfg.gridDimY = l.grid[1], cfg.gridDimZ = l.grid[2];
    cfg.blockDimX = l.block[0], cfg.blockDimY = l.block[1], cfg.blockDimZ = l.block[2];
    cfg.sharedMemBytes = l.smem_bytes, cfg.hStream = static_cast<CUstream>(stream);
    cfg.attrs = attrs, cfg.numAttrs = n;
    if (cluster && l.persistent && d.occupancy_max_active_clusters) {
      const unsigned size = l.cluster[0] * l.cluster[1] * l.cluster[2];
      std::lock_guard lock(smem_mutex_);
      if (cluster_fit_smem_ != l.smem_bytes || cluster_fit_size_ != size) {
        int clusters = 0;
        check(d.occupancy_max_active_clusters(&clusters, fn, &cfg), "cuOccupancyMaxActiveClusters", name_);
        cluster_fit_ = static_cast<unsigned>(clusters), cluster_fit_smem_ = l.smem_bytes, cluster_fit_size_ = size;
      }
      if (cluster_fit_ > 0) cfg.gridDimX = std::min(cfg.gridDimX, cluster_fit_ * l.cluster[0]);
    }
    check(d.launch_kernel_ex(&cfg, fn, l.params.empty() ? nullptr : args, nullptr), "cuLaunchKernelEx", name_);
    return;
  }
  check(d.launch_kernel(fn, grid_x, l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.smem_bytes,
                        static_cast<CUstream>(stream), l.params.empty() ? nullptr : args, nullptr),
        "cuLaunchKernel", name_);
}

int LoadedKernel::registers() const {
  int n = 0;
  check(driver().func_get_attribute(&n, CU_FUNC_ATTRIBUTE_NUM_REGS, static_cast<CUfunction>(function_)),
        "cuFuncGetAttribute(NUM_REGS)", name_);
  return n;
}

// ---- Executable ----

namespace {

// Modules loaded per (context, cache key), shared while any executable holds them. The map is
// never freed, so that nothing runs during exit.
std::shared_ptr<const LoadedKernel> load_shared(CUcontext ctx, const jit::CompiledKernel& k) {
  using Key = std::pair<CUcontext, std::string>;
  static std::mutex mutex;
  static auto* loaded = new std::map<Key, std::weak_ptr<const LoadedKernel>>;
  std::lock_guard lock(mutex);
  auto& slot = (*loaded)[{ctx, k.key}];
  if (auto p = slot.lock()) return p;
  auto p = std::make_shared<const LoadedKernel>(k);
  slot = p;
  return p;
}

}  // namespace

Executable::Executable(const KernelPlan& plan, const std::string& target) : plan_(plan) {
  CUcontext ctx = detail::ensure_context("Executable");
  compiled_ = jit::compile_all(plan_.kernels, target);
  for (const auto& k : compiled_) loaded_.push_back(load_shared(ctx, k));
}

void Executable::run(const Operands& ops, void* stream) const {
  detail::ensure_context("Executable::run");
  if (plan_.workspace_bytes > 0 && !ops.workspace)
    throw Error(Status::internal, "the plan needs a workspace of " + std::to_string(plan_.workspace_bytes) +
                                      " bytes and Operands::workspace is null");
  if (!plan_.launches) throw Error(Status::internal, "the plan has no launch function");
  for (const Launch& l : plan_.launches(ops)) {
    if (l.kernel < 0 || static_cast<std::size_t>(l.kernel) >= loaded_.size())
      throw Error(Status::internal, "launch names kernel " + std::to_string(l.kernel) + " of a plan with " +
                                        std::to_string(loaded_.size()));
    const auto& k = *loaded_[static_cast<std::size_t>(l.kernel)];
    if (l.zero_workspace_bytes > 0) {
      if (l.zero_workspace_bytes > plan_.workspace_bytes)
        throw Error(Status::internal, "launch of " + k.name() + " zeroes " + std::to_string(l.zero_workspace_bytes) +
                                          " workspace bytes of " + std::to_string(plan_.workspace_bytes));
      check(driver().memset_d8_async(dptr(ops.workspace), 0, l.zero_workspace_bytes, static_cast<CUstream>(stream)),
            "cuMemsetD8Async", "the workspace of " + k.name());
    }
    k.launch(l, stream);
  }
}

// ---- Timer ----

Timer::Timer() {
  detail::ensure_context("Timer");
  const auto& d = driver();
  CUevent b = nullptr, e = nullptr;
  check(d.event_create(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  if (CUresult r = d.event_create(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
    d.event_destroy(b);
    check(r, "cuEventCreate");
  }
  begin_ = b;
  end_ = e;
}

Timer::~Timer() {
  if (begin_) driver().event_destroy(static_cast<CUevent>(begin_));
  if (end_) driver().event_destroy(static_cast<CUevent>(end_));
}

void Timer::start(void* stream) {
  check(driver().event_record(static_cast<CUevent>(begin_), static_cast<CUstream>(stream)), "cuEventRecord");
}

float Timer::stop_ms(void* stream) {
  const auto& d = driver();
  check(d.event_record(static_cast<CUevent>(end_), static_cast<CUstream>(stream)), "cuEventRecord");
  check(d.event_synchronize(static_cast<CUevent>(end_)), "cuEventSynchronize");
  float ms = 0;
  check(d.event_elapsed_time(&ms, static_cast<CUevent>(begin_), static_cast<CUevent>(end_)), "cuEventElapsedTime");
  return ms;
}

}  // namespace tilepick::cuda
