// The sm80 family's plan builders (GEMM and implicit-GEMM conv): plans for many legal
// (problem, config) pairs of the registry, launch geometry, workspace, parameter packing, stride
// phases of bwd_data, and real NVRTC compiles of a few programs. No GPU needed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "../kernels/conv/igemm_params.cuh"
#include "../kernels/gemm/params.cuh"
#include "jit/codegen.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/ref.hpp"
#include "tilepick/registry.hpp"

namespace fs = std::filesystem;
using namespace tilepick;

namespace {

const ArchSpec& h100() { return find_arch(default_arch_specs(), "sm_90"); }

Operands fake_operands() {
  Operands o;
  o.a = reinterpret_cast<const void*>(0x1000), o.b = reinterpret_cast<const void*>(0x2000);
  o.c = reinterpret_cast<const void*>(0x3000), o.d = reinterpret_cast<void*>(0x4000);
  o.bias = reinterpret_cast<const void*>(0x5000), o.workspace = reinterpret_cast<void*>(0x6000);
  return o;
}

template <class P> P unpack(const Launch& l) {
  P p;
  EXPECT_EQ(l.params.size(), sizeof(P));
  std::memcpy(&p, l.params.data(), sizeof(P));
  return p;
}

DType gemm_a_dtype(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return g->a;
  const auto& c = std::get<ConvProblem>(p);
  return c.dir == ConvDir::fwd ? c.x : c.y;
}

std::int64_t out_elems(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return g->m * g->n * g->batch;
  const auto& c = std::get<ConvProblem>(p);
  return c.dir == ConvDir::fwd ? c.y_elems() : c.dir == ConvDir::bwd_data ? c.x_elems() : c.w_elems();
}

// Checks every structural promise of a plan; returns the number of main-kernel launches.
int check_plan(const Problem& prob, const KernelConfig& c) {
  SCOPED_TRACE(to_string(prob) + " | " + to_string(c));
  KernelPlan plan = make_plan(prob, c);
  const bool gemm = std::holds_alternative<GemmProblem>(prob);
  const int threads = c.warps_m * c.warps_n * 32;
  const int mode = c.splitk <= 1 ? 0 : c.splitk_mode == static_cast<int>(SplitKMode::serial) ? 1 : 2;
  EXPECT_EQ(plan.kernels.size(), mode == 2 ? 2u : 1u);
  const KernelSource& k = plan.kernels[0];
  EXPECT_EQ(k.name.rfind(gemm ? "tp_gemm_sm80_" : "tp_conv_sm80_", 0), 0u) << k.name;
  EXPECT_EQ(k.name.size(), 13u + 16u);
  EXPECT_NE(k.code.find(k.name + "(const tp::"), std::string::npos);
  EXPECT_NE(k.code.find(gemm ? "#include \"gemm/sm80.cuh\"" : "#include \"conv/igemm.cuh\""), std::string::npos);
  EXPECT_NE(k.code.find("__launch_bounds__(" + std::to_string(threads) + ")"), std::string::npos);
  EXPECT_EQ(k.threads, threads);
  EXPECT_FALSE(k.specialization.empty());
  EXPECT_EQ(k.name, "tp_" + std::string(gemm ? "gemm" : "conv") + "_sm80_" +
                        codegen::hex16(codegen::fnv1a64(k.specialization + "|" + to_string(c))));

  const Operands ops = fake_operands();
  const auto launches = plan.launches(ops);
  int mains = 0;
  const unsigned smem = static_cast<unsigned>(c.stages * (c.tile_m + c.tile_n) * c.tile_k * size_bytes(gemm_a_dtype(prob)));
  for (const Launch& l : launches) {
    if (l.kernel == 1) continue;
    ++mains;
    EXPECT_EQ(l.block[0], static_cast<unsigned>(threads));
    EXPECT_EQ(l.block[1] * l.block[2], 1u);
    EXPECT_EQ(l.grid[1], static_cast<unsigned>(c.splitk));
    EXPECT_EQ(l.grid[2], 1u);
    EXPECT_GE(l.grid[0], 1u);
    EXPECT_EQ(l.smem_bytes, smem);
    EXPECT_LE(l.smem_bytes, static_cast<unsigned>(h100().smem_per_block_optin));
    // The stride phases of a bwd_data without split-K overlap: every launch but the first.
    const bool bwd_data = !gemm && std::get<ConvProblem>(prob).dir == ConvDir::bwd_data;
    EXPECT_EQ(l.overlap_previous, bwd_data && mode == 0 && mains > 1);
    if (mode == 1) {
      EXPECT_GT(l.zero_workspace_bytes, 0u);
      EXPECT_LE(l.zero_workspace_bytes, plan.workspace_bytes);
      EXPECT_GE(l.zero_workspace_bytes, std::size_t{l.grid[0]} * 8);
    } else {
      EXPECT_EQ(l.zero_workspace_bytes, 0u);
    }
    if (gemm) {
      const auto& g = std::get<GemmProblem>(prob);
      auto p = unpack<tp::GemmParams>(l);
      EXPECT_EQ(p.a, ops.a);
      EXPECT_EQ(p.b, ops.b);
      EXPECT_EQ(p.c, ops.c);
      EXPECT_EQ(p.d, ops.d);
      EXPECT_EQ(p.bias, ops.bias);
      EXPECT_EQ(p.workspace, ops.workspace);
      EXPECT_EQ(p.m, g.m);
      EXPECT_EQ(p.n, g.n);
      EXPECT_EQ(p.k, g.k);
      EXPECT_EQ(p.batch, g.batch);
      EXPECT_EQ(p.tiles_m, (g.m + c.tile_m - 1) / c.tile_m);
      EXPECT_EQ(p.tiles_n, (g.n + c.tile_n - 1) / c.tile_n);
      EXPECT_EQ(l.grid[0], static_cast<unsigned>(p.tiles_m * p.tiles_n * g.batch));
      EXPECT_EQ(p.lda, g.layout_a == MatLayout::row ? g.k : g.m);
      EXPECT_EQ(p.ldb, g.layout_b == MatLayout::row ? g.n : g.k);
      EXPECT_EQ(p.ldc, g.layout_c == MatLayout::row ? g.n : g.m);
      EXPECT_FLOAT_EQ(p.alpha, static_cast<float>(g.alpha));
      EXPECT_FLOAT_EQ(p.beta, static_cast<float>(g.beta));
      EXPECT_EQ(p.splitk, c.splitk);
    } else {
      auto p = unpack<tp::ConvParams>(l);
      const auto& cp = std::get<ConvProblem>(prob);
      const bool bw = cp.dir == ConvDir::bwd_weight;
      EXPECT_EQ(p.a, bw ? ops.b : ops.a);
      EXPECT_EQ(p.b, bw ? ops.a : ops.b);
      EXPECT_EQ(p.d, ops.d);
      // Packed groups: p.g packs of P groups each, P a power of two (1 for bwd_weight) whose outputs fit the tile.
      const std::int64_t pack = std::int64_t{1} << p.pack_lp;
      EXPECT_EQ(p.g * pack, cp.g);
      if (pack > 1) {
        EXPECT_LE((cp.dir == ConvDir::bwd_data ? cp.c_per_group() : cp.k_per_group()) * pack,
                  cp.dir == ConvDir::bwd_weight ? c.tile_m : c.tile_n);
        EXPECT_EQ(std::int64_t{1} << p.pack_lc, cp.c_per_group());
        EXPECT_EQ(std::int64_t{1} << p.pack_lk, cp.k_per_group());
      }
      EXPECT_EQ(p.c, cp.c_per_group() * pack);
      EXPECT_EQ(p.k, cp.k_per_group() * pack);
      EXPECT_EQ(l.grid[0], static_cast<unsigned>(std::int64_t{p.tiles_m} * p.tiles_n * p.g));
      EXPECT_EQ(p.tiles_m, (p.gm + c.tile_m - 1) / c.tile_m);
      EXPECT_EQ(p.tiles_n, (p.gn + c.tile_n - 1) / c.tile_n);
      if (cp.dir != ConvDir::bwd_data) {
        const GemmView v = cp.gemm();
        const bool bw = cp.dir == ConvDir::bwd_weight;  // packed: M and N (bwd_weight) or N and K (fwd) grow
        EXPECT_EQ(p.gm, v.m * (bw ? pack : 1));
        EXPECT_EQ(p.gn, v.n * pack);
        EXPECT_EQ(p.gk, v.k * (bw ? 1 : pack));
      }
    }
  }
  EXPECT_GE(mains, 1);
  if (mode == 2) {
    EXPECT_EQ(launches.back().kernel, 1);
    auto r = unpack<tp::ReduceParams>(launches.back());
    EXPECT_EQ(r.total, out_elems(prob));
    EXPECT_EQ(r.splitk, c.splitk);
    EXPECT_EQ(r.ws, ops.workspace);
    EXPECT_GE(plan.workspace_bytes, static_cast<std::size_t>(out_elems(prob)) * 4 * c.splitk);
    EXPECT_EQ(plan.kernels[1].name.rfind("tp_splitk_reduce_", 0), 0u);
  }
  if (mode == 1) {
    EXPECT_GE(plan.workspace_bytes, static_cast<std::size_t>(c.splitk) * c.tile_m * c.tile_n * 4);
  }
  if (mode == 0) {
    EXPECT_EQ(plan.workspace_bytes, 0u);
  }
  return mains;
}

}  // namespace

TEST(Sm80FastDiv, MatchesDivisionBelow2To31) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::int64_t> n_dist(0, 0x7fffffff);
  std::vector<std::int64_t> divisors{1, 2, 3, 5, 7, 9, 10, 14, 25, 56, 112, 3136, 12544, 65535, 100003, 0x7fffffff};
  for (int i = 0; i < 200; ++i) divisors.push_back(std::uniform_int_distribution<std::int64_t>(1, 1 << 20)(rng));
  for (std::int64_t d : divisors) {
    auto f = codegen::make_fastdiv(d);
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, d - 1, d, d + 1, 2 * d - 1, std::int64_t{0x7fffffff},
                           std::int64_t{0x7ffffffe}})
      if (n >= 0 && n <= 0x7fffffff) {
        ASSERT_EQ(codegen::fastdiv_apply(f, n), n / d) << n << " / " << d;
      }
    for (int i = 0; i < 2000; ++i) {
      std::int64_t n = n_dist(rng);
      ASSERT_EQ(codegen::fastdiv_apply(f, n), n / d) << n << " / " << d;
    }
  }
  EXPECT_THROW(codegen::make_fastdiv(0), Unsupported);
}

TEST(Sm80Plan, ParamStructsHaveTheDeviceLayout) {
  EXPECT_EQ(sizeof(tp::GemmParams), 136u);
  EXPECT_EQ(offsetof(tp::GemmParams, workspace), 40u);
  EXPECT_EQ(offsetof(tp::GemmParams, m), 80u);
  EXPECT_EQ(sizeof(tp::ConvParams), 352u);
  EXPECT_EQ(offsetof(tp::ConvParams, div_pw), 160u);
  EXPECT_EQ(sizeof(tp::ReduceParams), 72u);
}

// Every legal config (up to a sample) of every problem below has a plan with sane launches.
TEST(Sm80Plan, RegistryConfigsPlanForManyProblems) {
  const std::vector<std::string> problems = {
      "gemm rcr m4096 n4096 k4096 bf16",
      "gemm rrr m1000 n333 k77 f16",
      "gemm ccc batch4 m129 n65 k1024 bf16:bf16:f32 alpha=2 beta=1 ep=bias+gelu_tanh",
      "gemm crc m64 n8192 k96 f32",
      "gemm rcr m77 n45 k33 bf16 ep=relu",
      "fwd g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
      "fwd g32 mb8 ic256 ih28 iw28 oc256 kh3 kw3 sh2 sw2 ph1 pw1 f16 ep=bias+relu",
      "fwd g1 mb2 ic3 ih224 iw224 oc64 kh7 kw7 sh2 sw2 ph3 pw3 bf16",
      "fwd g1 mb2 ic8 id5 ih6 iw7 oc16 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 f32",
      "bwd_data g1 mb8 ic128 ih28 iw28 oc256 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
      "bwd_data g4 mb2 ic64 id8 ih8 iw8 oc64 kd3 kh3 kw3 sd2 sh2 sw2 pd1 ph1 pw1 f16",
      "bwd_weight g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
      "bwd_weight g2 mb4 ic6 id5 ih6 iw7 oc10 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16",
  };
  std::mt19937 rng(7);
  std::size_t planned = 0;
  std::set<std::string> names;
  for (const auto& text : problems) {
    Problem p = parse_problem(text);
    auto entries = Registry::default_registry().lookup(p, h100());
    std::erase_if(entries, [](const KernelEntry& e) { return e.config.fam() != Family::sm80; });  // fam=sm90: its own test
    ASSERT_FALSE(entries.empty()) << text;
    std::shuffle(entries.begin(), entries.end(), rng);
    if (entries.size() > 150) entries.resize(150);
    for (const auto& e : entries) {
      ASSERT_TRUE(legal(p, e.config, h100())) << to_string(e.config);
      check_plan(p, e.config);
      names.insert(make_plan(p, e.config).kernels[0].name);
      ++planned;
    }
  }
  EXPECT_GT(planned, 1000u);
  EXPECT_GT(names.size(), planned / 2);  // distinct configs give distinct programs
}

TEST(Sm80Plan, SpecializationSeparatesDtypesLayoutsAndEpilogues) {
  KernelConfig c = parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1");
  std::set<std::string> names;
  for (const char* t : {"gemm rcr m256 n256 k256 bf16", "gemm rcr m256 n256 k256 f16", "gemm rrr m256 n256 k256 bf16",
                        "gemm rcc m256 n256 k256 bf16", "gemm rcr m256 n256 k256 bf16 ep=relu",
                        "gemm rcr m256 n256 k256 bf16 beta=1", "gemm rcr m256 n256 k256 bf16:bf16:f32",
                        "gemm rcr m256 n256 k250 bf16"}) {
    Problem p = parse_problem(t);
    names.insert(make_plan(p, resolve(c, p)).kernels[0].name);
  }
  EXPECT_EQ(names.size(), 8u);
  // Sizes are runtime: the same program for another shape with the same alignment.
  Problem a = parse_problem("gemm rcr m256 n256 k256 bf16"), b = parse_problem("gemm rcr m1000 n24 k8 bf16");
  EXPECT_EQ(make_plan(a, resolve(c, a)).kernels[0].code, make_plan(b, resolve(c, b)).kernels[0].code);
}

TEST(Sm80Plan, BwdDataStridePhasesCoverEveryDxPixelOnce) {
  KernelConfig c = parse_config("fam=sm80 tile=64x32x32 warps=2x1 stages=3 splitk=1");
  struct Case {
    const char* problem;
    int phases;
  };
  for (Case t : {Case{"bwd_data g1 mb2 ic32 ih9 iw11 oc48 kh3 kw3 sh1 sw1 ph1 pw1 bf16", 1},
                 Case{"bwd_data g1 mb2 ic32 ih9 iw11 oc48 kh3 kw3 sh2 sw2 ph1 pw1 bf16", 4},
                 Case{"bwd_data g1 mb2 ic16 ih10 iw10 oc24 kh1 kw1 sh2 sw2 ph0 pw0 bf16", 4},
                 Case{"bwd_data g1 mb2 ic16 ih12 iw13 oc24 kh4 kw5 sh3 sw2 ph1 pw2 f16", 6},
                 Case{"bwd_data g1 mb2 ic8 id6 ih6 iw7 oc16 kd3 kh3 kw3 sd2 sh2 sw1 pd1 ph1 pw1 bf16", 4},
                 Case{"bwd_data g2 mb2 ic6 ih9 iw11 oc10 kh3 kw3 sh2 sw2 ph1 pw1 dh2 dw1 f16", 4},
                 Case{"bwd_data g1 mb1 ic8 ih17 iw16 oc8 kh5 kw4 sh3 sw2 ph2 pw1 dh2 dw3 bf16", 6}}) {
    SCOPED_TRACE(t.problem);
    ConvProblem p = parse_conv(t.problem);
    KernelConfig r = resolve(c, p);
    EXPECT_EQ(check_plan(p, r), t.phases);
    auto launches = make_plan(p, r).launches(fake_operands());
    std::int64_t pixels = 0, taps_hit = 0;
    for (const auto& l : launches) {
      auto q = unpack<tp::ConvParams>(l);
      pixels += q.gm;
      EXPECT_EQ(q.gn, p.c_per_group());
      EXPECT_EQ(q.gk, std::int64_t{q.ntap_z} * q.ntap_y * q.ntap_x * p.k_per_group());
      // Every tap of the phase hits the phase exactly: (phase + pad - tap * dil) % stride == 0.
      for (int j = 0; j < q.ntap_y; ++j)
        EXPECT_EQ((q.phase_h + q.pad_h - (q.tap0_y + j * q.tapstep_y) * q.dil_h) % q.str_h, 0);
      for (int j = 0; j < q.ntap_x; ++j)
        EXPECT_EQ((q.phase_w + q.pad_w - (q.tap0_x + j * q.tapstep_x) * q.dil_w) % q.str_w, 0);
      // The kernel's dy offsets doff0 - j * doffstep equal the exact quotients.
      auto offsets = [](int ntap, int tap0, int step, int phase, int pad, int dil, int str, int off0, int offstep) {
        for (int j = 0; j < ntap; ++j)
          EXPECT_EQ(off0 - j * offstep, (phase + pad - (tap0 + j * step) * dil) / str) << "tap " << j;
      };
      offsets(q.ntap_z, q.tap0_z, q.tapstep_z, q.phase_d, q.pad_d, q.dil_d, q.str_d, q.doff0_d, q.doffstep_d);
      offsets(q.ntap_y, q.tap0_y, q.tapstep_y, q.phase_h, q.pad_h, q.dil_h, q.str_h, q.doff0_h, q.doffstep_h);
      offsets(q.ntap_x, q.tap0_x, q.tapstep_x, q.phase_w, q.pad_w, q.dil_w, q.str_w, q.doff0_w, q.doffstep_w);
      taps_hit += std::int64_t{q.ntap_z} * q.ntap_y * q.ntap_x * q.q_d * q.q_h * q.q_w;
    }
    EXPECT_EQ(pixels, p.n * p.in[0] * p.in[1] * p.in[2]);
    // Summed over phases, each filter tap meets about in/stride pixels per dimension: no tap is
    // visited for a pixel it cannot reach (the structural zeros are skipped).
    EXPECT_LE(taps_hit, p.in[0] * p.in[1] * p.in[2] * p.filter[0] * p.filter[1] * p.filter[2]);
  }
}

TEST(Sm80Plan, SplitKWorkspaces) {
  Problem p = parse_problem("gemm rcr m300 n200 k4096 bf16 ep=bias");
  KernelConfig serial = resolve(parse_config("fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=2 skmode=serial"), p);
  KernelConfig par = resolve(parse_config("fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=8 skmode=parallel"), p);
  auto ps = make_plan(p, serial), pp = make_plan(p, par);
  const std::size_t tiles = 5 * 4;
  EXPECT_EQ(ps.workspace_bytes, codegen::round256(tiles * 8) + tiles * 2 * 64 * 64 * 4);
  EXPECT_EQ(pp.workspace_bytes, codegen::round256(300 * 200 * 4 * 8));
  EXPECT_EQ(ps.launches(fake_operands()).size(), 1u);
  auto l = pp.launches(fake_operands());
  ASSERT_EQ(l.size(), 2u);
  auto r = unpack<tp::ReduceParams>(l[1]);
  EXPECT_EQ(r.bias_div, 1);
  EXPECT_EQ(r.bias_mod, 200);
  EXPECT_EQ(r.bias, fake_operands().bias);
  // The reduction program depends only on its own specialization, so configs share it.
  KernelConfig par2 = resolve(parse_config("fam=sm80 tile=128x64x32 warps=2x2 stages=4 splitk=4 skmode=parallel"), p);
  EXPECT_EQ(make_plan(p, par2).kernels[1].name, pp.kernels[1].name);
  check_plan(p, serial);
  check_plan(p, par);
}

TEST(Sm80Plan, RejectsWhatTheKernelsCannotRun) {
  KernelConfig c = parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=4");
  GemmProblem mixed;  // the parser refuses mixed inputs already; the plan builder checks too
  mixed.m = mixed.n = mixed.k = 64, mixed.a = DType::bf16, mixed.b = DType::f16, mixed.c = DType::f32;
  EXPECT_THROW(make_plan(Problem(mixed), resolve(c, Problem(mixed))), Unsupported);
  Problem fp8 = parse_problem("gemm rcr m64 n64 k64 e4m3:e4m3:bf16");
  EXPECT_THROW(make_plan(fp8, resolve(c, fp8)), Unsupported);
  Problem g = parse_problem("gemm rcr m64 n64 k64 bf16");
  KernelConfig odd = resolve(parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=4"), g);
  odd.warps_n = 16;  // warp tile 8 wide
  EXPECT_THROW(make_plan(g, odd), Unsupported);
  KernelConfig smem_epi = resolve(parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=4 epi=smem"), g);
  EXPECT_THROW(make_plan(g, smem_epi), Unsupported);  // only the direct epilogue exists
}

// Real NVRTC compiles through the library's JIT (its own temporary cache): GEMM in all four input
// layouts and tf32, split-K both ways, conv in all three directions, 2-D and 3-D.
TEST(Sm80Compile, ProgramsCompileWithNvrtc) {
  std::string tmpl = (fs::temp_directory_path() / "tilepick_sm80_XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  setenv("TILEPICK_CACHE_DIR", tmpl.c_str(), 1);
  struct Case {
    const char *problem, *config;
  };
  const Case cases[] = {
      {"gemm rcr m4096 n4096 k4096 bf16", "fam=sm80 tile=128x256x32 warps=2x4 stages=4 swz=8"},
      {"gemm crr m100 n60 k38 f16:f16:f32 beta=2 ep=bias+gelu_erf", "fam=sm80 tile=64x64x32 warps=2x2 stages=3"},
      {"gemm rrc m77 n45 k33 f32", "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=2 skmode=serial"},
      {"gemm ccr m256 n256 k2048 bf16", "fam=sm80 tile=64x64x64 warps=2x2 stages=3 splitk=4 skmode=parallel"},
      {"fwd g2 mb2 ic32 ih9 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+silu", "fam=sm80 tile=128x64x32 warps=2x2 stages=4"},
      {"bwd_data g1 mb2 ic8 id6 ih6 iw7 oc16 kd3 kh3 kw3 sd2 sh2 sw1 pd1 ph1 pw1 f16", "fam=sm80 tile=64x32x32 warps=2x1 stages=3"},
      {"bwd_weight g1 mb2 ic32 ih9 iw11 oc48 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=4 skmode=parallel"},
      // Packed groups (4 or 8 per block).
      {"fwd g16 mb2 ic64 ih9 iw11 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu", "fam=sm80 tile=64x32x32 warps=2x1 stages=3"},
      {"bwd_data g32 mb2 ic128 ih9 iw11 oc128 kh3 kw3 sh2 sw2 ph1 pw1 f16", "fam=sm80 tile=128x32x32 warps=4x1 stages=4"},
      {"bwd_weight g32 mb2 ic128 ih9 iw11 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=4 skmode=parallel"},
  };
  std::vector<KernelSource> srcs;
  for (const Case& t : cases) {
    Problem p = parse_problem(t.problem);
    KernelConfig c = resolve(parse_config(t.config), p);
    ASSERT_TRUE(legal(p, c, h100())) << t.problem << " | " << t.config;
    for (auto& k : make_plan(p, c).kernels) srcs.push_back(k);
  }
  const auto packed = std::count_if(srcs.begin(), srcs.end(), [](const KernelSource& k) {
    return k.specialization.find(" packed") != std::string::npos;
  });
  EXPECT_EQ(packed, 3);  // the packed-group cases, one per direction
  auto compiled = jit::compile_all(srcs, "sm_90a", 2);
  ASSERT_EQ(compiled.size(), srcs.size());
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    SCOPED_TRACE(srcs[i].code.substr(0, srcs[i].code.find('\n')));
    EXPECT_EQ(compiled[i].name, srcs[i].name);
    EXPECT_GT(compiled[i].registers, 0) << compiled[i].log;
    EXPECT_LE(compiled[i].registers, 255);
    EXPECT_EQ(compiled[i].spill_stores, 0) << compiled[i].log;
  }
  // The family targets sm_80 too.
  auto a100 = jit::compile(srcs[0], "sm_80");
  EXPECT_GT(a100.registers, 0);
  unsetenv("TILEPICK_CACHE_DIR");
  fs::remove_all(tmpl);
}

// ---------------------------------------------------------------------------------------------
// The implicit-GEMM index math of kernels/conv/igemm.cuh, replayed on the CPU with the packed
// parameters of each launch: sum_k A(m, k) B(k, n) written through the output mapping must equal
// the fp64 reference. Checks the plan's views, stride phases, fast divisors and tap offsets.
namespace {

struct Px {
  std::int64_t n, d, h, w;
};
std::int64_t fdiv(std::int64_t n, const tp::FastDiv& f) {
  return codegen::fastdiv_apply(codegen::FastDivHost{f.d, f.mul, f.shift, 0}, n);
}
Px split_pixel(std::int64_t m, const tp::ConvParams& p, int ndim) {
  Px r;
  std::int64_t t = fdiv(m, p.div_pw);
  r.w = m - t * p.div_pw.d;
  if (ndim == 3) {
    std::int64_t t2 = fdiv(t, p.div_ph);
    r.h = t - t2 * p.div_ph.d, r.n = fdiv(t2, p.div_pd), r.d = t2 - r.n * p.div_pd.d;
  } else {
    r.n = fdiv(t, p.div_ph), r.h = t - r.n * p.div_ph.d, r.d = 0;
  }
  return r;
}
void split_tap(std::int64_t tap, const tp::ConvParams& p, int ndim, std::int64_t& z, std::int64_t& y, std::int64_t& x) {
  std::int64_t t = fdiv(tap, p.div_tx);
  x = tap - t * p.div_tx.d;
  if (ndim == 3) z = fdiv(t, p.div_ty), y = t - z * p.div_ty.d;
  else z = 0, y = t;
}
bool inside(std::int64_t v, std::int64_t n) { return v >= 0 && v < n; }

void replay_conv(const ConvProblem& cp, const KernelPlan& plan, const std::vector<double>& a_in,
                 const std::vector<double>& b_in, std::vector<double>& out) {
  const int nd = cp.ndim;
  for (const Launch& l : plan.launches(fake_operands())) {
    if (l.kernel != 0) continue;
    auto p = unpack<tp::ConvParams>(l);
    const std::int64_t G = p.g, C = p.c, K = p.k, taps = std::int64_t{p.flt_z} * p.flt_y * p.flt_x;
    // Operand arrays as the kernel sees them (bwd_weight: A = dy, B = x).
    const auto& A = a_in;
    const auto& B = b_in;
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t m = 0; m < p.gm; ++m)
        for (std::int64_t n = 0; n < p.gn; ++n) {
          double acc = 0;
          for (std::int64_t kk = 0; kk < p.gk; ++kk) {
            double av = 0, bv = 0;
            if (cp.dir == ConvDir::fwd) {
              std::int64_t tap = fdiv(kk, p.div_ch), ch = kk - tap * C, tz, ty, tx;
              split_tap(tap, p, nd, tz, ty, tx);
              Px q = split_pixel(m, p, nd);
              std::int64_t id = q.d * p.str_d - p.pad_d + tz * p.dil_d, ih = q.h * p.str_h - p.pad_h + ty * p.dil_h,
                           iw = q.w * p.str_w - p.pad_w + tx * p.dil_w;
              if (inside(id, p.in_d) && inside(ih, p.in_h) && inside(iw, p.in_w))
                av = A[((((q.n * p.in_d + id) * p.in_h + ih) * p.in_w + iw) * G + g) * C + ch];
              if (p.pack_lp == 0) {
                bv = B[(g * K + n) * p.gk + kk];
              } else if (ch >> p.pack_lc == n >> p.pack_lk) {  // packed groups: block-diagonal weights
                const std::int64_t cg = C >> p.pack_lp;
                bv = B[((g * K + n) * taps + tap) * cg + (ch & (cg - 1))];
              }
            } else if (cp.dir == ConvDir::bwd_data) {
              std::int64_t ti = fdiv(kk, p.div_ch), kc = kk - ti * K, tz, ty, tx;
              split_tap(ti, p, nd, tz, ty, tx);
              Px q = split_pixel(m, p, nd);
              std::int64_t od = q.d + (nd == 3 ? p.doff0_d - tz * p.doffstep_d : 0), oh = q.h + p.doff0_h - ty * p.doffstep_h,
                           ow = q.w + p.doff0_w - tx * p.doffstep_w;
              if (inside(od, p.out_d) && inside(oh, p.out_h) && inside(ow, p.out_w))
                av = A[((((q.n * p.out_d + od) * p.out_h + oh) * p.out_w + ow) * G + g) * K + kc];
              std::int64_t z = nd == 3 ? p.tap0_z + tz * p.tapstep_z : 0, y = p.tap0_y + ty * p.tapstep_y,
                           x = p.tap0_x + tx * p.tapstep_x;
              const std::int64_t cg = C >> p.pack_lp;  // packed groups: block-diagonal weights
              if (p.pack_lp == 0 || kc >> p.pack_lk == n >> p.pack_lc)
                bv = B[((g * K + kc) * taps + (z * p.flt_y + y) * p.flt_x + x) * cg + (p.pack_lp ? n & (cg - 1) : n)];
            } else {
              av = A[kk * G * K + g * K + m];
              std::int64_t tap = fdiv(n, p.div_ch), ch = n - tap * C, tz, ty, tx;
              split_tap(tap, p, nd, tz, ty, tx);
              Px q = split_pixel(kk, p, nd);
              std::int64_t id = q.d * p.str_d - p.pad_d + tz * p.dil_d, ih = q.h * p.str_h - p.pad_h + ty * p.dil_h,
                           iw = q.w * p.str_w - p.pad_w + tx * p.dil_w;
              if (inside(id, p.in_d) && inside(ih, p.in_h) && inside(iw, p.in_w))
                bv = B[((((q.n * p.in_d + id) * p.in_h + ih) * p.in_w + iw) * G + g) * C + ch];
            }
            acc += av * bv;
          }
          std::int64_t off;
          if (cp.dir == ConvDir::fwd) {
            off = m * G * K + g * K + n;
          } else if (cp.dir == ConvDir::bwd_data) {
            Px q = split_pixel(m, p, nd);
            std::int64_t d = q.d * p.str_d + p.phase_d, h = q.h * p.str_h + p.phase_h, w = q.w * p.str_w + p.phase_w;
            off = ((((q.n * p.in_d + d) * p.in_h + h) * p.in_w + w) * G + g) * C + n;
          } else if (p.pack_lp == 0) {
            off = g * K * p.gn + m * p.gn + n;
          } else {  // packed groups: the diagonal blocks only, dw[group][m % k][tap][ch % c]
            const std::int64_t tap = fdiv(n, p.div_ch), ch = n - tap * C, cg = C >> p.pack_lp;
            if (ch >> p.pack_lc != m >> p.pack_lk) continue;
            off = ((g * K + m) * taps + tap) * cg + (ch & (cg - 1));
          }
          out.at(off) = acc;
        }
  }
}

}  // namespace

TEST(Sm80Plan, ImplicitGemmIndexMathMatchesTheReference) {
  KernelConfig c = parse_config("fam=sm80 tile=64x32x32 warps=2x1 stages=3 splitk=1");
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-4, 4);
  int packed = 0;
  for (const char* text : {
           "fwd g2 mb2 ic6 ih7 iw8 oc10 kh3 kw3 sh1 sw2 ph1 pw1 dh2 dw1 bf16",
           "fwd g1 mb2 ic4 id5 ih6 iw5 oc6 kd3 kh1 kw3 sd2 sh1 sw2 pd1 ph0 pw1 f32",
           "bwd_data g1 mb2 ic4 ih9 iw11 oc6 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
           "bwd_data g2 mb2 ic6 ih9 iw11 oc10 kh3 kw3 sh2 sw2 ph1 pw1 dh2 dw1 f16",
           "bwd_data g1 mb1 ic4 ih17 iw16 oc4 kh5 kw4 sh3 sw2 ph2 pw1 dh2 dw3 bf16",
           "bwd_data g1 mb2 ic4 ih10 iw10 oc6 kh1 kw1 sh2 sw2 ph0 pw0 bf16",
           "bwd_data g1 mb1 ic4 id6 ih6 iw7 oc4 kd3 kh3 kw3 sd2 sh2 sw1 pd1 ph1 pw1 dd2 dh1 dw1 bf16",
           "bwd_weight g2 mb2 ic6 ih9 iw11 oc10 kh3 kw3 sh2 sw1 ph1 pw1 dh1 dw2 bf16",
           "bwd_weight g1 mb2 ic4 id5 ih6 iw7 oc6 kd3 kh3 kw3 sd1 sh2 sw1 pd1 ph1 pw1 f16",
           // Packed groups (tile N 32 holds 8 groups of 4 channels or 16 of 2), 2-D and 3-D, strided bwd_data.
           "fwd g8 mb2 ic64 ih7 iw6 oc32 kh3 kw3 sh1 sw2 ph1 pw1 bf16",
           "fwd g16 mb1 ic64 id4 ih5 iw5 oc64 kd3 kh3 kw3 sd1 sh2 sw1 pd1 ph1 pw1 f16",
           "bwd_data g8 mb2 ic32 ih9 iw8 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
           "bwd_data g4 mb1 ic32 id5 ih6 iw5 oc16 kd3 kh3 kw3 sd1 sh1 sw2 pd1 ph1 pw1 bf16",
           "bwd_weight g16 mb2 ic64 ih7 iw6 oc32 kh3 kw3 sh1 sw2 ph1 pw1 bf16",
           "bwd_weight g16 mb1 ic64 id4 ih5 iw5 oc64 kd3 kh3 kw3 sd1 sh2 sw1 pd1 ph1 pw1 f16",
       }) {
    SCOPED_TRACE(text);
    ConvProblem p = parse_conv(text);
    KernelPlan plan = make_plan(p, resolve(c, p));
    packed += unpack<tp::ConvParams>(plan.launches(fake_operands()).front()).pack_lp > 0;
    std::vector<double> x(p.x_elems()), w(p.w_elems()), y(p.y_elems());
    for (auto* v : {&x, &w, &y})
      for (auto& e : *v) e = small(rng);  // small integers: every sum is exact
    std::vector<double> ref, got;
    if (p.dir == ConvDir::fwd) {
      ref.resize(p.y_elems()), got.assign(p.y_elems(), NAN);
      ref::conv_fwd(p, x.data(), w.data(), nullptr, ref.data());
      replay_conv(p, plan, x, w, got);
    } else if (p.dir == ConvDir::bwd_data) {
      ref.resize(p.x_elems()), got.assign(p.x_elems(), NAN);
      ref::conv_bwd_data(p, y.data(), w.data(), ref.data());
      replay_conv(p, plan, y, w, got);
    } else {
      ref.resize(p.w_elems()), got.assign(p.w_elems(), NAN);
      ref::conv_bwd_weight(p, x.data(), y.data(), ref.data());
      replay_conv(p, plan, y, x, got);  // kernel operands: A = dy, B = x
    }
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "element " << i;
  }
  EXPECT_EQ(packed, 6);  // the six packed-group problems
}

// The packing rule (legality.cpp, sm80_group_pack) as measured in bench/results/2026-11-29-grouped-dw.
TEST(Sm80Plan, GroupPackingFollowsTheMeasuredRule) {
  auto pack = [](const char* problem, const char* config) {
    const ConvProblem p = parse_conv(problem);
    return sm80_group_pack(p, resolve(parse_config(config), Problem{p}));
  };
  const char* t32 = "fam=sm80 tile=128x32x32 warps=4x1 stages=4";
  // Groups of 8 bytes (4 bf16 channels) fill the tile's N at any grid: 8 groups of 4 in N = 32.
  EXPECT_EQ(pack("fwd g32 mb1 ic128 ih56 iw56 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 8);
  EXPECT_EQ(pack("bwd_data g32 mb1 ic128 ih7 iw7 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 8);
  // 32-byte groups pack only while 264 blocks remain: ResNeXt's 14x14 layer of 16 channels per group at batch 32
  // (784 blocks at P = 2, the most tile N = 32 holds), not at batch 1 (32 blocks at P = 2).
  EXPECT_EQ(pack("fwd g32 mb32 ic512 ih14 iw14 oc512 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 2);
  EXPECT_EQ(pack("fwd g32 mb1 ic512 ih14 iw14 oc512 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 1);
  // bwd_weight packs along M (tile_m / K/G), never for groups of 32 bytes or more.
  EXPECT_EQ(pack("bwd_weight g32 mb32 ic128 ih56 iw56 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                 "fam=sm80 tile=32x64x32 warps=1x2 stages=4 splitk=16 skmode=parallel"), 8);
  EXPECT_EQ(pack("bwd_weight g32 mb32 ic512 ih28 iw28 oc512 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                 "fam=sm80 tile=64x64x32 warps=2x2 stages=4 splitk=16 skmode=parallel"), 1);
  // Not packable: one group, channels per group not a power of two, groups that do not divide.
  EXPECT_EQ(pack("fwd g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 1);
  EXPECT_EQ(pack("fwd g12 mb32 ic144 ih56 iw56 oc144 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 1);
  EXPECT_EQ(pack("fwd g3 mb32 ic12 ih56 iw56 oc12 kh3 kw3 sh1 sw1 ph1 pw1 bf16", t32), 1);
}
