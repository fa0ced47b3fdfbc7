// The feature function: schema stability, hand-computed values, batch = single rows, and the
// analytic fallback's ordering on cases where the right answer is obvious.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jit/families.hpp"
#include "test_util.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

namespace tilepick {
namespace {

const ArchSpec& h200() { return test::arch("h200"); }

FeatureRow row(const std::string& problem, const std::string& config, const ArchSpec& dev = h200()) {
  Problem p = parse_problem(problem);
  return features(p, resolve(parse_config(config), p), dev);
}

TEST(FeatureSchema, NamesAreUniqueAndHashed) {
  const FeatureSchema& s = feature_schema();
  EXPECT_EQ(std::set<std::string>(s.names.begin(), s.names.end()).size(), s.size());
  EXPECT_EQ(s.version, kFeatureVersion);
  EXPECT_EQ(s.hash, feature_schema_hash(s.names, s.version));
  EXPECT_EQ(s.hash.size(), 16u);
  EXPECT_EQ(&s, &feature_schema());
  EXPECT_EQ(row("gemm rcr m64 n64 k64 f16", "fam=sm80").values.size(), s.size());
  for (const auto& f : config_fields())
    for (int i = 0; i < f.arity; ++i) EXPECT_GE(s.index("cfg_" + std::string(f.vars[i])), 0) << f.vars[i];
  EXPECT_EQ(s.index("no_such_feature"), -1);
}

TEST(FeatureSchema, HashChangesWithNamesOrderAndVersion) {
  std::vector<std::string> names = feature_schema().names;
  const std::string base = feature_schema_hash(names, kFeatureVersion);
  EXPECT_EQ(feature_schema_hash(names, kFeatureVersion), base);  // deterministic
  EXPECT_NE(feature_schema_hash(names, kFeatureVersion + 1), base);
  auto renamed = names;
  renamed[3] += "_x";
  EXPECT_NE(feature_schema_hash(renamed, kFeatureVersion), base);
  auto swapped = names;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(feature_schema_hash(swapped, kFeatureVersion), base);
  auto shorter = names;
  shorter.pop_back();
  EXPECT_NE(feature_schema_hash(shorter, kFeatureVersion), base);
  // Names are separated, so moving a character between neighbours changes the hash.
  EXPECT_NE(feature_schema_hash(std::vector<std::string>{"ab", "c"}, 1),
            feature_schema_hash(std::vector<std::string>{"a", "bc"}, 1));
}

TEST(Features, PaddedWorkPerDimension) {
  auto r = row("gemm rcr m129 n256 k100 f16", "fam=sm80 tile=128x128x32 warps=2x2 stages=3");
  EXPECT_DOUBLE_EQ(r.at("tiles_m"), 2);
  EXPECT_DOUBLE_EQ(r.at("eff_m"), 129.0 / 256);
  EXPECT_DOUBLE_EQ(r.at("eff_n"), 1.0);
  EXPECT_DOUBLE_EQ(r.at("tiles_k"), 4);
  EXPECT_DOUBLE_EQ(r.at("eff_k"), 100.0 / 128);
  EXPECT_DOUBLE_EQ(r.at("pad_eff"), 129.0 / 256 * 100.0 / 128);
  EXPECT_DOUBLE_EQ(r.at("ctas"), 2 * 2);
  EXPECT_DOUBLE_EQ(r.at("log2_m"), std::log2(129.0));
  EXPECT_DOUBLE_EQ(r.at("cfg_tile_m"), 128);
  EXPECT_DOUBLE_EQ(r.at("smem_per_stage"), (128 + 128) * 32 * 2);
  EXPECT_THROW(r.at("eff_q"), NotFound);
}

TEST(Features, SplitKPartitioning) {
  auto r = row("gemm rcr m64 n64 k4096 bf16", "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=3 skmode=parallel");
  EXPECT_DOUBLE_EQ(r.at("tiles_k"), 128);
  EXPECT_DOUBLE_EQ(r.at("k_tiles_per_split"), 43);  // ceil(128 / 3)
  EXPECT_DOUBLE_EQ(r.at("k_per_split"), 43 * 32);
  EXPECT_DOUBLE_EQ(r.at("splits"), 3);
  EXPECT_DOUBLE_EQ(r.at("split_balance"), 128.0 / 129);
  EXPECT_DOUBLE_EQ(r.at("ctas"), 3);
  // Parallel split-K writes and reads fp32 partials of the whole output per slice.
  const double min_bytes = (64.0 * 4096 * 2) * 2 + 64 * 64 * 2;
  EXPECT_DOUBLE_EQ(r.at("reduce_over_min_bytes"), 2.0 * 64 * 64 * 3 * 4 / min_bytes);
  EXPECT_DOUBLE_EQ(row("gemm rcr m64 n64 k4096 bf16", "fam=sm80 tile=64x64x32").at("reduce_over_min_bytes"), 0);
}

TEST(Features, OccupancyWavesAndDevice) {
  // 128 threads; smem 3 x 256 x 32 x 2 = 48 KiB; about 232 registers -> 7424 per warp -> 8 warps by
  // registers = 2 blocks; 228 KiB / (48 + 1) KiB = 4 by shared memory. So 2 blocks per SM.
  const std::string cfg = "fam=sm80 tile=128x128x32 warps=2x2 stages=3";
  auto r = row("gemm rcr m4096 n4096 k4096 f16", cfg);
  EXPECT_DOUBLE_EQ(r.at("threads"), 128);
  EXPECT_DOUBLE_EQ(r.at("smem_bytes"), 49152);
  EXPECT_DOUBLE_EQ(r.at("regs_est"), 232);
  EXPECT_DOUBLE_EQ(r.at("ctas_per_sm"), 2);
  EXPECT_DOUBLE_EQ(r.at("occupancy"), 2.0 * 128 / 2048);
  EXPECT_DOUBLE_EQ(r.at("ctas"), 32 * 32);
  EXPECT_DOUBLE_EQ(r.at("waves"), 1024.0 / 264);
  // 1024 blocks: the busiest SM runs 8 in 4 rounds of 2; 8 resident warps saturate it.
  EXPECT_DOUBLE_EQ(r.at("wave_eff"), 1024.0 / (132 * 4 * 2));
  EXPECT_DOUBLE_EQ(r.at("dev_sm_count"), 132);
  EXPECT_DOUBLE_EQ(r.at("dev_ridge"), h200().ridge_flops_per_byte(DType::f16));
  const double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 2;
  EXPECT_DOUBLE_EQ(r.at("arith_intensity"), flops / bytes);
  EXPECT_DOUBLE_EQ(r.at("ai_over_ridge"), flops / bytes / h200().ridge_flops_per_byte(DType::f16));
  EXPECT_DOUBLE_EQ(r.at("tile_intensity"), 2.0 * 128 * 128 / (256 * 2));
  // The same pair on an A100: device terms change, the config terms do not.
  auto a = row("gemm rcr m4096 n4096 k4096 f16", cfg, test::arch("a100_sxm"));
  EXPECT_DOUBLE_EQ(a.at("dev_sm_count"), 108);
  EXPECT_DOUBLE_EQ(a.at("pad_eff"), r.at("pad_eff"));
}

TEST(Features, ConvolutionUsesTheImplicitGemmView) {
  const std::string p = "fwd g32 mb2 ic256 ih14 iw14 oc256 kh3 kw3 sh2 sw2 ph1 pw1 f16";
  auto r = row(p, "fam=sm80 tile=64x32x32 warps=2x1 stages=3");
  EXPECT_DOUBLE_EQ(r.at("op"), 1);
  EXPECT_DOUBLE_EQ(r.at("log2_m"), std::log2(2.0 * 7 * 7));
  EXPECT_DOUBLE_EQ(r.at("log2_n"), 3);              // K/G = 8
  EXPECT_DOUBLE_EQ(r.at("log2_k"), std::log2(72.0));  // C/G x 3 x 3
  EXPECT_DOUBLE_EQ(r.at("log2_batch"), 5);          // groups
  EXPECT_DOUBLE_EQ(r.at("eff_n"), 8.0 / 32);
  EXPECT_DOUBLE_EQ(r.at("eff_m"), 98.0 / 128);
  EXPECT_DOUBLE_EQ(r.at("ctas"), 2 * 1 * 32);
  EXPECT_DOUBLE_EQ(r.at("conv_log2_groups"), 5);
  EXPECT_DOUBLE_EQ(r.at("conv_c_per_group"), 8);
  EXPECT_DOUBLE_EQ(r.at("conv_taps"), 9);
  EXPECT_DOUBLE_EQ(r.at("conv_stride_h"), 2);
  EXPECT_DOUBLE_EQ(r.at("conv_out_h"), 7);
  EXPECT_DOUBLE_EQ(r.at("conv_ndim"), 2);
  EXPECT_DOUBLE_EQ(r.at("conv_depthwise"), 0);
  EXPECT_DOUBLE_EQ(r.at("max_align_a"), 8);
  auto g = row("gemm rcr m98 n8 k72 f16", "fam=sm80 tile=64x32x32 warps=2x1 stages=3");
  EXPECT_DOUBLE_EQ(g.at("conv_taps"), 0);  // conv terms are zero for a GEMM
  EXPECT_DOUBLE_EQ(g.at("op"), 0);
  auto bw = row("bwd_weight g1 mb8 ic64 ih56 iw56 oc128 kh3 kw3 sh1 sw1 ph1 pw1 f16", "fam=sm80 tile=64x64x32 warps=2x2");
  EXPECT_DOUBLE_EQ(bw.at("op"), 3);
  EXPECT_DOUBLE_EQ(bw.at("log2_k"), std::log2(8.0 * 56 * 56));
}

TEST(Features, DepthwiseTilesFollowTheFamilyGrid) {
  const std::string text = "fwd g96 mb4 ic96 ih28 iw28 oc96 kh7 kw7 sh1 sw1 ph3 pw3 f16";
  const std::string cfg = "fam=dw dwtile=4x8x64 ppt=2 cpt=4";
  auto r = row(text, cfg);
  const auto& p = std::get<ConvProblem>(parse_problem(text));
  EXPECT_DOUBLE_EQ(r.at("ctas"), double(family::dw_grid_blocks(p, parse_config(cfg))));
  EXPECT_DOUBLE_EQ(r.at("eff_n"), 96.0 / 128);  // channels in tiles of 64
  EXPECT_DOUBLE_EQ(r.at("eff_m"), 28.0 * 28 / (28 * 32));  // 28 rows in tiles of 4, 28 cols in tiles of 8
  EXPECT_DOUBLE_EQ(r.at("conv_depthwise"), 1);
  EXPECT_DOUBLE_EQ(r.at("cfg_dw_cpt"), 4);
  EXPECT_DOUBLE_EQ(r.at("vec_bytes_a"), 8);
}

TEST(Features, AutoAlignmentIsResolved) {
  Problem p = parse_problem("gemm rcr m100 n100 k100 f16");
  auto a = features(p, parse_config("fam=sm80"), h200());
  auto b = features(p, resolve(parse_config("fam=sm80"), p), h200());
  EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(double)), 0);
  EXPECT_DOUBLE_EQ(a.at("cfg_align_a"), 4);
}

TEST(Features, BatchRowsEqualSingleRowsBitForBit) {
  std::vector<Problem> problems;
  std::vector<KernelConfig> configs;
  for (const char* text : {"gemm rcr m127 n4096 k512 bf16", "fwd g32 mb8 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 f16",
                           "fwd g64 mb2 ic64 ih56 iw56 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16"}) {
    Problem p = parse_problem(text);
    for (const auto& e : Registry::default_registry().lookup(p, h200())) problems.push_back(p), configs.push_back(e.config);
  }
  ASSERT_GT(problems.size(), 600u);
  const std::size_t w = feature_schema().size();
  std::vector<double> batch(problems.size() * w), one_problem;
  features_batch(problems, configs, h200(), batch.data(), 4);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    auto single = features(problems[i], configs[i], h200());
    ASSERT_EQ(std::memcmp(single.values.data(), batch.data() + i * w, w * sizeof(double)), 0) << i;
  }
  // The one-problem entry point gives the same rows.
  std::size_t n0 = 0;
  while (n0 < problems.size() && problems[n0] == problems[0]) ++n0;
  one_problem.resize(n0 * w);
  features_batch(problems[0], std::span(configs).first(n0), h200(), one_problem.data(), 3);
  EXPECT_EQ(std::memcmp(one_problem.data(), batch.data(), n0 * w * sizeof(double)), 0);
  EXPECT_THROW(features_batch(problems, std::span(configs).first(1), h200(), batch.data()), Error);
  // The schema's leading problem columns are the same in every row of a problem; the next one is not.
  const std::size_t lead = feature_schema().problem_columns;
  ASSERT_GT(lead, 0u);
  ASSERT_LT(lead, w);
  bool next_varies = false;
  for (std::size_t i = 1; i < n0; ++i) {
    EXPECT_EQ(std::memcmp(batch.data(), batch.data() + i * w, lead * sizeof(double)), 0) << i;
    next_varies = next_varies || batch[lead] != batch[i * w + lead];
  }
  EXPECT_TRUE(next_varies);
}

TEST(Features, ProblemFeaturesAreTheLeadingColumns) {
  const std::size_t lead = feature_schema().problem_columns;
  for (const auto& [problem, config] : std::vector<std::pair<std::string, std::string>>{
           {"gemm rcr m127 n4096 k512 bf16 ep=bias+relu", "fam=sm80 tile=128x128x32 warps=2x2 stages=4"},
           {"fwd g1 mb8 ic64 ih56 iw56 oc128 kh3 kw3 sh2 sw2 ph1 pw1 f16", "fam=sm80 tile=64x64x32 warps=2x2 stages=3"},
           {"bwd_data g4 mb2 ic32 id8 ih16 iw16 oc64 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16",
            "fam=sm80 tile=64x32x32 warps=2x1 stages=3"},
           {"fwd g96 mb4 ic96 ih28 iw28 oc96 kh7 kw7 sh1 sw1 ph3 pw3 f16", "fam=dw dwtile=4x8x64 ppt=2 cpt=4"}}) {
    const Problem p = parse_problem(problem);
    const std::vector<double> head = problem_features(p, h200());
    const FeatureRow full = features(p, resolve(parse_config(config), p), h200());
    ASSERT_EQ(head.size(), lead) << problem;
    EXPECT_EQ(std::memcmp(head.data(), full.values.data(), lead * sizeof(double)), 0) << problem;
  }
  EXPECT_EQ(problem_features(parse_problem("fwd g96 mb4 ic96 ih28 iw28 oc96 kh7 kw7 sh1 sw1 ph3 pw3 f16"), h200())
                [static_cast<std::size_t>(feature_schema().index("conv_depthwise"))],
            1);
}

TEST(Heuristic, SmallTilesBeatWastedWork) {
  // 128 x 128 output on 132 SMs: a 256x128 tile pads M to 256 and runs on one SM; 64x64 uses four.
  Problem p = parse_problem("gemm rcr m128 n128 k4096 bf16");
  KernelConfig big = parse_config("fam=sm80 tile=256x128x32 warps=4x2 stages=3");
  KernelConfig small = parse_config("fam=sm80 tile=64x64x32 warps=2x2 stages=4");
  ASSERT_TRUE(legal(p, big, h200())) << legal(p, big, h200()).reason;
  ASSERT_TRUE(legal(p, small, h200()));
  EXPECT_DOUBLE_EQ(features(p, big, h200()).at("pad_eff"), 0.5);
  EXPECT_GT(heuristic_score(p, small, h200()), heuristic_score(p, big, h200()));
}

TEST(Heuristic, SplitKWinsForADeepReduction) {
  Problem p = parse_problem("gemm rcr m64 n64 k65536 bf16");
  KernelConfig one = parse_config("fam=sm80 tile=64x64x32 warps=2x2 stages=4");
  KernelConfig split = parse_config("fam=sm80 tile=64x64x32 warps=2x2 stages=4 splitk=16 skmode=parallel");
  EXPECT_GT(heuristic_score(p, split, h200()), 4 * heuristic_score(p, one, h200()));
  // Over the whole legal pool the best-ranked config splits K.
  std::vector<KernelConfig> pool;
  for (const auto& e : Registry::default_registry().lookup(p, h200())) pool.push_back(e.config);
  ASSERT_FALSE(pool.empty());
  auto order = heuristic_rank(p, pool, h200());
  ASSERT_EQ(order.size(), pool.size());
  EXPECT_GT(pool[order[0]].splitk, 1) << to_string(pool[order[0]]);
  EXPECT_GE(heuristic_score(p, pool[order[0]], h200()), heuristic_score(p, pool[order.back()], h200()));
}

TEST(Heuristic, PipelineStagesHideLoadLatency) {
  // Few blocks and a long K loop: each iteration waits for its loads unless the stages hide them.
  Problem p = parse_problem("gemm rcr m256 n256 k8192 bf16");
  KernelConfig two = parse_config("fam=sm80 tile=64x64x64 warps=2x2 stages=2");
  KernelConfig four = parse_config("fam=sm80 tile=64x64x64 warps=2x2 stages=4");
  ASSERT_TRUE(legal(p, four, h200()));
  EXPECT_GT(heuristic_score(p, four, h200()), 1.5 * heuristic_score(p, two, h200()));
  // The same pair has one roofline estimate: the features do not see the difference.
  EXPECT_DOUBLE_EQ(features(p, two, h200()).at("est_time_us"), features(p, four, h200()).at("est_time_us"));
}

TEST(Heuristic, EstimatedTimeIsTheScoresTimeAndGrowsWithTheWork) {
  const KernelConfig c = parse_config("fam=sm80 tile=128x128x32 warps=2x2 stages=4");
  const Problem small = parse_problem("gemm rcr m4096 n4096 k4096 bf16");
  const Problem big = parse_problem("gemm rcr m8192 n8192 k8192 bf16");
  for (const Problem& p : {small, big}) {  // the score is useful TFLOP/s over the same estimate
    const double flops = std::exp2(features(p, c, h200()).at("log2_flops"));
    EXPECT_NEAR(estimated_time_us(p, c, h200()) * heuristic_score(p, c, h200()), flops * 1e-6, flops * 1e-15);
  }
  // 8x the work of a problem past one wave (1024 blocks on 132 SMs): about 8x the time
  const double ratio = estimated_time_us(big, c, h200()) / estimated_time_us(small, c, h200());
  EXPECT_GT(ratio, 6);
  EXPECT_LT(ratio, 10);
  const Problem conv = parse_problem("bwd_data g1 mb128 ic3 ih224 iw224 oc64 kh11 kw11 sh4 sw4 ph2 pw2 bf16");
  const auto pool = Registry::default_registry().lookup_configs(conv, h200());
  ASSERT_FALSE(pool.empty());
  for (const auto& cfg : pool) EXPECT_GT(estimated_time_us(conv, cfg, h200()), 0) << to_string(cfg);
  // a block that cannot fit has no estimate
  EXPECT_TRUE(std::isnan(estimated_time_us(small, parse_config("fam=sm80 tile=256x256x64 warps=1x1 stages=8"), h200())));
}

TEST(Heuristic, SerialSplitKWaitsForEachSlice) {
  Problem p = parse_problem("gemm rcr m64 n64 k65536 bf16");
  KernelConfig serial = parse_config("fam=sm80 tile=64x64x64 warps=2x2 stages=4 splitk=16 skmode=serial");
  KernelConfig parallel = parse_config("fam=sm80 tile=64x64x64 warps=2x2 stages=4 splitk=16 skmode=parallel");
  ASSERT_TRUE(legal(p, serial, h200()));
  EXPECT_GT(heuristic_score(p, parallel, h200()), heuristic_score(p, serial, h200()));
}

TEST(Heuristic, DepthwiseBlocksPayForTheirSerialChain) {
  // A memory-bound depthwise bwd_weight: the roofline ranks both alike; 16 splits cut each block's slices
  // from 128 (n) to 8 (measured 90 vs 657 us on an H100).
  Problem p = parse_problem("bwd_weight g256 mb128 ic256 ih48 iw48 oc256 kh3 kw3 sh2 sw2 ph1 pw1 bf16");
  KernelConfig split = parse_config("fam=dw splitk=16 dwtile=8x4x64 ppt=4 cpt=2");
  KernelConfig one = parse_config("fam=dw splitk=1 dwtile=16x32x16 ppt=16 cpt=1");
  ASSERT_TRUE(legal(p, split, h200()));
  ASSERT_TRUE(legal(p, one, h200()));
  EXPECT_GT(heuristic_score(p, split, h200()), heuristic_score(p, one, h200()));
}

TEST(Heuristic, IllegalResourcesScoreZero) {
  // About 392 registers per thread: no block fits, nothing runs.
  Problem p = parse_problem("gemm rcr m4096 n4096 k4096 f16");
  auto r = features(p, parse_config("fam=sm80 tile=256x256x32 warps=2x4 stages=3"), h200());
  EXPECT_DOUBLE_EQ(r.at("ctas_per_sm"), 0);
  EXPECT_TRUE(std::isnan(r.at("waves")));
  EXPECT_EQ(heuristic_score(p, parse_config("fam=sm80 tile=256x256x32 warps=2x4 stages=3"), h200()), 0);
}

}  // namespace
}  // namespace tilepick
