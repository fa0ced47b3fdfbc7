// The one timing rule for kernels and vendor algorithms (DESIGN: measurement rules): each repeat
// first rewrites a buffer of 3x the L2 size, so the inputs come from DRAM, then times one launch
// with CUDA events; a series is summarized by its median and IQR.
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
Timing summarize_times(const std::vector<double>& us);  // us must not be empty

}  // namespace tilepick::run
