// parallel_for: split an index range over std::thread, one contiguous chunk per thread.
// Thread count = env::num_threads() (TILEPICK_NUM_THREADS). Each index is handled by exactly one
// call, so callers that compute every output element inside one fn(i) get results that are
// bit-for-bit independent of the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "tilepick/env.hpp"

namespace tilepick::ref {

// Work (roughly multiply-adds) below which a chunk is not worth a thread of its own.
inline constexpr std::int64_t kMinChunkWork = std::int64_t{1} << 15;

// Smallest number of items per chunk when each item costs `work_per_item`.
inline std::int64_t grain_for(std::int64_t work_per_item) {
  return std::max<std::int64_t>(1, kMinChunkWork / std::max<std::int64_t>(1, work_per_item));
}

// Calls fn(i) for every i in [begin, end). Chunks hold at least `grain` items, so small ranges
// run inline on the calling thread. The first exception thrown by fn is rethrown here after all
// threads have joined.
template <class Fn>
void parallel_for(std::int64_t begin, std::int64_t end, Fn&& fn, std::int64_t grain = 1) {
  const std::int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t chunks = std::min<std::int64_t>(env::num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1) {
    for (std::int64_t i = begin; i < end; ++i) fn(i);
    return;
  }

  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(chunks));
  auto run_chunk = [&](std::int64_t t) {
    const std::int64_t lo = begin + n * t / chunks, hi = begin + n * (t + 1) / chunks;
    try {
      for (std::int64_t i = lo; i < hi; ++i) fn(i);
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(chunks - 1));
  for (std::int64_t t = 1; t < chunks; ++t) {
    try {
      threads.emplace_back(run_chunk, t);
    } catch (const std::system_error&) {
      run_chunk(t);  // no thread available: do this chunk here
    }
  }
  run_chunk(0);
  for (auto& th : threads) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tilepick::ref
