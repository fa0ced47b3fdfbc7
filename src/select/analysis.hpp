// Tiling, occupancy and roofline analysis of one (problem, config, device): the physical model that
// features.cpp exposes term by term and heuristic.cpp turns into a score. Internal to src/select.
#pragma once
#include <array>
#include <cstdint>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::select {

// Config-independent terms of a problem (computed once per problem in batches).
struct ProblemTerms {
  GemmView view{1, 1, 1, 1};  // GEMM or implicit-GEMM view (batch = groups for conv)
  DType in = DType::f16, out = DType::f16;
  int in_bytes = 2, out_bytes = 2;
  double flops = 0, min_bytes = 0;
  std::array<int, 3> max_align{1, 1, 1};  // widest legal vector of A, B, C (elements)
  double peak_tflops = 0;      // device tensor peak for the input dtype
  double ridge = 0;            // device ridge point, flop per byte
};

ProblemTerms problem_terms(const Problem& p, const ArchSpec& dev);

// Everything the features and the heuristic need about one config on that problem.
struct Analysis {
  // Tiles of the GEMM view (dw: tiles_m = spatial tiles, tiles_n = channel tiles, tiles_k = taps).
  double tiles_m = 0, tiles_n = 0, tiles_k = 0;
  double eff_m = 1, eff_n = 1, eff_k = 1;  // real work / padded tile work per dimension
  double pad_eff = 1;                      // product of the three
  double ctas = 0;                         // blocks of the main launch
  // Split-K: effective slices (no empty slice), K tiles per slice, balance = K tiles / (slices x
  // per-slice tiles), bytes of partial sums written and read back.
  double splits = 1, k_tiles_per_split = 0, split_balance = 1, reduce_bytes = 0;
  Resources res;
  int ctas_per_sm = 0;        // occupancy limit (registers, shared memory, threads, blocks)
  double occupancy = 0;       // resident threads / max threads per SM
  double waves = 0;     // ctas / (SMs x ctas_per_sm)
  double wave_eff = 0;  // achieved fraction of the device's peak from the block schedule (quantization, fill)
  // The busiest SM's schedule: `rounds` of `resident` blocks, which reach `busy` of its peak together
  // (0 when no block fits); the device peak the config's instructions reach, flop/s.
  double rounds = 0, resident = 0, busy = 0, peak_flops = 0;
  double sm_fill = 0;         // min(1, ctas / SMs)
  double smem_per_stage = 0;  // bytes of one pipeline stage (dw: the input box)
  double bytes_moved = 0;     // operand bytes the tiles load (re-reads included) + output + partials
  double dram_bytes = 0;      // bytes_moved discounted by what L2 can hold
  double tile_intensity = 0;  // flops per operand byte of one tile's main loop
  double t_compute_s = 0, t_memory_s = 0, t_est_s = 0;  // roofline estimate
};

Analysis analyze(const Problem& p, const ProblemTerms& t, const KernelConfig& resolved, const ArchSpec& dev);

// The launches of the implicit-GEMM family: bwd_data with a stride > 1 runs one GEMM per stride
// phase (src/jit/family_conv_sm80.cpp), each over the dx pixels and filter taps of its phase.
// `view` is the largest phase's GEMM; everything else is one launch of the problem's view.
struct Launches {
  double count = 1;
  GemmView view{1, 1, 1, 1};
};
Launches igemm_launches(const Problem& p, const ProblemTerms& t);

// analyze() of one launch of `l` (the problem's own analysis when there is one launch).
Analysis analyze_launch(const Problem& p, const ProblemTerms& t, const Launches& l, const KernelConfig& resolved,
                        const ArchSpec& dev);

}  // namespace tilepick::select
