// Architecture specs (data/arch/*.json) and the live device that refines them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilepick/dtype.hpp"

namespace tilepick {

struct ArchSpec {
  std::string name;          // file stem, e.g. "h100_sxm"
  std::string device_name;   // e.g. "NVIDIA H100 80GB HBM3"
  std::vector<std::string> match;  // case-insensitive substrings of the live device name
  int cc_major = 0, cc_minor = 0;
  std::string sm;            // "sm_90" (compute capability as a target name)
  std::string jit_target;    // what NVRTC compiles for: "sm_80", "sm_86", "sm_89", "sm_90a"
  int sm_count = 0;
  int boost_clock_mhz = 0, mem_clock_mhz = 0;
  int regs_per_sm = 65536, regs_per_block = 65536, max_regs_per_thread = 255;
  int smem_per_sm = 0, smem_per_block = 49152, smem_per_block_optin = 0;  // bytes
  int max_threads_per_sm = 2048, max_threads_per_block = 1024, max_blocks_per_sm = 32;
  std::int64_t l2_bytes = 0;
  double mem_bw_gbps = 0;    // peak DRAM bandwidth, GB/s
  // Dense tensor-core peaks in TFLOP/s (0 when unsupported) and the SIMT fp32 peak.
  double peak_f16 = 0, peak_bf16 = 0, peak_tf32 = 0, peak_fp8 = 0, peak_f32_simt = 0;
  bool mma_sync = false, wgmma = false, tma = false, clusters = false, fp8_mma = false;
  int max_cluster_size = 1;
  std::string source;        // JSON path, plus " + live device" when refined

  double peak_tflops(DType input) const;  // tensor-core peak for that input type (f32 -> tf32)
  double ridge_flops_per_byte(DType input) const;
};

std::vector<ArchSpec> load_arch_specs(const std::string& dir);  // every *.json, sorted by name
ArchSpec load_arch_spec(const std::string& path);                // throws ParseError naming field
// By spec name ("h100_sxm") or target ("sm_90" -> the first spec with that sm, in name order).
const ArchSpec& find_arch(const std::vector<ArchSpec>& specs, const std::string& name_or_sm);
// Loaded once from env::data_dir()/arch.
const std::vector<ArchSpec>& default_arch_specs();

// Live properties read through the driver API (libcuda loaded with dlopen).
struct DeviceProps {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0, clock_mhz = 0, mem_clock_mhz = 0, mem_bus_bits = 0;
  int regs_per_sm = 0, regs_per_block = 0;
  int smem_per_sm = 0, smem_per_block = 0, smem_per_block_optin = 0;
  int max_threads_per_sm = 0, max_threads_per_block = 0, max_blocks_per_sm = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t total_mem_bytes = 0;  // 0 when the driver does not report it
  int driver_version = 0;            // cuDriverGetVersion, e.g. 12080 for 12.8; 0 when unknown
};

// nullopt (with the reason in *why) when there is no driver or no such device.
std::optional<DeviceProps> query_device(int ordinal, std::string* why = nullptr);
// The spec whose compute capability matches and whose `match` substrings hit the name (the longest
// hit wins, so "H100 PCIe" beats "H100"; else the first spec of that compute capability in name
// order), with the live properties taking precedence for every field the driver reports (0 = not
// reported). Bandwidth is recomputed from mem clock and bus width when both are known; tensor and
// SIMT peaks are scaled by live / spec SM count. `source` gets " + live device".
// Throws NotFound when no spec has the device's compute capability.
ArchSpec match_arch(const std::vector<ArchSpec>& specs, const DeviceProps& dev);

}  // namespace tilepick
