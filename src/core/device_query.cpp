// Live device properties through the CUDA driver API, loaded with dlopen so that the library runs
// (and reports "no device") on machines without an NVIDIA driver. Only <cuda.h> is used, for types
// and attribute enums; libcuda is never linked.
#include <string>

#include "core/cuda_driver.hpp"

#include "tilepick/arch.hpp"

namespace tilepick {
namespace {

std::optional<DeviceProps> fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return std::nullopt;
}

}  // namespace

std::optional<DeviceProps> query_device(int ordinal, std::string* why) {
  const auto& d = cuda::detail::driver();
  if (!d.error.empty()) return fail(why, d.error);

  int count = 0;
  if (CUresult r = d.device_get_count(&count); r != CUDA_SUCCESS)
    return fail(why, "cuDeviceGetCount failed: " + d.name_of(r));
  if (ordinal < 0 || ordinal >= count)
    return fail(why, "device ordinal " + std::to_string(ordinal) + " out of range (" +
                         std::to_string(count) + (count == 1 ? " device)" : " devices)"));
  CUdevice dev = 0;
  if (CUresult r = d.device_get(&dev, ordinal); r != CUDA_SUCCESS)
    return fail(why, "cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + d.name_of(r));

  DeviceProps p;
  p.ordinal = ordinal;
  char name[256] = {};
  if (CUresult r = d.device_get_name(name, sizeof(name) - 1, dev); r != CUDA_SUCCESS)
    return fail(why, "cuDeviceGetName failed: " + d.name_of(r));
  p.name = name;

  // Every attribute is required: a failure means a broken driver, not a missing feature.
  struct Attr {
    CUdevice_attribute id;
    const char* what;
    int* out;
  };
  int clock_khz = 0, mem_clock_khz = 0, l2 = 0;
  const Attr attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR", &p.cc_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR", &p.cc_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT", &p.sm_count},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE", &clock_khz},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "MEMORY_CLOCK_RATE", &mem_clock_khz},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "GLOBAL_MEMORY_BUS_WIDTH", &p.mem_bus_bits},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "MAX_REGISTERS_PER_MULTIPROCESSOR",
       &p.regs_per_sm},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "MAX_REGISTERS_PER_BLOCK", &p.regs_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", &p.smem_per_sm},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK",
       &p.smem_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
       &p.smem_per_block_optin},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_MULTIPROCESSOR",
       &p.max_threads_per_sm},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       &p.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "MAX_BLOCKS_PER_MULTIPROCESSOR",
       &p.max_blocks_per_sm},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE", &l2},
  };
  for (const Attr& a : attrs)
    if (CUresult r = d.device_get_attribute(a.out, a.id, dev); r != CUDA_SUCCESS)
      return fail(why, std::string("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_") + a.what +
                           ") failed on device " + std::to_string(ordinal) + ": " + d.name_of(r));
  p.clock_mhz = clock_khz / 1000;  // both clocks are reported in kHz
  p.mem_clock_mhz = mem_clock_khz / 1000;
  p.l2_bytes = l2;

  size_t bytes = 0;
  if (d.device_total_mem && d.device_total_mem(&bytes, dev) == CUDA_SUCCESS)
    p.total_mem_bytes = static_cast<std::int64_t>(bytes);
  if (int v = 0; d.driver_get_version && d.driver_get_version(&v) == CUDA_SUCCESS) p.driver_version = v;
  if (why) why->clear();
  return p;
}

}  // namespace tilepick
