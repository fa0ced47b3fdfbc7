// Live device properties through the CUDA driver API, loaded with dlopen so that the library runs
// (and reports "no device") on machines without an NVIDIA driver. Only <cuda.h> is used, for types
// and attribute enums; libcuda is never linked.
#include <cuda.h>
#include <dlfcn.h>

#include <string>

#include "tilepick/arch.hpp"

namespace tilepick {
namespace {

// The driver entry points we use, resolved once; the handle stays open for the process lifetime.
struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_version)(int*) = nullptr;
  CUresult (*get_count)(int*) = nullptr;
  CUresult (*get)(CUdevice*, int) = nullptr;
  CUresult (*get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*total_mem)(size_t*, CUdevice) = nullptr;      // optional
  CUresult (*error_name)(CUresult, const char**) = nullptr;  // optional
  std::string error;  // empty when the driver is loaded and initialised

  std::string name_of(CUresult r) const {
    const char* s = nullptr;
    if (error_name && error_name(r, &s) == CUDA_SUCCESS && s) return s;
    return "CUresult " + std::to_string(static_cast<int>(r));
  }
};

template <class F>
bool resolve(void* h, const char* sym, F& out) {
  out = reinterpret_cast<F>(dlsym(h, sym));
  return out != nullptr;
}

Driver load_driver() {
  Driver d;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    d.error = std::string("libcuda.so.1 not found: no NVIDIA driver on this machine") +
              (e ? std::string(" (") + e + ")" : "");
    return d;
  }
  // Versioned names are what cuda.h maps the plain names to (cuDeviceTotalMem -> _v2).
  const char* missing = nullptr;
  if (!resolve(h, "cuInit", d.init)) missing = "cuInit";
  else if (!resolve(h, "cuDeviceGetCount", d.get_count)) missing = "cuDeviceGetCount";
  else if (!resolve(h, "cuDeviceGet", d.get)) missing = "cuDeviceGet";
  else if (!resolve(h, "cuDeviceGetName", d.get_name)) missing = "cuDeviceGetName";
  else if (!resolve(h, "cuDeviceGetAttribute", d.get_attribute)) missing = "cuDeviceGetAttribute";
  resolve(h, "cuDriverGetVersion", d.driver_version);
  resolve(h, "cuDeviceTotalMem_v2", d.total_mem);
  resolve(h, "cuGetErrorName", d.error_name);
  if (missing) {
    d.error = std::string("libcuda.so.1 has no symbol ") + missing + " (driver too old?)";
    return d;  // handle intentionally kept open: harmless, and dlclose during exit is riskier
  }
  if (CUresult r = d.init(0); r != CUDA_SUCCESS) d.error = "cuInit failed: " + d.name_of(r);
  return d;
}

const Driver& driver() {
  static const Driver d = load_driver();  // thread-safe one-time load and cuInit
  return d;
}

std::optional<DeviceProps> fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return std::nullopt;
}

}  // namespace

std::optional<DeviceProps> query_device(int ordinal, std::string* why) {
  const Driver& d = driver();
  if (!d.error.empty()) return fail(why, d.error);

  int count = 0;
  if (CUresult r = d.get_count(&count); r != CUDA_SUCCESS)
    return fail(why, "cuDeviceGetCount failed: " + d.name_of(r));
  if (ordinal < 0 || ordinal >= count)
    return fail(why, "device ordinal " + std::to_string(ordinal) + " out of range (" +
                         std::to_string(count) + (count == 1 ? " device)" : " devices)"));
  CUdevice dev = 0;
  if (CUresult r = d.get(&dev, ordinal); r != CUDA_SUCCESS)
    return fail(why, "cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + d.name_of(r));

  DeviceProps p;
  p.ordinal = ordinal;
  char name[256] = {};
  if (CUresult r = d.get_name(name, sizeof(name) - 1, dev); r != CUDA_SUCCESS)
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
    if (CUresult r = d.get_attribute(a.out, a.id, dev); r != CUDA_SUCCESS)
      return fail(why, std::string("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_") + a.what +
                           ") failed on device " + std::to_string(ordinal) + ": " + d.name_of(r));
  p.clock_mhz = clock_khz / 1000;  // both clocks are reported in kHz
  p.mem_clock_mhz = mem_clock_khz / 1000;
  p.l2_bytes = l2;

  size_t bytes = 0;
  if (d.total_mem && d.total_mem(&bytes, dev) == CUDA_SUCCESS)
    p.total_mem_bytes = static_cast<std::int64_t>(bytes);
  if (int v = 0; d.driver_version && d.driver_version(&v) == CUDA_SUCCESS) p.driver_version = v;
  if (why) why->clear();
  return p;
}

}  // namespace tilepick
