#include "verify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "run/timing.hpp"
#include "tensors.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::run {
namespace {

struct Tensor {
  DType dtype = DType::f32;
  std::vector<double> host;
  cuda::DeviceBuffer dev;
};

Tensor uploaded(DType t, std::vector<double> values) {
  Tensor x{t, std::move(values), {}};
  auto bytes = encode(t, x.host);
  x.dev = cuda::DeviceBuffer(std::max<std::size_t>(bytes.size(), 1));
  x.dev.upload(bytes.data(), bytes.size());
  return x;
}

Tensor make_input(DType t, std::size_t n, std::mt19937_64& rng) { return uploaded(t, random_values(t, n, rng)); }
// fp8 block scales (f32, positive).
Tensor make_scales(std::size_t n, std::mt19937_64& rng) { return uploaded(DType::f32, random_scales(n, rng)); }

}  // namespace

double tolerance(const Problem& p) {
  DType in, out;
  if (auto* g = std::get_if<GemmProblem>(&p)) in = g->a, out = g->c;
  else {
    const auto& c = std::get<ConvProblem>(p);
    in = c.x;
    out = c.dir == ConvDir::fwd ? c.y : c.dir == ConvDir::bwd_data ? c.x : c.w;
  }
  double t_out = out == DType::bf16 ? 8e-3 : out == DType::f16 ? 1.5e-3 : 1e-5;
  // f32 inputs run as tf32 on tensor cores; fp8 products are summed in the tensor cores' accumulators,
  // which keep about 14 significant bits (fast accumulation, cuBLASLt's FAST_ACCUM alike).
  double t_in = in == DType::f32 ? 3e-3 : is_fp8(in) ? 2e-3 : 1e-4;
  return t_out + t_in;
}

struct ProblemBench::Impl {
  Problem problem;
  VerifyOptions opt;
  Tensor a, b, c, bias, scale_a, scale_b;  // scale_a, scale_b: GEMM with scale=block
  DType out_dtype = DType::f32;
  std::size_t out_elems = 0;
  cuda::DeviceBuffer d, workspace, flush;
  std::string check = "full";
  std::vector<double> ref;                  // reference of the checked elements
  std::vector<std::size_t> ref_index;       // their offsets in the output
  double flops = 0, bytes = 0;

  void build_reference();
  // Poisons D, runs, compares with the reference and (opt.time) times; fills r.
  void check_and_time(PairResult& r, const ProblemBench::Runner& runner, std::size_t workspace_bytes);
};

void ProblemBench::Impl::build_reference() {
  if (auto* g = std::get_if<GemmProblem>(&problem)) {
    const auto& p = *g;
    std::int64_t rows = p.flops() <= opt.full_ref_flops ? p.m : std::min<std::int64_t>(p.m, 48);
    check = rows == p.m ? "full" : "rows";
    std::vector<std::int64_t> pick(rows);
    std::mt19937_64 rng(opt.seed + 7);
    for (std::int64_t i = 0; i < rows; ++i)
      pick[i] = rows == p.m ? i : std::uniform_int_distribution<std::int64_t>(0, p.m - 1)(rng);
    // Sub-problem on the picked rows, row-major A and C/D (and block scales SA [batch][KB][rows]).
    GemmProblem s = p;
    s.m = rows, s.layout_a = MatLayout::row, s.layout_c = MatLayout::row;
    const bool block = p.scale == GemmScale::block;
    const std::int64_t kb = p.k_blocks();
    std::vector<double> sa(rows * p.k * p.batch), sc(p.beta != 0 ? rows * p.n * p.batch : 0);
    std::vector<double> scale_a_rows(block ? rows * kb * p.batch : 0);
    auto a_at = [&](std::int64_t bt, std::int64_t i, std::int64_t kk) {
      return a.host[bt * p.m * p.k + (p.layout_a == MatLayout::row ? i * p.k + kk : kk * p.m + i)];
    };
    auto out_off = [&](std::int64_t bt, std::int64_t i, std::int64_t j) {
      return std::size_t(bt * p.m * p.n + (p.layout_c == MatLayout::row ? i * p.n + j : j * p.m + i));
    };
    for (std::int64_t bt = 0; bt < p.batch; ++bt)
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t kk = 0; kk < p.k; ++kk) sa[(bt * rows + r) * p.k + kk] = a_at(bt, pick[r], kk);
        if (p.beta != 0)
          for (std::int64_t j = 0; j < p.n; ++j) sc[(bt * rows + r) * p.n + j] = c.host[out_off(bt, pick[r], j)];
        if (block)
          for (std::int64_t q = 0; q < kb; ++q)
            scale_a_rows[(bt * kb + q) * rows + r] = scale_a.host[(bt * kb + q) * p.m + pick[r]];
      }
    ref.assign(rows * p.n * p.batch, 0.0);
    ref::gemm(s, sa.data(), b.host.data(), p.beta != 0 ? sc.data() : nullptr,
              p.epilogue.bias ? bias.host.data() : nullptr, ref.data(), block ? scale_a_rows.data() : nullptr,
              block ? scale_b.host.data() : nullptr);
    for (std::int64_t bt = 0; bt < p.batch; ++bt)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < p.n; ++j) ref_index.push_back(out_off(bt, pick[r], j));
    return;
  }
  const auto& p = std::get<ConvProblem>(problem);
  ConvProblem s = p;
  bool sample = p.flops() > opt.full_ref_flops && p.dir != ConvDir::bwd_weight && p.n > 1;
  if (sample) s.n = 1;  // images are independent in fwd and bwd_data: check the first one
  check = sample ? "first_image" : "full";
  switch (p.dir) {
    case ConvDir::fwd:
      ref.assign(s.y_elems(), 0.0);
      ref::conv_fwd(s, a.host.data(), b.host.data(), p.epilogue.bias ? bias.host.data() : nullptr, ref.data());
      break;
    case ConvDir::bwd_data:
      ref.assign(s.x_elems(), 0.0);
      ref::conv_bwd_data(s, a.host.data(), b.host.data(), ref.data());
      break;
    case ConvDir::bwd_weight:
      ref.assign(s.w_elems(), 0.0);
      ref::conv_bwd_weight(s, a.host.data(), b.host.data(), ref.data());
      break;
  }
  for (std::size_t i = 0; i < ref.size(); ++i) ref_index.push_back(i);  // first image = leading block
}

ProblemBench::ProblemBench(const Problem& p, const VerifyOptions& opt) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.problem = p;
  m.opt = opt;
  std::mt19937_64 rng(opt.seed);
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    m.a = make_input(g->a, g->m * g->k * g->batch, rng);
    m.b = make_input(g->b, g->k * g->n * g->batch, rng);
    if (g->beta != 0) m.c = make_input(g->c, g->m * g->n * g->batch, rng);
    if (g->epilogue.bias) m.bias = make_input(g->c, g->n, rng);
    if (g->scale == GemmScale::block) {
      m.scale_a = make_scales(g->scale_a_elems(), rng);
      m.scale_b = make_scales(g->scale_b_elems(), rng);
    }
    m.out_dtype = g->c, m.out_elems = g->m * g->n * g->batch;
    m.flops = g->flops(), m.bytes = g->min_bytes();
  } else {
    const auto& c = std::get<ConvProblem>(p);
    switch (c.dir) {
      case ConvDir::fwd:
        m.a = make_input(c.x, c.x_elems(), rng), m.b = make_input(c.w, c.w_elems(), rng);
        if (c.epilogue.bias) m.bias = make_input(c.y, c.k, rng);
        m.out_dtype = c.y, m.out_elems = c.y_elems();
        break;
      case ConvDir::bwd_data:
        m.a = make_input(c.y, c.y_elems(), rng), m.b = make_input(c.w, c.w_elems(), rng);
        m.out_dtype = c.x, m.out_elems = c.x_elems();
        break;
      case ConvDir::bwd_weight:
        m.a = make_input(c.x, c.x_elems(), rng), m.b = make_input(c.y, c.y_elems(), rng);
        m.out_dtype = c.w, m.out_elems = c.w_elems();
        break;
    }
    m.flops = c.flops(), m.bytes = c.min_bytes();
  }
  m.d = cuda::DeviceBuffer(m.out_elems * size_bytes(m.out_dtype));
  m.build_reference();
}

ProblemBench::~ProblemBench() = default;
const Problem& ProblemBench::problem() const { return impl_->problem; }

PairResult ProblemBench::run(const KernelConfig& config, const std::string& target) {
  auto& m = *impl_;
  PairResult r;
  r.problem = to_string(m.problem);
  r.config = to_string(config);
  r.check = m.check;
  r.tol = tolerance(m.problem);
  try {
    KernelPlan plan = make_plan(m.problem, config);
    cuda::Executable exe(plan, target);
    for (const auto& k : exe.compiled()) {
      r.compile_s += k.compile_seconds;
      r.registers = std::max(r.registers, k.registers);
      r.spills = std::max(r.spills, k.spill_stores);
      r.cached = r.cached || k.from_cache;
    }
    m.check_and_time(r, [&](const Operands& ops, void* stream) { exe.run(ops, stream); }, plan.workspace_bytes);
  } catch (const Error& e) {
    r.ok = false;
    r.error = e.what();
  }
  return r;
}

PairResult ProblemBench::run(const Runner& runner, const std::string& label, std::size_t workspace_bytes) {
  auto& m = *impl_;
  PairResult r;
  r.problem = to_string(m.problem);
  r.config = label;
  r.check = m.check;
  r.tol = tolerance(m.problem);
  try {
    m.check_and_time(r, runner, workspace_bytes);
  } catch (const Error& e) {
    r.ok = false;
    r.error = e.what();
  }
  return r;
}

void ProblemBench::Impl::check_and_time(PairResult& r, const ProblemBench::Runner& runner,
                                        std::size_t workspace_bytes) {
  auto& m = *this;
  if (m.workspace.size() < workspace_bytes) m.workspace = cuda::DeviceBuffer(workspace_bytes);
  Operands ops{m.a.dev.get(), m.b.dev.get(), m.c.dev.get(), m.d.get(), m.bias.dev.get(), m.workspace.get()};
  ops.scale_a = static_cast<const float*>(m.scale_a.dev.get());
  ops.scale_b = static_cast<const float*>(m.scale_b.dev.get());
  m.d.fill_bytes(0xff);
  runner(ops, nullptr);
  cuda::synchronize();
  std::vector<unsigned char> bytes(m.out_elems * size_bytes(m.out_dtype));
  m.d.download(bytes.data(), bytes.size());
  auto out = decode(m.out_dtype, bytes);
  double err2 = 0, ref2 = 0, max_ref = 0;
  for (std::size_t i = 0; i < m.ref.size(); ++i) {
    double o = out[m.ref_index[i]], e = m.ref[i];
    if (std::isnan(o)) {
      ++r.unwritten;
      continue;
    }
    err2 += (o - e) * (o - e), ref2 += e * e;
    r.max_err = std::max(r.max_err, std::abs(o - e));
    max_ref = std::max(max_ref, std::abs(e));
  }
  r.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  r.max_err = max_ref > 0 ? r.max_err / max_ref : r.max_err;
  r.ok = r.unwritten == 0 && r.rel_l2 <= r.tol && r.max_err <= 8 * r.tol;
  if (r.ok && m.opt.time) {
    if (!m.flush.size()) {
      std::string why;
      auto dev = query_device(0, &why);
      m.flush = l2_flush_buffer(dev ? dev->l2_bytes : 0);
    }
    for (int i = 0; i < 3; ++i) runner(ops, nullptr);
    const TimedLaunch launch = timed_launch([&](void* stream) { runner(ops, stream); });
    std::vector<double> us;
    double total_ms = 0;
    cuda::Timer timer;
    while ((total_ms < m.opt.min_timed_ms || us.size() < 5) && us.size() < 500) {
      us.push_back(time_cold_us([&] { launch(); }, m.flush, timer, static_cast<unsigned char>(us.size())));
      total_ms += us.back() * 1e-3;
    }
    const Timing t = summarize_times(us);
    r.reps = t.reps, r.median_us = t.median_us, r.iqr_us = t.iqr_us;
    r.tflops = m.flops / (r.median_us * 1e-6) / 1e12;
    r.gbps = m.bytes / (r.median_us * 1e-6) / 1e9;
  }
}

}  // namespace tilepick::run
