// The one timing rule for kernels and vendor algorithms (DESIGN: measurement rules): each repeat
// first rewrites a buffer of 3x the L2 size, so the inputs come from DRAM, then times with CUDA
// events either one launch or, for problems small enough to copy, a CUDA graph of several launches
// that each read their own copy of the operands (all cold after the flush; the launch overhead of
// each stays out of the timed region); a series is summarized by its median and IQR.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tilepick/jit.hpp"

namespace tilepick::run {

struct Timing {
  double median_us = 0, iqr_us = 0;
  int reps = 0;
};

// 3x the L2 size (64 MiB assumed when the driver does not report it).
cuda::DeviceBuffer l2_flush_buffer(std::int64_t l2_bytes);
// One cold-L2 repeat on the default stream; `fill` varies the flush contents between repeats.
double time_cold_us(const std::function<void()>& launch, cuda::DeviceBuffer& flush, cuda::Timer& timer,
                    unsigned char fill);
// Launches per timed region: as many operand copies of `set_bytes` as fit `budget_bytes`, at most
// `max_launches`; 1 (a single launch per region) when fewer than 2 fit.
int graph_launches(std::size_t set_bytes, std::size_t budget_bytes, int max_launches);
// One cold-L2 repeat of a graph of `launches` launches on the default stream; time per launch.
double time_cold_graph_us(const cuda::Graph& graph, int launches, cuda::DeviceBuffer& flush, cuda::Timer& timer,
                          unsigned char fill);
Timing summarize_times(const std::vector<double>& us);  // us must not be empty

}  // namespace tilepick::run
