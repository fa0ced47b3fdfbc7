#include "run/timing.hpp"

#include <algorithm>

#include "tilepick/error.hpp"

namespace tilepick::run {

cuda::DeviceBuffer l2_flush_buffer(std::int64_t l2_bytes) {
  return cuda::DeviceBuffer(static_cast<std::size_t>(3 * (l2_bytes > 0 ? l2_bytes : std::int64_t(64) << 20)));
}

void TimedLaunch::operator()() const {
  if (graph) graph.launch();
  else run(nullptr);
}

TimedLaunch timed_launch(std::function<void(void*)> run) {
  TimedLaunch t;
  try {
    t.graph = cuda::Graph::capture(run);
  } catch (const Error& e) {
    t.why_not = e.what();
    cuda::synchronize();
  }
  t.run = std::move(run);
  return t;
}

double time_cold_us(const std::function<void()>& launch, cuda::DeviceBuffer& flush, cuda::Timer& timer,
                    unsigned char fill) {
  flush.fill_bytes_async(fill);  // evicts the inputs from L2; the GPU is busy while the host issues
  timer.start();
  launch();
  return timer.stop_ms() * 1e3;
}

int graph_launches(std::size_t set_bytes, std::size_t budget_bytes, int max_launches) {
  const std::size_t fit = budget_bytes / std::max<std::size_t>(set_bytes, 1);
  const int n = static_cast<int>(std::min<std::size_t>(fit, static_cast<std::size_t>(std::max(max_launches, 1))));
  return n >= 2 ? n : 1;
}

Timing summarize_times(const std::vector<double>& us) {
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  return {sorted[sorted.size() / 2], sorted[sorted.size() * 3 / 4] - sorted[sorted.size() / 4],
          static_cast<int>(us.size())};
}

}  // namespace tilepick::run
