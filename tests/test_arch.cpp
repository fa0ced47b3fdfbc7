// Arch specs: the shipped JSON files, lookup, strict parsing, live-device refinement.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"

namespace fs = std::filesystem;
using namespace tilepick;

namespace {

std::string arch_dir() { return env::data_dir() + "/arch"; }

// A private temp dir, removed at the end of each test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("tilepick_arch_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

nlohmann::json shipped_json(const std::string& name) {
  std::ifstream in(arch_dir() + "/" + name + ".json");
  return nlohmann::json::parse(in);
}

// Loading a modified copy of a shipped file must throw ParseError whose message has `needle`.
void expect_parse_error(const nlohmann::json& j, const std::string& needle) {
  TempDir dir;
  std::string path = dir.write(j.value("name", std::string("x")) + ".json", j.dump(2));
  try {
    load_arch_spec(path);
    FAIL() << "expected ParseError mentioning " << needle;
  } catch (const ParseError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << "message should name the file: " << msg;
  }
}

DeviceProps fake_device(const std::string& name, int major, int minor) {
  DeviceProps d;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  return d;
}

}  // namespace

TEST(Arch, EveryShippedSpecLoads) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(arch_dir())) {
    if (e.path().extension() != ".json") continue;
    ++n;
    EXPECT_NO_THROW(load_arch_spec(e.path().string())) << e.path();
  }
  EXPECT_GE(n, 6);
  const auto& specs = load_arch_specs(arch_dir());
  ASSERT_EQ(static_cast<int>(specs.size()), n);
  for (size_t i = 1; i < specs.size(); ++i) EXPECT_LT(specs[i - 1].name, specs[i].name);
  EXPECT_EQ(default_arch_specs().size(), specs.size());
  EXPECT_EQ(&default_arch_specs(), &default_arch_specs());  // loaded once
}

TEST(Arch, RequiredTargetsPresent) {
  std::set<std::string> sms;
  for (const auto& s : default_arch_specs()) sms.insert(s.sm);
  for (const char* sm : {"sm_80", "sm_86", "sm_89", "sm_90"}) EXPECT_TRUE(sms.count(sm)) << sm;
  for (const char* name : {"a100_sxm", "a10", "l40s", "h100_sxm", "h100_pcie", "h200"})
    EXPECT_NO_THROW(find_arch(default_arch_specs(), name)) << name;
}

TEST(Arch, SanityInvariants) {
  for (const auto& s : default_arch_specs()) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(s.sm, "sm_" + std::to_string(s.cc_major) + std::to_string(s.cc_minor));
    EXPECT_EQ(s.jit_target.rfind(s.sm, 0), 0u) << s.jit_target;  // sm_90 -> sm_90a
    EXPECT_FALSE(s.match.empty());
    EXPECT_GT(s.sm_count, 0);
    EXPECT_GT(s.boost_clock_mhz, 0);
    EXPECT_GT(s.mem_clock_mhz, 0);
    EXPECT_GT(s.l2_bytes, 0);
    EXPECT_GT(s.mem_bw_gbps, 0);
    EXPECT_LE(s.smem_per_block, s.smem_per_block_optin);
    EXPECT_LE(s.smem_per_block_optin, s.smem_per_sm);
    EXPECT_LE(s.regs_per_block, s.regs_per_sm);
    EXPECT_LE(s.max_threads_per_block, s.max_threads_per_sm);
    EXPECT_EQ(s.max_regs_per_thread, 255);
    EXPECT_GT(s.peak_f16, 0);
    EXPECT_GT(s.peak_bf16, 0);
    EXPECT_GT(s.peak_tf32, 0);
    EXPECT_GT(s.peak_f32_simt, 0);
    EXPECT_GT(s.peak_f16, s.peak_tf32);
    EXPECT_TRUE(s.mma_sync);
    EXPECT_EQ(s.wgmma, s.cc_major == 9);
    EXPECT_EQ(s.tma, s.cc_major == 9);
    EXPECT_EQ(s.clusters, s.cc_major == 9);
    EXPECT_EQ(s.max_cluster_size, s.clusters ? 8 : 1);
    EXPECT_EQ(s.peak_fp8 == 0, !s.fp8_mma);
    EXPECT_EQ(s.fp8_mma, s.sm == "sm_89" || s.cc_major == 9);
    EXPECT_EQ(s.source, arch_dir() + "/" + s.name + ".json");
    EXPECT_DOUBLE_EQ(s.peak_tflops(DType::bf16), s.peak_bf16);
    EXPECT_DOUBLE_EQ(s.peak_tflops(DType::f32), s.peak_tf32);
    EXPECT_DOUBLE_EQ(s.peak_tflops(DType::e5m2), s.peak_fp8);
  }
}

TEST(Arch, PeaksAndRidge) {
  const auto& h = find_arch(default_arch_specs(), "h100_sxm");
  EXPECT_DOUBLE_EQ(h.peak_tflops(DType::f16), h.peak_f16);
  EXPECT_DOUBLE_EQ(h.peak_tflops(DType::e4m3), h.peak_fp8);
  // 989.4 TFLOP/s over 3350 GB/s is about 295 flop per byte.
  EXPECT_NEAR(h.ridge_flops_per_byte(DType::bf16), 989.4e12 / 3350e9, 1e-9);
}

TEST(Arch, FindByNameAndTarget) {
  const auto& specs = default_arch_specs();
  EXPECT_EQ(find_arch(specs, "h200").name, "h200");
  EXPECT_EQ(find_arch(specs, "sm_80").name, "a100_sxm");
  EXPECT_EQ(find_arch(specs, "sm_86").name, "a10");
  EXPECT_EQ(find_arch(specs, "sm_89").name, "l40s");
  EXPECT_EQ(find_arch(specs, "sm_90").name, "h100_pcie");  // first sm_90 in name order
  EXPECT_EQ(find_arch(specs, "sm_90a").sm, "sm_90");
  try {
    find_arch(specs, "b200");
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("b200"), std::string::npos) << msg;
    for (const auto& s : specs) EXPECT_NE(msg.find(s.name), std::string::npos) << msg;
  }
}

TEST(Arch, LoadDirErrors) {
  EXPECT_THROW(load_arch_specs("/nonexistent/tilepick/arch"), NotFound);
  TempDir empty;
  EXPECT_THROW(load_arch_specs(empty.str()), NotFound);
  EXPECT_THROW(load_arch_spec(empty.str() + "/missing.json"), NotFound);
}

TEST(Arch, MalformedSpecNamesTheKey) {
  nlohmann::json base = shipped_json("a100_sxm");
  {
    TempDir dir;  // an unmodified copy loads
    EXPECT_EQ(load_arch_spec(dir.write("a100_sxm.json", base.dump())).sm_count, 108);
  }
  auto missing = base;
  missing.erase("smem_per_block_optin");
  expect_parse_error(missing, "smem_per_block_optin");

  auto wrong_type = base;
  wrong_type["sm_count"] = "108";
  expect_parse_error(wrong_type, "sm_count");

  auto fractional = base;
  fractional["l2_bytes"] = 1.5;
  expect_parse_error(fractional, "l2_bytes");

  auto bad_match = base;
  bad_match["match"] = {"A100", 7};
  expect_parse_error(bad_match, "match");

  auto unknown = base;
  unknown["peak_bf61"] = 312;
  expect_parse_error(unknown, "peak_bf61");

  auto renamed = base;
  renamed["name"] = "a100";
  TempDir dir;
  try {
    load_arch_spec(dir.write("other.json", renamed.dump()));
    FAIL() << "expected ParseError for a name that is not the file stem";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.token(), "name");
  }
  EXPECT_THROW(load_arch_spec(dir.write("broken.json", "{\"name\": ")), ParseError);
}

TEST(Arch, MatchLiveDevice) {
  const auto& specs = default_arch_specs();
  auto pcie = fake_device("NVIDIA H100 PCIe", 9, 0);
  pcie.sm_count = 114;
  pcie.clock_mhz = 1755;
  pcie.smem_per_block_optin = 232448;
  ArchSpec a = match_arch(specs, pcie);
  EXPECT_EQ(a.name, "h100_pcie");
  EXPECT_EQ(a.sm_count, 114);
  EXPECT_EQ(a.device_name, "NVIDIA H100 PCIe");
  EXPECT_NE(a.source.find(" + live device"), std::string::npos);

  auto sxm = fake_device("NVIDIA H100 80GB HBM3", 9, 0);
  sxm.sm_count = 114;  // live value wins, peaks scale with it
  sxm.mem_clock_mhz = 2619;
  sxm.mem_bus_bits = 5120;
  sxm.l2_bytes = 1 << 20;
  a = match_arch(specs, sxm);
  EXPECT_EQ(a.name, "h100_sxm");
  EXPECT_EQ(a.sm_count, 114);
  EXPECT_EQ(a.l2_bytes, 1 << 20);
  EXPECT_NEAR(a.mem_bw_gbps, 2.0 * 2619 * 640 / 1e3, 1e-6);
  const auto& spec = find_arch(specs, "h100_sxm");
  EXPECT_NEAR(a.peak_bf16, spec.peak_bf16 * 114 / 132, 1e-9);
  EXPECT_EQ(a.boost_clock_mhz, spec.boost_clock_mhz);  // not reported: spec value kept

  EXPECT_EQ(match_arch(specs, fake_device("NVIDIA H200", 9, 0)).name, "h200");
  EXPECT_EQ(match_arch(specs, fake_device("nvidia h200", 9, 0)).name, "h200");  // any case
  EXPECT_EQ(match_arch(specs, fake_device("NVIDIA A100-SXM4-40GB", 8, 0)).name, "a100_sxm");
  EXPECT_EQ(match_arch(specs, fake_device("NVIDIA L40S", 8, 9)).name, "l40s");
  // Unknown name with a known capability: the first spec of that capability.
  EXPECT_EQ(match_arch(specs, fake_device("NVIDIA H800", 9, 0)).name,
            find_arch(specs, "sm_90").name);
  try {
    match_arch(specs, fake_device("Tesla V100-SXM2-16GB", 7, 0));
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("7.0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("h200"), std::string::npos) << msg;
  }
}

TEST(Arch, QueryDeviceNeverCrashes) {
  std::string why;
  auto dev = query_device(0, &why);
  if (!dev) {
    EXPECT_FALSE(why.empty());
    std::cout << "query_device(0): " << why << "\n";
  } else {
    EXPECT_GT(dev->sm_count, 0);
    EXPECT_FALSE(dev->name.empty());
    std::cout << "query_device(0): " << dev->name << " cc " << dev->cc_major << "."
              << dev->cc_minor << " sms " << dev->sm_count << "\n";
  }
  // Out-of-range ordinals fail cleanly whether or not a driver is present.
  std::string why2;
  EXPECT_FALSE(query_device(4096, &why2).has_value());
  EXPECT_FALSE(why2.empty());
  EXPECT_FALSE(query_device(-1).has_value());  // no reason pointer: still fine
}
