// Fake backend: deterministic timings from a hash of (problem, item), and injected failures, so
// the sweep's worker restarts, timeouts, resume and sharding are testable without a GPU.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/hash.hpp"
#include "tilepick/error.hpp"
#include "sweep/backend.hpp"

namespace tilepick::sweep {
namespace {

bool matches(const std::string& item, const std::string& needle) {
  return !needle.empty() && item.find(needle) != std::string::npos;
}

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(const BackendOptions& opt) : opt_(opt) {}

  nlohmann::json device() override {
    return {{"name", "fake device"}, {"sm_count", 132}, {"clock_mhz", 1980}, {"target", "sm_90a"},
            {"backend", "fake"}, {"ordinal", opt_.gpu}};
  }

  void begin_problem(const Problem& p, const Beat& beat) override {
    problem_ = to_string(p);
    flops_ = std::holds_alternative<GemmProblem>(p) ? std::get<GemmProblem>(p).flops() : std::get<ConvProblem>(p).flops();
    beat();
  }

  std::vector<Record> measure(const std::string& item, const Beat& beat) override {
    if (opt_.fake_pair_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(opt_.fake_pair_ms));
    if (item == "fault=trap" || matches(item, opt_.fake_crash)) std::abort();
    if (item == "fault=hang" || matches(item, opt_.fake_hang))
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    beat();
    auto timed = [&](const std::string& config, std::uint64_t salt) {
      Record r;
      r.config = config;
      r.status = "ok";
      std::uint64_t h = fnv1a64(problem_ + "|" + config) ^ salt;
      r.median_us = 10.0 + static_cast<double>(h % 100000) / 100.0;
      r.iqr_us = r.median_us * 0.01;
      r.reps = opt_.min_reps;
      r.tflops = flops_ / (r.median_us * 1e-6) / 1e12;
      r.tol = 1e-2;
      r.rel_err = 1e-3;
      return r;
    };
    if (item.rfind("vendor=", 0) == 0) {
      Record heur = timed(item + ":heur", 1), best = timed(vendor_best_config(item), 2);
      best.median_us = std::min(best.median_us, heur.median_us);
      if (opt_.vendor_heuristic_only) {
        best = Record{};
        best.config = vendor_best_config(item);
        mark_not_run(best);
      }
      return {heur, best};
    }
    Record r = timed(item, 0);
    if (matches(item, opt_.fake_wrong)) {
      r.status = "wrong", r.median_us = 0, r.tflops = 0, r.rel_err = 1.0;
      r.detail = "rel_l2 1 > tol 0.01";
    }
    return {r};
  }

  void end_problem() override {}

 private:
  BackendOptions opt_;
  std::string problem_;
  double flops_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_fake_backend(const BackendOptions& opt) { return std::make_unique<FakeBackend>(opt); }

std::unique_ptr<Backend> make_backend(const BackendOptions& opt) {
  if (opt.kind == "fake") return make_fake_backend(opt);
  if (opt.kind == "gpu") return make_gpu_backend(opt);
  throw Error(Status::parse_error, "unknown sweep backend '" + opt.kind + "' (gpu, fake)");
}

bool is_pseudo_item(const std::string& item) {
  return item.rfind("vendor=", 0) == 0 || item.rfind("fault=", 0) == 0;
}

std::string vendor_best_config(const std::string& item) {
  return item + (item == "vendor=cudnn" ? ":exhaustive" : ":best");
}

std::string item_of_record_config(const std::string& config) {
  if (config.rfind("vendor=", 0) == 0) return config.substr(0, config.find(':'));
  return config;
}

}  // namespace tilepick::sweep
