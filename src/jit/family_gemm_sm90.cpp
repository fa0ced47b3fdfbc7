// wgmma GEMM family (fam=sm90): plan builder. One program per (specialization, config) holding
// tp::gemm_sm90<Cfg> (kernels/gemm/sm90.cuh); A and B reach it through TMA tensor maps, which are
// encoded per call from the operand pointers (cuTensorMapEncodeTiled, no device work).
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "../../kernels/gemm/params.cuh"
#include "../../kernels/common/wgmma_in.cuh"
#include "../../kernels/gemm/sm90_params.cuh"
#include "codegen.hpp"
#include "core/cuda_driver.hpp"
#include "families.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"

namespace tilepick::family {

static_assert(sizeof(tp::TensorMap) == sizeof(CUtensorMap), "TensorMap must match CUtensorMap");
static_assert(sizeof(tp::GemmSm90Params) == 640, "GemmSm90Params must match the device layout");

namespace {

CUtensorMapDataType map_dtype(DType t) {
  return t == DType::bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
         : t == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : t == DType::f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                           : CU_TENSOR_MAP_DATA_TYPE_UINT8;  // e4m3, e5m2: raw bytes
}

tp::TensorMap to_param(const CUtensorMap& map) {
  tp::TensorMap out;
  std::memcpy(&out, &map, sizeof(out));
  return out;
}

// A 3-D tensor (dims innermost first, dims[0] contiguous, strides of dims 1 and 2 in elements) as a tensor
// map with boxes of `box`, swizzled in spans of `swizzle` bytes (128 or 64); reads out of bounds give zeros,
// writes out of bounds are dropped.
tp::TensorMap tiled_map(const void* ptr, DType t, const std::int64_t (&dims)[3], const std::int64_t (&strides)[2],
                        const int (&box)[3], const char* which, int swizzle = 128) {
  const auto& d = cuda::detail::require_driver("fam=sm90 tensor map");
  if (!d.tensor_map_encode_tiled) throw Error(Status::cuda_error, "fam=sm90: the driver has no cuTensorMapEncodeTiled");
  const std::int64_t e = size_bytes(t);
  cuuint64_t gdims[3], gstrides[2];
  cuuint32_t gbox[3];
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  for (int i = 0; i < 3; ++i) gdims[i] = static_cast<cuuint64_t>(dims[i]), gbox[i] = static_cast<cuuint32_t>(box[i]);
  for (int i = 0; i < 2; ++i) gstrides[i] = static_cast<cuuint64_t>(strides[i] * e);
  CUtensorMap map;
  cuda::detail::check(d.tensor_map_encode_tiled(&map, map_dtype(t), 3, const_cast<void*>(ptr), gdims, gstrides, gbox,
                                                elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                      "cuTensorMapEncodeTiled", std::string("fam=sm90 operand ") + which);
  return to_param(map);
}

// A row-major 3-D tensor (cols contiguous, rows `ld` elements apart, `batch` of them) in boxes of box_cols x box_rows.
tp::TensorMap rowmajor_map(const void* ptr, DType t, std::int64_t cols, std::int64_t rows, std::int64_t batch,
                           std::int64_t ld, std::int64_t batch_stride, int box_cols, int box_rows, const char* which,
                           int swizzle = 128) {
  return tiled_map(ptr, t, {cols, rows, batch}, {ld, batch_stride}, {box_cols, box_rows, 1}, which, swizzle);
}

// The tensor an im2col walk reads (NHWC or NDHWC) as a TMA im2col map: `pixels` pixels a load, 128 bytes of
// channels each.
tp::TensorMap im2col_map(const void* ptr, DType t, const ConvProblem& p, const Sm90Im2colWalk& walk, int pixels) {
  const auto& d = cuda::detail::require_driver("fam=sm90 im2col tensor map");
  if (!d.tensor_map_encode_im2col) throw Error(Status::cuda_error, "fam=sm90: the driver has no cuTensorMapEncodeIm2col");
  const int rank = p.ndim + 2;  // C, W, H, (D,) N
  const std::int64_t e = size_bytes(t);
  cuuint64_t dims[5], strides[4];
  int lower[3], upper[3];
  cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  dims[0] = static_cast<cuuint64_t>(walk.channels);
  std::int64_t stride = walk.channels * e;
  for (int j = 0; j < p.ndim; ++j) {  // spatial dims innermost first: w, h, d
    const int i = 2 - j;
    dims[1 + j] = static_cast<cuuint64_t>(walk.tensor[i]);
    strides[j] = static_cast<cuuint64_t>(stride);
    stride *= walk.tensor[i];
    lower[j] = static_cast<int>(-walk.pad[i]), upper[j] = static_cast<int>(walk.upper[i]);
    elem_strides[1 + j] = static_cast<cuuint32_t>(walk.stride[i]);
  }
  dims[rank - 1] = static_cast<cuuint64_t>(p.n);
  strides[rank - 2] = static_cast<cuuint64_t>(stride);
  CUtensorMap map;
  cuda::detail::check(d.tensor_map_encode_im2col(&map, map_dtype(t), static_cast<cuuint32_t>(rank), const_cast<void*>(ptr),
                                                 dims, strides, lower, upper, static_cast<cuuint32_t>(128 / e),
                                                 static_cast<cuuint32_t>(pixels), elem_strides,
                                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                      "cuTensorMapEncodeIm2col", "fam=sm90 convolution im2col operand");
  return to_param(map);
}

// The kernel's Cfg::in_type (kernels/common/wgmma_in.cuh), -1 for what wgmma does not take.
int wgmma_in_type(DType t) {
  switch (t) {
    case DType::f16: return tp::kWgF16;
    case DType::bf16: return tp::kWgBf16;
    case DType::e4m3: return tp::kWgE4m3;
    case DType::e5m2: return tp::kWgE5m2;
    case DType::f32: return tp::kWgTf32;  // read as tf32 by the tensor cores
    default: return -1;
  }
}

// The plan of a GEMM, or (conv != nullptr) of the convolution whose GEMM view (sm90_im2col_gemm) p is.
KernelPlan plan_sm90(const GemmProblem& p, const KernelConfig& c, const ConvProblem* conv) {
  using namespace codegen;
  const std::string config_text = to_string(c);
  if (p.a != p.b || wgmma_in_type(p.a) < 0 || is_fp8(p.c))
    throw Unsupported("fam=sm90 gemm needs f16, bf16, e4m3, e5m2 or f32 (tf32) A and B of one dtype and a 16- or 32-bit output: '" +
                      to_string(p) + "'");
  if (c.align_c == 0) throw Unsupported("fam=sm90 gemm: config alignment not resolved");
  const bool c_row = p.layout_c == MatLayout::row, beta = p.beta != 0.0;
  if (c.tile_k * size_bytes(p.a) != 128 || c.warps_m * c.warps_n > 2 || !sm90_consumer_rows_ok(c.tile_m / c.warps_m))
    throw Unsupported("fam=sm90: config '" + config_text + "' has no kernel (see legality)");
  CfgText cfg;
  cfg.i("tile_m", c.tile_m).i("tile_n", c.tile_n).i("stages", c.stages).i("consumers", c.warps_m * c.warps_n);
  cfg.b("pingpong", c.warps_n == 2);
  cfg.i("cluster_m", c.cluster_m).i("cluster_n", c.cluster_n);
  const bool staged = c.epi == static_cast<int>(EpiVariant::smem);
  if (staged && !c_row) throw Unsupported("fam=sm90 epi=smem stores row-major D only: '" + to_string(p) + "'");
  const Sm90Staging staging = sm90_staging(c, size_bytes(p.c), p.scale == GemmScale::block);
  cfg.b("epi_smem", staged).i("epi_cols", staged ? staging.cols : c.tile_n).i("epi_bufs", staging.buffers);
  const int epi_block = staging.block_bytes;  // bytes of a staged column block (map_d's box)
  cfg.i("epi_block", epi_block);
  const bool a_mn = p.layout_a == MatLayout::col, b_mn = p.layout_b == MatLayout::row;  // M/N-major operands
  if ((is_fp8(p.a) || p.a == DType::f32) && (a_mn || b_mn))
    throw Unsupported("fam=sm90: 8-bit and tf32 wgmma read K-major A and B only: '" + to_string(p) + "'");
  cfg.b("a_mn", a_mn).b("b_mn", b_mn);
  // skmode=parallel: fp32 partials + the reduction kernel; skmode=serial: stream-K inside the kernel.
  const bool parallel = c.splitk_mode == static_cast<int>(SplitKMode::parallel);
  const bool split = c.splitk > 1 && parallel, stream_k = c.splitk > 1 && !parallel;
  if (split && staged)
    throw Unsupported("fam=sm90: config '" + config_text + "': parallel split-K runs with epi=direct only");
  if (stream_k && (c.cluster_m * c.cluster_n > 1 || c.warps_n > 1))
    throw Unsupported("fam=sm90: config '" + config_text + "': stream-K runs without clusters or ping-pong");
  cfg.b("splitk", split).b("stream_k", stream_k);
  cfg.i("raster", c.raster).i("swizzle", c.swizzle).i("align_c", c.align_c);
  cfg.b("c_colmajor", !c_row).b("has_beta", beta).b("has_bias", p.epilogue.bias).i("act", static_cast<int>(p.epilogue.act));
  cfg.i("in_type", wgmma_in_type(p.a)).type("TC", device_type(p.c)).i("conv", conv ? conv->ndim : 0);
  const bool block_scale = p.scale == GemmScale::block;
  if (block_scale && (!sm90_block_scale_tile_ok(c.tile_m / c.warps_m, c.tile_n) || c.warps_n == 2))
    throw Unsupported("fam=sm90 scale=block: config '" + config_text + "' has no kernel (see legality)");
  cfg.b("block_scale", block_scale);
  cfg.i("conv_dir", conv ? static_cast<int>(conv->dir) : 0);
  // Strided bwd_data: one launch per stride phase, whose dx rows the epilogue scatters (Cfg::phase_store).
  const std::vector<Sm90Im2colWalk> walks = conv ? sm90_im2col_walks(*conv) : std::vector<Sm90Im2colWalk>{};
  const bool phased = conv && sm90_phase_store(*conv);
  cfg.b("phase_store", phased);
  const std::string spec = "gemm.sm90 a=" + std::string(to_string(p.a)) + " c=" + std::string(to_string(p.c)) +
                           " layout=" + p.layout_string() + " align_c=" + std::to_string(c.align_c) +
                           " beta=" + (beta ? "1" : "0") + " ep=" + to_string(p.epilogue) + (split ? " splitk" : "") + (stream_k ? " stream_k" : "") +
                           (conv ? " conv=" + std::to_string(conv->ndim) + "d." + std::string(to_string(conv->dir)) : "") +
                           (phased ? " phases" : "") + (block_scale ? " scale=block" : "");
  const int threads = threads_per_block(c);
  KernelPlan plan;
  plan.kernels.push_back(make_source("tp_gemm_sm90_", "gemm/sm90.cuh", cfg, "tp::GemmSm90Params", "tp::gemm_sm90", spec,
                                     config_text, threads, EntryOptions{true, 1}));

  // The persistent grid walks cluster tiles (cluster_m x cluster_n CTA tiles).
  const int cs = c.cluster_m * c.cluster_n;
  if (cs > 2) throw Unsupported("fam=sm90: clusters of more than 2 CTAs are not implemented: '" + to_string(c) + "'");
  // Launches: one, or (strided bwd_data) one per stride phase, each a GEMM of the phase's dx pixels.
  struct View {
    tp::GemmSm90Params base{};
    std::size_t map_walk = 0;  // convolutions: the walk (of `walks`) its im2col map is encoded from
    std::int64_t units = 0, sk_ctas = 0;
  };
  std::vector<View> views;
  std::size_t sk_flag_bytes = 0;
  if (phased && split)
    throw Unsupported("fam=sm90 strided bwd_data stores dx rows per stride phase: no parallel split-K: '" + config_text + "'");
  for (std::size_t w = 0; w < std::max<std::size_t>(walks.size(), 1); ++w) {
    View v;
    tp::GemmSm90Params& base = v.base;
    const Sm90Im2colWalk* walk = walks.empty() ? nullptr : &walks[w];
    std::int64_t m = p.m, ktiles = ceil_div(p.k, std::int64_t{c.tile_k});
    if (walk) {  // Sm90Im2col: fwd and bwd_data k-tiles are filter taps x channel blocks; bwd_weight's are pixels
      const std::int64_t taps = walk->taps[0] * walk->taps[1] * walk->taps[2];
      // A phase no tap reaches loads nothing (its dx pixels get zeros): its map is a phase's that loads.
      v.map_walk = w;
      for (std::size_t o = 0; taps == 0 && o < walks.size(); ++o)
        if (walks[o].taps[0] * walks[o].taps[1] * walks[o].taps[2] > 0) v.map_walk = o;
      if (conv->dir == ConvDir::bwd_data) m = conv->n * walk->pixels[0] * walk->pixels[1] * walk->pixels[2];
      if (conv->dir != ConvDir::bwd_weight) ktiles = taps * ceil_div(p.k, std::int64_t{c.tile_k});
      if (ktiles * c.tile_k > 0x7fffffff) throw Unsupported("fam=sm90 convolution: more than 2^31 - 1 reduction steps");
      for (int j = 0; j < 3; ++j) {  // (w, h, d)
        const int i = 2 - j;
        tp::Sm90ConvParams& g = base.conv;
        g.out[j] = static_cast<int>(walk->pixels[i]), g.stride[j] = static_cast<int>(walk->stride[i]);
        g.pad[j] = static_cast<int>(walk->pad[i]), g.dilation[j] = static_cast<int>(walk->offset_step[i]);
        g.filter[j] = static_cast<int>(walk->taps[i]), g.tap0[j] = static_cast<int>(walk->tap0[i]);
        g.tap_step[j] = static_cast<int>(walk->tap_step[i]), g.wfilter[j] = static_cast<int>(conv->filter[i]);
        g.phase[j] = static_cast<int>(walk->phase[i]), g.phase_stride[j] = static_cast<int>(walk->phase_stride[i]);
        g.image[j] = static_cast<int>(conv->in[i]);
      }
      base.conv.cblocks = static_cast<int>(ceil_div(p.k, std::int64_t{c.tile_k})), base.conv.channels = static_cast<int>(conv->c);
    }
    const std::int64_t tiles_m = ceil_div(m, std::int64_t{c.tile_m} * c.cluster_m);
    const std::int64_t tiles_n = ceil_div(p.n, std::int64_t{c.tile_n} * c.cluster_n);
    const std::int64_t tiles_total = tiles_m * tiles_n * p.batch;
    if (tiles_total * c.splitk > 0x7fffffff) throw Unsupported("fam=sm90 gemm: more than 2^31 - 1 work units");
    base.m = static_cast<int>(m), base.n = static_cast<int>(p.n);
    base.k = static_cast<int>(walk && conv->dir != ConvDir::bwd_weight ? ktiles * c.tile_k : p.k);
    base.batch = static_cast<int>(p.batch);
    base.ldc = static_cast<int>(c_row ? p.n : p.m);
    base.batch_stride_c = p.m * p.n;
    base.tiles_m = static_cast<int>(tiles_m), base.tiles_n = static_cast<int>(tiles_n);
    base.tiles_total = static_cast<int>(tiles_total);
    base.alpha = static_cast<float>(p.alpha), base.beta = static_cast<float>(p.beta);
    base.splitk = split || stream_k ? c.splitk : 1;  // stream-K: at most splitk CTAs per split tile
    base.slice_stride = p.m * p.n * p.batch;
    base.kblocks = static_cast<int>(p.k_blocks());
    v.units = tiles_total * c.splitk;
    // Stream-K (kernels/gemm/sm90.cuh, Sm90StreamK): a grid of every tile's CTA, or when there are few
    // tiles up to splitk CTAs per tile (never more than k-tiles), at most kSkMaxCtas; the workspace holds
    // flags (zeroed before each launch), then a partial-sum slot per CTA.
    v.sk_ctas = std::min<std::int64_t>({tiles_total * c.splitk, tiles_total * std::max<std::int64_t>(ktiles, 1), tp::kSkMaxCtas});
    if (stream_k && tiles_total * ktiles > 0x7fffffff)
      throw Unsupported("fam=sm90 stream-K: more than 2^31 - 1 k-tiles in all: '" + to_string(p) + "'");
    if (stream_k) {
      sk_flag_bytes = static_cast<std::size_t>(tp::kSkMaxCtas) * 2 * 4;
      plan.workspace_bytes = std::max(plan.workspace_bytes, sk_flag_bytes + static_cast<std::size_t>(v.sk_ctas) * c.tile_m * c.tile_n * 4);
    }
    views.push_back(v);
  }
  if (split) plan.workspace_bytes = round256(static_cast<std::size_t>(p.m * p.n * p.batch) * 4 * c.splitk);

  Launch main;
  main.block[0] = static_cast<unsigned>(threads);
  main.smem_bytes = static_cast<unsigned>(sm90_smem_bytes(c, size_bytes(p.c), p.scale == GemmScale::block));
  main.cluster[0] = static_cast<unsigned>(cs);
  main.persistent = true;
  const GemmProblem prob = p;
  const std::optional<ConvProblem> conv_prob = conv ? std::optional<ConvProblem>(*conv) : std::nullopt;
  // Each producer loads half of the operand its cluster shares (multicast), all of the other.
  const int box_m = c.cluster_n == 2 ? c.tile_m / 2 : c.tile_m, box_n = c.cluster_m == 2 ? c.tile_n / 2 : c.tile_n;
  const int rows_per_consumer = c.tile_m / c.warps_m;
  const int box_k = c.tile_k;  // 128 bytes of K
  // Split-K: the reduction kernel sums the slices in order and applies the epilogue.
  std::optional<GemmSplitkReduce> reduce;
  if (split) reduce.emplace(plan, p, c);
  plan.launches = [views, walks, main, prob, conv_prob, box_m, box_n, box_k, cs, staged, epi_block, phased, rows_per_consumer, a_mn, b_mn,
                   reduce, stream_k, sk_flag_bytes](const Operands& o) {
    // The maps the launches share, once per call; a convolution's im2col map once per walk its launches use.
    tp::TensorMap map_a{}, map_b{}, map_d{};
    std::vector<std::optional<tp::TensorMap>> walk_maps(walks.size());
    auto walk_map = [&](std::size_t w, const void* ptr, DType t, int pixels) {
      if (!walk_maps[w]) walk_maps[w] = im2col_map(ptr, t, *conv_prob, walks[w], pixels);
      return *walk_maps[w];
    };
    if (conv_prob) {  // Sm90Im2col; w (K x taps x C) as (C, taps, K)
      const ConvProblem& cp = *conv_prob;
      const std::int64_t taps = cp.filter[0] * cp.filter[1] * cp.filter[2];
      switch (cp.dir) {
        case ConvDir::fwd:  // x by im2col; w in boxes of 128 bytes x 1 tap x the rows one producer loads
          map_b = tiled_map(o.b, cp.w, {cp.c, taps, cp.k}, {cp.c, taps * cp.c}, {box_k, 1, box_n}, "w");
          break;
        case ConvDir::bwd_data:  // dy by im2col; w in N-major 64 x 64 blocks (64 channels x 1 tap x 64 of K)
          map_b = tiled_map(o.b, cp.w, {cp.c, taps, cp.k}, {cp.c, taps * cp.c}, {64, 1, 64}, "w");
          break;
        case ConvDir::bwd_weight:  // Operands (x, dy): dy as an M-major A (K x pixels), x by im2col 64 pixels a load
          map_a = rowmajor_map(o.b, cp.y, prob.m, prob.k, 1, prob.m, prob.m * prob.k, 64, 64, "dy");
          break;
      }
    } else {
      // K-major operands as (K, rows, batch) in boxes of 128 bytes of K x the rows one producer loads;
      // M/N-major ones (16-bit) as (rows, K, batch) in boxes of 64 x 64 (kernels/gemm/sm90.cuh, load_operand).
      map_a = a_mn ? rowmajor_map(o.a, prob.a, prob.m, prob.k, prob.batch, prob.m, prob.m * prob.k, 64, 64, "A")
                   : rowmajor_map(o.a, prob.a, prob.k, prob.m, prob.batch, prob.k, prob.m * prob.k, box_k, box_m, "A");
      map_b = b_mn ? rowmajor_map(o.b, prob.b, prob.n, prob.k, prob.batch, prob.n, prob.k * prob.n, 64, 64, "B")
                   : rowmajor_map(o.b, prob.b, prob.k, prob.n, prob.batch, prob.k, prob.k * prob.n, box_k, box_n, "B");
    }
    // D row-major as (N, M, batch), boxes of one staged column block (epi_block bytes) x the rows of one consumer
    // (stride phases scatter their rows without it).
    if (staged && !phased)
      map_d = rowmajor_map(o.d, prob.c, prob.n, prob.m, prob.batch, prob.n, prob.m * prob.n,
                           epi_block / static_cast<int>(size_bytes(prob.c)), rows_per_consumer, "D", epi_block);
    std::vector<Launch> out;
    for (const View& v : views) {
      tp::GemmSm90Params g = v.base;
      g.map_a = map_a, g.map_b = map_b, g.map_d = map_d;
      if (conv_prob) {
        const ConvProblem& cp = *conv_prob;
        if (cp.dir == ConvDir::bwd_weight) g.map_b = walk_map(v.map_walk, o.a, cp.x, box_k);
        else g.map_a = walk_map(v.map_walk, o.a, cp.dir == ConvDir::fwd ? cp.x : cp.y, box_m);
      }
      g.c = o.c, g.d = o.d, g.bias = o.bias, g.workspace = static_cast<float*>(o.workspace);
      g.scale_a = o.scale_a, g.scale_b = o.scale_b;
      if (prob.scale == GemmScale::block && (!o.scale_a || !o.scale_b))
        throw Error(Status::invalid_argument, "fam=sm90 '" + to_string(prob) + "': scale=block needs Operands::scale_a and scale_b");
      Launch l = main;
      l.grid[0] = static_cast<unsigned>(cs * std::max<std::int64_t>(stream_k ? v.sk_ctas : v.units, 1));  // the launch bounds it per device
      l.zero_workspace_bytes = sk_flag_bytes;
      // Stride phases write disjoint dx pixels: each may start while the one before runs (not with stream-K,
      // whose phases share the workspace's flags and slots).
      l.overlap_previous = !out.empty() && !stream_k;
      l.params = pack(g);
      out.push_back(l);
    }
    if (reduce) out.push_back(reduce->for_operands(o));
    return out;
  };
  return plan;
}

}  // namespace

KernelPlan plan_gemm_sm90(const GemmProblem& p, const KernelConfig& c) { return plan_sm90(p, c, nullptr); }

// A convolution that is a GEMM runs as that GEMM; the others by TMA im2col (sm90_im2col_refusal).
KernelPlan plan_conv_sm90(const ConvProblem& p, const KernelConfig& c) {
  const std::optional<GemmProblem> g = p.pointwise_gemm();
  if (!g) {
    if (std::string why = sm90_im2col_refusal(p); !why.empty()) throw Unsupported(why + ": '" + to_string(p) + "'");
    return plan_sm90(sm90_im2col_gemm(p), c, &p);
  }
  KernelPlan plan = plan_gemm_sm90(*g, c);
  if (p.dir == ConvDir::bwd_weight) {  // Operands (x, dy) -> GEMM (A = dy, B = x)
    plan.launches = [gemm = std::move(plan.launches)](const Operands& o) {
      Operands swapped = o;
      std::swap(swapped.a, swapped.b);
      return gemm(swapped);
    };
  }
  return plan;
}

}  // namespace tilepick::family
