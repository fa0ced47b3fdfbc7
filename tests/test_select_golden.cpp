// The shipped models' selections on the README eval's held-out problems (gemm_val, gemm_val2, conv_val, conv_val2;
// arch h200) against golden/select_heldout.txt, written by the code before the selection-latency work
// (2026-11-29): a speed-up of the selector must leave every ranking bit for bit as it was. Per problem one line:
//   <digest of select(k=16), the default (fast) mode> <digest of select(k=4, full)> <problem>
// where a digest is the FNV-1a 64 of "<config text>\t<score as %a>\n" per ranked config, then the vendor fields.
// TILEPICK_WRITE_GOLDEN=<path> writes the file instead of checking it (only where a ranking is meant to change).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

const fs::path kRoot = fs::path(TILEPICK_TEST_GOLDEN_DIR) / ".." / "..";

std::string hexfloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string digest(const Selection& s) {
  std::string text;
  for (const auto& r : s.top) text += r.text + "\t" + hexfloat(r.score) + "\n";
  text += "pool " + std::to_string(s.pool_size) + " fast " + std::to_string(s.fast) + " vendor_first " +
          std::to_string(s.vendor_first) + " " + hexfloat(s.vendor_log_ratio) + " " + hexfloat(s.confidence) + "\n";
  return hex16(fnv1a64(text));
}

std::vector<std::string> golden_lines() {
  const Selector selector((kRoot / "models").string(), 1, true, ScoreMode::fast);
  const ArchSpec& arch = find_arch(default_arch_specs(), "h200");
  std::vector<std::string> lines;
  for (const char* file : {"gemm_val.txt", "gemm_val2.txt", "conv_val.txt", "conv_val2.txt"})
    for (const auto& np : load_problem_file((kRoot / "data/problems/sweep" / file).string())) {
      if (!selector.model_for(np.problem, arch)) continue;
      lines.push_back(digest(selector.select(np.problem, arch, 16)) + " " +
                      digest(selector.select(np.problem, arch, 4, ScoreMode::full)) + " " + to_string(np.problem));
    }
  return lines;
}

TEST(SelectGolden, HeldOutRankingsUnchanged) {
  const std::vector<std::string> got = golden_lines();
  const fs::path golden = fs::path(TILEPICK_TEST_GOLDEN_DIR) / "select_heldout.txt";
  if (const char* out = std::getenv("TILEPICK_WRITE_GOLDEN")) {
    std::ofstream f(out);
    for (const auto& l : got) f << l << "\n";
    GTEST_SKIP() << "wrote " << got.size() << " lines to " << out;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "missing " << golden;
  std::vector<std::string> want;
  for (std::string l; std::getline(in, l);) want.push_back(l);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(got.size(), 1000u);  // 320 GEMM + 1,030 conv held-out problems
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && ++differ <= 10) ADD_FAILURE() << "now:    " << got[i] << "\ngolden: " << want[i];
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace tilepick
