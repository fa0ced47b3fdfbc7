// tilepick arch list|show
#include <iomanip>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "tilepick/arch.hpp"

namespace tilepick::cli {
namespace {

void print_spec(const ArchSpec& a) {
  std::cout << "name:            " << a.name << " (" << a.device_name << ")\n"
            << "source:          " << a.source << "\n"
            << "target:          " << a.sm << " (jit " << a.jit_target << ")\n"
            << "SMs:             " << a.sm_count << " @ " << a.boost_clock_mhz << " MHz\n"
            << "smem per block:  " << a.smem_per_block_optin << " B opt-in, per SM " << a.smem_per_sm << " B\n"
            << "regs:            " << a.regs_per_sm << " per SM, " << a.max_regs_per_thread << " per thread\n"
            << "L2:              " << a.l2_bytes << " B\n"
            << "DRAM:            " << a.mem_bw_gbps << " GB/s\n"
            << "peak TFLOP/s:    f16 " << a.peak_f16 << ", bf16 " << a.peak_bf16 << ", tf32 " << a.peak_tf32
            << ", fp8 " << a.peak_fp8 << ", f32 simt " << a.peak_f32_simt << "\n"
            << "instructions:    mma.sync " << a.mma_sync << ", wgmma " << a.wgmma << ", tma " << a.tma
            << ", clusters " << a.clusters << " (max " << a.max_cluster_size << "), fp8 mma " << a.fp8_mma << "\n";
}

}  // namespace

void add_arch_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("arch", "architecture specs (data/arch) and the live device");
  cmd->require_subcommand(1);
  cmd->add_subcommand("list", "list the arch specs")->callback([] {
    for (const auto& a : default_arch_specs())
      std::cout << std::left << std::setw(12) << a.name << std::setw(8) << a.sm << a.device_name << "\n";
  });
  struct Args {
    std::string name;
    int device = -1;
  };
  auto args = std::make_shared<Args>();
  auto* show = cmd->add_subcommand("show", "print one spec, or the live device's matched spec with --device");
  show->add_option("name", args->name, "spec name or target (sm_90)");
  show->add_option("--device", args->device, "query this CUDA device ordinal (live properties take precedence)");
  show->callback([args] {
    if (args->device >= 0) {
      std::string why;
      auto dev = query_device(args->device, &why);
      if (!dev) throw Error(Status::cuda_error, "cannot query device " + std::to_string(args->device) + ": " + why);
      print_spec(match_arch(default_arch_specs(), *dev));
      return;
    }
    if (args->name.empty()) throw Error(Status::parse_error, "arch show: give a spec name or --device N");
    print_spec(find_arch(default_arch_specs(), args->name));
  });
}

}  // namespace tilepick::cli
