// mma.sync implicit-GEMM convolution family (fam=sm80): plan builder. One program per
// (specialization, config) holding tp::conv_sm80<Cfg> (kernels/conv/igemm.cuh). bwd_data with a
// stride > 1 is decomposed into stride phases, one launch each: the dx pixels q * s + phase meet
// only the filter taps tap0 + j * step, so each phase is a dense implicit GEMM without the
// structural zeros; without split-K the phases' launches overlap. Parallel split-K adds the reduction program
// over the whole output tensor.
#include <algorithm>

#include "../../kernels/conv/igemm_params.cuh"
#include "../../kernels/gemm/params.cuh"
#include "codegen.hpp"
#include "families.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"

namespace tilepick::family {
namespace {

static_assert(sizeof(tp::ConvParams) == 352, "ConvParams must match the device layout");
static_assert(sizeof(tp::FastDiv) == sizeof(codegen::FastDivHost), "FastDiv layout");

tp::FastDiv fastdiv(std::int64_t d) {
  auto f = codegen::make_fastdiv(std::max<std::int64_t>(d, 1));
  return {f.d, f.mul, f.shift, 0};
}

int log2i(std::int64_t v) {
  int r = 0;
  while ((std::int64_t{1} << r) < v) ++r;
  return r;
}

}  // namespace

KernelPlan plan_conv_sm80(const ConvProblem& p, const KernelConfig& c) {
  using namespace codegen;
  if (c.align_a == 0) throw Unsupported("fam=sm80 conv: config alignment not resolved");
  if (p.acc != DType::f32) throw Unsupported("fam=sm80 accumulates in f32: '" + to_string(p) + "'");
  const int dir = static_cast<int>(p.dir);
  // Inputs of the GEMM view (A, B) and the output.
  DType in_a = p.x, in_b = p.w, out = p.y;
  if (p.dir == ConvDir::bwd_data) in_a = p.y, in_b = p.w, out = p.x;
  if (p.dir == ConvDir::bwd_weight) in_a = p.y, in_b = p.x, out = p.w;
  if (in_a != in_b) throw Unsupported("fam=sm80 conv needs both inputs of one dtype: '" + to_string(p) + "'");
  if (p.dir != ConvDir::fwd && !p.epilogue.is_none())
    throw Unsupported("fam=sm80 conv: epilogues only for fwd: '" + to_string(p) + "'");
  const int mode = sm80_splitk_mode(c);
  const int pack = sm80_group_pack(p, c);

  CfgText cfg = sm80_cfg(c, in_a, mode);
  cfg.b("a_kmajor", p.dir != ConvDir::bwd_weight).b("b_kmajor", p.dir == ConvDir::fwd).b("c_colmajor", false);
  cfg.b("has_beta", false).b("has_bias", p.epilogue.bias).i("act", static_cast<int>(p.epilogue.act));
  // Strided bwd_data without split-K: the phases' launches overlap (they write disjoint dx pixels and share no
  // workspace); split-K keeps them in stream order (serial: one set of tile counters, parallel: the reduce).
  std::vector<ConvStridePhase> pd, ph, pw;  // bwd_data: the stride phases per axis (one launch each)
  if (p.dir == ConvDir::bwd_data) pd = conv_stride_phases(p, 0), ph = conv_stride_phases(p, 1), pw = conv_stride_phases(p, 2);
  const bool overlap = mode == 0 && pd.size() * ph.size() * pw.size() > 1;
  cfg.i("dir", dir).i("ndim", p.ndim).b("pack", pack > 1).b("overlap", overlap);
  cfg.type("TA", device_type(in_a)).type("TC", device_type(out));
  const std::string spec = "conv_" + std::string(to_string(p.dir)) + ".sm80 ndim=" + std::to_string(p.ndim) +
                           " in=" + std::string(to_string(in_a)) + " out=" + std::string(to_string(out)) +
                           " align=" + std::to_string(c.align_a) + ":" + std::to_string(c.align_b) + ":" +
                           std::to_string(c.align_c) + " ep=" + to_string(p.epilogue) +
                           " splitk=" + (mode == 0 ? "none" : mode == 1 ? "serial" : "parallel") +
                           (pack > 1 ? " packed" : "") + (overlap ? " overlap" : "");
  const int threads = sm80_threads(c);
  KernelPlan plan;
  plan.kernels.push_back(make_source("tp_conv_sm80_", "conv/igemm.cuh", cfg, "tp::ConvParams", "tp::conv_sm80", spec,
                                     to_string(c), threads));

  const auto o = p.out();
  // Channels per group (per pack of groups when packed: the GEMM views below see one pack as one group).
  const std::int64_t cg = p.c_per_group() * pack, kg = p.k_per_group() * pack;
  const std::int64_t taps = p.filter[0] * p.filter[1] * p.filter[2];
  const std::int64_t out_elems = p.dir == ConvDir::fwd ? p.y_elems() : p.dir == ConvDir::bwd_data ? p.x_elems() : p.w_elems();

  tp::ConvParams base{};
  base.n = static_cast<int>(p.n), base.g = static_cast<int>(p.g / pack), base.c = static_cast<int>(cg), base.k = static_cast<int>(kg);
  if (pack > 1) {
    base.pack_lp = static_cast<unsigned char>(log2i(pack));
    base.pack_lc = static_cast<unsigned char>(log2i(p.c_per_group()));
    base.pack_lk = static_cast<unsigned char>(log2i(p.k_per_group()));
  }
  base.in_d = static_cast<int>(p.in[0]), base.in_h = static_cast<int>(p.in[1]), base.in_w = static_cast<int>(p.in[2]);
  base.out_d = static_cast<int>(o[0]), base.out_h = static_cast<int>(o[1]), base.out_w = static_cast<int>(o[2]);
  base.flt_z = static_cast<int>(p.filter[0]), base.flt_y = static_cast<int>(p.filter[1]), base.flt_x = static_cast<int>(p.filter[2]);
  base.str_d = static_cast<int>(p.stride[0]), base.str_h = static_cast<int>(p.stride[1]), base.str_w = static_cast<int>(p.stride[2]);
  base.pad_d = static_cast<int>(p.pad[0]), base.pad_h = static_cast<int>(p.pad[1]), base.pad_w = static_cast<int>(p.pad[2]);
  base.dil_d = static_cast<int>(p.dilation[0]), base.dil_h = static_cast<int>(p.dilation[1]), base.dil_w = static_cast<int>(p.dilation[2]);
  base.splitk = c.splitk;
  base.slice_stride = out_elems;
  base.alpha = 1.f;
  base.div_pw = fastdiv(o[2]), base.div_ph = fastdiv(o[1]), base.div_pd = fastdiv(o[0]);
  base.div_ch = fastdiv(cg), base.div_tx = fastdiv(p.filter[2]), base.div_ty = fastdiv(p.filter[1]);
  base.q_d = base.out_d, base.q_h = base.out_h, base.q_w = base.out_w;
  base.tapstep_z = base.tapstep_y = base.tapstep_x = 1;
  base.ntap_z = base.flt_z, base.ntap_y = base.flt_y, base.ntap_x = base.flt_x;

  // The launches' GEMM views (bwd_data: one per stride phase).
  std::vector<tp::ConvParams> views;
  auto finish_view = [&](tp::ConvParams v, std::int64_t gm, std::int64_t gn, std::int64_t gk) {
    v.gm = static_cast<int>(gm), v.gn = static_cast<int>(gn), v.gk = static_cast<int>(gk);
    v.tiles_m = static_cast<int>(ceil_div(gm, c.tile_m)), v.tiles_n = static_cast<int>(ceil_div(gn, c.tile_n));
    views.push_back(v);
  };
  if (p.dir == ConvDir::fwd) {
    finish_view(base, p.n * o[0] * o[1] * o[2], kg, taps * cg);
  } else if (p.dir == ConvDir::bwd_weight) {
    finish_view(base, kg, taps * cg, p.n * o[0] * o[1] * o[2]);
  } else {
    for (const auto& a : pd)
      for (const auto& b : ph)
        for (const auto& w : pw) {
          tp::ConvParams v = base;
          v.phase_d = a.phase, v.phase_h = b.phase, v.phase_w = w.phase;
          v.q_d = a.q, v.q_h = b.q, v.q_w = w.q;
          v.tap0_z = a.tap0, v.tap0_y = b.tap0, v.tap0_x = w.tap0;
          v.tapstep_z = a.step, v.tapstep_y = b.step, v.tapstep_x = w.step;
          v.ntap_z = a.ntap, v.ntap_y = b.ntap, v.ntap_x = w.ntap;
          v.doff0_d = a.doff0, v.doff0_h = b.doff0, v.doff0_w = w.doff0;
          v.doffstep_d = a.doffstep, v.doffstep_h = b.doffstep, v.doffstep_w = w.doffstep;
          v.div_pw = fastdiv(w.q), v.div_ph = fastdiv(b.q), v.div_pd = fastdiv(a.q);
          v.div_ch = fastdiv(kg), v.div_tx = fastdiv(w.ntap), v.div_ty = fastdiv(b.ntap);
          finish_view(v, p.n * a.q * b.q * w.q, cg, std::int64_t{a.ntap} * b.ntap * w.ntap * kg);
        }
  }

  std::int64_t max_tiles = 0;
  for (const auto& v : views) {
    const std::int64_t t = std::int64_t{v.tiles_m} * v.tiles_n * v.g;
    if (t > 0x7fffffff) throw Unsupported("fam=sm80 conv: more than 2^31 - 1 blocks");
    max_tiles = std::max(max_tiles, t);
  }
  if (c.splitk > 65535) throw Unsupported("fam=sm80 conv: splitk > 65535");
  if (mode == 1) plan.workspace_bytes = sm80_serial_workspace(c, max_tiles);
  if (mode == 2) plan.workspace_bytes = round256(static_cast<std::size_t>(out_elems) * 4 * c.splitk);

  std::vector<Launch> mains;
  for (const auto& v : views) {
    Launch l;
    l.kernel = 0;
    l.grid[0] = static_cast<unsigned>(std::int64_t{v.tiles_m} * v.tiles_n * v.g);
    l.grid[1] = static_cast<unsigned>(c.splitk);
    l.block[0] = static_cast<unsigned>(threads);
    l.smem_bytes = static_cast<unsigned>(sm80_smem_bytes(c, in_a));
    if (mode == 1) l.zero_workspace_bytes = round256(static_cast<std::size_t>(max_tiles) * 8);
    l.overlap_previous = overlap && !mains.empty();
    mains.push_back(l);
  }
  Launch reduce;
  tp::ReduceParams rbase{};
  if (mode == 2) {
    plan.kernels.push_back(splitk_reduce_source(out, c.align_c, false, p.epilogue));
    rbase.total = out_elems, rbase.slice_stride = out_elems, rbase.splitk = c.splitk;
    rbase.bias_div = 1, rbase.bias_mod = static_cast<int>(p.k);
    rbase.alpha = 1.f, rbase.beta = 0.f;
    reduce.kernel = 1;
    reduce.block[0] = 256;
    reduce.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(out_elems / c.align_c, 256), 1, 1 << 20));
  }
  const bool swap = p.dir == ConvDir::bwd_weight;  // Operands (x, dy) -> kernel (A = dy, B = x)
  plan.launches = [views, mains, rbase, reduce, mode, swap](const Operands& ops) {
    std::vector<Launch> r;
    for (std::size_t i = 0; i < views.size(); ++i) {
      tp::ConvParams v = views[i];
      v.a = swap ? ops.b : ops.a, v.b = swap ? ops.a : ops.b;
      v.d = ops.d, v.bias = ops.bias, v.workspace = ops.workspace;
      r.push_back(mains[i]);
      r.back().params = codegen::pack(v);
    }
    if (mode == 2) {
      tp::ReduceParams rp = rbase;
      rp.ws = static_cast<const float*>(ops.workspace), rp.d = ops.d, rp.bias = ops.bias;
      r.push_back(reduce);
      r.back().params = codegen::pack(rp);
    }
    return r;
  };
  return plan;
}

}  // namespace tilepick::family
