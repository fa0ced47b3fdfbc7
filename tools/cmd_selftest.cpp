// tilepick selftest gpu-ref (hidden): checks the GPU references (src/ref/gpu_ref.hpp) on a GPU
// machine without GoogleTest. For every problem small enough for the CPU reference: random inputs
// from fill_random_normal and fill_random_scale (copied back, checked to be representable; scales positive), the
// CPU fp64 reference
// against the GPU one (max |gpu - cpu| / max |cpu|), and the compare kernel against the same sums
// computed on the host. Then times the GPU reference on a few large problems.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "commands.hpp"
#include "ref/gpu_ref.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::cli {
namespace {

namespace gpu = ref::gpu;

struct SelftestArgs {
  std::vector<std::string> problems, bench;
  std::string file;
  int count = 0;  // 0 = all
  double cpu_flops = 2e9;
  bool no_bench = false;
  std::uint64_t seed = 1;
  int device = 0;
};

const std::vector<std::string> kDefaultBench = {
    "gemm rcr m8192 n8192 k8192 bf16",
    "gemm crr m8192 n8192 k8192 f16 beta=1 ep=bias+gelu_tanh",
    "fwd g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",         // ResNet-50 conv2_x 3x3
    "bwd_data g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "bwd_weight g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "fwd g1 mb128 ic256 ih56 iw56 oc64 kh1 kw1 sh1 sw1 ph0 pw0 bf16 ep=bias+relu",  // conv2_x 1x1 reduce
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double flops_of(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return g->flops();
  return std::get<ConvProblem>(p).flops();
}

// Device inputs of one problem, filled with fill_input.
struct Inputs {
  std::vector<cuda::DeviceBuffer> buffers;
  std::vector<gpu::InputTensor> tensors;
  Operands ops;

  Inputs(const Problem& p, std::uint64_t seed) : tensors(gpu::input_tensors(p)) {
    for (const auto& t : tensors) {
      buffers.emplace_back(std::max<std::size_t>(t.elems * size_bytes(t.dtype), 1));
      gpu::fill_input(buffers.back().get(), t, seed);
      gpu::bind(ops, t.slot, buffers.back().get());
    }
  }
};

// Moments of the filled normal values per dtype, and representability failures (block scales: also
// values that are not positive; left out of the moments).
struct FillStats {
  std::map<DType, std::pair<double, double>> sums;  // sum, sum of squares
  std::map<DType, std::size_t> counts;
  std::size_t not_representable = 0, nonfinite = 0, bad_scales = 0;

  void add(DType t, bool scales, const std::vector<double>& v) {
    auto& [s, s2] = sums[t];
    for (double x : v) {
      if (!std::isfinite(x)) ++nonfinite;
      else if (ref::round_to_dtype(t, x) != x) ++not_representable;
      if (scales) bad_scales += !(x > 0);
      else s += x, s2 += x * x;
    }
    if (!scales) counts[t] += v.size();
  }
};

std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<double>>& in) {
  std::vector<double> out(gpu::output_elems(p));
  auto at = [&](gpu::Slot s) { return in[static_cast<int>(s)].empty() ? nullptr : in[static_cast<int>(s)].data(); };
  const double* bias = at(gpu::Slot::bias);
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    ref::gemm(*g, in[0].data(), in[1].data(), at(gpu::Slot::c), bias, out.data(), at(gpu::Slot::scale_a),
              at(gpu::Slot::scale_b));
    return out;
  }
  const auto& c = std::get<ConvProblem>(p);
  if (c.dir == ConvDir::fwd) ref::conv_fwd(c, in[0].data(), in[1].data(), bias, out.data());
  else if (c.dir == ConvDir::bwd_data) ref::conv_bwd_data(c, in[0].data(), in[1].data(), out.data());
  else ref::conv_bwd_weight(c, in[0].data(), in[1].data(), out.data());
  return out;
}

// The host's compare of `out` against `ref` (same rule as kernels/ref/compare.cuh).
gpu::CompareSums host_compare(const std::vector<double>& out, const std::vector<double>& ref) {
  gpu::CompareSums s;
  for (std::size_t i = 0; i < out.size(); ++i) {
    ++s.count;
    if (!std::isfinite(out[i])) {
      ++s.nonfinite;
      continue;
    }
    const double e = out[i] - ref[i];
    s.err2 += e * e, s.ref2 += ref[i] * ref[i];
    s.max_abs_err = std::max(s.max_abs_err, std::abs(e));
    s.max_abs_ref = std::max(s.max_abs_ref, std::abs(ref[i]));
  }
  return s;
}

bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// Checks one problem; returns "" or what failed.
std::string check_problem(const Problem& p, std::size_t index, const std::string& target, std::uint64_t seed,
                          FillStats& fill, double& worst_diff) {
  Inputs inputs(p, seed);
  cuda::synchronize();
  std::vector<std::vector<double>> host(gpu::kSlots);
  for (std::size_t i = 0; i < inputs.tensors.size(); ++i) {
    const auto& t = inputs.tensors[i];
    std::vector<unsigned char> bytes(t.elems * size_bytes(t.dtype));
    inputs.buffers[i].download(bytes.data(), bytes.size());
    host[static_cast<int>(t.slot)] = gpu::decode(t.dtype, bytes.data(), t.elems);
    fill.add(t.dtype, gpu::is_scale(t.slot), host[static_cast<int>(t.slot)]);
  }
  const std::size_t n = gpu::output_elems(p);
  cuda::DeviceBuffer ref_dev(n * sizeof(double));
  gpu::GpuReference(p, target).compute(inputs.ops, ref_dev.get());
  cuda::synchronize();
  std::vector<double> got(n);
  ref_dev.download(got.data(), n * sizeof(double));
  const std::vector<double> want = cpu_reference(p, host);

  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::abs(want[i]));
    if (std::isnan(got[i]) != std::isnan(want[i])) max_diff = INFINITY;
  }
  const double diff = max_ref > 0 ? max_diff / max_ref : max_diff;
  worst_diff = std::max(worst_diff, diff);
  std::string why;
  if (!(diff <= 1e-12)) why += " gpu-vs-cpu " + std::to_string(diff);

  // Compare kernel: the CPU reference rounded to the output dtype, every third problem with its
  // first and last outputs poisoned (0xff bytes: NaN in every dtype).
  const DType ot = gpu::output_dtype(p);
  std::vector<unsigned char> bytes = gpu::encode(ot, want);
  const bool poison = index % 3 == 0;
  if (poison) {
    std::fill(bytes.begin(), bytes.begin() + size_bytes(ot), 0xff);
    std::fill(bytes.end() - size_bytes(ot), bytes.end(), 0xff);
  }
  cuda::DeviceBuffer out_dev(std::max<std::size_t>(bytes.size(), 1));
  out_dev.upload(bytes.data(), bytes.size());
  const gpu::CompareSums s = gpu::compare(ot, n, out_dev.get(), ref_dev.get());
  const gpu::CompareSums h = host_compare(gpu::decode(ot, bytes.data(), n), got);
  if (s.count != h.count || s.nonfinite != h.nonfinite || !close(s.err2, h.err2, 1e-10) ||
      !close(s.ref2, h.ref2, 1e-12) || s.max_abs_err != h.max_abs_err || s.max_abs_ref != h.max_abs_ref)
    why += " compare-sums";
  const gpu::CheckResult r = gpu::check(p, out_dev.get(), ref_dev.get());
  if (r.ok == poison) why += poison ? " check-passed-a-poisoned-output" : " check-failed-rounded-reference";
  std::printf("%-4s diff %.1e  rel_l2 %.2e max_rel %.2e tol %.1e nonfinite %lld | %s\n", why.empty() ? "ok" : "FAIL",
              diff, r.rel_l2, r.max_rel_err, r.tol, static_cast<long long>(r.nonfinite), to_string(p).c_str());
  return why;
}

void bench_problem(const Problem& p, const std::string& target, std::uint64_t seed) {
  auto t0 = std::chrono::steady_clock::now();
  gpu::GpuReference reference(p, target);
  const double build_s = seconds_since(t0);
  cuda::Timer timer;
  timer.start();
  Inputs inputs(p, seed);
  const float fill_ms = timer.stop_ms();
  std::size_t in_bytes = 0;
  for (const auto& t : inputs.tensors) in_bytes += t.elems * size_bytes(t.dtype);
  const std::size_t n = gpu::output_elems(p);
  cuda::DeviceBuffer ref_dev(n * sizeof(double));
  std::vector<float> ms;
  for (int rep = 0; rep < 2; ++rep) {
    timer.start();
    reference.compute(inputs.ops, ref_dev.get());
    ms.push_back(timer.stop_ms());
    if (ms.back() > 5000) break;  // slow enough: one run says it
  }
  // Compare a random output against the reference (the numbers are meaningless; the time is not).
  const DType ot = gpu::output_dtype(p);
  cuda::DeviceBuffer out_dev(n * size_bytes(ot));
  gpu::fill_random_normal(out_dev.get(), ot, n, seed + 99);
  cuda::synchronize();
  t0 = std::chrono::steady_clock::now();
  const gpu::CheckResult r = gpu::check(p, out_dev.get(), ref_dev.get());
  const double check_ms = seconds_since(t0) * 1e3;
  const float best = *std::min_element(ms.begin(), ms.end());
  std::printf("bench ref %9.1f ms (%5.2f fp64 TFLOPS, first %.1f ms) | fill %.2f ms (%.0f GB/s) | check %.2f ms | "
              "build %.2f s | rel_l2 %.2f | %s\n",
              best, flops_of(p) / (best * 1e-3) / 1e12, ms.front(), fill_ms, in_bytes / (fill_ms * 1e-3) / 1e9,
              check_ms, build_s, r.rel_l2, to_string(p).c_str());
}

int selftest_gpu_ref(const SelftestArgs& a) {
  std::vector<NamedProblem> problems = gather_problems(a.problems, a.file);
  if (a.count > 0 && static_cast<int>(problems.size()) > a.count) problems.resize(a.count);
  std::string why;
  auto dev = query_device(a.device, &why);
  if (!dev) throw Error(Status::cuda_error, "selftest gpu-ref needs a GPU: " + why);
  cuda::init_device(a.device);
  const std::string target = cuda::target_for_current_device();
  std::printf("selftest gpu-ref: %s (%s), %zu problems\n", dev->name.c_str(), target.c_str(), problems.size());

  // Compile every program first, in parallel (cached).
  auto t0 = std::chrono::steady_clock::now();
  std::vector<KernelSource> sources;
  auto add = [&](KernelSource k) {
    if (std::none_of(sources.begin(), sources.end(), [&](const KernelSource& s) { return s.name == k.name; }))
      sources.push_back(std::move(k));
  };
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f32}) {
    add(gpu::fill_source(t));
    for (auto& k : gpu::compare_sources(t)) add(k);
  }
  for (const auto& np : problems)
    for (auto& k : gpu::reference_sources(np.problem)) add(std::move(k));
  jit::compile_all(sources, target);
  std::printf("compiled %zu programs in %.1f s\n", sources.size(), seconds_since(t0));

  FillStats fill;
  double worst = 0;
  int checked = 0, failed = 0, skipped = 0;
  t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i].problem;
    if (flops_of(p) > a.cpu_flops) {
      ++skipped;
      continue;
    }
    ++checked;
    try {
      if (!check_problem(p, i, target, a.seed + i, fill, worst).empty()) ++failed;
    } catch (const Error& e) {
      ++failed;
      std::printf("FAIL error %s | %s\n", e.what(), to_string(p).c_str());
    }
  }
  std::printf("checked %d problems in %.1f s (%d skipped as too large for the CPU), %d failed; worst gpu-vs-cpu %.2e\n",
              checked, seconds_since(t0), skipped, failed, worst);
  for (const auto& [t, s] : fill.sums) {
    const double n = static_cast<double>(fill.counts[t]);
    std::printf("fill %-5s %10.0f values  mean %+.4f  var %.4f\n", std::string(to_string(t)).c_str(), n, s.first / n,
                s.second / n - (s.first / n) * (s.first / n));
  }
  std::printf("fill: %zu values not representable, %zu nonfinite, %zu block scales not positive\n",
              fill.not_representable, fill.nonfinite, fill.bad_scales);
  if (fill.not_representable || fill.nonfinite || fill.bad_scales) ++failed;

  if (!a.no_bench)
    for (const auto& text : a.bench.empty() ? kDefaultBench : a.bench) {
      try {
        bench_problem(parse_problem(text), target, a.seed);
      } catch (const Error& e) {
        ++failed;
        std::printf("bench FAIL %s | %s\n", e.what(), text.c_str());
      }
    }
  std::printf("%s\n", failed ? "selftest gpu-ref: FAILED" : "selftest gpu-ref: passed");
  return failed ? 1 : 0;
}

}  // namespace

void add_selftest_commands(CLI::App& app) {
  auto* selftest = app.add_subcommand("selftest", "self-checks on a GPU machine (no GoogleTest there)");
  selftest->group("");  // hidden from --help
  selftest->require_subcommand(1);
  add_selftest_dispatch(selftest);
  auto args = std::make_shared<SelftestArgs>();
  auto* cmd = selftest->add_subcommand("gpu-ref", "GPU references (fill, fp64 reference, compare) against the CPU");
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("-n,--count", args->count, "check only the first N problems (0 = all)")->capture_default_str();
  cmd->add_option("--cpu-flops", args->cpu_flops, "skip problems above this many flops (CPU reference cost)")
      ->capture_default_str();
  cmd->add_option("--bench", args->bench, "large problem to time (repeatable; default: 8192^3 GEMMs, ResNet-50 layers)");
  cmd->add_flag("--no-bench", args->no_bench, "skip the timings");
  cmd->add_option("--seed", args->seed, "input seed")->capture_default_str();
  cmd->add_option("--device", args->device, "CUDA device ordinal")->capture_default_str();
  cmd->callback([args] {
    if (int rc = selftest_gpu_ref(*args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tilepick::cli
