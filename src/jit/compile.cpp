// compile(): memory cache, then disk cache, then NVRTC; compile_all(): the same on worker threads.
#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "jit/jit_internal.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"

namespace tilepick::jit {
namespace {

using KernelPtr = std::shared_ptr<const CompiledKernel>;

struct State {
  std::mutex mutex;
  std::unordered_map<std::string, KernelPtr> memory;                       // by key
  std::unordered_map<std::string, std::shared_future<KernelPtr>> in_flight;  // one build per key
  JitStats stats;
};

State& state() {
  static State s;
  return s;
}

void count(std::size_t JitStats::*field) {
  std::lock_guard lock(state().mutex);
  ++(state().stats.*field);
}

CompiledKernel copy_hit(const KernelPtr& p) {
  CompiledKernel k = *p;
  k.from_cache = true;
  return k;
}

// Disk cache, else NVRTC (and store the result).
CompiledKernel build(const KernelSource& src, const std::string& target, const std::string& key) {
  const std::string dir = cache_dir();
  bool corrupt = false;
  if (auto k = detail::load_entry(dir, key, src, target, &corrupt)) {
    count(&JitStats::disk_hits);
    return *k;
  }
  if (corrupt) count(&JitStats::corrupt_removed);
  if (env::jit_disabled())
    throw NotFound("kernel " + src.name + " for " + target + " is not in the JIT cache " + dir + " (key " + key +
                   ") and TILEPICK_JIT_DISABLE=1 forbids compiling it");
  CompiledKernel k = detail::nvrtc_compile(src, target);
  k.key = key;
  count(&JitStats::compiles);
  detail::store_entry(dir, k, src);
  return k;
}

}  // namespace

CompiledKernel compile(const KernelSource& src, const std::string& target) {
  const std::string key = cache_key(src, target);
  State& st = state();
  std::promise<KernelPtr> promise;
  std::shared_future<KernelPtr> other;
  {
    std::lock_guard lock(st.mutex);
    if (auto it = st.memory.find(key); it != st.memory.end()) {
      ++st.stats.memory_hits;
      return copy_hit(it->second);
    }
    if (auto it = st.in_flight.find(key); it != st.in_flight.end()) other = it->second;
    else st.in_flight.emplace(key, promise.get_future().share());
  }
  if (other.valid()) {  // another thread builds this key: wait for it (its error is ours)
    KernelPtr p = other.get();
    count(&JitStats::memory_hits);
    return copy_hit(p);
  }
  try {
    CompiledKernel k = build(src, target, key);
    auto p = std::make_shared<const CompiledKernel>(k);
    {
      std::lock_guard lock(st.mutex);
      st.memory[key] = p;
      st.in_flight.erase(key);
    }
    promise.set_value(p);
    return k;
  } catch (...) {
    {
      std::lock_guard lock(st.mutex);
      st.in_flight.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::vector<CompiledKernel> compile_all(const std::vector<KernelSource>& srcs, const std::string& target,
                                        int threads) {
  const std::size_t n = srcs.size();
  std::vector<CompiledKernel> out(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        out[i] = compile(srcs[i], target);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::size_t workers = std::min<std::size_t>(n, threads > 0 ? threads : env::num_threads());
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

JitStats jit_stats() {
  std::lock_guard lock(state().mutex);
  return state().stats;
}

void clear_memory_cache() {
  std::lock_guard lock(state().mutex);
  state().memory.clear();
}

}  // namespace tilepick::jit
