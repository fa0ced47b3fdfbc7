// Fuzzing every reader of untrusted text with a fixed corpus: seeded mutations (byte flips, cut and
// repeated spans, inserted special tokens, truncation) of valid inputs. A reader must accept an input
// (and then mean it: round trips, finite scores) or refuse it with a tilepick::Error; any other
// exception is an unclear error, a crash or a hang fails the run. Counts go to the test log.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/text_file.hpp"
#include "dispatch/plan_cache.hpp"
#include "sweep/records.hpp"
#include "test_util.hpp"
#include "tilepick/config.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/gbdt.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/space.hpp"

namespace fs = std::filesystem;
using namespace tilepick;

namespace {

// One mutation of s: the kinds of damage a hand edit, a bad transfer or an attacker produces.
std::string mutate(std::string s, std::mt19937_64& rng) {
  static const char* const kTokens[] = {"nan", "inf", "-inf", "-1", "0", "1e309", "99999999999999999999", "x",
                                        "=", " ", "\n", "\"", "{", "}", ",", "\x1f\x8b\x08", "\0", "#", "|", "m0"};
  auto pick = [&](std::size_t n) { return n ? std::uniform_int_distribution<std::size_t>(0, n - 1)(rng) : 0; };
  const int rounds = 1 + static_cast<int>(pick(3));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(6)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 + pick(255));
        break;
      case 1: {  // cut a span
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 2: {  // repeat a span
        if (s.empty()) break;
        const std::size_t at = pick(s.size()), n = 1 + pick(std::min<std::size_t>(16, s.size() - at));
        s.insert(at, s.substr(at, n));
        break;
      }
      case 3: {  // insert a special token
        const std::string t = kTokens[pick(std::size(kTokens))];
        s.insert(pick(s.size() + 1), t.empty() ? std::string(1, '\0') : t);
        break;
      }
      case 4:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      default: {  // replace a digit run with an extreme number
        const std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
        if (at == std::string::npos) break;
        const std::size_t end = s.find_first_not_of("0123456789", at);
        s.replace(at, (end == std::string::npos ? s.size() : end) - at, kTokens[pick(7)]);
      }
    }
  }
  return s;
}

struct Counts {
  std::size_t tried = 0, accepted = 0, refused = 0;
  void print(const char* reader) const {
    std::cout << "fuzz " << reader << ": " << tried << " inputs, " << accepted << " accepted, " << refused
              << " refused with a clear error, 0 crashes, 0 unclear errors\n";
  }
};

// Runs `read` on `n` mutations of the seeds; `read` returns normally when it accepted the input.
template <class F>
Counts fuzz(const std::vector<std::string>& seeds, std::size_t n, std::uint64_t seed, F&& read) {
  std::mt19937_64 rng(seed);
  Counts c;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string input = mutate(seeds[i % seeds.size()], rng);
    ++c.tried;
    try {
      read(input);
      ++c.accepted;
    } catch (const Error&) {
      ++c.refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unclear error (" << e.what() << ") for input: " << input;
    }
  }
  return c;
}

std::vector<std::string> problem_seeds() {
  return {"gemm rcr m4096 n4096 k4096 bf16",
          "gemm crr batch3 m256 n264 k100 bf16 ep=bias+gelu_tanh beta=0.5",
          "gemm rcr m131 n232 k208 e4m3:e4m3:bf16 alpha=0.25",
          "gemm rrr m512 n1024 k1024 f32",
          "fwd g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu",
          "bwd_data g4 mb2 ic32 ih8 iw8 oc32 kh3 kw3 sh2 sw2 ph1 pw1 f16",
          "bwd_weight g1 mb2 ic16 id4 ih9 iw9 oc32 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 dh2 dw2 bf16",
          "fwd g64 mb2 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"};
}

std::vector<std::string> config_seeds() {
  return {"fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct",
          "fam=sm90 tile=128x256x64 warps=2x1 stages=3 splitk=1 skmode=serial raster=row swz=8 cluster=2x1 align=8x8x8 epi=smem",
          "fam=sm90 tile=64x128x128 warps=1x2 stages=5 splitk=3 skmode=parallel",
          "fam=dw dwtile=4x8x32 ppt=2 cpt=8 splitk=1"};
}

TEST(Fuzz, ProblemStringsRoundTripOrAreRefused) {
  const Counts c = fuzz(problem_seeds(), 20000, 1, [](const std::string& s) {
    const Problem p = parse_problem(s);
    const std::string text = to_string(p);
    EXPECT_EQ(to_string(parse_problem(text)), text) << "from input: " << s;  // what is accepted means one thing
  });
  c.print("problem strings");
  EXPECT_GT(c.accepted, 100u);
  EXPECT_GT(c.refused, 1000u);
}

TEST(Fuzz, ConfigStringsRoundTripOrAreRefused) {
  const Counts c = fuzz(config_seeds(), 20000, 2, [](const std::string& s) {
    const KernelConfig k = parse_config(s);
    const std::string text = to_string(k);
    EXPECT_EQ(to_string(parse_config(text)), text) << "from input: " << s;
  });
  c.print("config strings");
  EXPECT_GT(c.accepted, 100u);
  EXPECT_GT(c.refused, 1000u);
}

TEST(Fuzz, FilterExpressionsEvaluateOrAreRefused) {
  const std::vector<std::string> seeds = {"tile_m / warps_m == 64 || tile_m / warps_m == 128",
                                          "tile_m / warps_m * tile_n <= 16384",
                                          "splitk == 1 || (skmode == parallel && epi == direct && tile_m * tile_n <= 128 * 128)",
                                          "fam == sm90 && cluster_m * cluster_n == 1 && swz != 16",
                                          "!(stages > 4) && tile_k % 32 == 0"};
  std::vector<KernelConfig> configs;
  for (const auto& s : config_seeds()) configs.push_back(parse_config(s));
  const Counts c = fuzz(seeds, 20000, 3, [&](const std::string& s) {
    const expr::Expr e = parse_config_filter(s);
    for (const auto& k : configs) {
      try {
        (void)passes(k, {e});
      } catch (const Error&) {  // a field that a family lacks: refused per config, said clearly
      }
    }
  });
  c.print("filter expressions");
  EXPECT_GT(c.accepted, 100u);
  EXPECT_GT(c.refused, 1000u);
}

TEST(Fuzz, RecordFilesAreReadValidatedOrRefused) {
  const fs::path dir = fs::temp_directory_path() / ("tilepick-fuzz-records-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string good = (dir / "good.csv.gz").string();
  {
    sweep::RecordWriter w(good, {{"format", sweep::kRecordFormat}, {"options", {{"arch", "h200"}}}});
    for (int i = 0; i < 40; ++i) {
      sweep::Record r;
      r.problem = "gemm rcr m" + std::to_string(64 + i) + " n64 k64 bf16";
      r.config = config_seeds()[i % 2];
      r.status = i % 7 == 0 ? "wrong" : "ok";
      r.median_us = 10.0 + i;
      w.append(r);
      if (i % 8 == 7) w.flush();
    }
  }
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string path = (dir / "fuzzed.csv.gz").string();
  const Counts c = fuzz({bytes}, 3000, 4, [&](const std::string& s) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(s.data(), static_cast<std::streamsize>(s.size()));
    fs::remove(sweep::journal_path(path));
    const sweep::RecordFile f = sweep::read_record_file(path);
    for (const auto& r : f.records)  // what is read is valid
      if (r.status == "ok") EXPECT_TRUE(std::isfinite(r.median_us) && r.median_us > 0) << r.problem;
  });
  c.print("record files");
  fs::remove_all(dir);
  EXPECT_GT(c.accepted, 100u);
  EXPECT_GT(c.refused, 100u);
}

TEST(Fuzz, ModelFilesParseToFiniteScoresOrAreRefused) {
  const fs::path shipped = fs::path(TILEPICK_TEST_GOLDEN_DIR) / ".." / ".." / "models" / "gemm_half_h200" / "fast";
  const std::string text = read_text_file((shipped / "model.txt.gz").string(), "model");
  const std::vector<double> row(feature_schema().size(), 1.0);
  const Counts c = fuzz({text}, 1500, 5, [&](const std::string& s) {
    const GbdtModel m = GbdtModel::parse(s, "fuzzed model");
    if (m.num_features() == row.size()) EXPECT_TRUE(std::isfinite(m.predict_row(row.data())));
  });
  c.print("model files");
  EXPECT_GT(c.refused, 100u);
}

TEST(Fuzz, PlanCacheFilesLoadOrAreSetAside) {
  const fs::path dir = fs::temp_directory_path() / ("tilepick-fuzz-plans-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Problem p = parse_problem("gemm rcr m64 n64 k64 bf16");
  PlanCacheFile file;
  for (int i = 0; i < 6; ++i) {
    PlanInfo info;
    info.problem = to_string(p), info.kernel = config_seeds()[0];
    info.candidates = {{config_seeds()[0], false, 1.5, 10.0, "ok"}};
    PlanCacheEntry e = make_entry("key" + std::to_string(i), info, p);
    file.entries[e.key] = e;
  }
  const std::string good = (dir / "good.json").string(), path = (dir / "fuzzed.json").string();
  file.save(good);
  std::string text;
  {
    std::ifstream in(good);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // load() never throws: a file it cannot read is set aside (a warning; plans stay in memory and
  // save() leaves the file alone), an entry it cannot use is kept as foreign or dropped.
  std::size_t files_read = 0, set_aside = 0, usable = 0;
  ::testing::internal::CaptureStderr();
  const Counts c = fuzz({text}, 3000, 6, [&](const std::string& s) {
    std::ofstream(path, std::ios::trunc) << s;
    const PlanCacheFile f = PlanCacheFile::load(path);
    (f.entries.empty() && f.foreign.empty() ? set_aside : files_read) += 1;
    for (const auto& [key, e] : f.entries) {
      EXPECT_EQ(e.key, key);
      if (!e.vendor) EXPECT_NO_THROW(parse_config(e.kernel));
      ++usable;
    }
  });
  ::testing::internal::GetCapturedStderr();
  std::cout << "fuzz plan cache files: " << c.tried << " inputs, " << files_read << " read (" << usable
            << " usable entries), " << set_aside << " set aside with a warning, 0 crashes, 0 exceptions\n";
  fs::remove_all(dir);
  EXPECT_EQ(c.refused, 0u);
  EXPECT_GT(set_aside, 100u);
  EXPECT_GT(usable, 100u);
}

}  // namespace
