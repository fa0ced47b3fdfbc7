// The CUDA driver API entry points used by tilepick, resolved once from libcuda.so.1 with dlopen.
// Only <cuda.h> is used for types and enums; libcuda is never linked, so that everything else
// works on machines without an NVIDIA driver.
#pragma once
#include <cuda.h>

#include <string>

namespace tilepick::cuda::detail {

struct Driver {
  // Versioned symbols (_v2) are the ones <cuda.h> maps the plain names to.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;   // optional
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;  // optional
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuFuncGetParamInfo) func_get_param_info = nullptr;  // optional (CUDA 12.4+)
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_blocks = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemsetD8) memset_d8 = nullptr;
  decltype(&::cuMemsetD8Async) memset_d8_async = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuPointerGetAttribute) pointer_get_attribute = nullptr;  // optional
  decltype(&::cuPointerGetAttributes) pointer_get_attributes = nullptr;  // optional
  // Optional: streams, graph capture and device copies (timing of short kernels, cuda::Graph).
  decltype(&::cuMemcpyDtoD) memcpy_dtod = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamBeginCapture) stream_begin_capture = nullptr;
  decltype(&::cuStreamEndCapture) stream_end_capture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) graph_instantiate = nullptr;
  decltype(&::cuGraphLaunch) graph_launch = nullptr;
  decltype(&::cuGraphExecDestroy) graph_exec_destroy = nullptr;
  decltype(&::cuGraphDestroy) graph_destroy = nullptr;
  // Optional (CUDA 12+): Hopper tensor maps and cluster launches (fam=sm90).
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;
  decltype(&::cuTensorMapEncodeIm2col) tensor_map_encode_im2col = nullptr;
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;
  decltype(&::cuOccupancyMaxActiveClusters) occupancy_max_active_clusters = nullptr;

  std::string error;  // empty when libcuda is loaded, every required symbol found and cuInit passed
  std::string name_of(CUresult r) const;  // "CUDA_ERROR_INVALID_VALUE"
};

const Driver& driver();  // loaded once, thread-safe; never throws
// The driver, or Error(cuda_error) "<what>: no CUDA driver: <why>".
const Driver& require_driver(const std::string& what);
// Throws Error(cuda_error) "<call> failed[ for <subject>]: <CUresult name>" unless r is success.
void check(CUresult r, const std::string& call, const std::string& subject = "");
// Makes a context current on this thread if none is: the primary context of the device chosen by
// the last init_device() (device 0 if none). Returns the current context. (src/jit/driver.cpp)
CUcontext ensure_context(const std::string& what);

}  // namespace tilepick::cuda::detail
