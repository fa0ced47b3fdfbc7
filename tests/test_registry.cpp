// The registry: functional keys, lookup (legal, resolved, unique) and the JSON export.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

#include "test_util.hpp"

using namespace tilepick;

namespace {

using test::arch;

// Lookup invariants shared by every problem: non-empty, legal, resolved, unique, in space order.
void check_lookup(const std::string& text, const std::string& sm, std::set<std::string> want_spaces) {
  SCOPED_TRACE(text + " on " + sm);
  Problem p = parse_problem(text);
  const ArchSpec& a = arch(sm);
  const auto& reg = Registry::default_registry();
  auto entries = reg.lookup(p, a);
  ASSERT_FALSE(entries.empty());
  std::set<KernelConfig> seen;
  std::set<std::string> spaces;
  std::vector<std::string> order;
  for (const auto& e : entries) {
    EXPECT_EQ(e.op, op_name(p));
    Verdict v = legal(p, e.config, a);
    EXPECT_TRUE(v.ok) << to_string(e.config) << ": " << v.rule << ": " << v.reason;
    if (e.config.fam() != Family::dw) {
      EXPECT_NE(e.config.align_a, 0) << "align=auto left in " << to_string(e.config);
      EXPECT_EQ(to_string(e.config).find("align=auto"), std::string::npos);
    }
    EXPECT_TRUE(seen.insert(e.config).second) << "duplicate " << to_string(e.config);
    spaces.insert(e.space);
    if (order.empty() || order.back() != e.space) order.push_back(e.space);
  }
  EXPECT_EQ(spaces, want_spaces);
  EXPECT_EQ(order.size(), spaces.size()) << "entries grouped by space";
  // Exactly the legal candidates, resolved.
  std::size_t legal_count = 0;
  for (const auto& e : reg.candidates(op_name(p), a)) legal_count += legal(p, e.config, a).ok;
  EXPECT_EQ(entries.size(), legal_count);
}

}  // namespace

TEST(RegistryKey, FunctionalKeys) {
  EXPECT_EQ(functional_key(parse_problem("gemm rcr m128 n128 k64 bf16"), arch("h100_sxm")), "gemm.bf16.rcr.sm_90");
  EXPECT_EQ(functional_key(parse_problem("gemm crr m128 n128 k64 f32"), arch("a100_sxm")), "gemm.f32.crr.sm_80");
  EXPECT_EQ(functional_key(parse_problem("gemm rcr m128 n128 k64 e4m3:e4m3:bf16"), arch("h100_sxm")),
            "gemm.e4m3:e4m3:bf16.rcr.sm_90");
  EXPECT_EQ(functional_key(parse_problem("gemm rcr batch8 m128 n128 k64 f16"), arch("l40s")), "gemm.f16.rcr.sm_89");
  EXPECT_EQ(functional_key(parse_problem("fwd g1 mb1 ic64 ih8 iw8 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"), arch("h100_sxm")),
            "conv_fwd.bf16.nhwgc-gkyxc-nhwgk.sm_90");
  EXPECT_EQ(functional_key(parse_problem("bwd_data g4 mb2 ic64 ih8 iw8 oc32 kh1 kw1 sh1 sw1 ph0 pw0 f16"), arch("a10")),
            "conv_bwd_data.f16.nhwgc-gkyxc-nhwgk.sm_86");
  EXPECT_EQ(functional_key(parse_problem("bwd_weight g1 mb2 ic32 id8 ih8 iw8 oc32 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 "
                                         "bf16"),
                           arch("a100_sxm")),
            "conv_bwd_weight.bf16.ndhwgc-gkzyxc-ndhwgk.sm_80");
  // Sizes do not enter the key.
  EXPECT_EQ(functional_key(parse_problem("gemm rcr m1 n2 k3 bf16"), arch("sm_90")),
            functional_key(parse_problem("gemm rcr m4096 n4096 k4096 bf16"), arch("sm_90")));
}

TEST(RegistryLookup, LargeGemmOnSm90) {
  check_lookup("gemm rcr m4096 n4096 k4096 bf16", "h100_sxm", {"gemm_sm80", "gemm_sm90"});
  check_lookup("gemm rcr m4096 n4096 k4096 bf16", "a100_sxm", {"gemm_sm80"});
}

TEST(RegistryLookup, ResNetConvFwd) {
  check_lookup("fwd g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16", "h100_sxm", {"conv_sm80"});
}

TEST(RegistryLookup, DepthwiseConvHasBothFamilies) {
  const std::string dw = "fwd g64 mb8 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16";
  check_lookup(dw, "h100_sxm", {"conv_sm80", "conv_dw"});
  std::set<int> fams;
  for (const auto& e : Registry::default_registry().lookup(parse_problem(dw), arch("h100_sxm")))
    fams.insert(e.config.family);
  EXPECT_EQ(fams, (std::set<int>{0, 2}));
}

TEST(RegistryLookup, Conv3dBwdWeight) {
  check_lookup("bwd_weight g1 mb2 ic32 id8 ih8 iw8 oc32 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16", "a100_sxm",
               {"conv_sm80"});
}

TEST(RegistryLookup, ResolvedAlignmentFollowsTheProblem) {
  Problem p = parse_problem("gemm rcr m512 n24 k40 bf16");
  auto want = max_alignment(p);
  auto entries = Registry::default_registry().lookup(p, arch("a100_sxm"));
  ASSERT_FALSE(entries.empty());
  for (const auto& e : entries) {
    EXPECT_EQ(e.config.align_a, want[0]);
    EXPECT_EQ(e.config.align_b, want[1]);
    EXPECT_EQ(e.config.align_c, want[2]);
  }
}

TEST(RegistryLookup, Fp8GemmOnSm80IsEmpty) {
  Problem p = parse_problem("gemm rcr m1024 n1024 k1024 e4m3:e4m3:bf16");
  EXPECT_TRUE(Registry::default_registry().lookup(p, arch("sm_80")).empty());
  EXPECT_FALSE(Registry::default_registry().candidates("gemm", arch("sm_80")).empty());
}

TEST(RegistryLookup, CandidatesFollowSpaceOpsAndArchs) {
  const auto& reg = Registry::default_registry();
  EXPECT_EQ(reg.candidates("gemm", arch("a100_sxm")).size(), find_space("gemm_sm80").enumerate().size());
  EXPECT_EQ(reg.candidates("conv_bwd_data", arch("a100_sxm")).size(),
            find_space("conv_sm80").enumerate().size() + find_space("conv_dw").enumerate().size());
  EXPECT_TRUE(reg.candidates("conv_transpose", arch("a100_sxm")).empty());
  ArchSpec future = arch("h100_sxm");
  future.sm = "sm_100";
  EXPECT_TRUE(reg.candidates("gemm", future).empty());
}

TEST(RegistryLookup, ExplicitAlignNextToAutoIsDeduplicated) {
  auto space = parse_space(R"({"name": "t", "ops": ["gemm"], "archs": ["sm_80"],
      "fields": {"tile_m": [64, 128], "align": ["auto", "8x8x8", "4x4x4"]}})",
                           "t.json");
  Registry reg({space});
  ASSERT_EQ(reg.candidates("gemm", arch("a100_sxm")).size(), 6u);
  // k = n = 1024: auto resolves to 8x8x8, which is listed too.
  auto entries = reg.lookup(parse_problem("gemm rcr m1024 n1024 k1024 bf16"), arch("a100_sxm"));
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].config.align_a, 8);  // auto sorts first and resolves to 8x8x8
  std::set<KernelConfig> uniq;
  for (const auto& e : entries) uniq.insert(e.config);
  EXPECT_EQ(uniq.size(), 4u);
  // k = n = 36: 8x8x8 is illegal, auto resolves to 4x4x4, which is listed too.
  EXPECT_EQ(reg.lookup(parse_problem("gemm rcr m1024 n36 k36 bf16"), arch("a100_sxm")).size(), 2u);
  // k = 36, n = 1024: auto resolves to 4x4x8, distinct from 4x4x4.
  EXPECT_EQ(reg.lookup(parse_problem("gemm rcr m1024 n1024 k36 bf16"), arch("a100_sxm")).size(), 4u);
}

TEST(RegistryExport, StructureAndCounts) {
  const auto& reg = Registry::default_registry();
  const auto& archs = default_arch_specs();
  nlohmann::json j = reg.export_json(archs);
  ASSERT_TRUE(j["spaces"].is_array());
  ASSERT_EQ(j["spaces"].size(), reg.spaces().size());
  for (std::size_t i = 0; i < reg.spaces().size(); ++i) {
    EXPECT_EQ(j["spaces"][i]["name"], reg.spaces()[i].name);
    EXPECT_EQ(j["spaces"][i]["hash"], reg.spaces()[i].hash);
    EXPECT_TRUE(j["spaces"][i]["ops"].is_array());
    EXPECT_TRUE(j["spaces"][i]["archs"].is_array());
    EXPECT_TRUE(j["spaces"][i]["path"].is_string());
  }
  std::size_t expect = 0;
  std::set<std::string> sms;
  for (const auto& a : archs)
    if (sms.insert(a.sm).second)
      for (const char* op : {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"})
        expect += reg.candidates(op, a).size();
  EXPECT_EQ(sms.size(), 4u);  // sm_80, sm_86, sm_89, sm_90
  ASSERT_TRUE(j["kernels"].is_array());
  EXPECT_EQ(j["kernels"].size(), expect);
  std::map<std::string, std::size_t> per_sm;
  std::set<std::string> keys;
  for (const auto& k : j["kernels"]) {
    for (const char* f : {"op", "arch", "space", "config", "hash"}) ASSERT_TRUE(k[f].is_string()) << f << k.dump();
    KernelConfig c = parse_config(k["config"].get<std::string>());
    EXPECT_EQ(k["hash"], config_hash(c));
    ++per_sm[k["arch"]];
    keys.insert(k["op"].get<std::string>() + "|" + k["arch"].get<std::string>() + "|" + k["space"].get<std::string>() +
                "|" + k["config"].get<std::string>());
  }
  EXPECT_EQ(keys.size(), j["kernels"].size()) << "no kernel exported twice";
  EXPECT_EQ(per_sm.size(), 4u);
  // Every shipped space lists every target but gemm_sm90 and gemm_sm90_tf32 (wgmma: sm_90 only).
  std::size_t sm90_only = 0;
  for (const auto& e : reg.candidates("gemm", arch("sm_90"))) sm90_only += e.space == "gemm_sm90" || e.space == "gemm_sm90_tf32";
  EXPECT_GT(sm90_only, 0u);
  EXPECT_EQ(per_sm["sm_80"] + sm90_only, per_sm["sm_90"]);
  // One spec per target gives the same export; an empty arch list gives no kernels.
  EXPECT_EQ(reg.export_json({arch("sm_80"), arch("sm_86"), arch("sm_89"), arch("sm_90")})["kernels"].size(), expect);
  EXPECT_TRUE(reg.export_json({})["kernels"].empty());
}
