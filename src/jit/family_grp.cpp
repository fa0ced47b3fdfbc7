// Grouped direct convolution on tensor cores (fam=grp): (problem, config) -> NVRTC program and launch.
//
// fwd (kernels/conv/grp_fwd.cuh), and unit-stride bwd_data as a forward pass over dy with the filter rotated and
// each group's weights transposed (flip: a first kernel writes that copy of w into the workspace). A resident
// grid runs the work items (TH x TW output pixels of one (n, od) x TC channels, whole groups) in runs; a block
// stages an item's input box (stages 2: the next one's during this one's MMAs) and its groups' weights in shared
// memory; warps own pw = 32 ppt cpt / cpg pixels of one group and gather MMA rows from the box with ldmatrix.
// bwd_weight (kernels/conv/grp_bwd_weight.cuh): block = (channel tile, split of the (n, od, tile) items), the
// x box and dy tile of each item staged, warps of a group sharing its (tap, channel) rows; fp32 partials per
// split and an ordered reduce kernel (none with one split).
// Baked into the program: direction, dtype, channels per group, filter extents when in {1,3,5,7} (else
// runtime; bwd_weight needs them baked), fwd / bwd_data's H, W stride and dilation when 1 or 2, epilogue.
// Everything else is runtime (tp::DwParams, shared with fam=dw).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/conv/dw_params.cuh"
#include "codegen.hpp"
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::family {
namespace {

using i64 = std::int64_t;
constexpr int kFlipThreads = 256;    // grp_flip_weights' block
constexpr int kReduceThreads = 256;  // grp_bwd_weight_reduce's block (kernels/conv/dw_bwd_weight.cuh reduce_parts)
constexpr int kMaxAccumulators = 128;  // grp_bwd_weight: fp32 accumulators a thread at most
using codegen::align16;
using codegen::baked_filter;
using codegen::baked_step;
using codegen::ceil_div;

void require(bool ok, const ConvProblem& p, const KernelConfig& c, const std::string& why) {
  if (!ok) throw Unsupported("fam=grp: " + why + " ('" + to_string(p) + "', '" + to_string(c) + "')");
}

int to_int(i64 v, const char* what) {
  if (v < -2147483647 || v > 2147483647) throw Unsupported(std::string("fam=grp: ") + what + " out of 32-bit range");
  return static_cast<int>(v);
}

struct Geometry {
  tp::DwParams q{};
  bool flip = false;
  int cpg = 0, pw = 0, threads = 0;
  int fz = 0, fy = 0, fx = 0;
  int sy = 0, sx = 0, dly = 0, dlx = 0;  // fwd / bwd_data: H, W stride and dilation baked (1, 2) or 0
  i64 smem = 0, blocks = 0;
  i64 flipped = 0;  // bwd_data: elements of the flipped weights in the workspace (C x taps x cpg), else 0
  i64 partials = 0;  // bwd_weight: fp32 partials in the workspace (splits x C x taps x cpg), 0 with one split
  i64 reduce_blocks = 0;
};

Geometry geometry(const ConvProblem& p, const KernelConfig& c) {
  Geometry g;
  require(c.fam() == Family::grp, p, c, "config is not of family grp");
  const std::string refusal = grp_refusal(p);
  require(refusal.empty(), p, c, refusal);
  require((p.x == DType::f16 || p.x == DType::bf16) && p.x == p.w && p.x == p.y, p, c,
          "needs x, w, y of one dtype, f16 or bf16");
  const i64 cpg = p.c_per_group();
  const bool wgrad = p.dir == ConvDir::bwd_weight;
  require(c.splitk >= 1 && (c.splitk == 1 || wgrad), p, c, "splitk > 1 is for bwd_weight only");
  require(c.stages == 1 || c.stages == 2, p, c, "stages (staged input boxes) must be 1 or 2");
  require(p.x_elems() < (i64{1} << 31) && p.y_elems() < (i64{1} << 31), p, c, "tensors need 32-bit indexing");
  const int TH = c.dw_tile_h, TW = c.dw_tile_w, TC = c.dw_tile_c;
  g.threads = threads_per_block(c);
  require(g.threads >= 32 && g.threads <= 1024 && g.threads % 32 == 0, p, c,
          "threads (dwtile / (ppt x cpt)) must be a multiple of 32 in [32, 1024]");
  require(i64{g.threads} * c.dw_ppt * c.dw_cpt == i64{TH} * TW * TC, p, c,
          "dwtile must be divisible by ppt along W and by cpt along channels");
  require(TC % cpg == 0, p, c, "dwtile channels must hold whole groups (a multiple of " + std::to_string(cpg) + ")");
  g.cpg = static_cast<int>(cpg);
  if (!wgrad) {
    const i64 per_warp = i64{32} * c.dw_ppt * c.dw_cpt;  // outputs a warp
    require(per_warp % (16 * cpg) == 0, p, c, "a warp's ppt x cpt x 32 outputs must be whole 16-pixel blocks of a group");
    g.pw = static_cast<int>(per_warp / cpg);
    require((i64{TH} * TW) % g.pw == 0, p, c, "the tile's pixels must split into warps of " + std::to_string(g.pw));
  } else {
    require((i64{TH} * TW) % 16 == 0, p, c, "bwd_weight needs whole 16-pixel steps (dwtile h x w a multiple of 16)");
    const int groups = TC / g.cpg, warps = g.threads / 32;
    require(warps % groups == 0, p, c, "bwd_weight needs as many warps for each of the block's " +
                                           std::to_string(groups) + " groups");
    const i64 taps = p.filter[0] * p.filter[1] * p.filter[2];
    const tp::grp::BwdWeightShape shape = tp::grp::bwd_weight_shape(static_cast<int>(taps), g.cpg, warps / groups);
    require(shape.per_warp > 0, p, c, "bwd_weight needs a multiple of " + std::to_string(shape.n_warps) +
                                          " warps a group (" + std::to_string(g.cpg) + " channels a group)");
    // The registers a thread may hold at this block size (65536 a block, 255 at most), less ~40 for addresses
    // and fragments, bound the accumulators.
    const int accumulators = shape.accumulators;
    const int bound = std::min(kMaxAccumulators, std::min(255, 65536 / g.threads) - 40);
    require(accumulators <= bound, p, c,
            "bwd_weight: " + std::to_string(accumulators) + " accumulators a thread exceed " + std::to_string(bound) +
                " at " + std::to_string(g.threads) + " threads (more warps a group, or fewer threads)");
  }
  g.flip = p.dir == ConvDir::bwd_data;

  const auto out = p.out();
  const auto& F = p.filter;
  g.fz = baked_filter(F[0]), g.fy = baked_filter(F[1]), g.fx = baked_filter(F[2]);
  const auto& src = g.flip ? out : p.in;  // read with the halo: x, or dy
  const auto& dst = g.flip ? p.in : out;  // the pixel grid the items tile: y, dx, or dy (bwd_weight)
  tp::DwParams& q = g.q;
  q.n = to_int(p.n, "N");
  q.c = to_int(p.c, "C");
  for (int i = 0; i < 3; ++i) {
    q.in[i] = to_int(src[i], "input extent"), q.out[i] = to_int(dst[i], "output extent");
    q.filter[i] = to_int(F[i], "filter"), q.dilation[i] = to_int(p.dilation[i], "dilation");
    q.stride[i] = g.flip ? 1 : to_int(p.stride[i], "stride");
    q.pad[i] = to_int(g.flip ? (F[i] - 1) * p.dilation[i] - p.pad[i] : p.pad[i], "pad");
  }
  g.sy = baked_step(q.stride[1]), g.sx = baked_step(q.stride[2]);
  g.dly = baked_step(q.dilation[1]), g.dlx = baked_step(q.dilation[2]);
  q.halo[0] = q.filter[0];
  q.halo[1] = to_int(tp::box_extent(TH, q.stride[1], F[1], p.dilation[1]), "halo");
  q.halo[2] = to_int(tp::box_extent(TW, q.stride[2], F[2], p.dilation[2]), "halo");
  q.tiles_c = to_int(ceil_div(p.c, TC), "channel tiles");
  q.tiles_h = to_int(ceil_div(dst[1], TH), "tiles"), q.tiles_w = to_int(ceil_div(dst[2], TW), "tiles");
  const i64 taps = F[0] * F[1] * F[2];
  const i64 pp = tp::grp_pixel_pitch(TC), pixels = i64{q.halo[0]} * q.halo[1] * q.halo[2];
  const i64 items = i64{q.tiles_h} * q.tiles_w * p.n * dst[0];  // of one channel tile
  if (wgrad) {
    require(g.fz && g.fy && g.fx, p, c, "bwd_weight needs filter extents in {1, 3, 5, 7}");
    // The kernel's layout: stages x (x box [pixels][grp_pixel_pitch], dy tile [TH TW][grp_pixel_pitch]), 16-bit.
    g.smem = c.stages * (align16(pixels * pp * 2) + align16(i64{TH} * TW * pp * 2));
    q.iters = to_int(ceil_div(items, std::min<i64>(c.splitk, items)), "iterations");
    q.splits = to_int(ceil_div(items, q.iters), "splits");  // no empty split
    q.parts = q.splits;
    g.blocks = i64{q.tiles_c} * q.splits;
    g.partials = q.splits > 1 ? i64{q.splits} * p.c * taps * cpg : 0;
    g.reduce_blocks = ceil_div(p.c * taps * cpg, 32);
  } else {
    // The kernel's layout: weights [TC][grp_weight_row], stages x box [pixels + 1 zero pixel][grp_pixel_pitch],
    // outputs [TH TW][grp_pixel_pitch].
    const i64 weights = align16(i64{TC} * tp::grp_weight_row(static_cast<int>(taps), g.cpg) * 2);
    g.smem = weights + c.stages * align16((pixels + 1) * pp * 2) + i64{TH} * TW * pp * 2;
    g.blocks = i64{q.tiles_c} * items;  // work items; the resident grid runs them
    g.flipped = g.flip ? p.c * taps * cpg : 0;  // grp_flip_weights' output
  }
  require(g.blocks >= 1 && g.blocks <= 2147483647, p, c, "grid of " + std::to_string(g.blocks) + " blocks out of range");
  return g;
}

std::string specialization(const ConvProblem& p, const Geometry& g) {
  return "grp dir=" + std::string(to_string(p.dir)) + " dtype=" + std::string(to_string(p.x)) +
         " cpg=" + std::to_string(g.cpg) + " filter=" + std::to_string(g.fz) + "x" + std::to_string(g.fy) + "x" +
         std::to_string(g.fx) +
         (p.dir == ConvDir::bwd_weight ? "" : " step=" + std::to_string(g.sy) + "x" + std::to_string(g.sx) + "x" +
                                                  std::to_string(g.dly) + "x" + std::to_string(g.dlx)) +
         (p.dir == ConvDir::fwd ? " ep=" + to_string(p.epilogue) : "");
}

void check_aligned(const void* ptr, const char* what) {
  if (ptr && reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0)
    throw Unsupported(std::string("fam=grp: ") + what + " pointer is not aligned to 16 bytes");
}

}  // namespace

std::string grp_refusal(const ConvProblem& p) {
  const i64 cpg = p.c_per_group();
  if (cpg != p.k_per_group()) return "needs as many output as input channels per group";
  if (cpg % 8 != 0 || cpg > 64) return "needs 8, 16, ..., 64 channels per group";
  if (p.dir == ConvDir::bwd_data && p.stride != std::array<i64, 3>{1, 1, 1})
    return "runs bwd_data of unit stride only";
  if (p.dir == ConvDir::bwd_weight)
    for (i64 f : p.filter)
      if (!baked_filter(f)) return "runs bwd_weight of filter extents in {1, 3, 5, 7} only";
  return {};
}

std::int64_t grp_shared_bytes(const ConvProblem& p, const KernelConfig& c) { return geometry(p, c).smem; }

namespace {

// bwd_weight: the partials kernel (or, with one split, the kernel writing dw) and the ordered reduce.
KernelPlan plan_bwd_weight(const ConvProblem& p, const KernelConfig& c, const Geometry& g) {
  const bool single = g.partials == 0;
  codegen::CfgText cfg;
  cfg.type("T", codegen::device_type(p.x))
      .i("tile_h", c.dw_tile_h)
      .i("tile_w", c.dw_tile_w)
      .i("tile_c", c.dw_tile_c)
      .i("cpg", g.cpg)
      .i("threads", g.threads)
      .i("fz", g.fz)
      .i("fy", g.fy)
      .i("fx", g.fx)
      .i("stages", c.stages)
      .b("single", single);
  KernelPlan plan;
  plan.kernels.push_back(codegen::make_source("tp_grp_bwd_weight_", "conv/grp_bwd_weight.cuh", cfg, "tp::DwParams",
                                              "tp::grp_bwd_weight", specialization(p, g), to_string(c), g.threads));
  if (!single) {  // one program for every config of this specialization
    codegen::CfgText rcfg;
    rcfg.type("T", codegen::device_type(p.x)).i("cpg", g.cpg);
    plan.kernels.push_back(codegen::make_source("tp_grp_bwd_weight_reduce_", "conv/grp_bwd_weight.cuh", rcfg,
                                                "tp::DwParams", "tp::grp_bwd_weight_reduce", specialization(p, g), "",
                                                kReduceThreads));
  }
  plan.workspace_bytes = static_cast<std::size_t>((g.partials * 4 + 255) / 256 * 256);
  const tp::DwParams q = g.q;
  const unsigned grid = static_cast<unsigned>(g.blocks), smem = static_cast<unsigned>(g.smem);
  const unsigned threads = static_cast<unsigned>(g.threads), reduce_blocks = static_cast<unsigned>(g.reduce_blocks);
  plan.launches = [q, grid, smem, threads, single, reduce_blocks](const Operands& o) {
    tp::DwParams a = q;
    a.src = o.a, a.src2 = o.b, a.dst = o.d, a.workspace = o.workspace;
    if (!a.src || !a.src2 || !a.dst) throw Unsupported("fam=grp: operands a (x), b (dy) and d (dw) must be set");
    if (!single && !a.workspace) throw Unsupported("fam=grp: bwd_weight with splits needs the workspace");
    check_aligned(a.src, "x");
    check_aligned(a.src2, "dy");
    check_aligned(a.workspace, "workspace");
    std::vector<Launch> ls(1);
    ls[0].grid[0] = grid;
    ls[0].block[0] = threads;
    ls[0].smem_bytes = smem;
    ls[0].params = codegen::pack(a);
    if (!single) {
      Launch r;
      r.kernel = 1;
      r.grid[0] = reduce_blocks;
      r.block[0] = kReduceThreads;
      r.params = ls[0].params;
      r.overlap_previous = true;  // it waits for the partials kernel itself (griddepcontrol.wait)
      ls.push_back(std::move(r));
    }
    return ls;
  };
  return plan;
}

}  // namespace

KernelPlan plan_grp(const ConvProblem& p, const KernelConfig& c) {
  const Geometry g = geometry(p, c);
  if (p.dir == ConvDir::bwd_weight) return plan_bwd_weight(p, c, g);
  codegen::CfgText cfg;
  cfg.type("T", codegen::device_type(p.x))
      .i("tile_h", c.dw_tile_h)
      .i("tile_w", c.dw_tile_w)
      .i("tile_c", c.dw_tile_c)
      .i("cpg", g.cpg)
      .i("pw", g.pw)
      .i("threads", g.threads)
      .i("fz", g.fz)
      .i("fy", g.fy)
      .i("fx", g.fx)
      .i("sy", g.sy)
      .i("sx", g.sx)
      .i("dly", g.dly)
      .i("dlx", g.dlx)
      .i("act", p.dir == ConvDir::fwd ? static_cast<int>(p.epilogue.act) : 0)
      .b("bias", p.dir == ConvDir::fwd && p.epilogue.bias)
      .i("stages", c.stages);
  KernelPlan plan;
  if (g.flip) {  // kernel 0: the flipped weights into the workspace
    plan.kernels.push_back(codegen::make_source("tp_grp_flip_weights_", "conv/grp_fwd.cuh", cfg, "tp::DwParams",
                                                "tp::grp_flip_weights", specialization(p, g), to_string(c),
                                                kFlipThreads));
  }
  const char* tag = g.flip ? "tp_grp_bwd_data_" : "tp_grp_fwd_";
  plan.kernels.push_back(codegen::make_source(tag, "conv/grp_fwd.cuh", cfg, "tp::DwParams", "tp::grp_fwd",
                                              specialization(p, g), to_string(c), g.threads));
  plan.workspace_bytes = static_cast<std::size_t>((g.flipped * 2 + 255) / 256 * 256);  // 16-bit elements
  const tp::DwParams q = g.q;
  const unsigned grid = static_cast<unsigned>(g.blocks), smem = static_cast<unsigned>(g.smem);
  const unsigned threads = static_cast<unsigned>(g.threads);
  const unsigned flip_blocks = static_cast<unsigned>(std::min<i64>(ceil_div(g.flipped, kFlipThreads), 4096));
  const bool bias = p.dir == ConvDir::fwd && p.epilogue.bias, flip = g.flip;
  plan.launches = [q, grid, smem, threads, bias, flip, flip_blocks](const Operands& o) {
    tp::DwParams a = q;
    a.src = o.a, a.src2 = o.b, a.bias = o.bias, a.dst = o.d, a.workspace = o.workspace;
    if (!a.src || !a.src2 || !a.dst) throw Unsupported("fam=grp: operands a, b and d must be set");
    if (bias && !a.bias) throw Unsupported("fam=grp: the epilogue has a bias but Operands::bias is null");
    if (flip && !a.workspace) throw Unsupported("fam=grp: bwd_data needs the workspace (the flipped weights)");
    check_aligned(a.src, "input");
    check_aligned(a.src2, "weight");
    check_aligned(a.dst, "output");
    check_aligned(a.workspace, "workspace");
    std::vector<Launch> ls;
    if (flip) {
      Launch f;
      f.kernel = 0;
      f.grid[0] = flip_blocks;
      f.block[0] = kFlipThreads;
      f.params = codegen::pack(a);
      ls.push_back(std::move(f));
      a.src2 = a.workspace;  // the main kernel reads the flipped copy
    }
    Launch m;
    m.kernel = flip ? 1 : 0;
    m.grid[0] = grid;
    m.block[0] = threads;
    m.smem_bytes = smem;
    m.resident = true;
    m.params = codegen::pack(a);
    ls.push_back(std::move(m));
    return ls;
  };
  return plan;
}

}  // namespace tilepick::family
