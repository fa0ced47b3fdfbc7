// The grouped direct family (fam=grp) on the CPU: legality admits only the problems the kernel runs, with
// reasons; plans build and launch grids that cover the output (NVRTC compiles the trial spaces in ctest
// jit_compile_trial_spaces).
#include <gtest/gtest.h>

#include <cstring>

#include "../kernels/conv/dw_params.cuh"
#include "jit/families.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"

using namespace tilepick;

namespace {

const char* kConfig = "fam=grp stages=2 splitk=1 dwtile=8x16x64 ppt=2 cpt=16";

TEST(FamilyGrp, RunsOnlyWhatTheKernelSupports) {
  EXPECT_TRUE(family_runs(Family::grp, parse_problem("fwd g32 mb32 ic512 ih14 iw14 oc512 kh3 kw3 ph1 pw1 bf16")));
  EXPECT_TRUE(family_runs(Family::grp, parse_problem("bwd_data g8 mb2 ic64 ih9 iw11 oc64 kh3 kw3 ph1 pw1 f16")));
  EXPECT_TRUE(family_runs(Family::grp, parse_problem("bwd_weight g8 mb2 ic64 ih9 iw11 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16")));
  // 4 channels a group, depthwise, strided bwd_data, bwd_weight of a 2x2 filter (not compiled in), unequal in /
  // out per group: not this family's.
  for (const char* p : {"fwd g32 mb32 ic128 ih56 iw56 oc128 kh3 kw3 ph1 pw1 bf16",
                        "fwd g64 mb1 ic64 ih8 iw8 oc64 kh3 kw3 ph1 pw1 bf16",
                        "bwd_data g8 mb2 ic64 ih9 iw11 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
                        "bwd_weight g8 mb2 ic64 ih9 iw11 oc64 kh2 kw2 ph1 pw1 bf16",
                        "fwd g4 mb2 ic64 ih9 iw11 oc128 kh3 kw3 ph1 pw1 bf16"})
    EXPECT_FALSE(family_runs(Family::grp, parse_problem(p))) << p;
  const Verdict v = legal(parse_problem("fwd g32 mb32 ic128 ih56 iw56 oc128 kh3 kw3 ph1 pw1 bf16"),
                          parse_config(kConfig), find_arch(default_arch_specs(), "h100_sxm"));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.rule, "family_op");
  const Verdict s = legal(parse_problem("fwd g32 mb32 ic512 ih14 iw14 oc512 kh3 kw3 ph1 pw1 bf16"),
                          parse_config("fam=grp stages=3 splitk=1 dwtile=8x16x64 ppt=2 cpt=16"),
                          find_arch(default_arch_specs(), "h100_sxm"));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.rule, "stages");
}

TEST(FamilyGrp, WarpsMustHoldWhole16PixelBlocksOfAGroup) {
  const ConvProblem p = std::get<ConvProblem>(parse_problem("fwd g2 mb1 ic128 ih7 iw7 oc128 kh5 kw5 ph2 pw2 bf16"));
  // 32 x 2 x 8 outputs a warp = 8 pixels of a 64-channel group: not a 16-row MMA block.
  EXPECT_THROW(family::plan_grp(p, parse_config("fam=grp stages=1 splitk=1 dwtile=4x16x64 ppt=2 cpt=8")), Unsupported);
  EXPECT_NO_THROW(family::plan_grp(p, parse_config(kConfig)));
}

TEST(FamilyGrp, PlanCoversTheOutputAndCompiles) {
  const ConvProblem p =
      std::get<ConvProblem>(parse_problem("fwd g20 mb2 ic320 ih14 iw13 oc320 kh3 kw3 sh2 sw2 ph1 pw1 bf16 ep=bias+relu"));
  const KernelPlan plan = family::plan_grp(p, parse_config(kConfig));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_NE(plan.kernels[0].code.find("tp::grp_fwd<Cfg>"), std::string::npos);
  EXPECT_EQ(plan.kernels[0].threads, 256);
  Operands o;
  alignas(16) static unsigned char buf[64];
  o.a = o.b = o.bias = buf, o.d = buf;
  const auto launches = plan.launches(o);
  ASSERT_EQ(launches.size(), 1u);
  tp::DwParams q;
  std::memcpy(&q, launches[0].params.data(), sizeof q);
  // 7 x 7 outputs: one 8 x 16 tile a (n, channel tile); 320 channels in tiles of 64.
  EXPECT_EQ(q.tiles_h, 1);
  EXPECT_EQ(q.tiles_w, 1);
  EXPECT_EQ(q.tiles_c, 5);
  EXPECT_EQ(launches[0].grid[0], 2u * 5u);  // work items; the driver shrinks a resident grid to what fits
  EXPECT_TRUE(launches[0].resident);
  EXPECT_EQ(plan.workspace_bytes, 0u);
  EXPECT_EQ(q.halo[1], 7 * 2 + 3);  // (TH - 1) x stride + filter
  EXPECT_EQ(q.halo[2], 15 * 2 + 3);
  // weights [64][9 x 16 + 8] + 2 boxes [17 x 33 + 1][72] + outputs [8 x 16][72], bf16
  const unsigned box = ((17u * 33u + 1u) * 72u * 2u + 15u) / 16u * 16u, outputs = 8u * 16u * 72u * 2u;
  EXPECT_EQ(launches[0].smem_bytes, 64u * 152u * 2u + 2u * box + outputs);
  const KernelPlan one = family::plan_grp(p, parse_config("fam=grp stages=1 splitk=1 dwtile=8x16x64 ppt=2 cpt=16"));
  EXPECT_EQ(one.launches(o)[0].smem_bytes, 64u * 152u * 2u + box + outputs);
  // stride 2 and dilation 1 are baked into the program (every MMA step's box offset a constant)
  EXPECT_NE(plan.kernels[0].code.find("sy = 2"), std::string::npos);
  EXPECT_NE(plan.kernels[0].code.find("dlx = 1"), std::string::npos);
  o.a = buf + 2;
  EXPECT_THROW(plan.launches(o), Unsupported);  // the staging copies need 16-byte aligned tensors
}

// bwd_data: kernel 0 writes the flipped weights into the workspace, kernel 1 (the forward kernel over dy) reads them.
TEST(FamilyGrp, BackwardDataFlipsTheWeightsIntoTheWorkspaceFirst) {
  const ConvProblem p =
      std::get<ConvProblem>(parse_problem("bwd_data g8 mb3 ic128 ih7 iw13 oc128 kh3 kw3 ph1 pw1 f16"));
  const KernelPlan plan = family::plan_grp(p, parse_config(kConfig));
  ASSERT_EQ(plan.kernels.size(), 2u);
  EXPECT_NE(plan.kernels[0].code.find("tp::grp_flip_weights<Cfg>"), std::string::npos);
  EXPECT_NE(plan.kernels[1].code.find("tp::grp_fwd<Cfg>"), std::string::npos);
  EXPECT_EQ(plan.workspace_bytes, (128u * 9u * 16u * 2u + 255u) / 256u * 256u);  // C x taps x cpg halves
  alignas(256) static unsigned char buf[256], ws[256];
  Operands o;
  o.a = o.b = buf, o.d = buf;
  EXPECT_THROW(plan.launches(o), Unsupported);  // no workspace
  o.workspace = ws;
  const auto ls = plan.launches(o);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].kernel, 0);
  EXPECT_EQ(ls[1].kernel, 1);
  EXPECT_EQ(ls[0].grid[0] * ls[0].block[0], 128u * 9u * 16u);  // one thread an element
  EXPECT_TRUE(ls[1].resident);
  tp::DwParams flip, main;
  std::memcpy(&flip, ls[0].params.data(), sizeof flip);
  std::memcpy(&main, ls[1].params.data(), sizeof main);
  EXPECT_EQ(flip.src2, buf);
  EXPECT_EQ(flip.workspace, ws);
  EXPECT_EQ(main.src2, ws);  // the main kernel stages the flipped copy
  EXPECT_EQ(main.stride[1], 1);
  EXPECT_EQ(main.pad[1], 3 - 1 - 1);
}

// bwd_weight: the partials kernel over (channel tile, split) blocks, then the ordered reduce; one split writes dw.
TEST(FamilyGrp, BackwardWeightSumsSplitsInTheWorkspace) {
  const ConvProblem p =
      std::get<ConvProblem>(parse_problem("bwd_weight g20 mb2 ic160 ih9 iw9 oc160 kh3 kw3 sh2 sw2 ph1 pw1 bf16"));
  const KernelPlan plan = family::plan_grp(p, parse_config("fam=grp stages=2 splitk=4 dwtile=4x16x64 ppt=1 cpt=8"));
  ASSERT_EQ(plan.kernels.size(), 2u);
  EXPECT_NE(plan.kernels[0].code.find("tp::grp_bwd_weight<Cfg>"), std::string::npos);
  EXPECT_NE(plan.kernels[1].code.find("tp::grp_bwd_weight_reduce<Cfg>"), std::string::npos);
  EXPECT_EQ(plan.kernels[0].threads, 512);
  // dy 5 x 5: 2 x 1 tiles of 4 x 16, x 2 images = 4 items a channel tile, 4 splits of one item.
  EXPECT_EQ(plan.workspace_bytes, 4u * 160u * 9u * 8u * 4u);  // fp32 partials [split][C][taps x cpg]
  alignas(256) static unsigned char x[256], dy[256], dw[256], ws[256];
  Operands o;
  o.a = x, o.b = dy, o.d = dw;
  EXPECT_THROW(plan.launches(o), Unsupported);  // no workspace
  o.workspace = ws;
  const auto ls = plan.launches(o);
  ASSERT_EQ(ls.size(), 2u);
  tp::DwParams q;
  std::memcpy(&q, ls[0].params.data(), sizeof q);
  EXPECT_EQ(q.tiles_h, 2);
  EXPECT_EQ(q.tiles_w, 1);
  EXPECT_EQ(q.tiles_c, 3);  // 160 channels in tiles of 64: a ragged last tile
  EXPECT_EQ(q.iters, 1);
  EXPECT_EQ(q.splits, 4);
  EXPECT_EQ(q.parts, 4);
  EXPECT_EQ(ls[0].grid[0], 3u * 4u);
  EXPECT_FALSE(ls[0].resident);
  EXPECT_EQ(q.halo[1], 3 * 2 + 3);  // x rows a 4-row dy tile reads at stride 2
  EXPECT_EQ(q.halo[2], 15 * 2 + 3);
  // 2 stages x (x box [9 x 33][72] + dy tile [64][72]), bf16
  EXPECT_EQ(ls[0].smem_bytes, 2u * (9u * 33u * 72u * 2u + 64u * 72u * 2u));
  EXPECT_EQ(ls[1].kernel, 1);
  EXPECT_EQ(ls[1].grid[0] * 32u, 160u * 9u * 8u);  // a lane per dw element
  EXPECT_TRUE(ls[1].overlap_previous);

  const KernelPlan single = family::plan_grp(p, parse_config("fam=grp stages=1 splitk=1 dwtile=4x16x64 ppt=1 cpt=8"));
  EXPECT_EQ(single.kernels.size(), 1u);
  EXPECT_EQ(single.workspace_bytes, 0u);
  o.workspace = nullptr;
  EXPECT_EQ(single.launches(o).size(), 1u);
  EXPECT_NE(single.kernels[0].code.find("single = true"), std::string::npos);
}

// A bwd_weight warp sums its share of the group's (tap, channel) rows x output channels in registers: a config
// that leaves too many to one warp is refused with the bound, as are fwd-only splits.
TEST(FamilyGrp, BackwardWeightBoundsAWarpsAccumulators) {
  const ConvProblem p64 =
      std::get<ConvProblem>(parse_problem("bwd_weight g2 mb2 ic128 ih11 iw9 oc128 kh3 kw3 ph1 pw1 bf16"));
  // 64 a group, 4 warps: 2 along the channels x 2 along 36 m blocks = 18 x 4 n blocks x 4 accumulators.
  try {
    family::plan_grp(p64, parse_config("fam=grp stages=1 splitk=1 dwtile=4x16x64 ppt=2 cpt=16"));
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("288 accumulators"), std::string::npos) << e.what();
  }
  // 16 warps: 8 along m, 5 m blocks each = 80 accumulators, under the 88 of 512 threads.
  EXPECT_NO_THROW(family::plan_grp(p64, parse_config("fam=grp stages=1 splitk=1 dwtile=4x16x64 ppt=1 cpt=8")));
  const ConvProblem fwd = std::get<ConvProblem>(parse_problem("fwd g2 mb2 ic128 ih11 iw9 oc128 kh3 kw3 ph1 pw1 bf16"));
  EXPECT_THROW(family::plan_grp(fwd, parse_config("fam=grp stages=1 splitk=4 dwtile=8x16x64 ppt=2 cpt=16")), Unsupported);
}

}  // namespace
