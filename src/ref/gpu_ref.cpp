// GPU references: NVRTC programs (kernels/ref/*.cuh) and their launches.
#include <algorithm>
#include <cstring>

#include "../../kernels/ref/params.cuh"
#include "jit/codegen.hpp"
#include "ref/gpu_ref.hpp"
#include "tilepick/error.hpp"

namespace tilepick::ref::gpu {
namespace {

using codegen::CfgText;
using i64 = std::int64_t;

constexpr int kThreads = 256;          // every reference kernel
constexpr int kGemmTile = 64;          // kernels/ref/gemm_ref.cuh
constexpr unsigned kMaxBlocks = 1u << 20;  // grid-stride beyond this
constexpr int kCompareBlocks = 1024;   // at most; fixed for a given n (determinism)
constexpr i64 kReductionThreads = 1 << 20;  // conv bwd_weight: runs x outputs to aim for
constexpr i64 kMinRunPixels = 256;          // ... with runs of at least this many output pixels

std::string dt(DType t) { return std::string(to_string(t)); }
int id(DType t) { return static_cast<int>(t); }

unsigned blocks_for(std::uint64_t work) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

Launch launch_of(int kernel, unsigned blocks, std::vector<unsigned char> params) {
  Launch l;
  l.kernel = kernel;
  l.grid[0] = blocks;
  l.block[0] = kThreads;
  l.params = std::move(params);
  return l;
}

KernelSource source(const std::string& prefix, const std::string& header, const CfgText& cfg,
                    const std::string& params, const std::string& call, const std::string& spec) {
  return codegen::make_source(prefix, header, cfg, params, call, spec, "", kThreads);
}

std::string current_target() { return cuda::target_for_current_device(); }

unsigned compare_blocks(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, kCompareBlocks));
}

tp::RefGemmParams gemm_params(const GemmProblem& g, const Operands& ops, void* ref) {
  auto strides = [](MatLayout l, i64 rows, i64 cols) {
    return l == MatLayout::row ? std::pair<i64, i64>{cols, 1} : std::pair<i64, i64>{1, rows};
  };
  tp::RefGemmParams q{};
  q.a = ops.a, q.b = ops.b, q.c = ops.c, q.bias = ops.bias, q.d = static_cast<double*>(ref);
  q.scale_a = ops.scale_a, q.scale_b = ops.scale_b;
  q.m = g.m, q.n = g.n, q.k = g.k, q.batch = g.batch, q.k_blocks = g.k_blocks();
  std::tie(q.a_row, q.a_col) = strides(g.layout_a, g.m, g.k);
  std::tie(q.b_row, q.b_col) = strides(g.layout_b, g.k, g.n);
  std::tie(q.c_row, q.c_col) = strides(g.layout_c, g.m, g.n);
  q.tiles_m = codegen::ceil_div(g.m, kGemmTile), q.tiles_n = codegen::ceil_div(g.n, kGemmTile);
  q.alpha = g.alpha, q.beta = g.beta;
  return q;
}

tp::RefConvParams conv_params(const ConvProblem& c, const Operands& ops, void* ref) {
  tp::RefConvParams q{};
  q.src0 = ops.a, q.src1 = ops.b, q.bias = ops.bias, q.dst = static_cast<double*>(ref);
  q.n = c.n, q.g = c.g, q.cg = c.c_per_group(), q.kg = c.k_per_group();
  const auto out = c.out();
  for (int i = 0; i < 3; ++i) {
    q.in[i] = c.in[i], q.out[i] = out[i], q.filter[i] = c.filter[i];
    q.stride[i] = c.stride[i], q.pad[i] = c.pad[i], q.dil[i] = c.dilation[i];
  }
  q.total = static_cast<i64>(output_elems(c));
  q.runs = 1;
  if (c.dir == ConvDir::bwd_weight) {  // a long reduction over few outputs: in runs, for enough threads
    const i64 pixels = c.n * out[0] * out[1] * out[2];
    q.runs = std::clamp<i64>(kReductionThreads / std::max<i64>(q.total, 1), 1,
                               std::max<i64>(pixels / kMinRunPixels, 1));
    q.run_pixels = (pixels + q.runs - 1) / q.runs;
    q.runs = std::max<i64>((pixels + q.run_pixels - 1) / q.run_pixels, 1);  // no empty run
  }
  return q;
}

// The bytes of run sums a conv bwd_weight reference needs (0: it sums each output in one run).
std::size_t partials_bytes(const Problem& p) {
  const auto* c = std::get_if<ConvProblem>(&p);
  if (!c || c->dir != ConvDir::bwd_weight) return 0;
  const auto q = conv_params(*c, Operands{}, nullptr);
  return q.runs > 1 ? static_cast<std::size_t>(q.runs * q.total) * sizeof(double) : 0;
}

void require_inputs(const Problem& p, const Operands& ops) {
  for (const auto& t : input_tensors(p))
    if (!bound(ops, t.slot) && t.elems > 0)
      throw Error(Status::internal, "GpuReference::compute of '" + to_string(p) + "': Operands::" +
                                        slot_name(t.slot) + " is null");
}

}  // namespace

KernelSource fill_source(DType t, bool scales) {
  CfgText cfg;
  cfg.i("dtype", id(t)).b("scales", scales);
  return source("tp_ref_fill_", "ref/fill.cuh", cfg, "tp::RefFillParams", "tp::refk::fill_random",
                "ref_fill dtype=" + dt(t) + (scales ? " scales" : ""));
}

namespace {

// The conv reference kernel of c's direction, or its `part` (bwd_weight in runs: "runs", then "sum").
KernelSource conv_source(const ConvProblem& c, const std::string& part) {
  CfgText cfg;
  const bool fwd = c.dir == ConvDir::fwd;
  cfg.i("tx", id(c.x)).i("tw", id(c.w)).i("ty", id(c.y)).b("has_bias", fwd && c.epilogue.bias);
  cfg.i("act", fwd ? static_cast<int>(c.epilogue.act) : 0).i("threads", kThreads);
  const std::string dir(to_string(c.dir)), suffix = part.empty() ? "" : "_" + part;
  const std::string spec = "ref_conv_" + dir + suffix + " " + dtypes_text(c.x, c.w, c.y) +
                           (fwd ? " ep=" + to_string(c.epilogue) : "");
  return source("tp_ref_conv_" + dir + suffix + "_", "ref/conv_ref.cuh", cfg, "tp::RefConvParams",
                "tp::refk::conv_" + dir + suffix + "_ref", spec);
}

}  // namespace

std::vector<KernelSource> reference_sources(const Problem& p) {
  if (!partials_bytes(p)) return {reference_source(p)};
  const auto& c = std::get<ConvProblem>(p);
  return {conv_source(c, "runs"), conv_source(c, "sum")};
}

KernelSource reference_source(const Problem& p) {
  CfgText cfg;
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    cfg.i("ta", id(g->a)).i("tb", id(g->b)).i("tc", id(g->c)).b("has_beta", g->beta != 0);
    cfg.b("has_bias", g->epilogue.bias).i("act", static_cast<int>(g->epilogue.act)).i("threads", kThreads);
    cfg.b("block_scale", g->scale == GemmScale::block);
    const std::string spec = "ref_gemm " + dtypes_text(g->a, g->b, g->c) + " beta=" + (g->beta != 0 ? "1" : "0") +
                             " ep=" + to_string(g->epilogue) + (g->scale == GemmScale::block ? " scale=block" : "");
    return source("tp_ref_gemm_", "ref/gemm_ref.cuh", cfg, "tp::RefGemmParams", "tp::refk::gemm_ref", spec);
  }
  return conv_source(std::get<ConvProblem>(p), "");
}

std::vector<KernelSource> compare_sources(DType out) {
  CfgText partial, final_cfg;
  partial.i("dtype", id(out)).i("threads", kThreads);
  final_cfg.i("threads", kThreads);
  return {source("tp_ref_compare_", "ref/compare.cuh", partial, "tp::RefCompareParams", "tp::refk::compare_partial",
                 "ref_compare dtype=" + dt(out)),
          source("tp_ref_compare_final_", "ref/compare.cuh", final_cfg, "tp::RefCompareParams",
                 "tp::refk::compare_final", "ref_compare_final")};
}

namespace {

void fill(void* dst, DType t, bool scales, std::size_t n, std::uint64_t seed, void* stream) {
  if (n == 0) return;
  if (!dst) throw Error(Status::internal, std::string(scales ? "fill_random_scale" : "fill_random_normal") +
                                              ": null destination for " + std::to_string(n) + " " + dt(t));
  KernelPlan plan;
  plan.kernels = {fill_source(t, scales)};
  plan.launches = [=](const Operands&) {
    tp::RefFillParams q{dst, n, seed};
    return std::vector<Launch>{launch_of(0, blocks_for((n + 3) / 4), codegen::pack(q))};
  };
  cuda::Executable(plan, current_target()).run(Operands{}, stream);
}

}  // namespace

void fill_random_normal(void* dst, DType t, std::size_t n, std::uint64_t seed, void* stream) {
  fill(dst, t, false, n, seed, stream);
}

void fill_random_scale(float* dst, std::size_t n, std::uint64_t seed, void* stream) {
  fill(dst, DType::f32, true, n, seed, stream);
}

void fill_input(void* dst, const InputTensor& t, std::uint64_t seed, void* stream) {
  if (is_scale(t.slot)) fill_random_scale(static_cast<float*>(dst), t.elems, slot_seed(seed, t.slot), stream);
  else fill_random_normal(dst, t.dtype, t.elems, slot_seed(seed, t.slot), stream);
}

GpuReference::GpuReference(const Problem& p, const std::string& target) : problem_(p) {
  validate(p);
  KernelPlan plan;
  plan.kernels = reference_sources(p);
  partials_bytes_ = partials_bytes(p);
  plan.workspace_bytes = partials_bytes_;
  plan.launches = [p](const Operands& ops) {
    if (auto* g = std::get_if<GemmProblem>(&p)) {
      const auto q = gemm_params(*g, ops, ops.d);
      return std::vector<Launch>{launch_of(0, static_cast<unsigned>(std::min<i64>(
                                                  q.batch * q.tiles_m * q.tiles_n, kMaxBlocks)),
                                           codegen::pack(q))};
    }
    auto q = conv_params(std::get<ConvProblem>(p), ops, ops.d);
    q.partials = static_cast<double*>(ops.workspace);
    std::vector<Launch> l{launch_of(0, blocks_for(static_cast<std::uint64_t>(q.total * q.runs)), codegen::pack(q))};
    if (q.runs > 1) l.push_back(launch_of(1, blocks_for(static_cast<std::uint64_t>(q.total)), codegen::pack(q)));
    return l;
  };
  exe_ = std::make_unique<cuda::Executable>(plan, target);
}

void GpuReference::compute(const Operands& inputs, void* ref_f64, void* stream) const {
  require_inputs(problem_, inputs);
  if (!ref_f64) throw Error(Status::internal, "GpuReference::compute of '" + to_string(problem_) + "': null output");
  Operands ops = inputs;
  ops.d = ref_f64;
  ops.workspace = nullptr;
  if (!partials_bytes_) return exe_->run(ops, stream);
  cuda::DeviceBuffer partials(partials_bytes_);  // freed only once the runs are summed
  ops.workspace = partials.get();
  exe_->run(ops, stream);
  cuda::synchronize();
}

CompareSums compare(DType t, std::size_t n, const void* out, const void* ref_f64, void* stream) {
  if (n == 0) return {};
  const unsigned blocks = compare_blocks(n);
  KernelPlan plan;
  plan.kernels = compare_sources(t);
  plan.workspace_bytes = (blocks + 1) * sizeof(tp::RefCompareSums);
  plan.launches = [=](const Operands& ops) {
    tp::RefCompareParams q{out, static_cast<const double*>(ref_f64), static_cast<long long>(n),
                           static_cast<tp::RefCompareSums*>(ops.workspace), static_cast<int>(blocks), 0};
    return std::vector<Launch>{launch_of(0, blocks, codegen::pack(q)), launch_of(1, 1, codegen::pack(q))};
  };
  cuda::DeviceBuffer partials(plan.workspace_bytes);
  Operands ops;
  ops.workspace = partials.get();
  cuda::Executable(plan, current_target()).run(ops, stream);
  cuda::synchronize();
  tp::RefCompareSums s{};
  partials.download(&s, sizeof(s), blocks * sizeof(tp::RefCompareSums));
  return CompareSums{s.err2, s.ref2, s.max_err, s.max_ref, s.nonfinite, s.count};
}

CheckResult check(const Problem& p, const void* out, const void* ref_f64, void* stream) {
  return check_result(compare(output_dtype(p), output_elems(p), out, ref_f64, stream), tolerance(p));
}

}  // namespace tilepick::ref::gpu
