// The legality predicate: one test per rule (a violating config and a nearby legal one), plus
// max_alignment, resolve and the resource estimate.
#include <gtest/gtest.h>

#include "jit/families.hpp"

#include <string>

#include "tilepick/arch.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/space.hpp"

#include "test_util.hpp"

using namespace tilepick;

namespace {

using test::arch;

Verdict check(const std::string& problem, const std::string& config, const std::string& a = "a100_sxm") {
  return legal(parse_problem(problem), parse_config(config), arch(a));
}

// The verdict breaks `rule` and its reason mentions every needle.
::testing::AssertionResult violates(const Verdict& v, const std::string& rule,
                                    std::initializer_list<std::string> needles = {}) {
  if (v.ok) return ::testing::AssertionFailure() << "legal, expected rule " << rule;
  if (v.rule != rule)
    return ::testing::AssertionFailure() << "rule " << v.rule << " (" << v.reason << "), expected " << rule;
  for (const auto& n : needles)
    if (v.reason.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "reason '" << v.reason << "' does not mention '" << n << "'";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ok(const Verdict& v) {
  if (v.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "illegal: " << v.rule << ": " << v.reason;
}

const std::string kGemm = "gemm rcr m1024 n1024 k1024 bf16";
const std::string kSm80 = "fam=sm80 tile=128x128x32 warps=2x2 stages=3";
const std::string kSm90 = "fam=sm90 tile=128x128x64 warps=2x1 stages=3";
const std::string kFp8 = "gemm rcr m1024 n1024 k1024 e4m3:e4m3:bf16";
const std::string kDwConv = "fwd g64 mb1 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16";

}  // namespace

TEST(LegalityRule, Config) {
  KernelConfig c;
  c.tile_m = 80;
  EXPECT_TRUE(violates(legal(parse_problem(kGemm), c, arch("a100_sxm")), "config", {"tile_m=80"}));
  c.tile_m = 128;
  EXPECT_TRUE(ok(legal(parse_problem(kGemm), c, arch("a100_sxm"))));
}

TEST(LegalityRule, Threads) {
  EXPECT_TRUE(violates(check(kGemm, "fam=sm80 tile=128x128x32 warps=8x8"), "threads", {"2048", "1024"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm80 tile=128x128x32 warps=4x4")));
  // dw: (1*4/1) pixels x (8/2) channel groups = 16 threads.
  EXPECT_TRUE(violates(check(kDwConv, "fam=dw dwtile=1x4x8 ppt=1 cpt=2"), "threads", {"16 threads"}));
  EXPECT_TRUE(ok(check(kDwConv, "fam=dw dwtile=1x8x8 ppt=1 cpt=2")));
}

TEST(LegalityRule, FamilyArch) {
  EXPECT_TRUE(violates(check(kGemm, kSm90, "a100_sxm"), "family_arch", {"wgmma", "sm_80"}));
  EXPECT_TRUE(violates(check(kGemm, kSm90, "l40s"), "family_arch", {"sm_89"}));
  EXPECT_TRUE(ok(check(kGemm, kSm90, "h100_sxm")));
  ArchSpec old = arch("a100_sxm");
  old.mma_sync = false;
  EXPECT_TRUE(violates(legal(parse_problem(kGemm), parse_config(kSm80), old), "family_arch", {"mma.sync"}));
  EXPECT_TRUE(ok(check(kGemm, kSm80, "a100_sxm")));
}

TEST(LegalityRule, Dtype) {
  EXPECT_TRUE(violates(check(kFp8, kSm80, "h100_sxm"), "dtype", {"fp8", "sm90"}));
  // fam=sm90 reads 128 bytes of K per stage: tile_k 64 for 16-bit inputs, 128 for fp8, 32 for f32 (tf32).
  EXPECT_TRUE(violates(check(kFp8, kSm90, "h100_sxm"), "tile_k", {"128", "e4m3"}));
  EXPECT_TRUE(ok(check(kFp8, "fam=sm90 tile=128x128x128 warps=2x1 stages=3", "h100_sxm")));
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=128x128x128 warps=2x1 stages=3", "h100_sxm"), "tile_k", {"64", "bf16"}));
  EXPECT_TRUE(violates(check("gemm rcr m256 n256 k256 f32", kSm90, "h100_sxm"), "tile_k", {"32", "f32"}));
  EXPECT_TRUE(ok(check("gemm rcr m256 n256 k256 f32", "fam=sm90 tile=128x128x32 warps=2x1 stages=3", "h100_sxm")));
  EXPECT_TRUE(ok(check(kGemm, kSm90, "h100_sxm")));
  EXPECT_TRUE(violates(check("gemm rcr m256 n256 k256 f16 acc=f16", kSm80), "dtype", {"f32"}));
  EXPECT_TRUE(ok(check("gemm rcr m256 n256 k256 f16", kSm80)));
  EXPECT_TRUE(violates(legal_on_arch(parse_config("fam=dw"), arch("h100_sxm"), DType::e4m3), "dtype", {"fp8"}));
  EXPECT_TRUE(ok(legal_on_arch(parse_config("fam=dw"), arch("h100_sxm"), DType::bf16)));
}

TEST(LegalityRule, WarpTile) {
  EXPECT_TRUE(violates(check(kGemm, "fam=sm80 tile=64x64x32 warps=8x1"), "warp_tile", {"8x64", "16x16"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm80 tile=64x64x32 warps=4x1")));
}

TEST(LegalityRule, TileK) {
  // sm90: one 128-byte swizzled row of K per stage.
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=128x128x32 warps=2x1", "h100_sxm"), "tile_k", {"64"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm90 tile=128x128x64 warps=2x1", "h100_sxm")));
}

// fam=sm90: consumer warpgroups (warps) stacked along M or taking tiles in turn (ping-pong), each owning 64 or 128 rows, at most 128
// accumulators per thread; wgmma N a multiple of 32 of at least 32.
TEST(LegalityRule, Sm90Warpgroups) {
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=128x128x64 warps=2x2", "h100_sxm"), "warps", {"2x1", "ping-pong"}));
  // Ping-pong (warps=1x2): each consumer owns whole tiles, so the tile is one consumer's.
  EXPECT_TRUE(ok(check(kGemm, "fam=sm90 tile=128x128x64 warps=1x2", "h100_sxm")));
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=128x256x64 warps=1x2", "h100_sxm"), "registers", {"256 accumulators"}));
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=256x64x64 warps=1x2", "h100_sxm"), "warp_tile", {"256 rows"}));
  EXPECT_EQ(threads_per_block(parse_config("fam=sm90 tile=128x128x64 warps=1x2")), 384);
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=256x64x64 warps=1x1", "h100_sxm"), "warp_tile", {"256 rows"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm90 tile=256x64x64 warps=2x1", "h100_sxm")));
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=128x256x64 warps=1x1", "h100_sxm"), "registers", {"256 accumulators"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm90 tile=128x256x64 warps=2x1", "h100_sxm")));
  EXPECT_TRUE(violates(check(kGemm, "fam=sm90 tile=64x16x64 warps=1x1", "h100_sxm"), "tile_n", {"32"}));
  EXPECT_EQ(threads_per_block(parse_config("fam=sm90 tile=128x256x64 warps=2x1")), 384);  // + the producer
}

// fam=sm90 reads A and B by TMA: each operand's contiguous extent is a row stride of 16-byte multiples;
// K is free when both operands are M/N-major.
TEST(LegalityRule, Sm90TmaStrides) {
  EXPECT_TRUE(violates(check("gemm rcr m64 n64 k36 bf16", kSm90, "h100_sxm"), "tma_stride", {"A", "36"}));
  EXPECT_TRUE(violates(check("gemm rrr m64 n66 k64 bf16", kSm90, "h100_sxm"), "tma_stride", {"B", "66"}));
  EXPECT_TRUE(violates(check("gemm crr m68 n64 k64 f16", kSm90, "h100_sxm"), "tma_stride", {"A", "68"}));
  EXPECT_TRUE(ok(check("gemm crr m64 n64 k37 bf16", kSm90, "h100_sxm")));
  EXPECT_TRUE(ok(check("gemm rcr m77 n1001 k40 bf16", kSm90, "h100_sxm")));  // D's extent is free with epi=direct
  EXPECT_TRUE(violates(check("gemm rcr m77 n1001 k40 bf16", kSm90 + " epi=smem", "h100_sxm"), "tma_stride", {"1001"}));
  EXPECT_TRUE(violates(check("gemm rcc m64 n64 k64 bf16", kSm90 + " epi=smem", "h100_sxm"), "epi", {"row-major"}));
  // Strided bwd_data: one launch per stride phase, whose epilogue scatters the dx rows (no parallel split-K).
  EXPECT_TRUE(ok(check("bwd_data g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16", kSm90, "h100_sxm")));
  EXPECT_TRUE(ok(check("bwd_data g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16", kSm90 + " epi=smem", "h100_sxm")));
  EXPECT_TRUE(violates(check("bwd_data g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
                             kSm90 + " splitk=2 skmode=parallel", "h100_sxm"),
                       "splitk", {"stride phase"}));
  EXPECT_TRUE(ok(check("fwd g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", kSm90, "h100_sxm")));  // TMA im2col
  EXPECT_TRUE(violates(check("fwd g1 mb8 ic60 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", kSm90, "h100_sxm"), "tma_stride",
                       {"60"}));
}

TEST(LegalityRule, Smem) {
  // 8 x (256 + 128) x 64 x 2 bytes = 393216 > 166912 on A100.
  std::string big = "fam=sm80 tile=256x128x64 warps=4x2 stages=8";
  EXPECT_TRUE(violates(check(kGemm, big), "smem", {"393216", "166912", "a100_sxm"}));
  EXPECT_EQ(estimate_resources(parse_config(big), parse_problem(kGemm)).smem_bytes, 393216);
  EXPECT_TRUE(ok(check(kGemm, "fam=sm80 tile=256x128x64 warps=4x2 stages=3")));
  // sm90: 1024 alignment + stages x ((128 + 256) x 128 + 16 barrier bytes) + 16 + the staged output:
  // the whole tile if it fits in 232448, else two buffers of the widest part that fits, else one buffer
  // of one 128-byte column block: 3 stages stage all 256 bf16 columns (214080), 4 stages 2 x 64 (230480),
  // f32 outputs 2 x 64 at 3 stages; 256x128 at 4 stages 1 x 64 (230480); 5 stages exceed it even with
  // one column block (263264).
  const std::string sm90 = "fam=sm90 tile=128x256x64 warps=2x1 epi=smem";
  const std::string f32_out = "gemm rcr m1024 n1024 k1024 bf16:bf16:f32";
  EXPECT_EQ(estimate_resources(parse_config(sm90 + " stages=3"), parse_problem(kGemm)).smem_bytes, 214080);
  EXPECT_EQ(sm90_staging(parse_config(sm90 + " stages=3"), 2).cols, 256);
  EXPECT_EQ(estimate_resources(parse_config(sm90 + " stages=4"), parse_problem(kGemm)).smem_bytes, 230480);
  EXPECT_EQ(sm90_staging(parse_config(sm90 + " stages=4"), 2).cols, 64);
  EXPECT_EQ(sm90_staging(parse_config(sm90 + " stages=3"), 4).cols, 64);
  const auto tall = parse_config("fam=sm90 tile=256x128x64 warps=2x1 stages=4 epi=smem");
  EXPECT_EQ(sm90_staging(tall, 2).cols, 64);
  EXPECT_EQ(sm90_staging(tall, 2).buffers, 1);
  EXPECT_EQ(sm90_smem_bytes(tall, 2), 230480);
  EXPECT_EQ(sm90_staging(parse_config(sm90 + " stages=4"), 2).buffers, 2);
  // tile_n 192 (wgmma N = 192): parts are whole 128-byte column blocks that divide 192, so at 5 stages
  // (205920 pipeline bytes) one 64-column buffer (+ 16384) rather than two (+ 32768, over the limit).
  const auto wide = parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=5 epi=smem");
  EXPECT_EQ(sm90_staging(wide, 2).cols, 64);
  EXPECT_EQ(sm90_staging(wide, 2).buffers, 1);
  EXPECT_EQ(sm90_smem_bytes(wide, 2), 205920 + 16384);
  EXPECT_EQ(sm90_staging(parse_config("fam=sm90 tile=128x192x64 warps=2x1 stages=3 epi=smem"), 2).cols, 192);
  // A ping-pong pair stages two tiles: 1024 + 4 x ((128 + 128) x 128 + 16) + 16 + 2 x 128 x 128 x 2.
  const auto pingpong = parse_config("fam=sm90 tile=128x128x64 warps=1x2 stages=4 epi=smem");
  EXPECT_EQ(sm90_smem_bytes(pingpong, 2), 197712);
  EXPECT_EQ(sm90_staging(pingpong, 2).cols, 128);
  EXPECT_EQ(sm90_staging(parse_config("fam=sm90 tile=128x256x64 warps=2x1 stages=3"), 2).cols, 0);  // epi=direct
  EXPECT_TRUE(ok(check(kGemm, sm90 + " stages=4", "h100_sxm")));
  EXPECT_TRUE(ok(check(f32_out, sm90 + " stages=3", "h100_sxm")));
  EXPECT_TRUE(violates(check(kGemm, sm90 + " stages=5", "h100_sxm"), "smem", {"263264", "232448"}));
  EXPECT_NE(check(kGemm, "fam=sm80 tile=256x256x16 warps=4x4 stages=1", "h100_sxm").rule, "smem");
  // Block scales add a scale slot per stage ((tile_m + 4) x 4 bytes): fp8 128x128x128 at 6 stages stages the
  // whole 128 x 128 bf16 tile without them (197744 + 32768 <= 232448), one 64-column buffer with them
  // (1024 + 6 x (32784 + 528) + 16 = 200912; + 32768 is over the limit, + 16384 fits); 7 stages exceed it
  // even with epi=direct (234224; 230528 without block scales).
  const auto fp8 = parse_config("fam=sm90 tile=128x128x128 warps=2x1 stages=6 epi=smem");
  EXPECT_EQ(sm90_smem_bytes(fp8, 2), 197744 + 32768);
  EXPECT_EQ(sm90_staging(fp8, 2, true).cols, 64);
  EXPECT_EQ(sm90_staging(fp8, 2, true).buffers, 1);
  EXPECT_EQ(sm90_smem_bytes(fp8, 2, true), 200912 + 16384);
  const std::string block = "gemm rcr m1024 n1024 k1024 e4m3:e4m3:bf16 scale=block";
  EXPECT_EQ(estimate_resources(fp8, parse_problem(block)).smem_bytes, 200912 + 16384);
  EXPECT_TRUE(ok(check(block, "fam=sm90 tile=128x128x128 warps=2x1 stages=6 epi=direct", "h100_sxm")));
  EXPECT_TRUE(violates(check(block, "fam=sm90 tile=128x128x128 warps=2x1 stages=7 epi=direct", "h100_sxm"), "smem",
                       {"234224", "block scales"}));
}

TEST(LegalityRule, Registers) {
  // Warp tile 256x64: 512 accumulators per thread.
  EXPECT_TRUE(violates(check(kGemm, "fam=sm80 tile=256x128x32 warps=1x2 stages=2"), "registers",
                       {"512 accumulators", "255"}));
  EXPECT_TRUE(ok(check(kGemm, "fam=sm80 tile=256x128x32 warps=4x2 stages=2")));
  // 232 registers x 512 threads = 118784 > 65536 per block.
  EXPECT_TRUE(violates(check(kGemm, "fam=sm80 tile=256x256x32 warps=4x4 stages=2"), "registers",
                       {"118784", "65536"}));
}

TEST(LegalityRule, Cluster) {
  EXPECT_TRUE(violates(check(kGemm, kSm90 + " cluster=2x2", "h100_sxm"), "cluster", {"at most 2"}));
  EXPECT_TRUE(ok(check(kGemm, kSm90 + " cluster=2x1", "h100_sxm")));
  EXPECT_TRUE(ok(check(kGemm, kSm90 + " cluster=1x2", "h100_sxm")));
  // An M/N-major operand shared by the cluster is multicast in halves of whole 64-row blocks.
  const std::string rrr = "gemm rrr m1024 n1024 k1024 bf16";
  EXPECT_TRUE(violates(check(rrr, "fam=sm90 tile=128x64x64 warps=2x1 cluster=2x1", "h100_sxm"), "cluster", {"128"}));
  EXPECT_TRUE(ok(check(rrr, "fam=sm90 tile=128x128x64 warps=2x1 cluster=2x1", "h100_sxm")));
  EXPECT_TRUE(ok(check(rrr, "fam=sm90 tile=128x64x64 warps=2x1 cluster=1x2", "h100_sxm")));  // B is not shared
}

TEST(LegalityRule, AlignVectorWidth) {
  EXPECT_TRUE(violates(check(kGemm, kSm80 + " align=16x16x16"), "align", {"vector width 16", "bf16"}));
  EXPECT_EQ(legal_on_arch(parse_config(kSm80 + " align=16x16x16"), arch("a100_sxm"), DType::bf16).rule, "align");
  EXPECT_TRUE(ok(check(kGemm, kSm80 + " align=8x8x8")));
  const std::string f32 = "gemm rcr m1024 n1024 k1024 f32";
  const std::string tf32_cfg = "fam=sm80 tile=128x128x32 warps=2x4 stages=3";  // tf32 needs small warp tiles
  EXPECT_TRUE(violates(check(f32, tf32_cfg + " align=8x8x4"), "align", {"vector width 8", "f32"}));
  EXPECT_TRUE(ok(check(f32, tf32_cfg + " align=4x4x4")));
}

TEST(LegalityRule, AlignContiguousExtentGemm) {
  struct Case {
    std::string problem, operand, extent, allowed;
  };
  // Contiguous extents: A = k (row) or m (col); B = n (row) or k (col); C = n (row).
  const Case cases[] = {
      {"gemm rcr m64 n64 k36 bf16", "A", "36", "4"},  {"gemm rcr m64 n66 k64 bf16", "C", "66", "2"},
      {"gemm rrr m64 n66 k64 bf16", "B", "66", "2"},  {"gemm rrr m64 n64 k36 bf16", "A", "36", "4"},
      {"gemm crr m66 n64 k64 bf16", "A", "66", "2"},  {"gemm crr m64 n36 k64 bf16", "B", "36", "4"},
      {"gemm ccr m64 n64 k66 bf16", "B", "66", "2"},  {"gemm ccr m66 n64 k64 bf16", "A", "66", "2"},
  };
  const std::string cfg = kSm80 + " align=8x8x8";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.problem);
    EXPECT_TRUE(violates(check(c.problem, cfg), "align",
                         {"on " + c.operand, "extent " + c.extent, "at most " + c.allowed}));
    EXPECT_TRUE(ok(check(c.problem, kSm80)));  // align=auto resolves to what is allowed
  }
  // An odd dimension that no operand is contiguous in does not matter.
  EXPECT_TRUE(ok(check("gemm rcr m66 n64 k64 bf16", cfg)));
  EXPECT_TRUE(ok(check("gemm rrr m66 n64 k64 bf16", cfg)));
  EXPECT_TRUE(ok(check("gemm crr m64 n64 k66 bf16", cfg)));
}

TEST(LegalityRule, AlignContiguousExtentConv) {
  // C/G = 3, K/G = 8: x and w are contiguous in C/G; y in K/G.
  const std::string odd_c = " g2 mb1 ic6 ih8 iw8 oc16 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
  // C/G = 8, K/G = 3.
  const std::string odd_k = " g2 mb1 ic16 ih8 iw8 oc6 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
  const std::string cfg = kSm80 + " align=8x8x8";
  struct Case {
    std::string problem, operand, extent;
  };
  const Case cases[] = {
      {"fwd" + odd_c, "A", "3"},        {"bwd_data" + odd_c, "B", "3"}, {"bwd_weight" + odd_c, "B", "3"},
      {"fwd" + odd_k, "C", "3"},        {"bwd_data" + odd_k, "A", "3"}, {"bwd_weight" + odd_k, "A", "3"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.problem);
    EXPECT_TRUE(violates(check(c.problem, cfg), "align", {"on " + c.operand, "extent " + c.extent, "at most 1"}));
    // Scalar accesses (align 1) need a small tile: at most 16 loads per thread and operand.
    const std::string small = "fam=sm80 tile=64x64x32 warps=2x2";
    EXPECT_TRUE(ok(check(c.problem, small)));
    // The widest explicit alignment the problem allows is legal.
    Problem p = parse_problem(c.problem);
    KernelConfig r = resolve(parse_config(small), p);
    EXPECT_TRUE(ok(legal(p, r, arch("a100_sxm"))));
  }
}

TEST(LegalityRule, Sm80Specifics) {
  // epi=smem is not implemented by fam=sm80.
  EXPECT_TRUE(violates(check("gemm rcr m256 n256 k256 bf16", kSm80 + " epi=smem"), "epi", {"epi=direct"}));
  // tf32 fragments: a 64x64 warp tile spills.
  EXPECT_TRUE(violates(check("gemm rcr m256 n256 k256 f32", "fam=sm80 tile=128x128x32 warps=2x2"), "registers",
                       {"64x64", "2048"}));
  EXPECT_TRUE(ok(check("gemm rcr m256 n256 k256 f32", "fam=sm80 tile=128x128x32 warps=2x4")));
  // Scalar loads (odd K): a 128x128x32 tile needs 32 loads per thread and operand.
  EXPECT_TRUE(violates(check("gemm rcr m256 n256 k255 bf16", kSm80), "registers", {"1x1", "32 loads per thread"}));
  EXPECT_TRUE(ok(check("gemm rcr m256 n256 k255 bf16", "fam=sm80 tile=64x64x32 warps=2x2")));
  // Mixed GEMM-view input dtypes: bwd_weight reads x (f16) and dy (f32).
  EXPECT_TRUE(violates(check("bwd_weight g1 mb1 ic16 ih8 iw8 oc16 kh3 kw3 f16:f16:f32", kSm80), "dtype",
                       {"f32 and f16"}));
  EXPECT_TRUE(ok(check("fwd g1 mb1 ic16 ih8 iw8 oc16 kh3 kw3 f16:f16:f32", "fam=sm80 tile=64x64x32 warps=2x2")));
}

TEST(LegalityRule, SplitK) {
  const std::string p = "gemm rcr m1024 n1024 k64 bf16";  // 2 K tiles of 32
  EXPECT_TRUE(violates(check(p, kSm80 + " splitk=4 skmode=parallel"), "splitk", {"splitk 4", "2 K tiles"}));
  EXPECT_TRUE(ok(check(p, kSm80 + " splitk=2 skmode=parallel")));
}

// One accumulator may sum at most 2^20 products: DeepLab's stem bwd_weight at mb128 has K = 128 x 260 x 260.
TEST(LegalityRule, SplitKBoundsTheAccumulationChain) {
  const std::string p = "bwd_weight g1 mb128 ic3 ih520 iw520 oc64 kh7 kw7 sh2 sw2 ph3 pw3 bf16";
  const std::string c = "fam=sm80 tile=64x64x32 warps=2x2 stages=3 align=8x1x1";
  EXPECT_TRUE(violates(check(p, c), "splitk", {"8652800 products", "at most 1048576"}));
  EXPECT_TRUE(violates(check(p, c + " splitk=4 skmode=parallel"), "splitk", {"2163200 products"}));
  EXPECT_TRUE(ok(check(p, c + " splitk=16 skmode=parallel")));  // 540,800 per split
  // 2^20 exactly is allowed: K = 16 x 256 x 256.
  EXPECT_TRUE(ok(check("bwd_weight g1 mb16 ic16 ih256 iw256 oc16 kh1 kw1 bf16", c)));
  EXPECT_TRUE(violates(check("bwd_weight g1 mb17 ic16 ih256 iw256 oc16 kh1 kw1 bf16", c), "splitk", {"products"}));
}

TEST(LegalityRule, Index32) {
  // 65536 x 32768 = 2^31 elements of A.
  EXPECT_TRUE(violates(check("gemm rcr m65536 n128 k32768 bf16", kSm80), "index32", {"2147483648"}));
  EXPECT_TRUE(ok(check("gemm rcr m65535 n128 k32768 bf16", kSm80)));
  // dw: 512 x 256 x 256 x 64 = 2^31 input elements.
  EXPECT_TRUE(violates(check("fwd g64 mb512 ic64 ih256 iw256 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=dw"),
                       "index32", {"2^31"}));
  EXPECT_TRUE(ok(check("fwd g64 mb256 ic64 ih256 iw256 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=dw")));
}

TEST(LegalityRule, DwTile) {
  EXPECT_TRUE(violates(check(kDwConv, "fam=dw dwtile=64x4x8 ppt=8 cpt=1"), "dw_tile", {"ppt"}));
  EXPECT_TRUE(ok(check(kDwConv, "fam=dw dwtile=64x4x8 ppt=4 cpt=1")));
}

TEST(LegalityRule, FamilyOp) {
  EXPECT_TRUE(violates(check(kGemm, "fam=dw"), "family_op", {"depthwise"}));
  EXPECT_TRUE(violates(check("fwd g1 mb1 ic64 ih8 iw8 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=dw"), "family_op"));
  EXPECT_TRUE(violates(check("fwd g32 mb1 ic64 ih8 iw8 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=dw"), "family_op"));
  EXPECT_TRUE(violates(check("fwd g64 mb1 ic64 ih8 iw8 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "fam=dw"), "family_op"));
  EXPECT_TRUE(ok(check(kDwConv, "fam=dw")));
}

TEST(LegalityRule, DwChannelsPerThread) {
  const std::string six = "fwd g6 mb1 ic6 ih8 iw8 oc6 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
  EXPECT_TRUE(violates(check(six, "fam=dw cpt=4"), "align", {"channels 6", "cpt 4"}));
  EXPECT_TRUE(ok(check(six, "fam=dw cpt=2")));
  // Vector width: 16 x 2 bytes > 16 (bf16), 8 x 4 bytes > 16 (f32).
  EXPECT_TRUE(violates(check(kDwConv, "fam=dw cpt=16"), "align", {"cpt 16", "bf16"}));
  const std::string f32 = "fwd g64 mb1 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 f32";
  EXPECT_TRUE(violates(check(f32, "fam=dw cpt=8"), "align", {"cpt 8", "f32"}));
  EXPECT_TRUE(ok(check(f32, "fam=dw cpt=4")));
}

TEST(LegalityRule, DwSplitKOnlyForBwdWeight) {
  const std::string rest = " g64 mb1 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
  EXPECT_TRUE(violates(check("fwd" + rest, "fam=dw splitk=8"), "splitk", {"bwd_weight"}));
  EXPECT_TRUE(violates(check("bwd_data" + rest, "fam=dw splitk=8"), "splitk", {"bwd_weight"}));
  EXPECT_TRUE(ok(check("bwd_weight" + rest, "fam=dw splitk=8")));
  EXPECT_TRUE(ok(check("fwd" + rest, "fam=dw splitk=1")));
}

TEST(LegalityRule, DwSmem) {
  // Stride 8 makes the input halo tile (59 x 251) x 64 channels (plus the f32 filter) far larger
  // than 232448 bytes; the size is the family's own geometry.
  const std::string big = "fwd g64 mb1 ic64 ih512 iw512 oc64 kh3 kw3 sh8 sw8 ph1 pw1 bf16";
  const std::string cfg = "fam=dw dwtile=8x32x64 ppt=2 cpt=8";
  int smem = estimate_resources(parse_config(cfg), parse_problem(big)).smem_bytes;
  EXPECT_GE(smem, (59 * 251 + 9) * 64 * 2);
  EXPECT_EQ(smem, family::dw_shared_bytes(std::get<ConvProblem>(parse_problem(big)), parse_config(cfg)));
  EXPECT_TRUE(violates(check(big, cfg, "h100_sxm"), "smem", {std::to_string(smem), "232448"}));
  EXPECT_TRUE(ok(check("fwd g64 mb1 ic64 ih512 iw512 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", cfg, "h100_sxm")));
}

TEST(LegalityAlign, MaxAlignmentExamples) {
  auto ma = [](const std::string& p) { return max_alignment(parse_problem(p)); };
  EXPECT_EQ(ma("gemm rcr m128 n128 k17 bf16"), (std::array<int, 3>{1, 1, 8}));
  EXPECT_EQ(ma("gemm rcr m128 n24 k64 bf16")[2], 8);
  EXPECT_EQ(ma("gemm rcr m128 n20 k64 bf16")[2], 4);
  EXPECT_EQ(ma("gemm rcr m128 n128 k64 f32"), (std::array<int, 3>{4, 4, 4}));
  EXPECT_EQ(ma("gemm rcr m128 n128 k64 e4m3:e4m3:bf16"), (std::array<int, 3>{16, 16, 8}));
  EXPECT_EQ(ma("gemm crr m12 n128 k64 bf16")[0], 4);
  EXPECT_EQ(ma("fwd g1 mb1 ic3 ih8 iw8 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"), (std::array<int, 3>{1, 1, 8}));
  EXPECT_EQ(ma("fwd g2 mb1 ic6 ih8 iw8 oc16 kh3 kw3 sh1 sw1 ph1 pw1 bf16")[0], 1);
}

TEST(LegalityAlign, ResolveReplacesAutoOnly) {
  Problem p = parse_problem("gemm rcr m128 n24 k17 bf16");
  KernelConfig r = resolve(parse_config(kSm80), p);
  EXPECT_EQ(r.align_a, 1);
  EXPECT_EQ(r.align_b, 1);
  EXPECT_EQ(r.align_c, 8);
  KernelConfig back = r;
  back.align_a = back.align_b = back.align_c = 0;
  EXPECT_EQ(back, parse_config(kSm80)) << "only the alignment changes";
  KernelConfig fixed = parse_config(kSm80 + " align=2x2x2");
  EXPECT_EQ(resolve(fixed, p), fixed);
  KernelConfig dw = parse_config("fam=dw");
  EXPECT_EQ(resolve(dw, parse_problem(kDwConv)), dw);
}

TEST(LegalityResources, Sanity) {
  Problem p = parse_problem(kGemm);
  auto r2 = estimate_resources(parse_config("fam=sm80 tile=128x128x32 stages=2"), p);
  auto r4 = estimate_resources(parse_config("fam=sm80 tile=128x128x32 stages=4"), p);
  EXPECT_EQ(r2.smem_bytes, 2 * 256 * 32 * 2);
  EXPECT_EQ(r4.smem_bytes, 2 * r2.smem_bytes);
  EXPECT_EQ(r2.threads, 128);
  EXPECT_EQ(r2.regs_per_thread, r4.regs_per_thread);
  auto f32 = estimate_resources(parse_config("fam=sm80 tile=128x128x32 stages=2"),
                                parse_problem("gemm rcr m1024 n1024 k1024 f32"));
  EXPECT_EQ(f32.smem_bytes, 2 * r2.smem_bytes);
  auto big = estimate_resources(parse_config("fam=sm80 tile=256x128x32 warps=2x2 stages=2"), p);
  EXPECT_GT(big.regs_per_thread, r2.regs_per_thread);
  auto dw = estimate_resources(parse_config("fam=dw dwtile=4x8x32 cpt=2"), parse_problem(kDwConv));
  EXPECT_EQ(dw.threads, 32 * 16);
  EXPECT_GT(dw.smem_bytes, 0);
}

TEST(LegalityProperty, ResolvingKeepsLegalConfigsLegal) {
  const Problem probs[] = {parse_problem("gemm rcr m1000 n1000 k1000 bf16"),
                           parse_problem("gemm crr m77 n64 k40 f16")};
  const auto& space = find_space("gemm_sm80");
  int legal_count = 0;
  for (const auto& p : probs)
    for (const auto& c : space.enumerate()) {
      Verdict v = legal(p, c, arch("a100_sxm"));
      KernelConfig r = resolve(c, p);
      EXPECT_EQ(v.ok, legal(p, r, arch("a100_sxm")).ok) << to_string(c);
      legal_count += v.ok;
    }
  EXPECT_GT(legal_count, 0);
}

// ProblemLegality (the selector's and the registry's per-problem path, without messages) agrees with
// legal() on every config of the default spaces that passes legal_on_arch, over problems of every op,
// direction and family with odd sizes, and resolves like resolve().
TEST(ProblemLegality, AgreesWithLegalOnEveryDefaultConfig) {
  const std::vector<std::string> problems = {
      kGemm, "gemm rrr m33 n17 k4100 f16", "gemm crc m7 n4096 k4096 bf16", "gemm rcr m1 n1 k1 bf16",
      kDwConv, "bwd_weight g96 mb3 ic96 ih27 iw31 oc96 kh5 kw5 sh2 sw2 ph2 pw2 f16",
      "bwd_data g96 mb3 ic96 ih27 iw31 oc96 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
      "fwd g1 mb5 ic3 ih225 iw223 oc64 kh7 kw7 sh2 sw2 ph3 pw3 bf16",
      "bwd_data g4 mb2 ic64 ih14 iw14 oc128 kh3 kw3 sh1 sw1 ph1 pw1 f16",
      "bwd_weight g1 mb64 ic256 ih56 iw56 oc256 kh1 kw1 sh1 sw1 ph0 pw0 bf16",
      "fwd g1 mb2 ic16 id9 ih10 iw11 oc24 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16"};
  const ArchSpec h200 = arch("h200");
  int checked = 0, legal_count = 0;
  for (const auto& text : problems) {
    const Problem p = parse_problem(text);
    const ProblemLegality legality(p, h200);
    for (const auto& space : default_spaces())
      for (const auto& c : space.enumerate()) {
        if (!legal_on_arch(c, h200, input_dtype(p))) continue;
        const Verdict want = legal(p, c, h200);
        ASSERT_EQ(legality.check<false>(legality.resolve(c)).ok, want.ok) << text << " | " << to_string(c);
        const Verdict explained = legality.check<true>(legality.resolve(c));
        ASSERT_EQ(explained.rule, want.rule) << text << " | " << to_string(c);
        ASSERT_EQ(explained.reason, want.reason) << text << " | " << to_string(c);
        ASSERT_EQ(legality.resolve(c), resolve(c, p)) << text << " | " << to_string(c);
        ++checked, legal_count += want.ok;
      }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(legal_count, 100);
  EXPECT_LT(legal_count, checked);  // both verdicts occur
}
