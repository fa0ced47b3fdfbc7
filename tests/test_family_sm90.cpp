// The sm90 GEMM family's plan builder: programs, entry declaration, specialization, split-K
// reduction and workspace, over every legal registry config of a few problems. No GPU needed (the
// launches encode TMA tensor maps through the driver and are exercised on the GPU by
// bench/sm90_gpu.sh); NVRTC compiles of the space run in ctest jit_compile_sm_90a.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

#include "../kernels/gemm/sm90_params.cuh"
#include "../kernels/gemm/sm90_schedule.cuh"
#include "test_util.hpp"

using namespace tilepick;

namespace {

const ArchSpec& h100() { return test::arch("h100_sxm"); }

// The kernel source of a legal sm90 (problem, config) pair; checks that wgmma reads A and B with the
// expected majorness (a_mn: M-major A, b_mn: N-major B).
std::string sm90_code(const Problem& p, const KernelConfig& cfg, bool a_mn, bool b_mn) {
  const Verdict v = legal(p, resolve(cfg, p), h100());
  EXPECT_TRUE(v.ok) << v.rule << ": " << v.reason;
  if (!v.ok) return {};
  const std::string code = make_plan(p, resolve(cfg, p)).kernels.at(0).code;
  EXPECT_NE(code.find(std::string("a_mn = ") + (a_mn ? "true" : "false")), std::string::npos);
  EXPECT_NE(code.find(std::string("b_mn = ") + (b_mn ? "true" : "false")), std::string::npos);
  return code;
}

}  // namespace

TEST(Sm90Plan, EveryLegalConfigPlans) {
  const char* problems[] = {
      "gemm rcr m4096 n4096 k4096 bf16",
      "gemm rrr m131 n232 k200 f16 ep=bias+relu beta=0.5",
      "gemm crc batch3 m520 n96 k1000 bf16:bf16:f32 alpha=0.5",
      "gemm ccr m16 n6144 k4096 bf16 ep=bias+gelu_erf",
  };
  std::size_t planned = 0, split = 0, streamed = 0, pingpong = 0;
  std::set<std::string> names;
  for (const char* text : problems) {
    SCOPED_TRACE(text);
    const Problem p = parse_problem(text);
    const auto& g = std::get<GemmProblem>(p);
    for (const auto& e : Registry::default_registry().lookup(p, h100())) {
      if (e.config.fam() != Family::sm90) continue;
      SCOPED_TRACE(to_string(e.config));
      const KernelPlan plan = make_plan(p, e.config);
      const KernelSource& k = plan.kernels.at(0);
      const int consumers = e.config.warps_m * e.config.warps_n;
      const int threads = 128 * (consumers + 1);
      EXPECT_EQ(k.name.rfind("tp_gemm_sm90_", 0), 0u);
      EXPECT_EQ(k.threads, threads);
      EXPECT_NE(k.code.find("__launch_bounds__(" + std::to_string(threads) + ", 1)"), std::string::npos);
      EXPECT_NE(k.code.find("(const __grid_constant__ tp::GemmSm90Params p)"), std::string::npos);
      EXPECT_NE(k.code.find("#include \"gemm/sm90.cuh\""), std::string::npos);
      // Layouts reach the kernel as its operands' majorness.
      EXPECT_NE(k.code.find(std::string("a_mn = ") + (g.layout_a == MatLayout::col ? "true" : "false")), std::string::npos);
      EXPECT_NE(k.code.find(std::string("b_mn = ") + (g.layout_b == MatLayout::row ? "true" : "false")), std::string::npos);
      const bool stream_k = e.config.splitk > 1 && e.config.splitk_mode == static_cast<int>(SplitKMode::serial);
      EXPECT_NE(k.code.find(std::string("stream_k = ") + (stream_k ? "true" : "false")), std::string::npos);
      if (stream_k) {  // one kernel; flags + a partial-sum tile per CTA
        ++streamed;
        EXPECT_EQ(plan.kernels.size(), 1u);
        EXPECT_GT(plan.workspace_bytes, std::size_t{2048});
        EXPECT_EQ((plan.workspace_bytes - 2048) % (e.config.tile_m * e.config.tile_n * 4), 0u);
      } else if (e.config.splitk > 1) {
        ++split;
        ASSERT_EQ(plan.kernels.size(), 2u);
        EXPECT_EQ(plan.kernels[1].name.rfind("tp_splitk_reduce_", 0), 0u);
        EXPECT_EQ(plan.workspace_bytes % 256, 0u);
        EXPECT_GE(plan.workspace_bytes, static_cast<std::size_t>(g.m * g.n * g.batch * 4 * e.config.splitk));
      } else {
        EXPECT_EQ(plan.kernels.size(), 1u);
        EXPECT_EQ(plan.workspace_bytes, 0u);
      }
      EXPECT_NE(k.code.find("consumers = " + std::to_string(consumers)), std::string::npos);
      EXPECT_NE(k.code.find(std::string("pingpong = ") + (e.config.warps_n == 2 ? "true" : "false")), std::string::npos);
      pingpong += e.config.warps_n == 2;
      names.insert(k.name);
      ++planned;
    }
  }
  EXPECT_GT(planned, 1000u);
  EXPECT_GT(split, 100u);
  EXPECT_GT(streamed, 100u);
  EXPECT_GT(pingpong, 100u);
  EXPECT_EQ(names.size(), planned);  // every (problem, config) pair is its own program
}

TEST(Sm90Plan, RefusesWhatLegalityRefuses) {
  const Problem f32 = parse_problem("gemm rcr m256 n256 k256 f32");
  const KernelConfig c = resolve(parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=3"), f32);
  EXPECT_FALSE(legal(f32, c, h100()).ok);
  EXPECT_THROW(make_plan(f32, c), Unsupported);
  const Problem col = parse_problem("gemm rcc m256 n256 k256 bf16");
  const KernelConfig staged = resolve(parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=3 epi=smem"), col);
  EXPECT_EQ(legal(col, staged, h100()).rule, "epi");
  EXPECT_THROW(make_plan(col, staged), Unsupported);
}

// tile_n beyond powers of two is sm90's (wgmma N a multiple of 32): the config grammar takes multiples of 32,
// sm80 refuses them, and a cluster sharing an N-major B needs whole 64-row halves.
TEST(LegalityRule, Sm90TileN192) {
  const Problem rcr = parse_problem("gemm rcr m3072 n768 k2048 bf16"), rrr = parse_problem("gemm rrr m3072 n768 k2048 bf16");
  EXPECT_TRUE(legal(rcr, parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=4 epi=smem"), h100()).ok);
  EXPECT_TRUE(legal(rcr, parse_config("fam=sm90 tile=64x192x64 warps=1x2 stages=5"), h100()).ok);
  EXPECT_EQ(legal(rcr, parse_config("fam=sm90 tile=128x192x64 warps=1x1 stages=4"), h100()).rule, "registers");
  EXPECT_TRUE(legal(rcr, parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=4 cluster=2x1"), h100()).ok);
  EXPECT_EQ(legal(rrr, parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=4 cluster=2x1"), h100()).rule, "cluster");
  EXPECT_EQ(legal(rcr, parse_config("fam=sm80 tile=128x192x32 warps=2x2 stages=3"), h100()).rule, "tile");
  EXPECT_THROW(parse_config("fam=sm90 tile=128x80x64"), ParseError);
  const KernelPlan plan = make_plan(rcr, resolve(parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=4 epi=smem"), rcr));
  EXPECT_NE(plan.kernels.at(0).code.find("tile_n = 192"), std::string::npos);
  EXPECT_NE(plan.kernels.at(0).code.find("epi_block = 128"), std::string::npos);
}

// tile_n 32, 96, 160 and 224 (small-N tiles, finer steps against partial last waves): GEMMs with a K-major B only (N-major B and
// the convolutions' loads come in 64-row blocks); a 16-bit D whose tile rows are no multiple of 128 bytes is
// staged in 64-byte column blocks (the TMA store's box, 64-byte swizzle), an f32 D in 128-byte ones.
TEST(LegalityRule, Sm90TileNMultipleOf32) {
  const Problem rcr = parse_problem("gemm rcr m3072 n768 k2048 bf16"), rrr = parse_problem("gemm rrr m3072 n768 k2048 bf16");
  const Problem fp8 = parse_problem("gemm rcr m3072 n768 k2048 e4m3:e4m3:bf16 ep=bias");
  const Problem conv = parse_problem("fwd mb8 ic64 ih28 iw28 oc128 kh3 kw3 ph1 pw1 bf16");
  const KernelConfig c160 = parse_config("fam=sm90 tile=128x160x64 warps=2x1 stages=5 epi=smem");
  EXPECT_TRUE(legal(rcr, c160, h100()).ok);
  EXPECT_EQ(legal(rrr, c160, h100()).rule, "tile_n");
  EXPECT_EQ(legal(conv, c160, h100()).rule, "tile_n");
  EXPECT_TRUE(legal(fp8, parse_config("fam=sm90 tile=128x224x128 warps=2x1 stages=4 cluster=2x1 epi=smem"), h100()).ok);
  EXPECT_TRUE(legal(fp8, parse_config("fam=sm90 tile=128x96x128 warps=1x2 stages=6 epi=smem"), h100()).ok);
  EXPECT_EQ(legal(rcr, parse_config("fam=sm90 tile=256x160x64 warps=2x1 stages=4"), h100()).rule, "registers");
  const KernelConfig c32 = parse_config("fam=sm90 tile=64x32x64 warps=1x1 stages=8 epi=smem");
  EXPECT_TRUE(legal(rcr, c32, h100()).ok);
  EXPECT_EQ(legal(rrr, c32, h100()).rule, "tile_n");
  EXPECT_EQ(legal(rcr, parse_config("fam=sm90 tile=64x16x64 warps=1x1 stages=8"), h100()).rule, "tile_n");
  EXPECT_EQ(sm90_staging(c32, 2).block_bytes, 64);
  EXPECT_EQ(sm90_staging(c160, 2).block_bytes, 64);
  EXPECT_EQ(sm90_staging(c160, 4).block_bytes, 128);
  EXPECT_EQ(sm90_staging(parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 epi=smem"), 2).block_bytes, 128);
  const KernelPlan plan = make_plan(rcr, resolve(c160, rcr));
  EXPECT_NE(plan.kernels.at(0).code.find("tile_n = 160"), std::string::npos);
  EXPECT_NE(plan.kernels.at(0).code.find("epi_block = 64"), std::string::npos);
}

// Short tiles (small M): tile_m 16 or 32 with one consumer, whose wgmmas compute 64 rows (those past the tile read the
// stage's B rows and are dropped): K-major A (GEMMs), epi=direct, no stream-K, no cluster, tile_n >= 64 - tile_m;
// a stage holds only the tile's A rows, so more stages fit.
TEST(LegalityRule, Sm90ShortTiles) {
  const Problem rcr = parse_problem("gemm rcr m4 n6144 k4096 bf16 ep=bias"), crr = parse_problem("gemm crr m8 n6144 k4096 bf16");
  const Problem conv = parse_problem("fwd mb1 ic64 ih4 iw4 oc128 kh3 kw3 ph1 pw1 bf16");
  const KernelConfig c16 = parse_config("fam=sm90 tile=16x128x64 warps=1x1 stages=12 splitk=2 skmode=parallel");
  EXPECT_TRUE(legal(rcr, c16, h100()).ok);
  EXPECT_EQ(legal(crr, c16, h100()).rule, "short_tile");
  EXPECT_EQ(legal(conv, c16, h100()).rule, "short_tile");
  for (const char* bad : {"fam=sm90 tile=16x128x64 warps=1x1 stages=8 epi=smem", "fam=sm90 tile=32x128x64 warps=1x1 stages=8 splitk=2 skmode=serial",
                          "fam=sm90 tile=32x128x64 warps=1x1 stages=8 cluster=1x2", "fam=sm90 tile=16x32x64 warps=1x1 stages=8",
                          "fam=sm90 tile=32x128x64 warps=2x1 stages=8"})
    EXPECT_NE(legal(rcr, parse_config(bad), h100()).rule, "") << bad;
  EXPECT_TRUE(legal(rcr, parse_config("fam=sm90 tile=32x32x64 warps=1x1 stages=16"), h100()).ok);
  EXPECT_EQ(sm90_smem_bytes(c16, 2), 1024 + 12 * ((16 + 128) * 128 + 16) + 16);
  const KernelPlan plan = make_plan(rcr, resolve(c16, rcr));
  EXPECT_NE(plan.kernels.at(0).code.find("tile_m = 16"), std::string::npos);
}

// fp8 block scales: partial accumulator sets per consumer, so 64 rows per consumer and tile_n a multiple of 64 (192
// starts half-way into a 128-column block of B's scales on odd tiles), no ping-pong (it hung on the GPU);
// the kernel and its specialization know the mode; sm80 has no fp8 kernel at all.
TEST(LegalityRule, Sm90BlockScale) {
  const Problem block = parse_problem("gemm rcr m520 n392 k304 e4m3:e4m3:bf16 ep=bias scale=block");
  const Problem tensor = parse_problem("gemm rcr m520 n392 k304 e4m3:e4m3:bf16 ep=bias");
  auto rule = [&](const Problem& p, const char* c) { return legal(p, resolve(parse_config(c), p), h100()).rule; };
  for (const char* ok : {"fam=sm90 tile=128x128x128 warps=2x1 stages=4 epi=smem", "fam=sm90 tile=64x128x128 warps=1x1 stages=5",
                         "fam=sm90 tile=64x64x128 warps=1x1 stages=4", "fam=sm90 tile=128x64x128 warps=2x1 stages=4 cluster=2x1",
                         "fam=sm90 tile=128x128x128 warps=2x1 stages=4 splitk=2 skmode=serial",
                         "fam=sm90 tile=128x192x128 warps=2x1 stages=4", "fam=sm90 tile=128x192x128 warps=2x1 stages=3 epi=smem",
                         "fam=sm90 tile=128x256x128 warps=2x1 stages=3"}) {
    SCOPED_TRACE(ok);
    EXPECT_EQ(rule(block, ok), "");
    const KernelPlan plan = make_plan(block, resolve(parse_config(ok), block));
    EXPECT_NE(plan.kernels.at(0).code.find("block_scale = true"), std::string::npos);
    EXPECT_NE(plan.kernels.at(0).specialization.find("scale=block"), std::string::npos);
    const KernelPlan plain = make_plan(tensor, resolve(parse_config(ok), tensor));
    EXPECT_NE(plain.kernels.at(0).code.find("block_scale = false"), std::string::npos);
    EXPECT_NE(plain.kernels.at(0).name, plan.kernels.at(0).name);
  }
  for (const char* no : {"fam=sm90 tile=128x96x128 warps=2x1 stages=3", "fam=sm90 tile=128x128x128 warps=1x1 stages=4",
                         "fam=sm90 tile=128x160x128 warps=2x1 stages=4", "fam=sm90 tile=128x128x128 warps=1x2 stages=3",
                         "fam=sm90 tile=64x128x128 warps=1x2 stages=5"}) {
    SCOPED_TRACE(no);
    EXPECT_EQ(rule(block, no), "block_scale");
    EXPECT_EQ(rule(tensor, no), "");
    EXPECT_THROW(make_plan(block, resolve(parse_config(no), block)), Unsupported);
  }
  EXPECT_EQ(rule(block, "fam=sm80 tile=128x128x64 warps=2x2 stages=3"), "dtype");
  // The registry's pool keeps configs for block-scaled problems.
  std::size_t pool = 0;
  for (const auto& e : Registry::default_registry().lookup(block, h100())) pool += e.config.fam() == Family::sm90;
  EXPECT_GT(pool, 50u);
}

// A convolution that is a GEMM (1x1, stride 1, no padding, one group) runs on the sm90 GEMM kernel:
// fwd as rcr, bwd_data as rrr, bwd_weight as crr; other convolutions are refused with the reason.
TEST(LegalityRule, Sm90PointwiseConv) {
  const KernelConfig cfg = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 epi=smem");
  const struct {
    const char* problem;
    bool a_mn, b_mn;
  } cases[] = {{"fwd mb32 ic256 ih56 iw56 oc64 kh1 kw1 bf16 ep=bias+relu", false, false},
               {"bwd_data mb32 ic256 ih56 iw56 oc64 kh1 kw1 bf16", false, true},
               {"bwd_weight mb2 ic64 id4 ih14 iw14 oc128 kd1 kh1 kw1 bf16", true, true}};
  for (const auto& k : cases) {
    SCOPED_TRACE(k.problem);
    sm90_code(parse_problem(k.problem), cfg, k.a_mn, k.b_mn);
  }
  const KernelPlan plan = make_plan(parse_problem(cases[0].problem), resolve(cfg, parse_problem(cases[0].problem)));
  EXPECT_NE(plan.kernels.at(0).code.find("conv = 0"), std::string::npos);  // the GEMM kernel itself
  // The default spaces hold no sm90 convolution configs (data/spaces/trial/conv_sm90.json is not loaded).
  for (const auto& e : Registry::default_registry().lookup(parse_problem(cases[0].problem), h100()))
    EXPECT_NE(e.config.fam(), Family::sm90) << to_string(e.config);
}

// Other convolutions of one group run by TMA im2col (Sm90Im2col in kernels/gemm/sm90.cuh): legal within
// im2col's limits (bwd_data of any stride, bwd_weight with C % 64 == 0), planned as a conv = 2 / 3 kernel of
// their direction; the others are refused with the reason.
TEST(LegalityRule, Sm90Im2colConv) {
  const KernelConfig cfg = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 epi=smem");
  const struct {
    const char* problem;
    int ndim, dir;
    bool a_mn, b_mn;
  } runs[] = {{"fwd mb32 ic256 ih56 iw56 oc64 kh3 kw3 ph1 pw1 bf16 ep=bias+relu", 2, 0, false, false},
              {"fwd mb2 ic40 id7 ih8 iw9 oc64 kd3 kh3 kw3 sd2 sh2 sw2 pd1 ph1 pw1 f16", 3, 0, false, false},
              {"fwd mb2 ic64 ih13 iw13 oc128 kh1 kw1 sh2 sw2 bf16", 2, 0, false, false},
              {"fwd mb2 ic48 ih17 iw17 oc64 kh1 kw7 ph0 pw3 dh1 dw2 bf16:bf16:f32", 2, 0, false, false},
              {"bwd_data mb32 ic256 ih56 iw56 oc64 kh3 kw3 ph1 pw1 bf16", 2, 1, false, true},
              {"bwd_data mb2 ic40 id7 ih8 iw9 oc72 kd3 kh3 kw3 pd1 ph2 pw0 dh2 f16", 3, 1, false, true},
              {"bwd_weight mb32 ic128 ih28 iw28 oc128 kh3 kw3 sh2 sw2 ph1 pw1 bf16", 2, 2, true, true}};
  for (const auto& k : runs) {
    SCOPED_TRACE(k.problem);
    const Problem p = parse_problem(k.problem);
    const std::string code = sm90_code(p, cfg, k.a_mn, k.b_mn);
    EXPECT_NE(code.find("conv = " + std::to_string(k.ndim)), std::string::npos);
    EXPECT_NE(code.find("conv_dir = " + std::to_string(k.dir)), std::string::npos);
    EXPECT_NE(make_plan(p, resolve(cfg, p)).kernels.at(0).specialization.find("conv=" + std::to_string(k.ndim) + "d"),
              std::string::npos);
  }
  const struct {
    const char* problem;
    const char* rule;
    const char* says;
  } refused[] = {{"bwd_weight mb2 ic40 ih16 iw16 oc64 kh3 kw3 ph1 pw1 bf16", "family_op", "multiple of 64"},
                 {"fwd g2 mb32 ic256 ih56 iw56 oc64 kh3 kw3 ph1 pw1 bf16", "family_op", "one group"},
                 {"fwd mb2 ic64 ih300 iw300 oc64 kh3 kw3 ph129 pw1 bf16", "family_op", "[-128, 127]"},
                 {"fwd mb2 ic64 ih300 iw9 oc64 kh3 kw3 ph1 pw1 dh70 dw1 bf16", "family_op", "box corners"},
                 {"fwd mb2 ic64 id40 ih9 iw9 oc64 kd3 kh3 kw3 pd17 bf16", "family_op", "[-16, 15]"},
                 {"fwd mb2 ic64 ih90 iw90 oc64 kh9 kw9 sh9 sw9 bf16", "family_op", "strides at most 8"},
                 {"fwd mb2 ic12 ih9 iw9 oc64 kh3 kw3 bf16", "tma_stride", "16-byte"},
                 {"fwd mb2 ic64 ih9 iw9 oc36 kh3 kw3 bf16", "tma_stride", "epi=direct"}};
  for (const auto& k : refused) {
    SCOPED_TRACE(k.problem);
    Problem p;
    try {
      p = parse_problem(k.problem);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const Verdict v = legal(p, resolve(cfg, p), h100());
    EXPECT_EQ(v.rule, k.rule) << v.reason;
    EXPECT_NE(v.reason.find(k.says), std::string::npos) << v.reason;
  }
  const Problem f32 = parse_problem("fwd mb2 ic64 ih9 iw9 oc64 kh3 kw3 f32");  // tf32 GEMMs only
  const Verdict v = legal(f32, resolve(parse_config("fam=sm90 tile=128x128x32 warps=2x1 stages=4"), f32), h100());
  EXPECT_EQ(v.rule, "family_op");
  EXPECT_NE(v.reason.find("f16 or bf16"), std::string::npos) << v.reason;
  // Output channels that TMA cannot store (36 x 2 bytes) run with epi=direct.
  const Problem odd_k = parse_problem("fwd mb2 ic64 ih9 iw9 oc36 kh3 kw3 bf16");
  const KernelConfig direct = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 epi=direct");
  EXPECT_TRUE(legal(odd_k, resolve(direct, odd_k), h100()).ok);
  EXPECT_THROW(make_plan(parse_problem(refused[0].problem), resolve(cfg, parse_problem(refused[0].problem))), Unsupported);
  const Problem strided = parse_problem("bwd_data mb32 ic256 ih56 iw56 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16");
  const KernelConfig split = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 splitk=2 skmode=parallel");
  EXPECT_EQ(legal(strided, resolve(split, strided), h100()).rule, "splitk");
  EXPECT_THROW(make_plan(strided, resolve(split, strided)), Unsupported);
}

// bwd_data walks (sm90_im2col_walks): one per stride phase; each dx pixel is in one phase, and a phase's tap v
// reads dy where the convolution puts it: (phase + stride x i) + pad - r x dilation = stride x (dy coordinate),
// for exactly the filter taps r that satisfy it.
TEST(LegalityRule, Sm90BwdDataPhases) {
  for (const char* text : {"bwd_data mb2 ic64 ih7 iw8 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
                           "bwd_data mb1 ic64 ih13 iw11 oc64 kh5 kw3 sh3 sw2 ph2 pw0 dh2 dw1 bf16",
                           "bwd_data mb1 ic64 ih9 iw9 oc64 kh1 kw1 sh2 sw2 bf16",
                           "bwd_data mb1 ic64 id5 ih6 iw7 oc64 kd3 kh3 kw3 sd2 sh1 sw3 pd1 ph1 pw1 f16",
                           "bwd_data mb1 ic64 ih10 iw10 oc64 kh3 kw3 ph1 pw1 bf16",
                           "bwd_data mb2 ic64 ih16 iw16 oc64 kh3 kw3 ph3 pw1 bf16"}) {  // padding past the filter's reach
    SCOPED_TRACE(text);
    const ConvProblem p = std::get<ConvProblem>(parse_problem(text));
    const auto walks = sm90_im2col_walks(p);
    const auto dy = p.out();
    std::int64_t pixels = 0;
    for (const auto& w : walks) {
      pixels += w.pixels[0] * w.pixels[1] * w.pixels[2];
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(w.phase_stride[d], p.stride[d]);
        EXPECT_EQ(w.tensor[d], dy[d]);
        std::set<std::int64_t> walked;
        for (std::int64_t v = 0; v < w.taps[d]; ++v) {
          const std::int64_t r = w.tap0[d] + v * w.tap_step[d];
          ASSERT_TRUE(r >= 0 && r < p.filter[d]) << r;
          walked.insert(r);
          for (std::int64_t i = 0; i < w.pixels[d]; ++i)  // dy coordinate the im2col box reads
            EXPECT_EQ(w.phase[d] + p.stride[d] * i + p.pad[d] - r * p.dilation[d], p.stride[d] * (i - w.pad[d] + v * w.offset_step[d]));
        }
        for (std::int64_t r = 0; r < p.filter[d]; ++r)
          EXPECT_EQ(walked.count(r) == 1, (w.phase[d] + p.pad[d] - r * p.dilation[d]) % p.stride[d] == 0) << r;
        EXPECT_EQ(w.tensor[d] + w.upper[d] + w.pad[d], w.pixels[d]);  // the box walks the phase's pixels
      }
    }
    EXPECT_EQ(pixels, p.in[0] * p.in[1] * p.in[2]);
    const KernelConfig direct = parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4 epi=direct");
    const bool strided = p.stride != std::array<std::int64_t, 3>{1, 1, 1};
    EXPECT_EQ(walks.size() > 1, strided);
    EXPECT_TRUE(legal(Problem(p), resolve(direct, Problem(p)), h100()).ok);
    const std::string code = make_plan(Problem(p), resolve(direct, Problem(p))).kernels.at(0).code;
    EXPECT_NE(code.find(std::string("phase_store = ") + (strided ? "true" : "false")), std::string::npos);
  }
}

// f32 inputs run as tf32 (wgmma k8): tile_k 32 (128 bytes of K), K-major A and B only.
TEST(LegalityRule, Sm90Tf32) {
  const Problem rcr = parse_problem("gemm rcr m131 n232 k200 f32 ep=bias+relu"), crr = parse_problem("gemm crr m128 n256 k200 f32");
  const KernelConfig c = parse_config("fam=sm90 tile=128x128x32 warps=2x1 stages=4 epi=smem");
  ASSERT_TRUE(legal(rcr, resolve(c, rcr), h100()).ok) << legal(rcr, resolve(c, rcr), h100()).reason;
  EXPECT_EQ(legal(crr, resolve(c, crr), h100()).rule, "layout");
  EXPECT_EQ(legal(rcr, resolve(parse_config("fam=sm90 tile=128x128x64 warps=2x1 stages=4"), rcr), h100()).rule, "tile_k");
  const KernelPlan plan = make_plan(rcr, resolve(c, rcr));
  EXPECT_NE(plan.kernels.at(0).code.find("in_type = 4"), std::string::npos);
  EXPECT_THROW(make_plan(crr, resolve(c, crr)), Unsupported);
}

// The stream-K schedule the kernel runs (kernels/gemm/sm90_schedule.cuh, compiled here for the host):
// every k-tile of every tile runs exactly once; a CTA starts inside a tile at most once, in its first
// piece after the data-parallel tiles; each tile's owner (the piece at k-tile 0) gathers exactly the
// CTAs whose pieces cover the rest of the tile, contiguous in K; no CTA beyond the grid is named.
TEST(Sm90StreamK, ScheduleCoversEveryKTileOnceAndOwnersGatherTheRest) {
  int checked = 0;
  for (int tiles : {1, 2, 7, 36, 72, 131, 132, 133, 144, 263, 264, 265, 1024})
    for (int ktiles : {1, 2, 3, 13, 64, 128})
      for (int splitk : {2, 4})
        for (int grid : {1, 16, 132}) {
          const int g = std::min({grid, tiles * std::min(splitk, ktiles), tp::kSkMaxCtas});
          SCOPED_TRACE("tiles " + std::to_string(tiles) + " ktiles " + std::to_string(ktiles) + " splitk " +
                       std::to_string(splitk) + " ctas " + std::to_string(g));
          const tp::Sm90SkSchedule sk(tiles, ktiles, splitk, g);
          std::vector<int> runs(static_cast<std::size_t>(tiles) * ktiles, 0);
          std::vector<std::array<int, 3>> started_inside(static_cast<std::size_t>(g), {-1, -1, -1});
          std::vector<std::vector<std::array<int, 3>>> pieces(static_cast<std::size_t>(g));
          for (int c = 0; c < g; ++c)
            sk.for_each_piece(c, g, ktiles, [&](int tile, int kt0, int kt1) {
              ASSERT_TRUE(tile >= 0 && tile < tiles && kt0 >= 0 && kt0 < kt1 && kt1 <= ktiles);
              for (int k = kt0; k < kt1; ++k) ++runs[static_cast<std::size_t>(tile) * ktiles + k];
              if (kt0 > 0) {
                ASSERT_EQ(started_inside[c][0], -1) << "CTA " << c << " starts inside two tiles";
                ASSERT_TRUE(pieces[c].empty() || pieces[c].back()[2] == ktiles) << "not its first split piece";
                started_inside[c] = {tile, kt0, kt1};
              }
              pieces[c].push_back({tile, kt0, kt1});
            });
          for (int r : runs) ASSERT_EQ(r, 1);
          for (int c = 0; c < g; ++c)
            for (const auto& [tile, kt0, kt1] : pieces[c]) {
              if (kt0 != 0 || kt1 == ktiles) continue;
              int next = kt1;
              for (int c2 = c + 1; sk.contributes(c2, tile, ktiles); ++c2) {
                ASSERT_LT(c2, g);
                ASSERT_EQ(started_inside[c2][0], tile) << "CTA " << c2 << " gathered for tile " << tile;
                ASSERT_EQ(started_inside[c2][1], next);
                next = started_inside[c2][2];
              }
              ASSERT_EQ(next, ktiles) << "tile " << tile << " owned by CTA " << c;
            }
          ++checked;
        }
  EXPECT_EQ(checked, 13 * 6 * 2 * 3);
  // No k-tiles (a bwd_data stride phase that no filter tap reaches): every tile's epilogue runs once, with zeros.
  for (int tiles : {1, 7, 132, 1000})
    for (int g : {1, 16, 132}) {
      const tp::Sm90SkSchedule sk(tiles, 0, 4, g);
      std::vector<int> runs(static_cast<std::size_t>(tiles), 0);
      for (int c = 0; c < g; ++c)
        sk.for_each_piece(c, g, 0, [&](int tile, int kt0, int kt1) {
          ASSERT_TRUE(tile >= 0 && tile < tiles && kt0 == 0 && kt1 == 0);
          ++runs[static_cast<std::size_t>(tile)];
        });
      for (int r : runs) EXPECT_EQ(r, 1) << "tiles " << tiles << " ctas " << g;
    }
}

TEST(LegalityRule, Sm90SplitK) {
  const Problem p = parse_problem("gemm rcr m16 n6144 k4096 bf16");
  auto check = [&](const std::string& c) { return legal(p, parse_config(c), h100()); };
  const std::string base = "fam=sm90 tile=64x128x64 warps=1x1 stages=4 ";
  EXPECT_TRUE(check(base + "splitk=4 skmode=parallel").ok);
  // skmode=serial is stream-K: no clusters, no ping-pong, at most 64 accumulators per consumer thread.
  EXPECT_TRUE(check(base + "splitk=4 skmode=serial epi=smem").ok);
  EXPECT_EQ(check(base + "splitk=4 skmode=serial cluster=2x1").rule, "splitk");
  EXPECT_EQ(check("fam=sm90 tile=128x128x64 warps=1x2 stages=4 splitk=2 skmode=serial").rule, "splitk");
  EXPECT_EQ(check("fam=sm90 tile=128x256x64 warps=2x1 stages=3 splitk=2 skmode=serial").rule, "splitk");
  // Its workspace: 256 x 2 zeroed int flags, then one tile of fp32 partial sums per CTA: at most
  // min(tiles x splitk, tiles x k-tiles, 256) CTAs (here 48 tiles x 4).
  const KernelConfig sk = resolve(parse_config(base + "splitk=4 skmode=serial"), p);
  const KernelPlan sk_plan = make_plan(p, sk);
  EXPECT_EQ(sk_plan.workspace_bytes, std::size_t{2048 + 192 * 64 * 128 * 4});
  ASSERT_EQ(sk_plan.kernels.size(), 1u);
  EXPECT_NE(sk_plan.kernels[0].code.find("stream_k = true"), std::string::npos);
  EXPECT_EQ(check(base + "splitk=4 skmode=parallel epi=smem").rule, "splitk");
  // 4096 / 64 = 64 K tiles: splitk 64 is the most.
  EXPECT_TRUE(check(base + "splitk=64 skmode=parallel").ok);
  const Problem short_k = parse_problem("gemm rcr m16 n6144 k128 bf16");
  const Verdict v = legal(short_k, parse_config(base + "splitk=4 skmode=parallel"), h100());
  EXPECT_EQ(v.rule, "splitk");
  EXPECT_NE(v.reason.find("2 K tiles"), std::string::npos) << v.reason;
}
