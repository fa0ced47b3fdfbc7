// Loads the CUDA driver API once with dlopen (libcuda is never linked) and checks its results.
#include "core/cuda_driver.hpp"

#include <dlfcn.h>

#include "tilepick/error.hpp"

namespace tilepick::cuda::detail {
namespace {

template <class F>
bool resolve(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  return out != nullptr;
}

Driver load() {
  Driver d;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    d.error = std::string("libcuda.so.1 not found: no NVIDIA driver on this machine") + (e ? std::string(" (") + e + ")" : "");
    return d;
  }
  // The handle stays open for the process lifetime.
  struct Required {
    const char* symbol;
    bool found;
  };
  const Required required[] = {
      {"cuInit", resolve(lib, "cuInit", d.init)},
      {"cuGetErrorName", resolve(lib, "cuGetErrorName", d.get_error_name)},
      {"cuDeviceGet", resolve(lib, "cuDeviceGet", d.device_get)},
      {"cuDeviceGetCount", resolve(lib, "cuDeviceGetCount", d.device_get_count)},
      {"cuDeviceGetAttribute", resolve(lib, "cuDeviceGetAttribute", d.device_get_attribute)},
      {"cuDeviceGetName", resolve(lib, "cuDeviceGetName", d.device_get_name)},
      {"cuDevicePrimaryCtxRetain", resolve(lib, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain)},
      {"cuCtxSetCurrent", resolve(lib, "cuCtxSetCurrent", d.ctx_set_current)},
      {"cuCtxGetCurrent", resolve(lib, "cuCtxGetCurrent", d.ctx_get_current)},
      {"cuCtxGetDevice", resolve(lib, "cuCtxGetDevice", d.ctx_get_device)},
      {"cuCtxSynchronize", resolve(lib, "cuCtxSynchronize", d.ctx_synchronize)},
      {"cuModuleLoadData", resolve(lib, "cuModuleLoadData", d.module_load_data)},
      {"cuModuleGetFunction", resolve(lib, "cuModuleGetFunction", d.module_get_function)},
      {"cuModuleUnload", resolve(lib, "cuModuleUnload", d.module_unload)},
      {"cuFuncSetAttribute", resolve(lib, "cuFuncSetAttribute", d.func_set_attribute)},
      {"cuFuncGetAttribute", resolve(lib, "cuFuncGetAttribute", d.func_get_attribute)},
      {"cuLaunchKernel", resolve(lib, "cuLaunchKernel", d.launch_kernel)},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor",
       resolve(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor", d.occupancy_max_blocks)},
      {"cuMemAlloc_v2", resolve(lib, "cuMemAlloc_v2", d.mem_alloc)},
      {"cuMemFree_v2", resolve(lib, "cuMemFree_v2", d.mem_free)},
      {"cuMemcpyHtoD_v2", resolve(lib, "cuMemcpyHtoD_v2", d.memcpy_htod)},
      {"cuMemcpyDtoH_v2", resolve(lib, "cuMemcpyDtoH_v2", d.memcpy_dtoh)},
      {"cuMemsetD8_v2", resolve(lib, "cuMemsetD8_v2", d.memset_d8)},
      {"cuMemsetD8Async", resolve(lib, "cuMemsetD8Async", d.memset_d8_async)},
      {"cuEventCreate", resolve(lib, "cuEventCreate", d.event_create)},
      {"cuEventRecord", resolve(lib, "cuEventRecord", d.event_record)},
      {"cuEventSynchronize", resolve(lib, "cuEventSynchronize", d.event_synchronize)},
      // _v2 since CUDA 12.8, same signature; older drivers have only the plain name.
      {"cuEventElapsedTime", resolve(lib, "cuEventElapsedTime_v2", d.event_elapsed_time) ||
                                 resolve(lib, "cuEventElapsedTime", d.event_elapsed_time)},
      {"cuEventDestroy_v2", resolve(lib, "cuEventDestroy_v2", d.event_destroy)},
  };
  resolve(lib, "cuFuncGetParamInfo", d.func_get_param_info);
  resolve(lib, "cuDeviceTotalMem_v2", d.device_total_mem);
  resolve(lib, "cuDriverGetVersion", d.driver_get_version);
  resolve(lib, "cuPointerGetAttribute", d.pointer_get_attribute);
  resolve(lib, "cuPointerGetAttributes", d.pointer_get_attributes);
  resolve(lib, "cuMemcpyDtoD_v2", d.memcpy_dtod);
  resolve(lib, "cuStreamCreate", d.stream_create);
  resolve(lib, "cuStreamDestroy_v2", d.stream_destroy);
  resolve(lib, "cuStreamBeginCapture_v2", d.stream_begin_capture);
  resolve(lib, "cuStreamEndCapture", d.stream_end_capture);
  resolve(lib, "cuGraphInstantiateWithFlags", d.graph_instantiate);
  resolve(lib, "cuGraphLaunch", d.graph_launch);
  resolve(lib, "cuGraphExecDestroy", d.graph_exec_destroy);
  resolve(lib, "cuGraphDestroy", d.graph_destroy);
  resolve(lib, "cuTensorMapEncodeTiled", d.tensor_map_encode_tiled);
  resolve(lib, "cuTensorMapEncodeIm2col", d.tensor_map_encode_im2col);
  resolve(lib, "cuLaunchKernelEx", d.launch_kernel_ex);
  resolve(lib, "cuOccupancyMaxActiveClusters", d.occupancy_max_active_clusters);
  for (const auto& r : required)
    if (!r.found) {
      d.error = std::string("libcuda.so.1 has no symbol ") + r.symbol + " (driver too old?)";
      return d;
    }
  if (CUresult r = d.init(0); r != CUDA_SUCCESS) d.error = "cuInit failed: " + d.name_of(r);
  return d;
}

}  // namespace

std::string Driver::name_of(CUresult r) const {
  const char* s = nullptr;
  if (get_error_name && get_error_name(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

const Driver& driver() {
  static const Driver d = load();
  return d;
}

const Driver& require_driver(const std::string& what) {
  const Driver& d = driver();
  if (!d.error.empty()) throw Error(Status::cuda_error, what + ": no CUDA driver: " + d.error);
  return d;
}

void check(CUresult r, const std::string& call, const std::string& subject) {
  if (r == CUDA_SUCCESS) return;
  throw Error(Status::cuda_error,
              call + " failed" + (subject.empty() ? "" : " for " + subject) + ": " + driver().name_of(r));
}

}  // namespace tilepick::cuda::detail
