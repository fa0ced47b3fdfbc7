// Sweep mechanics without a GPU: record files (append, truncation, journal), worker restarts after
// a crash and a hang, resume after the sweep itself is killed, shards and merge. The fake backend
// stands in for the GPU; the real one is exercised on the device (bench/results).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "run/timing.hpp"
#include "sweep/backend.hpp"
#include "sweep/plan.hpp"
#include "tilepick/error.hpp"
#include "sweep/records.hpp"
#include "test_util.hpp"
#include "tilepick/legality.hpp"

namespace fs = std::filesystem;
using namespace tilepick;
using namespace tilepick::sweep;

namespace {


class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepick-sweep-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(problems()) << "a: gemm rcr m33 n64 k40 bf16\n"
                                 "b: gemm rcr m128 n96 k256 f16\n"
                                 "c: fwd g1 mb2 ic16 ih9 iw9 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16\n"
                                 "d: gemm rcr m7 n200 k64 bf16\n"
                                 "e: bwd_weight g4 mb2 ic32 ih8 iw8 oc32 kh3 kw3 sh2 sw2 ph1 pw1 bf16\n"
                                 "a_again: gemm rcr m33 n64 k40 bf16\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string problems() const { return (dir_ / "problems.txt").string(); }
  std::string out(const std::string& name = "out.csv.gz") const { return (dir_ / name).string(); }
  std::string base() const { return "sweep --backend fake --arch h200 -q --sample 6 -f " + problems(); }

  // Every (problem, item) the sweep plans, from --dry-run.
  std::set<std::pair<std::string, std::string>> planned(const std::string& extra = "", const std::string& command = "") {
    auto r = test::run_cli((command.empty() ? base() : command) + " -o " + out("dry.csv.gz") + " --dry-run " + extra);
    EXPECT_EQ(r.code, 0) << r.out;
    std::set<std::pair<std::string, std::string>> s;
    std::size_t pos = 0;
    for (std::size_t nl; (nl = r.out.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      std::string line = r.out.substr(pos, nl - pos);
      auto tab = line.find('\t');
      if (tab != std::string::npos) s.emplace(line.substr(0, tab), line.substr(tab + 1));
    }
    return s;
  }

  static std::multiset<std::pair<std::string, std::string>> items(const RecordFile& f) {
    std::multiset<std::pair<std::string, std::string>> s;
    for (const auto& r : f.records) s.emplace(r.problem, item_of_record_config(r.config));
    return s;
  }

  fs::path dir_;
};

TEST_F(SweepTest, VendorOnlyPlansTheVendorItemAlone) {
  auto got = planned("--vendor-only");
  std::set<std::pair<std::string, std::string>> want;
  for (const char* p : {"gemm rcr m33 n64 k40 bf16", "gemm rcr m128 n96 k256 f16", "gemm rcr m7 n200 k64 bf16"})
    want.emplace(to_string(parse_problem(p)), "vendor=cublaslt");
  for (const char* p : {"fwd g1 mb2 ic16 ih9 iw9 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                        "bwd_weight g4 mb2 ic32 ih8 iw8 oc32 kh3 kw3 sh2 sw2 ph1 pw1 bf16"})
    want.emplace(to_string(parse_problem(p)), "vendor=cudnn");
  EXPECT_EQ(got, want);
  auto r = test::run_cli(base() + " -o " + out() + " --vendor-only");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const auto& rec : read_record_file(out()).records) EXPECT_EQ(rec.config.rfind("vendor=", 0), 0u) << rec.config;
  auto bad = test::run_cli(base() + " -o " + out("bad.csv.gz") + " --vendor-only --no-vendor");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--vendor-only"), std::string::npos) << bad.out;
}

TEST_F(SweepTest, VendorHeuristicOnlyRecordsTheHeuristicChoiceAlone) {
  auto r = test::run_cli(base() + " -o " + out() + " --vendor-only --vendor-heuristic-only");
  ASSERT_EQ(r.code, 0) << r.out;
  const RecordFile f = read_record_file(out());
  EXPECT_TRUE(f.header.at("options").at("vendor_heuristic_only").get<bool>());
  int heur = 0, best = 0;
  for (const auto& rec : f.records) {
    const bool is_heur = rec.config.ends_with(":heur");
    heur += is_heur, best += !is_heur;
    // the heuristic choice is measured; the fastest-algorithm record is not, and says so
    EXPECT_EQ(rec.status, is_heur ? "ok" : "unsupported") << rec.config;
    if (!is_heur) {
      EXPECT_NE(rec.detail.find("heuristic choice alone"), std::string::npos) << rec.detail;
    }
  }
  EXPECT_EQ(heur, 5);
  EXPECT_EQ(best, 5);
}

TEST_F(SweepTest, PairsFileGivesEachProblemItsOwnConfigs) {
  const std::string pairs = (dir_ / "pairs.txt").string(), gz = (dir_ / "pairs.txt.gz").string();
  const std::string text = "# tilepick search proposals\n"
                           "gemm rcr m33 n64 k40 bf16|fam=sm80 tile=64x64x32 warps=2x2 stages=3\n"
                           "gemm rcr m33 n64 k40 bf16|fam=sm80 tile=32x64x32 warps=1x2 stages=4\n"
                           "gemm rcr m33 n64 k40 bf16|fam=sm80 tile=64x64x32 warps=2x2 stages=3\n"  // repeated
                           "gemm rrr m50 n70 k90 f16|fam=sm80 tile=64x64x32 warps=2x2 stages=3\n"
                           "gemm rrr m50 n70 k90 f16|fam=sm80 tile=256x256x64 warps=1x1 stages=8\n";  // illegal
  std::ofstream(pairs) << text;
  std::ofstream(gz, std::ios::binary) << sweep::gzip_member(text);
  const auto got = planned("--pairs " + pairs);
  EXPECT_EQ(planned("--pairs " + gz), got);  // a gzip pair list reads the same
  std::map<std::string, std::set<std::string>> by_problem;
  for (const auto& [p, item] : got) by_problem[p].insert(item);
  const Problem a = parse_problem("gemm rcr m33 n64 k40 bf16"), b = parse_problem("gemm rrr m50 n70 k90 f16");
  auto resolved = [](const Problem& p, const char* c) { return to_string(resolve(parse_config(c), p)); };
  EXPECT_EQ(by_problem[to_string(a)],
            (std::set<std::string>{resolved(a, "fam=sm80 tile=64x64x32 warps=2x2 stages=3"),
                                   resolved(a, "fam=sm80 tile=32x64x32 warps=1x2 stages=4"), "vendor=cublaslt"}));
  EXPECT_EQ(by_problem[to_string(b)],
            (std::set<std::string>{resolved(b, "fam=sm80 tile=64x64x32 warps=2x2 stages=3"), "vendor=cublaslt"}));
  EXPECT_EQ(by_problem[to_string(parse_problem("gemm rcr m128 n96 k256 f16"))].size(), 7u);  // -f: sample 6 + vendor

  std::ofstream(pairs) << "gemm rcr m33 n64 k40 bf16 fam=sm80\n";
  auto r = test::run_cli(base() + " -o " + out("bad.csv.gz") + " --dry-run --pairs " + pairs);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("pairs.txt:1: expected 'problem|config'"), std::string::npos) << r.out;
}

Record sample_record(int i) {
  Record r;
  r.problem = "gemm rcr m" + std::to_string(i + 1) + " n8 k8 bf16";
  r.config = "fam=sm80 tile=64x64x32";
  r.status = i % 3 ? "ok" : "crash";
  r.median_us = 12.25 + i, r.iqr_us = 0.125, r.reps = 40, r.tflops = 1.0 / 3.0;
  r.detail = i % 3 ? "" : "worker died: signal 6, \"quoted\" # and\nnewline";
  r.time_unix = 1.7e9 + i;
  return r;
}

}  // namespace

TEST(SweepTiming, GraphLaunchesFitTheOperandCopiesIntoTheBudget) {
  const std::size_t mib = 1 << 20;
  EXPECT_EQ(run::graph_launches(100 * 1024, 256 * mib, 32), 32);  // tiny: capped at the most launches
  EXPECT_EQ(run::graph_launches(20 * mib, 256 * mib, 32), 12);    // 12 copies fit
  EXPECT_EQ(run::graph_launches(128 * mib, 256 * mib, 32), 2);
  EXPECT_EQ(run::graph_launches(129 * mib, 256 * mib, 32), 1);    // fewer than 2 fit: single launches
  EXPECT_EQ(run::graph_launches(1, 0, 32), 1);                    // budget 0: the method is off
  EXPECT_EQ(run::graph_launches(0, 256 * mib, 32), 32);           // an empty operand set is not a division by 0
  EXPECT_EQ(run::graph_launches(mib, 256 * mib, 1), 1);
}

TEST(SweepRecords, CsvRowRoundTripsAndStaysCommentFree) {
  Record r = sample_record(0);
  std::string row = to_csv_row(r);
  EXPECT_EQ(row.find('#'), std::string::npos);
  EXPECT_EQ(row.find('\n'), std::string::npos);
  Record back = parse_csv_row(row);
  EXPECT_EQ(back.problem, r.problem);
  EXPECT_EQ(back.median_us, r.median_us);
  EXPECT_EQ(back.tflops, r.tflops);  // shortest round-trip formatting
  EXPECT_EQ(back.detail, sanitize_field(r.detail));
  EXPECT_NE(back.detail.find("\"quoted\""), std::string::npos);
  EXPECT_THROW(parse_csv_row("a,b,c"), ParseError);
  // Times of ok rows are finite and positive; statuses are the sweep's own.
  for (const char* bad : {"-5", "0", "inf", "nan"}) {
    Record x = sample_record(1);
    x.status = "ok";
    std::string text = to_csv_row(x);
    const auto at = text.find(",ok,") + 4;
    text.replace(at, text.find(',', at) - at, bad);
    EXPECT_THROW(parse_csv_row(text), ParseError) << bad;
    x.status = "crash";  // a failed row carries no time
    std::string failed = to_csv_row(x);
    failed.replace(failed.find(",crash,") + 7, failed.find(',', failed.find(",crash,") + 7) - failed.find(",crash,") - 7, bad);
    EXPECT_NO_THROW(parse_csv_row(failed)) << bad;
  }
  Record odd = sample_record(2);
  odd.status = "fine";
  try {
    parse_csv_row(to_csv_row(odd));
    ADD_FAILURE() << "status 'fine' accepted";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("'fine'"), std::string::npos) << e.what();
  }
}

TEST_F(SweepTest, WriterAppendsMembersAndRepairsATruncatedTail) {
  nlohmann::json header = {{"devices", {{{"name", "fake device"}}}}, {"format", kRecordFormat}};
  {
    RecordWriter w(out(), header);
    for (int i = 0; i < 5; ++i) w.append(sample_record(i));
  }
  {
    RecordWriter w(out(), header);  // reopen: appends after the first members
    for (int i = 5; i < 8; ++i) w.append(sample_record(i));
  }
  RecordFile f = read_record_file(out());
  ASSERT_EQ(f.records.size(), 8u);
  EXPECT_EQ(f.header["devices"][0]["name"], "fake device");
  EXPECT_FALSE(f.truncated_tail);
  // A writer killed in the middle of a member leaves a partial tail: readers skip it, writers cut it.
  auto size = fs::file_size(out());
  std::string partial = gzip_member(to_csv_row(sample_record(99)) + "\n");
  {
    std::ofstream o(out(), std::ios::app | std::ios::binary);
    o.write(partial.data(), static_cast<std::streamsize>(partial.size() / 2));
  }
  f = read_record_file(out());
  EXPECT_TRUE(f.truncated_tail);
  EXPECT_EQ(f.good_bytes, size);
  EXPECT_EQ(f.records.size(), 8u);
  { RecordWriter w(out(), header); }
  EXPECT_EQ(fs::file_size(out()), size);
}

TEST_F(SweepTest, JournalRowsSurviveAKilledWriter) {
  nlohmann::json header = {{"devices", {{{"name", "fake device"}}}}, {"format", kRecordFormat}};
  pid_t pid = fork();
  if (pid == 0) {
    RecordWriter w(out(), header);
    for (int i = 0; i < 4; ++i) w.append(sample_record(i));
    ::_exit(0);  // no flush, no destructor: only the journal holds the rows
  }
  int status = 0;
  waitpid(pid, &status, 0);
  RecordFile f = read_record_file(out());
  EXPECT_EQ(f.records.size(), 4u);
  EXPECT_EQ(f.journal_rows, 4u);
  { RecordWriter w(out(), header); }  // folds the journal into a member
  f = read_record_file(out());
  EXPECT_EQ(f.records.size(), 4u);
  EXPECT_EQ(f.journal_rows, 0u);
}

TEST_F(SweepTest, CrashAndHangRestartTheWorkerAndTheSweepGoesOn) {
  auto want = planned("--inject-fault trap --inject-fault hang");
  auto r = test::run_cli(base() + " -o " + out() + " --inject-fault trap --inject-fault hang --fake-crash splitk=2 "
               "--fake-wrong splitk=4 --launch-timeout 1");
  ASSERT_EQ(r.code, 0) << r.out;
  RecordFile f = read_record_file(out());
  std::map<std::string, int> by_status;
  for (const auto& rec : f.records) {
    ++by_status[rec.status];
    if (rec.config == "fault=trap") {
      EXPECT_EQ(rec.status, "crash");
    }
    if (rec.config == "fault=hang") {
      EXPECT_EQ(rec.status, "timeout");
    }
    if (rec.config.find("splitk=2 ") != std::string::npos) {
      EXPECT_EQ(rec.status, "crash");
      EXPECT_NE(rec.detail.find("signal 6"), std::string::npos) << rec.detail;
    }
    if (rec.status == "ok") {
      EXPECT_GT(rec.median_us, 0);
    } else {
      EXPECT_EQ(rec.median_us, 0) << "failures are never timed";
    }
    if (rec.config.rfind("vendor=", 0) == 0) {  // the GPU backend's names, which records.py and eval expect
      EXPECT_TRUE(rec.config == "vendor=cublaslt:heur" || rec.config == "vendor=cublaslt:best" ||
                  rec.config == "vendor=cudnn:heur" || rec.config == "vendor=cudnn:exhaustive")
          << rec.config;
    }
  }
  EXPECT_EQ(by_status["timeout"], 1);
  EXPECT_GE(by_status["crash"], 1);
  EXPECT_GT(by_status["ok"], 20);
  // Every planned pair is recorded exactly once; the duplicate problem line is measured once.
  auto got = items(f);
  EXPECT_EQ(std::set(got.begin(), got.end()), want);
  for (const auto& p : want)
    if (p.second.rfind("vendor=", 0) != 0) {
      EXPECT_EQ(got.count(p), 1u) << p.first << " | " << p.second;
    }
  EXPECT_NE(r.out.find("worker restarts"), std::string::npos);
}

TEST_F(SweepTest, KilledSweepResumesWithoutLosingOrRepeatingPairs) {
  auto want = planned();
  std::string cmd = std::string(TILEPICK_CLI_PATH) + " " + base() + " -o " + out() + " --fake-pair-ms 20";
  pid_t pid = fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " 2>/dev/null").c_str(), nullptr);
    ::_exit(127);
  }
  // Wait until some records exist, then kill the supervisor without warning.
  for (int i = 0; i < 200 && (!fs::exists(out() + ".journal") || fs::file_size(out() + ".journal") < 400); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ::kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  RecordFile partial = read_record_file(out());
  ASSERT_GT(partial.records.size(), 0u);
  ASSERT_LT(partial.records.size(), want.size()) << "the sweep finished before it was killed";
  auto r = test::run_cli(base() + " -o " + out());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
  RecordFile f = read_record_file(out());
  auto got = items(f);
  EXPECT_EQ(std::set(got.begin(), got.end()), want);
  for (const auto& p : want)
    if (p.second.rfind("vendor=", 0) != 0) {
      EXPECT_EQ(got.count(p), 1u) << p.first << " | " << p.second;
    }
  // A third run has nothing left to do.
  r = test::run_cli(base() + " -o " + out());
  EXPECT_NE(r.out.find("0 pairs to measure"), std::string::npos) << r.out;
}

// A corrupt member in the middle of a finished sweep's file: readers keep every intact member around
// it, the next run rewrites the file without it and measures only the pairs it held.
TEST_F(SweepTest, CorruptMemberMidFileIsDroppedAndOnlyItsPairsRemeasured) {
  auto want = planned();
  auto r = test::run_cli(base() + " -o " + out());
  ASSERT_EQ(r.code, 0) << r.out;
  RecordFile before = read_record_file(out());
  ASSERT_EQ(before.damaged_members, 0u);
  std::string bytes;
  {
    std::ifstream in(out(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Flip bytes in the middle of the file (inside some rows member, far from its gzip header).
  const std::size_t mid = bytes.size() / 2;
  for (std::size_t i = mid; i < mid + 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  ASSERT_EQ(bytes.find("\x1f\x8b\x08", mid - 2) > mid + 8, true) << "the flip made a gzip header";
  std::ofstream(out(), std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  RecordFile damaged = read_record_file(out());
  EXPECT_EQ(damaged.damaged_members, 1u);
  EXPECT_FALSE(damaged.truncated_tail);
  const std::size_t lost_rows = before.records.size() - damaged.records.size();
  ASSERT_GT(lost_rows, 0u);
  ASSERT_LT(lost_rows, before.records.size() / 2) << "rows after the corrupt member were dropped too";
  const auto had = items(before), kept = items(damaged);
  std::size_t lost_pairs = 0;  // a vendor pair holds two rows (heuristic and best)
  for (const auto& p : std::set(had.begin(), had.end())) lost_pairs += kept.count(p) == 0;
  r = test::run_cli(base() + " -o " + out());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" " + std::to_string(lost_pairs) + " pairs to measure"), std::string::npos) << r.out;
  RecordFile f = read_record_file(out());
  EXPECT_EQ(f.damaged_members, 0u);
  EXPECT_FALSE(f.truncated_tail);
  auto got = items(f);
  EXPECT_EQ(std::set(got.begin(), got.end()), want);
  EXPECT_EQ(got.size(), before.records.size());  // nothing lost, nothing measured twice
}

// Killed 20 times at random points, with one member corrupted mid-file from the 10th kill on: the
// finished file holds every planned pair exactly once, and every record that survived intact at any
// kill keeps its measurement (problem, config and time): only the corrupt member's pairs and the
// unfinished ones were measured again.
TEST_F(SweepTest, TwentyKillsAndACorruptMemberLoseAndRepeatNothing) {
  const std::string command = "sweep --backend fake --arch h200 -q --sample 40 -f " + problems();
  const std::string sweep = command + " -o " + out();
  auto want = planned("", command);
  ASSERT_GT(want.size(), 150u);
  using Row = std::tuple<std::string, std::string, double>;
  auto rows = [](const RecordFile& f) {
    std::set<Row> r;
    for (const auto& rec : f.records) r.emplace(rec.problem, rec.config, rec.time_unix);
    return r;
  };
  std::mt19937 rng(20);
  std::vector<std::set<Row>> survived;  // after each kill
  std::set<Row> lost;                   // the corrupt member's rows
  auto rows_now = [&] {
    try {
      return fs::exists(out()) ? read_record_file(out()).records.size() : std::size_t{0};
    } catch (const std::exception&) {  // caught mid-write: try again
      return std::size_t{0};
    }
  };
  for (int kill = 0; kill < 20; ++kill) {
    const std::size_t had = survived.empty() ? 0 : survived.back().size();
    pid_t pid = fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", ("exec " + std::string(TILEPICK_CLI_PATH) + " " + sweep +
                                      " --fake-pair-ms 25 2>/dev/null").c_str(), nullptr);
      ::_exit(127);
    }
    // Until the sweep has added a few rows (a busy CI machine starts it slowly), then a random moment.
    for (int i = 0; i < 1000 && rows_now() < had + 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 80)(rng)));
    ::kill(pid, SIGKILL);
    ::kill(-pid, SIGKILL);  // and its workers
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(fs::exists(out()));
    if (kill >= 10 && lost.empty() && fs::file_size(out()) > 2000) {  // flip bytes mid-file, inside a rows member
      const RecordFile before = read_record_file(out());
      std::string bytes;
      {
        std::ifstream in(out(), std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
      }
      const std::size_t mid = bytes.size() / 2;
      for (std::size_t i = mid; i < mid + 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
      std::ofstream(out(), std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      const RecordFile after = read_record_file(out());
      ASSERT_EQ(after.damaged_members, 1u);
      const auto b = rows(before), a = rows(after);
      std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::inserter(lost, lost.end()));
      ASSERT_FALSE(lost.empty());
    }
    survived.push_back(rows(read_record_file(out())));
  }
  ASSERT_FALSE(lost.empty()) << "no member was corrupted: too little written";
  auto r = test::run_cli(sweep);
  ASSERT_EQ(r.code, 0) << r.out;
  const RecordFile f = read_record_file(out());
  EXPECT_EQ(f.damaged_members, 0u);
  EXPECT_FALSE(f.truncated_tail);
  auto got = items(f);
  EXPECT_EQ(std::set(got.begin(), got.end()), want);
  for (const auto& p : want)
    if (p.second.rfind("vendor=", 0) != 0) {
      EXPECT_EQ(got.count(p), 1u) << p.first << " | " << p.second;
    }
  const std::set<Row> final_rows = rows(f);
  std::size_t kept = 0;
  for (const auto& snapshot : survived)
    for (const auto& row : snapshot) {
      if (lost.count(row)) continue;
      EXPECT_EQ(final_rows.count(row), 1u) << std::get<0>(row) << " | " << std::get<1>(row) << " re-measured or lost";
      ++kept;
    }
  EXPECT_GT(kept, 0u);
  ASSERT_EQ(survived.size(), 20u);
  EXPECT_LT(survived.back().size(), final_rows.size()) << "the sweep finished before the 20th kill";
}

TEST_F(SweepTest, ShardsSplitTheProblemsAndMergeBack) {
  auto want = planned();
  std::vector<std::string> files;
  std::set<std::string> shard_problems[3];
  for (int i = 0; i < 3; ++i) {
    auto r = test::run_cli(base() + " -o " + out() + " --shard " + std::to_string(i) + "/3");
    ASSERT_EQ(r.code, 0) << r.out;
    files.push_back(out("out.shard" + std::to_string(i) + "of3.csv.gz"));
    RecordFile f = read_record_file(files.back());
    EXPECT_EQ(f.header.value("shard", ""), std::to_string(i) + "/3");
    for (const auto& rec : f.records) shard_problems[i].insert(rec.problem);
  }
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      for (const auto& p : shard_problems[i]) EXPECT_EQ(shard_problems[j].count(p), 0u) << "shards overlap: " << p;
  auto r = test::run_cli("sweep merge -o " + out("merged.csv.gz") + " " + files[0] + " " + files[1] + " " + files[2]);
  ASSERT_EQ(r.code, 0) << r.out;
  RecordFile merged = read_record_file(out("merged.csv.gz"));
  auto got = items(merged);
  EXPECT_EQ(std::set(got.begin(), got.end()), want);
  EXPECT_EQ(merged.header["merged_from"].size(), 3u);
  // Merging again into an existing file, or files from another device, is refused.
  r = test::run_cli("sweep merge -o " + out("merged.csv.gz") + " " + files[0]);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("exists"), std::string::npos) << r.out;
  {
    RecordWriter w(out("other.csv.gz"), {{"format", kRecordFormat}, {"devices", {{{"name", "NVIDIA A100"}}}}});
    w.append(sample_record(1));
  }
  r = test::run_cli("sweep merge -o " + out("mixed.csv.gz") + " " + files[0] + " " + out("other.csv.gz"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("NVIDIA A100"), std::string::npos) << r.out;
}

TEST_F(SweepTest, SlurmArrayTaskPicksTheShard) {
  auto r = test::run_cli("sweep --backend fake --arch h200 -q --sample 2 -f " + problems() + " -o " + out() +
               " --dry-run 2>&1; SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 " +
               TILEPICK_CLI_PATH + " sweep --backend fake --arch h200 -q --sample 2 -f " + problems() + " -o " + out());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(out("out.shard1of2.csv.gz"))) << r.out;
}

TEST_F(SweepTest, HeaderRecordsDeviceVersionsAndOptions) {
  auto r = test::run_cli(base() + " -o " + out());
  ASSERT_EQ(r.code, 0) << r.out;
  RecordFile f = read_record_file(out());
  EXPECT_EQ(f.header["format"], kRecordFormat);
  for (const char* key : {"date", "host", "commit", "versions", "options", "devices"})
    EXPECT_TRUE(f.header.contains(key)) << key;
  EXPECT_EQ(f.header["devices"][0]["name"], "fake device");
  EXPECT_FALSE(f.header["versions"].value("nvrtc", "").empty());
  EXPECT_EQ(f.header["options"]["sample"], 6);
  EXPECT_EQ(f.header["options"]["graph_mb"], 256.0);  // the timing method is part of the file
  EXPECT_EQ(f.header["options"]["graph_launches"], 32);
  // Every row names a status from the documented set; ok rows carry times and TFLOPS.
  const std::set<std::string> statuses = {"ok", "wrong", "crash", "timeout", "error", "unsupported"};
  for (const auto& rec : f.records) {
    EXPECT_TRUE(statuses.count(rec.status)) << rec.status;
    if (rec.status == "ok") {
      EXPECT_GT(rec.tflops, 0);
    }
  }
}

// --space narrows the pool to default spaces by name, or replaces it by a space file (a trial space, outside the
// default pool); an unknown name is an error, never an empty sweep.
TEST_F(SweepTest, SpaceIsADefaultNameOrASpaceFile) {
  const std::string grouped = (dir_ / "grouped.txt").string();
  std::ofstream(grouped) << "fwd g4 mb2 ic32 ih9 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16\n"  // grouped: sm80, grp
                          << "fwd g32 mb2 ic32 ih9 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16\n";  // depthwise: sm80, dw
  const std::string cmd = "sweep --backend fake --arch h200 -q --no-vendor -f " + grouped;
  const char* data = std::getenv("TILEPICK_DATA_DIR");
  ASSERT_NE(data, nullptr);
  const auto trial = planned("--space " + std::string(data) + "/spaces/trial/conv_grp.json", cmd);
  ASSERT_FALSE(trial.empty());
  for (const auto& [problem, config] : trial) EXPECT_EQ(config.rfind("fam=grp ", 0), 0u) << config;
  const auto sm80 = planned("--space conv_sm80", cmd), all = planned("", cmd);
  ASSERT_FALSE(sm80.empty());
  for (const auto& [problem, config] : sm80) EXPECT_EQ(config.rfind("fam=sm80 ", 0), 0u) << config;
  EXPECT_LT(sm80.size(), all.size());
  for (const auto& pair : sm80) EXPECT_TRUE(all.count(pair)) << pair.second;  // a filter of the default pool
  for (const auto& pair : trial) EXPECT_FALSE(all.count(pair)) << pair.second;
  auto r = test::run_cli(cmd + " -o " + out() + " --dry-run --space conv_nosuch");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("conv_nosuch"), std::string::npos) << r.out;
}

TEST_F(SweepTest, BadArgumentsGetClearErrors) {
  auto r = test::run_cli(base() + " -o " + out() + " --shard 3/3");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("0 <= i < n"), std::string::npos) << r.out;
  r = test::run_cli(base() + " -o " + out() + " --inject-fault explode");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("explode"), std::string::npos) << r.out;
  r = test::run_cli(base());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("-o"), std::string::npos) << r.out;
  r = test::run_cli(base() + " -o " + out() + " --graph-mb -1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--graph-mb"), std::string::npos) << r.out;
  r = test::run_cli(base() + " -o " + out() + " --graph-launches 0");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--graph-launches"), std::string::npos) << r.out;
  std::ofstream(out("junk.csv.gz")) << "not gzip";
  r = test::run_cli(base() + " -o " + out("junk.csv.gz"));
  EXPECT_NE(r.code, 0);
}
