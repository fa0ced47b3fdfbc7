// mma.sync GEMM family (fam=sm80): plan builder. One program per (specialization, config) holding
// tp::gemm_sm80<Cfg> (kernels/gemm/sm80.cuh); parallel split-K adds the reduction program
// (kernels/gemm/splitk_reduce.cuh).
#include <algorithm>
#include <optional>

#include "../../kernels/gemm/params.cuh"
#include "codegen.hpp"
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::family {

static_assert(sizeof(tp::GemmParams) == 136, "GemmParams must match the device layout");
static_assert(sizeof(tp::ReduceParams) == 72, "ReduceParams must match the device layout");

KernelPlan plan_gemm_sm80(const GemmProblem& p, const KernelConfig& c) {
  using namespace codegen;
  if (p.a != p.b) throw Unsupported("fam=sm80 gemm needs A and B of one dtype: '" + to_string(p) + "'");
  if (p.acc != DType::f32) throw Unsupported("fam=sm80 accumulates in f32: '" + to_string(p) + "'");
  if (c.align_a == 0) throw Unsupported("fam=sm80 gemm: config alignment not resolved");
  const std::string ta = device_type(p.a), tc = device_type(p.c);
  const bool a_row = p.layout_a == MatLayout::row, b_row = p.layout_b == MatLayout::row,
             c_row = p.layout_c == MatLayout::row;
  const int mode = sm80_splitk_mode(c);
  const bool beta = p.beta != 0.0;

  CfgText cfg = sm80_cfg(c, p.a, mode);
  cfg.b("a_kmajor", a_row).b("b_kmajor", !b_row).b("c_colmajor", !c_row);
  cfg.b("has_beta", beta).b("has_bias", p.epilogue.bias).i("act", static_cast<int>(p.epilogue.act));
  cfg.type("TA", ta).type("TC", tc);
  const std::string spec = "gemm.sm80 a=" + std::string(to_string(p.a)) + " c=" + std::string(to_string(p.c)) +
                           " layout=" + p.layout_string() + " align=" + std::to_string(c.align_a) + ":" +
                           std::to_string(c.align_b) + ":" + std::to_string(c.align_c) + " beta=" + (beta ? "1" : "0") +
                           " ep=" + to_string(p.epilogue) + " splitk=" + (mode == 0 ? "none" : mode == 1 ? "serial" : "parallel");
  const int threads = sm80_threads(c);
  KernelPlan plan;
  plan.kernels.push_back(make_source("tp_gemm_sm80_", "gemm/sm80.cuh", cfg, "tp::GemmParams", "tp::gemm_sm80", spec,
                                     to_string(c), threads));

  const std::int64_t tiles_m = ceil_div(p.m, c.tile_m), tiles_n = ceil_div(p.n, c.tile_n);
  const std::int64_t tiles_total = tiles_m * tiles_n * p.batch;
  if (tiles_total > 0x7fffffff) throw Unsupported("fam=sm80 gemm: more than 2^31 - 1 blocks");
  if (c.splitk > 65535) throw Unsupported("fam=sm80 gemm: splitk > 65535");
  const std::int64_t out_elems = p.m * p.n * p.batch;
  if (mode == 1) plan.workspace_bytes = sm80_serial_workspace(c, tiles_total);
  if (mode == 2) plan.workspace_bytes = round256(static_cast<std::size_t>(out_elems) * 4 * c.splitk);

  tp::GemmParams base{};
  base.m = static_cast<int>(p.m), base.n = static_cast<int>(p.n), base.k = static_cast<int>(p.k);
  base.batch = static_cast<int>(p.batch);
  base.lda = static_cast<int>(a_row ? p.k : p.m);
  base.ldb = static_cast<int>(b_row ? p.n : p.k);
  base.ldc = static_cast<int>(c_row ? p.n : p.m);
  base.batch_stride_a = p.m * p.k, base.batch_stride_b = p.k * p.n, base.batch_stride_c = p.m * p.n;
  base.slice_stride = out_elems;
  base.tiles_m = static_cast<int>(tiles_m), base.tiles_n = static_cast<int>(tiles_n), base.splitk = c.splitk;
  base.alpha = static_cast<float>(p.alpha), base.beta = static_cast<float>(p.beta);

  Launch main;
  main.kernel = 0;
  main.grid[0] = static_cast<unsigned>(tiles_total), main.grid[1] = static_cast<unsigned>(c.splitk);
  main.block[0] = static_cast<unsigned>(threads);
  main.smem_bytes = static_cast<unsigned>(sm80_smem_bytes(c, p.a));
  if (mode == 1) main.zero_workspace_bytes = round256(static_cast<std::size_t>(tiles_total) * 8);

  std::optional<GemmSplitkReduce> reduce;
  if (mode == 2) reduce.emplace(plan, p, c);

  plan.launches = [base, main, reduce](const Operands& o) {
    std::vector<Launch> out;
    tp::GemmParams g = base;
    g.a = o.a, g.b = o.b, g.c = o.c, g.d = o.d, g.bias = o.bias, g.workspace = o.workspace;
    out.push_back(main);
    out.back().params = pack(g);
    if (reduce) out.push_back(reduce->for_operands(o));
    return out;
  };
  return plan;
}

}  // namespace tilepick::family
