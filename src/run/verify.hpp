// GPU correctness and timing of (problem, config) pairs against the fp64 CPU reference.
// Inputs are random normal values in the problem's dtypes (fp8 block scales: exp(z / 2), f32), outputs
// are poisoned (0xff bytes, NaN in every float type) before each run, and every output element checked
// must be written.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tilepick/config.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::run {

struct VerifyOptions {
  bool time = false;            // also time the pair (cold L2, median of repeats)
  double min_timed_ms = 30;     // repeat until this much time was measured (at least 5, at most 500 reps)
  double full_ref_flops = 3e10; // above this, check a sample (GEMM rows / the first image) instead
  std::uint64_t seed = 1;
};

struct PairResult {
  std::string problem, config;
  bool ok = false;
  std::string check;            // full | rows | first_image | none
  double rel_l2 = 0, max_err = 0, tol = 0;
  std::int64_t unwritten = 0;   // NaN outputs (poison survived or NaN produced)
  std::string error;            // exception text (compile, launch, unsupported)
  double compile_s = 0;
  int registers = -1, spills = -1;
  bool cached = false;
  double median_us = 0, iqr_us = 0, tflops = 0, gbps = 0;
  int reps = 0;
};

// Inputs, device buffers and the reference for one problem, built once and reused for every config.
class ProblemBench {
 public:
  ProblemBench(const Problem& p, const VerifyOptions& opt);
  ~ProblemBench();
  PairResult run(const KernelConfig& resolved, const std::string& target);
  // Checks (and with opt.time times) any implementation of the problem the same way, e.g. a vendor
  // library: `runner` computes D from the operands (ops.workspace holds workspace_bytes) on `stream`.
  // `label` is reported as PairResult::config.
  using Runner = std::function<void(const Operands& ops, void* stream)>;
  PairResult run(const Runner& runner, const std::string& label, std::size_t workspace_bytes);
  const Problem& problem() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Relative tolerance on ||out - ref|| / ||ref|| for a problem (by input and output dtypes).
double tolerance(const Problem& p);

}  // namespace tilepick::run
