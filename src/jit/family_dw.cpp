// Depthwise convolution family (fam=dw): (problem, config) -> NVRTC programs and launches.
//
// Kernels (kernels/conv/dw*.cuh), picked from the problem:
//   fwd                      dw_fwd            direct, input box with halo in shared memory
//   bwd_data, unit stride    dw_fwd (flip)     the same kernel on dy with the filter rotated
//   bwd_data, any stride     dw_bwd_data       one stride phase per block
//   bwd_weight               dw_bwd_weight     all taps in registers (filter in {1,3,5,7}^3, filter rows
//                                              split over fgroups threads), else dw_bwd_weight_taps;
//                                              fp32 partials per (split, tile) in the workspace
//                            + dw_bwd_weight_reduce   ordered sum of the partials (deterministic);
//                                              with one part (one split, one tile) the kernel writes dw itself
// Baked into the program (the specialization): direction, kernel, dtype, spatial rank, filter extents
// when in {1,3,5,7} (else runtime), W stride/dilation when <= 2 and the W filter extent is baked,
// staging vector width (from C), epilogue, pipeline depth. Everything else is runtime.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/conv/dw_params.cuh"
#include "codegen.hpp"
#include "core/hash.hpp"
#include "families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::family {
namespace {

using i64 = std::int64_t;
using codegen::align16;
using codegen::baked_filter;
using codegen::ceil_div;

i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }


enum class Kernel { fwd, fwd_flip, bwd_data_phase, bwd_weight_regs, bwd_weight_taps, bwd_weight_reduce };

const char* kernel_function(Kernel k) {
  switch (k) {
    case Kernel::fwd:
    case Kernel::fwd_flip: return "dw_fwd";
    case Kernel::bwd_data_phase: return "dw_bwd_data";
    case Kernel::bwd_weight_regs: return "dw_bwd_weight";
    case Kernel::bwd_weight_taps: return "dw_bwd_weight_taps";
    case Kernel::bwd_weight_reduce: return "dw_bwd_weight_reduce";
  }
  return "";
}

const char* kernel_tag(Kernel k) {
  switch (k) {
    case Kernel::fwd: return "direct";
    case Kernel::fwd_flip: return "direct_flip";
    case Kernel::bwd_data_phase: return "phase";
    case Kernel::bwd_weight_regs: return "regs";
    case Kernel::bwd_weight_taps: return "taps";
    case Kernel::bwd_weight_reduce: return "reduce";
  }
  return "";
}

constexpr int kTapsPerThread = 4;     // dw_bwd_weight_taps: taps one thread owns per pass
constexpr int kMaxAccumulators = 80;  // dw_bwd_weight: accumulators per thread at most
constexpr int kReduceThreads = 256;   // dw_bwd_weight_reduce
constexpr i64 kStageBytes = 64 * 1024;  // bwd_weight: the slice ring at most this large (<= 4 buffers)

// Everything the program text and the launches depend on.
struct Spec {
  Kernel kernel = Kernel::fwd;
  std::string type;  // device element type
  int bytes = 2;
  int fz = 0, fy = 0, fx = 0;  // baked filter extents (0 = runtime)
  int sw = 0, dw = 0;          // baked W stride / dilation (0 = runtime)
  int vec = 1;                 // staging vector, elements
  int act = 0;
  bool bias = false;
  int stages = 1;              // bwd_weight: slices in the cp.async ring
  int fgroups = 1;             // dw_bwd_weight: filter-row groups sharing the strips
  bool single = false;         // bwd_weight with one part: dw written by the kernel, no workspace, no reduce

  // Canonical text of everything baked in besides the config.
  std::string text(const ConvProblem& p) const {
    std::string s = "dw dir=" + std::string(to_string(p.dir)) + " kernel=" + kernel_tag(kernel) +
                    " dtype=" + std::string(to_string(p.x)) + " ndim=" + std::to_string(p.ndim);
    if (kernel == Kernel::bwd_weight_reduce) return s;
    s += " filter=" + std::to_string(fz) + "x" + std::to_string(fy) + "x" + std::to_string(fx) +
         " wstep=" + std::to_string(sw) + "x" + std::to_string(dw) + " vec=" + std::to_string(vec);
    if (p.dir == ConvDir::fwd) s += " ep=" + to_string(p.epilogue);
    if (p.dir == ConvDir::bwd_weight) s += " stages=" + std::to_string(stages) + (single ? " single" : "");
    if (kernel == Kernel::bwd_weight_regs) s += " fgroups=" + std::to_string(fgroups);
    return s;
  }
};

KernelSource make_source(const ConvProblem& p, const KernelConfig& c, const Spec& s, const char* dir_tag,
                         int threads) {
  KernelSource k;
  k.specialization = s.text(p);
  const bool reduce = s.kernel == Kernel::bwd_weight_reduce;
  // The reduce kernel does not depend on the config: one program serves every config.
  k.name = std::string("tp_dw_") + dir_tag + "_" + hex16(fnv1a64(k.specialization + (reduce ? "" : to_string(c))));
  k.threads = threads;
  std::string cfg = "struct Cfg {\n  typedef " + s.type + " T;\n";
  if (!reduce) {
    cfg += "  static constexpr int tile_h = " + std::to_string(c.dw_tile_h) + ", tile_w = " + std::to_string(c.dw_tile_w) +
           ", tile_c = " + std::to_string(c.dw_tile_c) + ";\n";
    cfg += "  static constexpr int ppt = " + std::to_string(c.dw_ppt) + ", cpt = " + std::to_string(c.dw_cpt) +
           ", threads = " + std::to_string(threads) + ", vec = " + std::to_string(s.vec) + ";\n";
    cfg += "  static constexpr int fz = " + std::to_string(s.fz) + ", fy = " + std::to_string(s.fy) +
           ", fx = " + std::to_string(s.fx) + ";  // filter extents, 0 = runtime\n";
    cfg += "  static constexpr int sw = " + std::to_string(s.sw) + ", dw = " + std::to_string(s.dw) +
           ";  // W stride and dilation, 0 = runtime\n";
    cfg += "  static constexpr int act = " + std::to_string(s.act) + ";\n";
    cfg += std::string("  static constexpr bool bias = ") + (s.bias ? "true" : "false") +
           ", flip = " + (s.kernel == Kernel::fwd_flip ? "true" : "false") + ";\n";
    cfg += "  static constexpr int stages = " + std::to_string(s.stages) +
           ", taps_per_thread = " + std::to_string(kTapsPerThread) + ", fgroups = " + std::to_string(s.fgroups) +
           ";\n";
    cfg += std::string("  static constexpr bool single = ") + (s.single ? "true" : "false") + ";\n";
  }
  cfg += "};\n";
  k.code = "#include \"conv/dw.cuh\"\n" + cfg + "extern \"C\" __global__ void __launch_bounds__(" +
           std::to_string(threads) + ") " + k.name + "(const tp::DwParams p) { tp::" + kernel_function(s.kernel) +
           "<Cfg>(p); }\n";
  return k;
}

void require(bool ok, const ConvProblem& p, const KernelConfig& c, const std::string& why) {
  if (!ok) throw Unsupported("fam=dw: " + why + " ('" + to_string(p) + "', '" + to_string(c) + "')");
}

void check_aligned(const void* ptr, int bytes, const char* what) {
  if (ptr && reinterpret_cast<std::uintptr_t>(ptr) % static_cast<std::uintptr_t>(bytes) != 0)
    throw Unsupported(std::string("fam=dw: ") + what + " pointer is not aligned to " + std::to_string(bytes) +
                      " bytes");
}

int to_int(i64 v, const char* what) {
  if (v < 0 || v > 2147483647) throw Unsupported(std::string("fam=dw: ") + what + " out of 32-bit range");
  return static_cast<int>(v);
}

int to_sint(i64 v, const char* what) {
  if (v < -2147483647 || v > 2147483647) throw Unsupported(std::string("fam=dw: ") + what + " out of 32-bit range");
  return static_cast<int>(v);
}

// Everything derived from (problem, config): the specialization, the runtime params (pointers unset),
// the grid, the dynamic shared memory and the workspace. Throws Unsupported.
struct Geometry {
  Spec s;
  tp::DwParams q{};
  int threads = 0;
  i64 smem = 0, blocks = 0, workspace = 0, reduce_blocks = 0;
};

Geometry geometry(const ConvProblem& p, const KernelConfig& c) {
  Geometry g;
  require(c.fam() == Family::dw, p, c, "config is not of family dw");
  require(p.depthwise(), p, c, "needs a depthwise problem (G == C == K)");
  require(p.x == p.w && p.x == p.y && !is_fp8(p.x), p, c,
          "needs x, w, y of one dtype among f16, bf16, f32");
  const int threads = g.threads = threads_per_block(c);
  const int TH = c.dw_tile_h, TW = c.dw_tile_w, TC = c.dw_tile_c, PPT = c.dw_ppt, CPT = c.dw_cpt;
  const int bytes = size_bytes(p.x);
  require(TW % PPT == 0 && TC % CPT == 0, p, c, "dwtile must be divisible by ppt along W and by cpt along C");
  require(threads >= 32 && threads <= 1024 && threads % 32 == 0, p, c, "threads must be a multiple of 32 in [32, 1024]");
  require(CPT * bytes <= 16 && p.c % CPT == 0, p, c, "cpt must divide C and fit a 16-byte vector");
  require(c.splitk >= 1 && (c.splitk == 1 || p.dir == ConvDir::bwd_weight), p, c, "splitk > 1 is for bwd_weight only");
  require(p.x_elems() < (i64{1} << 31) && p.y_elems() < (i64{1} << 31), p, c, "tensors need 32-bit indexing");

  const auto& in = p.in;
  const auto out = p.out();
  const auto& F = p.filter;
  const i64 taps = F[0] * F[1] * F[2];

  Spec& s = g.s;
  s.type = codegen::device_type(p.x);
  s.bytes = bytes;
  s.fz = baked_filter(F[0]), s.fy = baked_filter(F[1]), s.fx = baked_filter(F[2]);
  s.vec = 16 / bytes;
  while (s.vec > 1 && (p.c % s.vec != 0 || TC % s.vec != 0)) s.vec /= 2;

  tp::DwParams& q = g.q;
  q.n = to_int(p.n, "N");
  q.c = to_int(p.c, "C");
  for (int i = 0; i < 3; ++i) {
    q.filter[i] = to_int(F[i], "filter"), q.stride[i] = to_int(p.stride[i], "stride");
    q.pad[i] = to_int(p.pad[i], "pad"), q.dilation[i] = to_int(p.dilation[i], "dilation");
  }
  const bool unit_stride = p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1;
  i64& smem = g.smem;
  i64& blocks = g.blocks;
  i64& workspace = g.workspace;
  q.tiles_c = to_int(ceil_div(p.c, TC), "channel tiles");

  switch (p.dir) {
    case ConvDir::fwd:
    case ConvDir::bwd_data: {
      if (p.dir == ConvDir::fwd || unit_stride) {
        // Direct: y = conv(src); unit-stride bwd_data runs it on dy with the rotated filter.
        const bool flip = p.dir == ConvDir::bwd_data;
        s.kernel = flip ? Kernel::fwd_flip : Kernel::fwd;
        if (p.dir == ConvDir::fwd) s.act = static_cast<int>(p.epilogue.act), s.bias = p.epilogue.bias;
        const auto& src = flip ? out : in;  // tensor read with the halo
        const auto& dst = flip ? in : out;  // tensor written
        for (int i = 0; i < 3; ++i) {
          q.in[i] = to_int(src[i], "input extent"), q.out[i] = to_int(dst[i], "output extent");
          if (flip) q.stride[i] = 1, q.pad[i] = to_sint((F[i] - 1) * p.dilation[i] - p.pad[i], "pad");
        }
        q.halo[0] = q.filter[0];
        q.halo[1] = to_int((TH - 1) * i64{q.stride[1]} + (F[1] - 1) * p.dilation[1] + 1, "halo");
        q.halo[2] = to_int((TW - 1) * i64{q.stride[2]} + (F[2] - 1) * p.dilation[2] + 1, "halo");
        if (s.fx) {
          s.sw = q.stride[2] <= 2 ? q.stride[2] : 0;
          s.dw = q.dilation[2] <= 2 ? q.dilation[2] : 0;
          if (!s.sw || !s.dw) s.sw = s.dw = 0;
        }
        q.tiles_h = to_int(ceil_div(dst[1], TH), "tiles"), q.tiles_w = to_int(ceil_div(dst[2], TW), "tiles");
        const i64 box = align16(i64{q.halo[0]} * q.halo[1] * q.halo[2] * TC * bytes);
        blocks = i64{q.tiles_c} * q.tiles_h * q.tiles_w * p.n * dst[0];
        smem = align16(taps * TC * 4) + box;
      } else {
        // Strided bwd_data: one stride phase (qh, qw) per block; halo = the largest over the phases.
        s.kernel = Kernel::bwd_data_phase;
        for (int i = 0; i < 3; ++i) q.in[i] = to_int(out[i], "dy extent"), q.out[i] = to_int(in[i], "dx extent");
        const int tile[3] = {1, TH, TW};
        q.halo[0] = q.filter[0];
        for (int i = 1; i < 3; ++i) {
          i64 spread = 0;
          for (i64 ph = 0; ph < p.stride[i]; ++ph)
            spread = std::max(spread, floor_div(ph + p.pad[i], p.stride[i]) -
                                          floor_div(ph + p.pad[i] - (F[i] - 1) * p.dilation[i], p.stride[i]));
          q.halo[i] = to_int(tile[i] + spread, "halo");
        }
        q.tiles_h = to_int(ceil_div(ceil_div(in[1], p.stride[1]), TH), "tiles");
        q.tiles_w = to_int(ceil_div(ceil_div(in[2], p.stride[2]), TW), "tiles");
        blocks = i64{q.tiles_c} * q.tiles_h * q.tiles_w * p.stride[1] * p.stride[2] * p.n * in[0];
        smem = align16(i64{q.halo[0]} * q.halo[1] * q.halo[2] * TC * bytes) + taps * TC * 4;
      }
      break;
    }
    case ConvDir::bwd_weight: {
      for (int i = 0; i < 3; ++i) q.in[i] = to_int(in[i], "x extent"), q.out[i] = to_int(out[i], "dy extent");
      q.halo[0] = q.filter[0];
      q.halo[1] = to_int((TH - 1) * p.stride[1] + (F[1] - 1) * p.dilation[1] + 1, "halo");
      q.halo[2] = to_int((TW - 1) * p.stride[2] + (F[2] - 1) * p.dilation[2] + 1, "halo");
      q.tiles_h = to_int(ceil_div(out[1], TH), "tiles"), q.tiles_w = to_int(ceil_div(out[2], TW), "tiles");
      const i64 slices = p.n * out[0];
      q.iters = to_int(ceil_div(slices, std::min<i64>(c.splitk, slices)), "iterations");
      q.splits = to_int(ceil_div(slices, q.iters), "splits");  // no empty split
      q.parts = to_int(i64{q.splits} * q.tiles_h * q.tiles_w, "parts");
      // All taps in registers when the filter is baked: filter rows split into fgroups groups until
      // one thread's accumulators (rows / fgroups x X x cpt) fit kMaxAccumulators.
      const i64 rows = F[0] * F[1], strips = threads / (TC / CPT);
      auto per_thread = [&](i64 fg) { return ceil_div(rows, fg) * F[2] * CPT; };
      while (per_thread(s.fgroups) > kMaxAccumulators && s.fgroups < strips && s.fgroups < rows) s.fgroups *= 2;
      const bool regs = s.fz && s.fy && s.fx && per_thread(s.fgroups) <= kMaxAccumulators;
      if (!regs) s.fgroups = 1;
      s.kernel = regs ? Kernel::bwd_weight_regs : Kernel::bwd_weight_taps;
      if (regs) {
        s.sw = p.stride[2] <= 2 ? static_cast<int>(p.stride[2]) : 0;
        s.dw = p.dilation[2] <= 2 ? static_cast<int>(p.dilation[2]) : 0;
        if (!s.sw || !s.dw) s.sw = s.dw = 0;
        q.passes = 1;
      } else {
        const i64 per_pass = i64{threads / (TC / CPT)} * kTapsPerThread;
        q.passes = to_int(ceil_div(taps, per_pass), "passes");
      }
      // A ring of up to 4 slices in flight while the buffers stay small. Strips padded as in the kernel.
      const i64 stage = align16(i64{q.halo[0]} * q.halo[1] * q.halo[2] * TC * bytes) +
                        align16(i64{TH} * TW * TC * bytes);
      s.stages = static_cast<int>(std::clamp<i64>(std::min<i64>(kStageBytes / stage, q.iters), 1, 4));
      smem = std::max(s.stages * stage, regs ? taps * TC * 4 : 0);
      g.reduce_blocks = ceil_div(p.c * taps, 32);
      blocks = i64{q.tiles_c} * q.tiles_h * q.tiles_w * q.passes * q.splits;
      s.single = q.parts == 1;  // each (c, tap) summed by one block: it writes dw, no second launch
      workspace = s.single ? 0 : (align16(i64{q.parts} * p.c * taps * 4) + 255) / 256 * 256;
      break;
    }
  }
  require(blocks >= 1 && blocks <= 2147483647, p, c, "grid of " + std::to_string(blocks) + " blocks out of range");
  // The shared-memory budget depends on the arch: legal() checks dw_shared_bytes() against it.
  return g;
}

}  // namespace

std::int64_t dw_shared_bytes(const ConvProblem& p, const KernelConfig& c) { return geometry(p, c).smem; }
std::int64_t dw_grid_blocks(const ConvProblem& p, const KernelConfig& c) { return geometry(p, c).blocks; }

KernelPlan plan_dw(const ConvProblem& p, const KernelConfig& c) {
  const Geometry g = geometry(p, c);
  const char* dir_tag = p.dir == ConvDir::fwd ? "fwd" : p.dir == ConvDir::bwd_data ? "bwd_data" : "bwd_weight";
  KernelPlan plan;
  plan.kernels.push_back(make_source(p, c, g.s, dir_tag, g.threads));
  plan.workspace_bytes = static_cast<std::size_t>(g.workspace);
  const bool reduce = p.dir == ConvDir::bwd_weight && !g.s.single;
  if (reduce) {
    Spec r = g.s;
    r.kernel = Kernel::bwd_weight_reduce;
    plan.kernels.push_back(make_source(p, c, r, "bwd_weight_reduce", kReduceThreads));
  }

  const tp::DwParams q = g.q;
  const unsigned grid = static_cast<unsigned>(g.blocks), smem_bytes = static_cast<unsigned>(g.smem);
  const int threads = g.threads;
  const i64 reduce_blocks = g.reduce_blocks;
  const int vec_bytes = g.s.vec * g.s.bytes, cpt_bytes = c.dw_cpt * g.s.bytes;
  const ConvDir dir = p.dir;
  const bool bias = g.s.bias;
  plan.launches = [q, grid, smem_bytes, threads, reduce_blocks, vec_bytes, cpt_bytes, dir, bias, reduce](const Operands& o) {
    tp::DwParams a = q;
    a.src = o.a, a.src2 = o.b, a.bias = o.bias, a.dst = o.d, a.workspace = o.workspace;
    if (!a.src || !a.src2 || !a.dst) throw Unsupported("fam=dw: operands a, b and d must be set");
    if (bias && !a.bias) throw Unsupported("fam=dw: the epilogue has a bias but Operands::bias is null");
    if (reduce && !a.workspace) throw Unsupported("fam=dw: bwd_weight needs the workspace");
    // Staged tensors are read in vectors of vec elements, results written in vectors of cpt.
    check_aligned(a.src, vec_bytes, "input");
    check_aligned(dir == ConvDir::bwd_weight ? a.src2 : a.dst, dir == ConvDir::bwd_weight ? vec_bytes : cpt_bytes,
                  dir == ConvDir::bwd_weight ? "dy" : "output");
    check_aligned(a.bias, cpt_bytes, "bias");
    check_aligned(a.workspace, 16, "workspace");
    std::vector<Launch> ls(1);
    ls[0].kernel = 0;
    ls[0].grid[0] = grid;
    ls[0].block[0] = static_cast<unsigned>(threads);
    ls[0].smem_bytes = smem_bytes;
    ls[0].params.resize(sizeof a);
    std::memcpy(ls[0].params.data(), &a, sizeof a);
    if (reduce) {
      Launch r;
      r.kernel = 1;
      r.grid[0] = static_cast<unsigned>(reduce_blocks);
      r.block[0] = kReduceThreads;
      r.params = ls[0].params;
      r.overlap_previous = true;  // it waits for the partials kernel itself (griddepcontrol.wait): its launch may
                                  // overlap that kernel's last wave
      ls.push_back(std::move(r));
    }
    return ls;
  };
  return plan;
}

}  // namespace tilepick::family
