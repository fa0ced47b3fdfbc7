// The tilepick CLI end to end: outputs, exit codes and error messages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include "test_util.hpp"

namespace {


bool has(const std::string& s, const std::string& frag) { return s.find(frag) != std::string::npos; }

}  // namespace

TEST(Cli, ProblemParsePrintsCanonical) {
  auto r = tilepick::test::run_cli("problem parse 'fwd mb2 ic8 ih5 iw5 oc8 kh3 kw3 fp16' 'gemm k9 m1 n2 rcr bf16'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "fwd g1 mb2 ic8 ih5 iw5 oc8 kh3 kw3 sh1 sw1 ph0 pw0 f16\ngemm rcr m1 n2 k9 bf16\n");
}

TEST(Cli, ProblemParseFileKeepsNames) {
  auto r = tilepick::test::run_cli(std::string("problem parse --file ") + TILEPICK_TEST_GOLDEN_DIR + "/problems_in.txt");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "resnet50.conv1: fwd g1 mb32 ic3 ih224")) << r.out;
}

TEST(Cli, ProblemShowDerived) {
  auto r = tilepick::test::run_cli("problem show 'bwd_weight g32 mb8 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16' --arch h100_sxm");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "gemm view:  M=8 N=72 K=6272 batch=32")) << r.out;
  EXPECT_TRUE(has(r.out, "key:        conv_bwd_weight.bf16.nhwgc-gkyxc-nhwgk.sm_90")) << r.out;
}

TEST(Cli, BadProblemIsAClearErrorWithExitCode1) {
  auto r = tilepick::test::run_cli("problem parse 'fwd g3 mb1 ic8 ih5 iw5 oc3 kh3 kw3 bf16'");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "tilepick: error: ic8")) << r.out;
}

TEST(Cli, UnknownSubcommandIsAUsageError) {
  auto r = tilepick::test::run_cli("frobnicate");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 1);
}

TEST(Cli, HelpListsTheCommands) {
  auto r = tilepick::test::run_cli("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"problem", "configs", "registry", "arch"}) EXPECT_TRUE(has(r.out, c)) << c;
}

TEST(Cli, ConfigsCountHasEveryOpAndArch) {
  auto r = tilepick::test::run_cli("configs count");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* op : {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"}) EXPECT_TRUE(has(r.out, op)) << op;
  for (const char* sm : {"sm_80", "sm_86", "sm_89", "sm_90"}) EXPECT_TRUE(has(r.out, sm)) << sm;
}

TEST(Cli, ConfigsListWithFilterAndProblem) {
  auto all = tilepick::test::run_cli("configs list --space gemm_sm80");
  auto some = tilepick::test::run_cli("configs list --space gemm_sm80 --filter 'tile_m == 256 && stages == 3'");
  EXPECT_EQ(all.code, 0);
  EXPECT_EQ(some.code, 0);
  EXPECT_GT(some.out.size(), 0u);
  EXPECT_LT(some.out.size(), all.out.size());
  EXPECT_FALSE(has(some.out, "tile=128x")) << some.out;
  auto legal = tilepick::test::run_cli("configs list --space gemm_sm80 --problem 'gemm rcr m77 n33 k19 bf16' --arch sm_80");
  EXPECT_EQ(legal.code, 0) << legal.out;
  EXPECT_TRUE(has(legal.out, "align=1x1x1")) << legal.out;  // odd K and N: scalar accesses only
  EXPECT_FALSE(has(legal.out, "align=auto"));
  auto bad = tilepick::test::run_cli("configs list --filter 'tile_q > 1'");
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(has(bad.out, "tile_q")) << bad.out;
  // A misspelled value is an error, not a filter that quietly matches nothing.
  auto typo = tilepick::test::run_cli("configs list --space gemm_sm80 --filter 'skmode == paralel'");
  EXPECT_EQ(typo.code, 1);
  EXPECT_TRUE(has(typo.out, "'paralel'")) << typo.out;
}

TEST(Cli, SelectWithNoLegalConfigFailsWithTheReason) {
  auto r = tilepick::test::run_cli("select -p 'gemm rcr m100000 n100000 k8 bf16' -k 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "no legal config")) << r.out;
  EXPECT_TRUE(has(r.out, "index32")) << r.out;
  EXPECT_EQ(tilepick::test::run_cli("select -p 'gemm rcr m100 n100 k8 bf16' -k 1").code, 0);
}

TEST(Cli, EvalOfNoScoredProblemFails) {
  const std::string empty = (std::filesystem::temp_directory_path() / "tilepick_cli_empty.csv.gz").string();
  { std::ofstream(empty, std::ios::binary).put('\x1f'); }  // not even a gzip header
  auto r = tilepick::test::run_cli("eval --records " + empty + " --min-mean 0.99 --min-p10 0.97");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "not a sweep record file")) << r.out;
  std::filesystem::remove(empty);
  // A record file cut short (a shipped one, its last 50 bytes gone) is refused, not read in part.
  const std::string src = std::string(TILEPICK_TEST_GOLDEN_DIR) + "/../../data/sweeps/h200-graph/gemm_lr_val.csv.gz";
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u) << src;
  const std::string cut = (std::filesystem::temp_directory_path() / "tilepick_cli_cut.csv.gz").string();
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 50));
  auto t = tilepick::test::run_cli("eval --records " + cut);
  EXPECT_NE(t.code, 0) << t.out;
  EXPECT_TRUE(has(t.out, "truncated")) << t.out;
  std::filesystem::remove(cut);
}

TEST(Cli, RegistryExportAndArch) {
  auto r = tilepick::test::run_cli("registry export --arch sm_90");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "\"kernels\"")) << r.out.substr(0, 200);
  auto list = tilepick::test::run_cli("arch list");
  EXPECT_TRUE(has(list.out, "h200")) << list.out;
  auto show = tilepick::test::run_cli("arch show sm_89");
  EXPECT_TRUE(has(show.out, "l40s")) << show.out;
  auto dev = tilepick::test::run_cli("arch show --device 0");  // no GPU or driver here: a clear error, no crash
  if (dev.code != 0) {
    EXPECT_TRUE(has(dev.out, "cannot query device 0")) << dev.out;
  }
}

// A problem no space can run says why, per space and legality rule, instead of a bare "0 plans".
TEST(Cli, JitBuildNamesWhyAProblemHasNoPlan) {
  auto r = tilepick::test::run_cli("jit build --arch sm_90a --limit 1 -p 'gemm rcr m300 n264 k392 e4m3:e4m3:f32 beta=1'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "no legal config for 'gemm rcr m300 n264 k392 e4m3:e4m3:f32 beta=1'")) << r.out;
  EXPECT_TRUE(has(r.out, "gemm_sm90: rule tma_stride refuses")) << r.out;
  EXPECT_TRUE(has(r.out, "0 plans")) << r.out;
}

// A kernel pack: `jit build --picked K` compiles the selector's first K configs per problem into a
// cache directory, `cache import` brings them into another cache.
TEST(Cli, KernelPackBuildAndImport) {
  const std::string root = (std::filesystem::temp_directory_path() / ("tilepick_pack_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(root);
  const std::string problem = "'gemm rcr m96 n64 k64 bf16'";
  ::setenv("TILEPICK_CACHE_DIR", (root + "/pack").c_str(), 1);
  auto pack = tilepick::test::run_cli("jit build --picked 2 --arch h200 -p " + problem + " -j 1");
  EXPECT_EQ(pack.code, 0) << pack.out;
  EXPECT_TRUE(has(pack.out, "1 problems, 2 plans")) << pack.out;
  ::setenv("TILEPICK_CACHE_DIR", (root + "/cache").c_str(), 1);
  auto imported = tilepick::test::run_cli("cache import " + root + "/pack");
  EXPECT_EQ(imported.code, 0) << imported.out;
  EXPECT_TRUE(has(imported.out, "imported 2 entries")) << imported.out;
  auto again = tilepick::test::run_cli("jit build --picked 2 --arch h200 -p " + problem + " -j 1");
  EXPECT_TRUE(has(again.out, "compiled 0, cache hits 2")) << again.out;
  auto missing = tilepick::test::run_cli("cache import " + root + "/nowhere");
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has(missing.out, "is not a directory")) << missing.out;
  ::unsetenv("TILEPICK_CACHE_DIR");
  std::filesystem::remove_all(root);
}
