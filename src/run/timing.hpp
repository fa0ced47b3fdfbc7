// The one timing rule for kernels and vendor algorithms (DESIGN: measurement rules): each repeat
// first queues a rewrite of a buffer of 3x the L2 size, so the inputs come from DRAM, then times
// with CUDA events a CUDA graph: of one launch, or for problems small enough to copy, of several
// launches that each read their own copy of the operands (all cold after the flush). The host cost
// of issuing the work (a few us for a kernel, tens for a library call) stays out of the timed
// region, and so does the per-launch overhead of short kernels. A series is summarized by its
// median and IQR. Work that cannot be captured is timed as issued (time_cold_us).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tilepick/jit.hpp"

namespace tilepick::run {

struct Timing {
  double median_us = 0, iqr_us = 0;
  int reps = 0;
};

// 3x the L2 size (64 MiB assumed when the driver does not report it).
cuda::DeviceBuffer l2_flush_buffer(std::int64_t l2_bytes);
// `run(stream)` issues the work to time. The launch to time: a captured graph of it where capture
// works (why_not empty), else `run` on the default stream (why_not says why).
struct TimedLaunch {
  cuda::Graph graph;
  std::function<void(void*)> run;
  std::string why_not;
  void operator()() const;
};
TimedLaunch timed_launch(std::function<void(void*)> run);
// One cold-L2 repeat on the default stream; `fill` varies the flush contents between repeats.
double time_cold_us(const std::function<void()>& launch, cuda::DeviceBuffer& flush, cuda::Timer& timer,
                    unsigned char fill);
// Launches per timed region: as many operand copies of `set_bytes` as fit `budget_bytes`, at most
// `max_launches`; 1 (a single launch per region) when fewer than 2 fit.
int graph_launches(std::size_t set_bytes, std::size_t budget_bytes, int max_launches);
Timing summarize_times(const std::vector<double>& us);  // us must not be empty

}  // namespace tilepick::run
