// The legality predicate. Each rule returns a Verdict naming itself and the numbers involved.
#include "tilepick/legality.hpp"

#include <algorithm>

#include "jit/families.hpp"
#include "tilepick/error.hpp"

namespace tilepick {
namespace {

constexpr std::int64_t kMaxAccumulationChain = std::int64_t{1} << 20;

Verdict no(std::string rule, std::string reason) { return {false, std::move(rule), std::move(reason)}; }

// Contiguous extents (elements) of the A, B and C operands of the GEMM view.
std::array<std::int64_t, 3> contiguous_extents(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    auto row = MatLayout::row;
    return {g->layout_a == row ? g->k : g->m, g->layout_b == row ? g->n : g->k, g->layout_c == row ? g->n : g->m};
  }
  const auto& c = std::get<ConvProblem>(p);
  switch (c.dir) {
    case ConvDir::fwd: return {c.c_per_group(), c.c_per_group(), c.k_per_group()};       // x, w, y
    case ConvDir::bwd_data: return {c.k_per_group(), c.c_per_group(), c.c_per_group()};  // dy, w, dx
    case ConvDir::bwd_weight: return {c.k_per_group(), c.c_per_group(), c.c_per_group()};  // dy, x, dw
  }
  return {1, 1, 1};
}

std::array<int, 3> operand_bytes(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return {size_bytes(g->a), size_bytes(g->b), size_bytes(g->c)};
  const auto& c = std::get<ConvProblem>(p);
  switch (c.dir) {
    case ConvDir::fwd: return {size_bytes(c.x), size_bytes(c.w), size_bytes(c.y)};
    case ConvDir::bwd_data: return {size_bytes(c.y), size_bytes(c.w), size_bytes(c.x)};
    case ConvDir::bwd_weight: return {size_bytes(c.y), size_bytes(c.x), size_bytes(c.w)};
  }
  return {2, 2, 2};
}

int igemm_smem(const KernelConfig& c, int in_bytes) {
  int pipeline = c.stages * (c.tile_m + c.tile_n) * c.tile_k * in_bytes;
  int staging = c.epi == static_cast<int>(EpiVariant::smem) ? c.tile_m * c.tile_n * 4 : 0;
  return std::max(pipeline, staging);  // the epilogue reuses the pipeline buffers
}

// mma.sync fragments per thread: accumulators + double-buffered A/B fragments + addressing.
int igemm_regs(const KernelConfig& c) {
  int wm = c.tile_m / c.warps_m, wn = c.tile_n / c.warps_n;
  int acc = wm * wn / 32;
  int frags = 2 * ((wm / 16) * 4 + (wn / 8) * 2);
  return acc + frags + 40;
}

// The depthwise kernels stage input boxes, filters and (bwd_weight) a cp.async ring: the family's
// own geometry is the one source of their shared-memory size.
std::int64_t dw_smem(const KernelConfig& c, const ConvProblem& p) { return family::dw_shared_bytes(p, c); }

int pow2_floor_divisor(std::int64_t extent, int max_vec) {
  int v = max_vec;
  while (v > 1 && extent % v != 0) v /= 2;
  return v;
}

}  // namespace

DType input_dtype(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return g->a;
  return std::get<ConvProblem>(p).x;
}

std::array<int, 3> max_alignment(const Problem& p) {
  auto ext = contiguous_extents(p);
  auto bytes = operand_bytes(p);
  std::array<int, 3> a{};
  for (int i = 0; i < 3; ++i) a[i] = pow2_floor_divisor(ext[i], 16 / bytes[i]);
  return a;
}

// Groups per block: the most (a power of two dividing G) whose GEMM rows or columns together still fit the tile
// where one group's leave it mostly padding: N = K/G of fwd, N = C/G of bwd_data, M = K/G of bwd_weight. The
// weights are taken (fwd, bwd_data) or stored (bwd_weight) block-diagonally (kernels/conv/igemm.cuh), which needs
// power-of-two channels per group and weight vectors within one group. The MMA work per output stays the tile's;
// the loads of a pixel's channels get P times wider and the blocks P times fewer. Measured on an H200
// (bench/results/2026-11-29-grouped-dw, the same configs packed and not): groups of fewer than 16 bytes of
// channels gain at any grid (1.2-3.1x); wider ones gain while the packed grid keeps kPackMinBlocks (two blocks
// per SM of an H100 / H200: 1.1-2x) and lose below it (0.5-0.9x); bwd_weight with 32 bytes or more loses (0.7x).
int sm80_group_pack(const ConvProblem& p, const KernelConfig& c) {
  constexpr std::int64_t kPackMinBlocks = 2 * 132;
  const std::int64_t cg = p.c_per_group(), kg = p.k_per_group();
  auto pow2 = [](std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (c.fam() != Family::sm80 || p.g == 1 || !pow2(cg) || !pow2(kg)) return 1;
  if (p.dir == ConvDir::fwd && (c.align_b == 0 || cg % c.align_b != 0)) return 1;  // a weight vector would cross groups
  const std::int64_t run = std::min(cg, kg) * size_bytes(p.x);  // bytes of one group's channels at a pixel
  if (p.dir == ConvDir::bwd_weight && run >= 32) return 1;
  const std::int64_t floor = run < 16 ? 0 : kPackMinBlocks;
  const auto o = p.out();
  const std::int64_t taps = p.filter[0] * p.filter[1] * p.filter[2];
  const std::int64_t pixels = p.dir == ConvDir::bwd_data ? p.n * p.in[0] * p.in[1] * p.in[2] : p.n * o[0] * o[1] * o[2];
  auto blocks = [&](std::int64_t pack) {  // of the GEMM views with P groups per block (bwd_data: all phases as one)
    const std::int64_t m = p.dir == ConvDir::bwd_weight ? pack * kg : pixels;
    const std::int64_t n = p.dir == ConvDir::fwd ? pack * kg : p.dir == ConvDir::bwd_data ? pack * cg : taps * pack * cg;
    return (m + c.tile_m - 1) / c.tile_m * ((n + c.tile_n - 1) / c.tile_n) * (p.g / pack) * c.splitk;
  };
  const std::int64_t n = p.dir == ConvDir::bwd_data ? cg : kg;
  const int tile = p.dir == ConvDir::bwd_weight ? c.tile_m : c.tile_n;
  int pack = 1;
  while (2 * pack * n <= tile && p.g % (2 * pack) == 0 && blocks(2 * pack) >= floor) pack *= 2;
  return pack;
}

namespace {

// allowed (max_alignment) widened where c packs groups: the tensors read or written P groups at a time along
// the channels (fwd: x and y, bwd_data: dy and dx, bwd_weight: dy and x; the weights stay one group's).
std::array<int, 3> packed_alignment(const KernelConfig& c, const Problem& p, std::array<int, 3> allowed) {
  const auto* conv = std::get_if<ConvProblem>(&p);
  if (!conv || c.fam() != Family::sm80 || conv->g == 1) return allowed;
  KernelConfig r = c;
  if (r.align_a == 0) r.align_a = allowed[0], r.align_b = allowed[1], r.align_c = allowed[2];
  const int pack = sm80_group_pack(*conv, r);
  if (pack == 1) return allowed;
  const auto ext = contiguous_extents(p);
  const auto bytes = operand_bytes(p);
  const bool bw = conv->dir == ConvDir::bwd_weight;
  for (int i : {0, bw ? 1 : 2}) allowed[i] = pow2_floor_divisor(ext[i] * pack, 16 / bytes[i]);
  return allowed;
}

}  // namespace

namespace {

bool auto_aligned(const KernelConfig& c) { return !c.direct() && c.align_a == 0; }

KernelConfig with_alignment(const KernelConfig& c, const std::array<int, 3>& a) {
  KernelConfig r = c;
  r.align_a = a[0], r.align_b = a[1], r.align_c = a[2];
  return r;
}

}  // namespace

KernelConfig resolve(const KernelConfig& c, const Problem& p) {
  return auto_aligned(c) ? with_alignment(c, packed_alignment(c, p, max_alignment(p))) : c;
}

Resources estimate_resources(const KernelConfig& c, const Problem& p) {
  Resources r;
  r.threads = threads_per_block(c);
  int bytes = size_bytes(input_dtype(p));
  if (c.fam() == Family::grp) {
    try {
      r.smem_bytes = static_cast<int>(family::grp_shared_bytes(std::get<ConvProblem>(p), c));
    } catch (const Error&) {
      r.smem_bytes = -1;  // no kernel for this pair
    }
    r.regs_per_thread = 48 + c.dw_ppt * c.dw_cpt;
  } else if (c.fam() == Family::dw) {
    try {
      r.smem_bytes = static_cast<int>(std::min<std::int64_t>(dw_smem(c, std::get<ConvProblem>(p)), 1 << 30));
    } catch (const Error&) {
      r.smem_bytes = -1;  // no kernel for this pair
    }
    r.regs_per_thread = 32 + 2 * c.dw_ppt * c.dw_cpt;
  } else if (c.fam() == Family::sm90) {
    const auto* g = std::get_if<GemmProblem>(&p);
    r.smem_bytes = sm90_smem_bytes(c, operand_bytes(p)[2], g && g->scale == GemmScale::block);
    // __launch_bounds__(threads, 1): the block takes the whole register file at launch (setmaxnreg
    // then moves registers from the producer to the consumers), so one block per SM.
    r.regs_per_thread = std::min(255, 65536 / r.threads / 8 * 8);
  } else {
    r.smem_bytes = igemm_smem(c, bytes);
    r.regs_per_thread = igemm_regs(c);
  }
  return r;
}

namespace {

// fam=sm90 (kernels/gemm/sm90.cuh): warps = consumer warpgroups, M (sharing each tile's rows) x
// tiles in flight (2 = ping-pong), tile_k = one 128-byte swizzled row of K, the accumulators of one
// consumer in its registers.
Verdict sm90_on_arch(const KernelConfig& c, const ArchSpec& arch, DType input) {
  if (!arch.wgmma) return no("family_arch", "fam=sm90 needs wgmma (sm_90a); " + arch.sm + " has none");
  if (c.tile_k * size_bytes(input) != 128)
    return no("tile_k", "fam=sm90 loads K in 128-byte swizzled rows: tile_k must be " +
                            std::to_string(128 / size_bytes(input)) + " for " + std::string(to_string(input)) + " inputs");
  if (c.warps_m * c.warps_n > 2)
    return no("warps", "fam=sm90 runs 1 or 2 consumer warpgroups: warps=1x1, 2x1 (sharing a tile's rows) or 1x2 "
                       "(ping-pong: taking tiles in turns)");
  const int rows = c.tile_m / c.warps_m;
  if (!sm90_consumer_rows_ok(rows))
    return no("warp_tile", "fam=sm90: each consumer warpgroup owns tile_m / warps_m = " + std::to_string(rows) +
                               " rows; wgmma needs 64 or 128 (or 16 / 32: short tiles)");
  // Short tiles (small M): the wgmma computes 64 rows, those past the tile's read the stage's B tile (at least
  // 64 - tile_m rows of it) and are dropped by the register epilogue.
  if (rows < 64 && (c.warps_m * c.warps_n != 1 || c.epi != static_cast<int>(EpiVariant::direct) ||
                    (c.splitk > 1 && c.splitk_mode == static_cast<int>(SplitKMode::serial)) ||
                    c.cluster_m * c.cluster_n != 1 || c.tile_n < 64 - rows))
    return no("short_tile", "fam=sm90 short tiles (tile_m 16 or 32) run one consumer (warps=1x1), epi=direct, no "
                            "stream-K, no cluster and tile_n >= 64 - tile_m");
  if (c.tile_n < 32 || c.tile_n % 32 != 0 || c.tile_n > 256)
    return no("tile_n", "fam=sm90 runs tile_n a multiple of 32 in [32, 256] (wgmma N)");
  if (rows * c.tile_n / 128 > 128)
    return no("registers", "fam=sm90: " + std::to_string(rows * c.tile_n / 128) +
                               " accumulators per consumer thread exceed 128 (ptxas holds consumers to the "
                               "168-register entry cap of 384 threads)");
  if (c.stages < 2) return no("stages", "fam=sm90 needs at least 2 pipeline stages");
  const int smem = sm90_smem_bytes(c, 2);  // the problem's output size is checked per problem
  if (smem > arch.smem_per_block_optin)
    return no("smem", std::to_string(smem) + " bytes of shared memory (stages x (tile_m + tile_n) x 128 + barriers" +
                          (c.epi == static_cast<int>(EpiVariant::smem) ? " + 16-bit output tile" : "") + ") exceed " +
                          std::to_string(arch.smem_per_block_optin) + " per block on " + arch.name);
  if (c.splitk > 1 && c.splitk_mode == static_cast<int>(SplitKMode::parallel) && c.epi != static_cast<int>(EpiVariant::direct))
    return no("splitk", "fam=sm90 parallel split-K (fp32 partials, then the reduce kernel) runs with epi=direct only");
  if (c.splitk > 1 && c.splitk_mode == static_cast<int>(SplitKMode::serial) &&
      (c.cluster_m * c.cluster_n > 1 || c.warps_n > 1 || rows * c.tile_n / 128 > 64))
    return no("splitk", "fam=sm90 skmode=serial is stream-K (up to splitk CTAs per tile, reduced in the kernel): "
                        "cluster=1x1, no ping-pong (warps=1x1 or 2x1) and at most 64 accumulators per consumer "
                        "thread (with 128 it ran 1.1-1.4x slower than unsplit: experiments/2026-12-06-wide-stream-k)");
  if (c.cluster_m * c.cluster_n > 2)
    return no("cluster", "fam=sm90 runs clusters of at most 2 CTAs (cluster=1x1, 2x1 or 1x2)");
  if (c.cluster_m * c.cluster_n > arch.max_cluster_size || (c.cluster_m * c.cluster_n > 1 && !arch.clusters))
    return no("cluster", "cluster " + std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n) + " exceeds " +
                             arch.name + "'s cluster size " + std::to_string(arch.max_cluster_size));
  return {};
}

}  // namespace

namespace {

// 1024-byte alignment slack + stages x (A and B tiles of 128-byte rows + two mbarriers [+ the k-tile's block
// scales: tile_m of A's and two of B's, 16-byte padded]) + the two ping-pong order mbarriers.
int sm90_pipeline_bytes(const KernelConfig& c, bool block_scale) {
  return 1024 + c.stages * ((c.tile_m + c.tile_n) * 128 + 16 + (block_scale ? (c.tile_m + 4) * 4 : 0)) + 16;
}

}  // namespace

Sm90Staging sm90_staging(const KernelConfig& c, int out_bytes, bool block_scale) {
  const int block_bytes = c.tile_n * out_bytes % 128 == 0 ? 128 : 64;
  if (c.epi != static_cast<int>(EpiVariant::smem)) return {0, 0, block_bytes};
  const int pipeline = sm90_pipeline_bytes(c, block_scale);
  const int rows = c.tile_m * c.warps_n;  // a ping-pong pair stages two tiles
  auto fits = [&](int cols, int buffers) { return pipeline + buffers * rows * cols * out_bytes <= kSm90SmemPerBlock; };
  if (fits(c.tile_n, 1)) return {c.tile_n, 1, block_bytes};
  // Two buffers of a part of the columns, taking turns (kernels/gemm/sm90.cuh, sm90_store_staged);
  // else one buffer of one column block, reused once its TMA store has read it.
  // Parts are whole column blocks that divide tile_n.
  const int block = std::min(c.tile_n, std::max(1, block_bytes / out_bytes));
  for (int cols = c.tile_n - block; cols >= block; cols -= block)
    if (c.tile_n % cols == 0 && fits(cols, 2)) return {cols, 2, block_bytes};
  return {block, 1, block_bytes};  // may not fit either: the smem rule refuses the config then
}

int sm90_smem_bytes(const KernelConfig& c, int out_bytes, bool block_scale) {
  const Sm90Staging st = sm90_staging(c, out_bytes, block_scale);
  return sm90_pipeline_bytes(c, block_scale) + c.tile_m * c.warps_n * st.cols * out_bytes * st.buffers;
}

Verdict legal_on_arch(const KernelConfig& c, const ArchSpec& arch, DType input) {
  if (auto err = config_error(c)) return no("config", *err);
  const int threads = threads_per_block(c);
  if (threads < 32 || threads % 32 != 0 || threads > arch.max_threads_per_block)
    return no("threads", std::to_string(threads) + " threads per block; needs a multiple of 32 in [32, " +
                             std::to_string(arch.max_threads_per_block) + "]");
  switch (c.fam()) {
    case Family::sm90: return sm90_on_arch(c, arch, input);
    case Family::sm80: {
      if (!arch.mma_sync) return no("family_arch", "fam=sm80 needs mma.sync (sm_80+)");
      if (c.epi == static_cast<int>(EpiVariant::smem)) return no("epi", "fam=sm80 implements epi=direct only");
      if ((c.tile_m & (c.tile_m - 1)) || (c.tile_n & (c.tile_n - 1)) || (c.tile_k & (c.tile_k - 1)))
        return no("tile", "fam=sm80 tiles are powers of two (96, 160, 192 and 224 are sm90's)");
      if (is_fp8(input)) return no("dtype", "fp8 inputs need fam=sm90 with fp8 tensor cores");
      int wm = c.tile_m / c.warps_m, wn = c.tile_n / c.warps_n;
      if (wm < 16 || wn < 16 || c.tile_m % c.warps_m || c.tile_n % c.warps_n)
        return no("warp_tile", "warp tile " + std::to_string(wm) + "x" + std::to_string(wn) +
                                   " must be at least 16x16 (mma m16n8k16 with ldmatrix.x4)");
      int k_step = input == DType::f32 ? 8 : is_fp8(input) ? 32 : 16;
      if (c.tile_k % k_step != 0)
        return no("tile_k", "tile_k " + std::to_string(c.tile_k) + " must be a multiple of the mma K step " +
                                std::to_string(k_step) + " for " + std::string(to_string(input)));
      int smem = igemm_smem(c, size_bytes(input));
      if (smem > arch.smem_per_block_optin)
        return no("smem", std::to_string(smem) + " bytes of shared memory (stages x (tile_m + tile_n) x tile_k x " +
                              std::to_string(size_bytes(input)) + ") exceed " +
                              std::to_string(arch.smem_per_block_optin) + " per block on " + arch.name);
      int wm_ = c.tile_m / c.warps_m, wn_ = c.tile_n / c.warps_n;
      if (input == DType::f32 && wm_ * wn_ > 2048)
        return no("registers", "warp tile " + std::to_string(wm_) + "x" + std::to_string(wn_) +
                                   " with tf32 fragments spills (at most 2048 accumulators per warp for f32 inputs)");
      int regs = igemm_regs(c);
      if (regs > arch.max_regs_per_thread)
        return no("registers", "about " + std::to_string(regs) + " registers per thread (" + std::to_string(wm * wn / 32) +
                                   " accumulators) exceed " + std::to_string(arch.max_regs_per_thread));
      if (static_cast<std::int64_t>(regs) * threads > arch.regs_per_block)
        return no("registers", "about " + std::to_string(regs * threads) + " registers per block exceed " +
                                   std::to_string(arch.regs_per_block));
      int max_vec = 16 / size_bytes(input);
      for (int a : {c.align_a, c.align_b})
        if (a > max_vec)
          return no("align", "vector width " + std::to_string(a) + " exceeds 16 bytes of " + std::string(to_string(input)));
      break;
    }
    case Family::dw: {
      if (c.dw_tile_w % c.dw_ppt != 0 || c.dw_tile_c % c.dw_cpt != 0)
        return no("dw_tile", "dwtile " + std::to_string(c.dw_tile_h) + "x" + std::to_string(c.dw_tile_w) + "x" +
                                 std::to_string(c.dw_tile_c) + " must be divisible by ppt " + std::to_string(c.dw_ppt) +
                                 " along W and by cpt " + std::to_string(c.dw_cpt) + " along channels");
      if (c.dw_cpt * size_bytes(input) > 16)
        return no("align", "cpt " + std::to_string(c.dw_cpt) + " exceeds a 16-byte vector of " +
                               std::string(to_string(input)));
      if (is_fp8(input)) return no("dtype", "fam=dw has no fp8 path");
      break;
    }
    case Family::grp: {
      if (!arch.mma_sync) return no("family_arch", "fam=grp needs mma.sync (sm_80+)");
      if (input != DType::f16 && input != DType::bf16) return no("dtype", "fam=grp runs f16 and bf16");
      if (c.splitk < 1) return no("splitk", "fam=grp splitk (bwd_weight's splits of the pixels) must be >= 1");
      if (c.stages != 1 && c.stages != 2) return no("stages", "fam=grp stages (staged input boxes) must be 1 or 2");
      if (c.dw_tile_w % c.dw_ppt != 0 || c.dw_tile_c % c.dw_cpt != 0)
        return no("dw_tile", "dwtile must be divisible by ppt along W and by cpt along channels");
      break;
    }
  }
  return {};
}

bool family_runs(Family f, const Problem& p) {
  if (f != Family::dw && f != Family::grp) return true;
  const auto* conv = std::get_if<ConvProblem>(&p);
  if (!conv) return false;
  if (f == Family::dw) return conv->depthwise();
  return family::grp_refusal(*conv).empty();
}

namespace {

// A failed rule: with kExplain its name and message (made by `msg`), else just the failure.
template <bool kExplain, class Msg>
Verdict fail(const char* rule, Msg&& msg) {
  if constexpr (kExplain) return no(rule, msg());
  else return {false, {}, {}};
}

// The direct families' last rule: their plan builder sizes the block's shared memory (`bytes`), and its refusal
// is the family's shape rule; the size must fit the arch.
template <bool kExplain, class Bytes>
Verdict shared_memory_fits(const char* shape_rule, Bytes bytes, const ArchSpec& arch) {
  std::int64_t smem = 0;
  try {
    smem = bytes();
  } catch (const Error& e) {
    return fail<kExplain>(shape_rule, [&] { return std::string(e.what()); });
  }
  if (smem > arch.smem_per_block_optin)
    return fail<kExplain>("smem", [&] {
      return std::to_string(smem) + " bytes of shared memory exceed " + std::to_string(arch.smem_per_block_optin) +
             " per block on " + arch.name;
    });
  return {};
}

}  // namespace

ProblemLegality::ProblemLegality(const Problem& p, const ArchSpec& arch)
    : problem_(p), arch_(arch), allowed_(max_alignment(p)), extents_(contiguous_extents(p)) {
  conv_ = std::get_if<ConvProblem>(&problem_);
  gemm_ = std::get_if<GemmProblem>(&problem_);
  if (conv_) pointwise_ = conv_->pointwise_gemm();
  if (conv_ && !pointwise_) {
    im2col_refusal_ = sm90_im2col_refusal(*conv_);
    if (im2col_refusal_.empty()) im2col_ = sm90_im2col_gemm(*conv_);
  }
  gemm_k_ = gemm_ ? gemm_->k : conv_->gemm().k;
  if (gemm_) largest_ = std::max({gemm_->m * gemm_->k, gemm_->k * gemm_->n, gemm_->m * gemm_->n});
  else largest_ = std::max({conv_->x_elems(), conv_->w_elems(), conv_->y_elems()});
}

KernelConfig ProblemLegality::resolve(const KernelConfig& c) const {
  return auto_aligned(c) ? with_alignment(c, packed_alignment(c, problem_, allowed_)) : c;
}

template <bool kExplain>
Verdict ProblemLegality::check(const KernelConfig& c) const {
  const ConvProblem* conv = conv_;
  const GemmProblem* gemm = gemm_;
  const ArchSpec& arch = arch_;
  if (c.fam() == Family::dw) {
    if (!family_runs(Family::dw, problem_))
      return fail<kExplain>("family_op", [] { return "fam=dw runs depthwise convolution only (G == C == K)"; });
    if (conv->c % c.dw_cpt != 0)
      return fail<kExplain>("align", [&] {
        return "channels " + std::to_string(conv->c) + " not divisible by cpt " + std::to_string(c.dw_cpt);
      });
    if (c.splitk > 1 && conv->dir != ConvDir::bwd_weight)
      return fail<kExplain>("splitk", [] { return "fam=dw splits the reduction only for bwd_weight"; });
    if (conv->x_elems() >= (std::int64_t{1} << 31) || conv->y_elems() >= (std::int64_t{1} << 31))
      return fail<kExplain>("index32", [] { return "tensors with 2^31 or more elements need 64-bit indexing"; });
    return shared_memory_fits<kExplain>("dw_shape", [&] { return dw_smem(c, *conv); }, arch);
  }
  if (c.fam() == Family::grp) {
    if (!family_runs(Family::grp, problem_))
      return fail<kExplain>("family_op", [&] { return "fam=grp " + family::grp_refusal(*conv); });
    return shared_memory_fits<kExplain>("grp_shape", [&] { return family::grp_shared_bytes(*conv, c); }, arch);
  }

  // Implicit-GEMM families.
  if (gemm && gemm->acc != DType::f32) return fail<kExplain>("dtype", [] { return "the igemm families accumulate in f32"; });
  if (c.fam() == Family::sm90) {
    if (Verdict v = check_sm90<kExplain>(c); !v.ok) return v;
  } else {
    if (conv) {
      DType a_t = conv->dir == ConvDir::fwd ? conv->x : conv->y;
      DType b_t = conv->dir == ConvDir::bwd_weight ? conv->x : conv->w;
      if (a_t != b_t)
        return fail<kExplain>("dtype", [&] {
          return "the GEMM-view inputs of " + std::string(to_string(conv->dir)) + " are " + std::string(to_string(a_t)) +
                 " and " + std::string(to_string(b_t)) + "; fam=sm80 needs one input dtype";
        });
    }
    // Loader vectors per thread and operand; more unrolls into spills and multi-second compiles.
    const int threads = threads_per_block(c);
    const int va = (c.tile_m * c.tile_k + c.align_a * threads - 1) / (c.align_a * threads);
    const int vb = (c.tile_n * c.tile_k + c.align_b * threads - 1) / (c.align_b * threads);
    if (va > 16 || vb > 16)
      return fail<kExplain>("registers", [&] {
        return "align " + std::to_string(c.align_a) + "x" + std::to_string(c.align_b) + " needs " +
               std::to_string(std::max(va, vb)) + " loads per thread and operand for one tile (at most 16)";
      });
    // fwd and bwd_data cache one im2col row offset per A vector: 4 more registers each.
    if (conv && conv->dir != ConvDir::bwd_weight && igemm_regs(c) + 4 * va > arch.max_regs_per_thread)
      return fail<kExplain>("registers", [&] {
        return "about " + std::to_string(igemm_regs(c) + 4 * va) + " registers per thread with the im2col row cache exceed " +
               std::to_string(arch.max_regs_per_thread);
      });
  }
  // Both GEMM families: alignment, split-K, accumulation chain, 32-bit indexing.
  const std::array<int, 3> want{c.align_a, c.align_b, c.align_c};
  const std::array<int, 3> allowed = packed_alignment(c, problem_, allowed_);
  static const char* names[3] = {"A", "B", "C"};
  for (int i = 0; i < 3; ++i)
    if (want[i] > allowed[i])
      return fail<kExplain>("align", [&] {
        return "align " + std::to_string(want[i]) + " on " + names[i] + ": its contiguous extent " +
               std::to_string(extents_[i]) + (allowed[i] != allowed_[i] ? " (times the groups packed)" : "") +
               " allows at most " + std::to_string(allowed[i]);
      });
  const std::int64_t k_tiles = (gemm_k_ + c.tile_k - 1) / c.tile_k;
  if (c.splitk > k_tiles)
    return fail<kExplain>("splitk", [&] {
      return "splitk " + std::to_string(c.splitk) + " exceeds the " + std::to_string(k_tiles) + " K tiles of size " +
             std::to_string(c.tile_k);
    });
  // The tensor cores' f32 accumulation drifts along one long chain of K steps: every sm80 bwd_weight
  // record with more than 2^20 products per split (K = N x output pixels) that failed the output check
  // had one (f16 from 1.6 M, bf16 at 8.7 M), none at or below it (data/sweeps/README.md).
  const std::int64_t chain = (k_tiles + c.splitk - 1) / c.splitk * c.tile_k;
  if (chain > kMaxAccumulationChain)
    return fail<kExplain>("splitk", [&] {
      return "splitk " + std::to_string(c.splitk) + " leaves " + std::to_string(chain) + " products per accumulator (at most " +
             std::to_string(kMaxAccumulationChain) + ": longer chains lose f32 precision)";
    });
  if (largest_ >= (std::int64_t{1} << 31))
    return fail<kExplain>("index32", [&] {
      return "an operand with " + std::to_string(largest_) + " elements needs 64-bit indexing";
    });
  return {};
}

std::string sm90_im2col_refusal(const ConvProblem& p) {
  if (p.g != 1) return "fam=sm90 runs convolutions of one group";
  const DType a = p.dir == ConvDir::fwd ? p.x : p.y, b = p.dir == ConvDir::bwd_weight ? p.x : p.w;
  if (a != b || (a != DType::f16 && a != DType::bf16))
    return "fam=sm90 convolutions take f16 or bf16 GEMM inputs of one dtype (" + std::string(to_string(p.dir)) + ": " +
           std::string(to_string(a)) + " and " + std::string(to_string(b)) + ")";
  if (p.dir == ConvDir::bwd_weight && p.c % 64 != 0)
    return "fam=sm90 bwd_weight tiles N = taps x C in 64-channel blocks: C = " + std::to_string(p.c) +
           " is not a multiple of 64";
  // TMA im2col: the box corners per spatial dim in a signed 8-bit (4-D tensor) or 5-bit (5-D) range.
  const std::int64_t lo = p.ndim == 2 ? -128 : -16, hi = p.ndim == 2 ? 127 : 15;
  static const char* dims = "dhw";
  bool loads = false;
  for (const Sm90Im2colWalk& walk : sm90_im2col_walks(p)) {
    if (walk.taps[0] * walk.taps[1] * walk.taps[2] == 0) continue;  // a stride phase no tap reaches: loads nothing
    loads = true;
    for (int i = p.ndim == 2 ? 1 : 0; i < 3; ++i) {
      if (-walk.pad[i] < lo || walk.upper[i] < lo || walk.upper[i] > hi)
        return std::string("TMA im2col box corners ") + std::to_string(-walk.pad[i]) + " and " +
               std::to_string(walk.upper[i]) + " along " + dims[i] + " leave [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]";
      if (walk.stride[i] > 8)
        return std::string("TMA im2col strides at most 8: stride ") + std::to_string(walk.stride[i]) + " along " + dims[i];
    }
  }
  if (!loads) return "fam=sm90: no filter tap reaches a pixel of this bwd_data (its dx is zeros)";
  return {};
}

std::vector<Sm90Im2colWalk> sm90_im2col_walks(const ConvProblem& p) {
  Sm90Im2colWalk w;
  const bool bwd_data = p.dir == ConvDir::bwd_data;
  w.channels = bwd_data ? p.k : p.c;
  w.tensor = bwd_data ? p.out() : p.in, w.pixels = bwd_data ? p.in : p.out();
  for (int i = 0; i < 3; ++i) {
    const std::int64_t reach = (p.filter[i] - 1) * p.dilation[i];
    w.stride[i] = bwd_data ? 1 : p.stride[i];
    w.pad[i] = p.pad[i], w.upper[i] = p.pad[i] - reach;
    w.taps[i] = p.filter[i], w.offset_step[i] = p.dilation[i], w.tap0[i] = 0, w.tap_step[i] = 1;
  }
  if (!bwd_data) return {w};
  // bwd_data: per stride phase (conv_stride_phases) the stride-1 convolution of dy over the phase's taps, walked
  // from the largest (the smallest dy offset, the box's lower corner) down.
  auto phase_axis = [&](Sm90Im2colWalk& v, int i, const ConvStridePhase& ph) {
    const std::int64_t lower = ph.doff0 - std::int64_t{std::max(ph.ntap - 1, 0)} * ph.doffstep;
    v.phase[i] = ph.phase, v.phase_stride[i] = p.stride[i], v.pixels[i] = ph.q, v.taps[i] = ph.ntap;
    v.tap0[i] = ph.tap0 + std::max(ph.ntap - 1, 0) * ph.step, v.tap_step[i] = -ph.step, v.offset_step[i] = ph.doffstep;
    v.pad[i] = -lower, v.upper[i] = lower + ph.q - w.tensor[i];
  };
  std::vector<Sm90Im2colWalk> out;
  for (const ConvStridePhase& a : conv_stride_phases(p, 0))
    for (const ConvStridePhase& b : conv_stride_phases(p, 1))
      for (const ConvStridePhase& c : conv_stride_phases(p, 2)) {
        Sm90Im2colWalk v = w;
        phase_axis(v, 0, a), phase_axis(v, 1, b), phase_axis(v, 2, c);
        out.push_back(v);
      }
  return out;
}

bool sm90_phase_store(const ConvProblem& p) {
  return p.dir == ConvDir::bwd_data && p.stride != std::array<std::int64_t, 3>{1, 1, 1};
}

GemmProblem sm90_im2col_gemm(const ConvProblem& p) {
  const auto o = p.out();
  const std::int64_t out_pixels = p.n * o[0] * o[1] * o[2], in_pixels = p.n * p.in[0] * p.in[1] * p.in[2];
  const auto row = MatLayout::row, col = MatLayout::col;
  GemmProblem g;
  switch (p.dir) {
    case ConvDir::fwd:  // y[pixels, K] = im2col(x)[pixels, taps x C] w[K, taps x C]^T
      g.m = out_pixels, g.n = p.k, g.k = p.c, g.layout_a = row, g.layout_b = col, g.a = p.x, g.b = p.w, g.c = p.y;
      g.epilogue = p.epilogue;
      break;
    case ConvDir::bwd_data:  // dx[pixels, C] = im2col(dy)[pixels, taps x K] w'[taps x K, C]
      g.m = in_pixels, g.n = p.c, g.k = p.k, g.layout_a = row, g.layout_b = row, g.a = p.y, g.b = p.w, g.c = p.x;
      break;
    case ConvDir::bwd_weight:  // dw[K, taps x C] = dy[pixels, K]^T im2col(x)[pixels, taps x C]
      g.m = p.k, g.n = p.filter[0] * p.filter[1] * p.filter[2] * p.c, g.k = out_pixels;
      g.layout_a = col, g.layout_b = row, g.a = p.y, g.b = p.x, g.c = p.w;
      break;
  }
  g.layout_c = row, g.acc = p.acc;
  return g;
}

// The rules of fam=sm90 beyond the shared ones: GEMM (or a convolution that is one), A and B by TMA
// (16-byte row strides), cluster halves, the staged epilogue, the split-K workspace.
template <bool kExplain>
Verdict ProblemLegality::check_sm90(const KernelConfig& c) const {
  if (!gemm_ && !pointwise_ && !im2col_)
    return fail<kExplain>("family_op", [&] { return im2col_refusal_ + " (fam=sm80 and dw serve it)"; });
  const GemmProblem& g = gemm_ ? *gemm_ : pointwise_ ? *pointwise_ : *im2col_;
  if (g.a != g.b) return fail<kExplain>("dtype", [] { return "fam=sm90 needs A and B of one dtype"; });
  // Each operand's contiguous extent (K when K-major, M or N when M/N-major) is TMA's row stride.
  for (int i = 0; i < 2; ++i)
    if ((extents_[i] * size_bytes(g.a)) % 16 != 0)
      return fail<kExplain>("tma_stride", [&] {
        return std::string("TMA needs 16-byte row strides: ") + (i == 0 ? "A" : "B") + "'s contiguous extent " +
               std::to_string(extents_[i]) + " elements of " + std::string(to_string(g.a)) +
               " is not a multiple of 16 bytes (fam=sm80 serves it)";
      });
  const bool a_mn = g.layout_a == MatLayout::col, b_mn = g.layout_b == MatLayout::row;
  if (c.tile_m < 64 && (a_mn || !gemm_))
    return fail<kExplain>("short_tile", [&] {
      return "fam=sm90 short tiles (tile_m " + std::to_string(c.tile_m) + ") run GEMMs with a K-major A (layout r x x)";
    });
  if (c.tile_n % 64 != 0 && (b_mn || !gemm_))
    return fail<kExplain>("tile_n", [&] {
      return "fam=sm90 tile_n " + std::to_string(c.tile_n) + " (not a multiple of 64) runs GEMMs with a K-major B "
             "(layout x c x): an N-major B and the convolutions' loads come in 64-row blocks";
    });
  if (g.a == DType::f32 && (a_mn || b_mn))
    return fail<kExplain>("layout", [] {
      return "fam=sm90 reads f32 inputs as tf32, which wgmma takes K-major only (layout r c x); fam=sm80 serves the others";
    });
  if ((a_mn && c.cluster_n == 2 && c.tile_m % 128 != 0) || (b_mn && c.cluster_m == 2 && c.tile_n % 128 != 0))
    return fail<kExplain>("cluster", [] {
      return "an M/N-major operand shared by a cluster is loaded in halves of whole 64-row blocks: its tile "
             "dimension must be a multiple of 128";
    });
  if (im2col_ && sm90_phase_store(*conv_) && c.splitk > 1 &&
      c.splitk_mode == static_cast<int>(SplitKMode::parallel))
    return fail<kExplain>("splitk", [] {
      return "fam=sm90 strided bwd_data scatters the dx rows of each stride phase in its epilogue: no parallel split-K "
             "(its reduction stores rows in order)";
    });
  if (c.epi == static_cast<int>(EpiVariant::smem)) {
    if (g.layout_c != MatLayout::row)
      return fail<kExplain>("epi", [] { return "fam=sm90 epi=smem stores row-major D by TMA (epi=direct serves rc c)"; });
    if ((g.n * size_bytes(g.c)) % 16 != 0)
      return fail<kExplain>("tma_stride", [&] {
        return "epi=smem: TMA needs 16-byte rows of D; N = " + std::to_string(g.n) + " elements of " +
               std::string(to_string(g.c)) + " is not a multiple of 16 bytes (epi=direct serves it)";
      });
  }
  if (c.epi == static_cast<int>(EpiVariant::smem) || g.scale == GemmScale::block) {
    const int smem = sm90_smem_bytes(c, size_bytes(g.c), g.scale == GemmScale::block);
    if (smem > arch_.smem_per_block_optin)
      return fail<kExplain>("smem", [&] {
        return std::to_string(smem) + " bytes of shared memory with the " + std::string(to_string(g.c)) +
               " output tile staged or the block scales exceed " + std::to_string(arch_.smem_per_block_optin) +
               " per block on " + arch_.name;
      });
  }
  if (c.splitk > 1 && g.m * g.n * g.batch * c.splitk >= (std::int64_t{1} << 31))
    return fail<kExplain>("index32", [&] { return "split-K partials of 2^31 or more elements need 64-bit indexing"; });
  // Block scales: each 128-K block's sums go to a partial accumulator set before they are scaled into the
  // accumulators (kernels/gemm/sm90.cuh, sm90_block_scaled_mainloop): 64 + 2 x 64 registers a thread at 64 x 128
  // (two partials), 96 + 96 at 64 x 192 and 128 + 64 at 64 x 256 (one, in two column parts).
  if (g.scale == GemmScale::block && !sm90_block_scale_tile_ok(c.tile_m / c.warps_m, c.tile_n))
    return fail<kExplain>("block_scale", [&] {
      return "scale=block promotes every 128-K block through partial accumulator sets: 64 rows per consumer "
             "warpgroup (tile_m / warps_m = 64) and tile_n a multiple of 64 (B's scales of at most two column blocks "
             "per tile), not " + std::to_string(c.tile_m / c.warps_m) + " rows x " + std::to_string(c.tile_n);
    });
  // Measured 2026-11-29 (H200, v23 and again v24 with two partial sets): block-scaled ping-pong hangs once both
  // consumers run tiles (a CTA with two or more); cause not found.
  if (g.scale == GemmScale::block && c.warps_n == 2)
    return fail<kExplain>("block_scale", [] {
      return "scale=block runs cooperative consumers only (warps=1x1 or 2x1): its ping-pong (1x2) hung on the GPU "
             "once a CTA ran two tiles";
    });
  return {};
}

template Verdict ProblemLegality::check<true>(const KernelConfig&) const;
template Verdict ProblemLegality::check<false>(const KernelConfig&) const;

Verdict legal(const Problem& p, const KernelConfig& config, const ArchSpec& arch) {
  if (auto v = legal_on_arch(config, arch, input_dtype(p)); !v) return v;
  const ProblemLegality problem(p, arch);
  return problem.check<true>(problem.resolve(config));
}

}  // namespace tilepick
