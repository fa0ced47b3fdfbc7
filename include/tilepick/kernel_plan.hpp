// What a kernel family produces for (problem, resolved config): the NVRTC programs to compile and,
// given device pointers, the launches to issue. Sizes stay runtime arguments (kernel parameters);
// only the config and the specialization (op, direction, dtypes, layouts, alignment, epilogue,
// spatial rank) are baked into the program text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tilepick/config.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {

// One NVRTC program holding exactly one __global__ function.
struct KernelSource {
  std::string name;            // extern "C" symbol, e.g. "tp_gemm_sm80_1f2e3d4c5b6a7980"
  std::string code;            // whole program text; includes bundled headers by path ("gemm/sm80.cuh")
  std::string specialization;  // canonical text of everything baked in besides the config
  int threads = 0;             // block size (for __launch_bounds__ and the launch)
};

// Device pointers of one call. GEMM: a, b, c (read when beta != 0), d; scale_a and scale_b (fp32) when the
// problem has scale=block (layouts in problem.hpp). Conv: a and b are the two inputs in order (fwd: x, w;
// bwd_data: dy, w; bwd_weight: x, dy), d the result (y, dx, dw).
struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;
  void* workspace = nullptr;   // at least KernelPlan::workspace_bytes, 256-byte aligned
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};
// The member of `ops` named `slot` (operand_specs' slots: a, b, c, d, bias, scale_a, scale_b); InvalidArgument
// for another name.
const void* operand(const Operands& ops, std::string_view slot);

struct Launch {
  int kernel = 0;                        // index into KernelPlan::kernels
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned cluster[3] = {1, 1, 1};       // thread-block cluster (sm90); {1, 1, 1} = none
  // A persistent kernel walks its work with a grid-stride loop: the launch shrinks grid[0] to one
  // block per SM and to the clusters that fit at once (an extra one would run after the others).
  bool persistent = false;
  // A resident kernel walks its work in runs (grid-stride or chunks): the launch shrinks grid[0] to the blocks that
  // fit on the device at once (occupancy of this block size and shared memory x SMs).
  bool resident = false;
  unsigned smem_bytes = 0;               // dynamic shared memory
  std::vector<unsigned char> params;     // the kernel's single by-value parameter struct
  // Bytes of the workspace to zero before this launch (serial split-K counters); 0 = none.
  std::size_t zero_workspace_bytes = 0;
  // May start while the plan's previous launch runs (programmatic stream serialization; the previous kernel
  // signals griddepcontrol.launch_dependents): independent of it (disjoint outputs, no workspace), or a kernel
  // that runs griddepcontrol.wait before it reads what the previous one wrote.
  bool overlap_previous = false;
};

struct KernelPlan {
  std::vector<KernelSource> kernels;
  std::size_t workspace_bytes = 0;
  std::function<std::vector<Launch>(const Operands&)> launches;
};

// Dispatches on the config's family. Throws Unsupported naming the problem and config when the
// family has no kernel for them (call legal() first: a legal pair always has a plan).
KernelPlan make_plan(const Problem& p, const KernelConfig& resolved_config);

}  // namespace tilepick
