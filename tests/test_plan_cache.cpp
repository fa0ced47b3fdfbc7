// The plan cache: persistence to a JSON file another dispatcher (or process) reloads, rejection of
// entries made by another build, malformed files, and planning from many threads at once (this
// test also runs under ThreadSanitizer, see scripts/setup.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "dispatch/plan_cache.hpp"
#include "test_util.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {
namespace fs = std::filesystem;

PlanOptions offline(VendorMode v = VendorMode::automatic) {
  PlanOptions o;
  o.offline_arch = "h200";
  o.vendor = v;
  return o;
}

struct TempFile {
  fs::path path;
  TempFile() {
    path = fs::temp_directory_path() /
           ("tilepick_plan_cache_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + ".json");
    fs::remove(path);
  }
  ~TempFile() {
    fs::remove(path);
    fs::remove(path.string() + ".lock");
  }
  static std::atomic<int>& counter() {
    static std::atomic<int> c{0};
    return c;
  }
};

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST(PlanCache, PersistsAndReloadsInAnotherDispatcher) {
  TempFile f;
  const Problem p = parse_problem("gemm rcr m300 n200 k100 bf16 ep=bias");
  std::string kernel;
  {
    Dispatcher d(Selector::default_selector(), f.path.string());
    auto plan = d.plan(p, offline());
    kernel = plan->info().kernel;
    EXPECT_EQ(plan->info().cache, "new");
  }
  ASSERT_TRUE(fs::exists(f.path));
  auto j = read_json(f.path);
  ASSERT_EQ(j["format"], 1);
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["kernel"], kernel);
  EXPECT_EQ(j["entries"][0]["stamps"], plan_cache_stamps(p, kernel, false));

  Dispatcher again(Selector::default_selector(), f.path.string());
  auto plan = again.plan(p, offline());
  EXPECT_EQ(plan->info().cache, "file");
  EXPECT_EQ(plan->info().kernel, kernel);
  EXPECT_EQ(again.stats().file_hits, 1u);
  EXPECT_EQ(again.stats().file_entries, 1u);
  // Another vendor mode is another key: planned anew and added next to the first entry.
  EXPECT_EQ(again.plan(p, offline(VendorMode::off))->info().cache, "new");
  EXPECT_EQ(read_json(f.path)["entries"].size(), 2u);
  // So is another threshold of the auto strategy (the default), and the heuristic strategy.
  PlanOptions other = offline();
  other.auto_time_us = 500.0;
  EXPECT_EQ(again.plan(p, other)->info().cache, "new");
  other.strategy = Strategy::heuristic;
  EXPECT_EQ(again.plan(p, other)->info().cache, "new");
  EXPECT_EQ(read_json(f.path)["entries"].size(), 4u);
}

TEST(PlanCache, EntriesOfAnotherBuildAreRejectedButKept) {
  TempFile f;
  const Problem p = parse_problem("fwd g1 mb2 ic32 ih17 iw17 oc48 kh3 kw3 sh1 sw1 ph1 pw1 f16");
  {
    Dispatcher d(Selector::default_selector(), f.path.string());
    d.plan(p, offline());
  }
  auto j = read_json(f.path);
  j["entries"][0]["stamps"]["kernel_headers"] = "0000000000000000";  // as if the kernels changed
  j["entries"][0]["kernel"] = "fam=sm80 tile=16x16x16 warps=1x1 stages=2";
  std::ofstream(f.path) << j.dump();

  Dispatcher d(Selector::default_selector(), f.path.string());
  auto plan = d.plan(p, offline());
  EXPECT_EQ(plan->info().cache, "new");
  EXPECT_NE(plan->info().kernel, "fam=sm80 tile=16x16x16 warps=1x1 stages=2");
  EXPECT_EQ(d.stats().rejected_entries, 1u);
  const auto after = read_json(f.path)["entries"];
  ASSERT_EQ(after.size(), 2u);  // the new entry, and the foreign one untouched
  int foreign = 0;
  for (const auto& e : after) foreign += e["stamps"]["kernel_headers"] == "0000000000000000";
  EXPECT_EQ(foreign, 1);
}

// A file at the cache path that is not a plan cache (someone's notes, a damaged cache) is never
// overwritten: the plan is made and kept in memory, the failed save counted and said.
TEST(PlanCache, AFileThatIsNotAPlanCacheIsNeverOverwritten) {
  TempFile f;
  std::ofstream(f.path) << "{ this is not json";
  Dispatcher d(Selector::default_selector(), f.path.string());
  auto plan = d.plan(parse_problem("gemm rrr m64 n64 k64 bf16"), offline());
  EXPECT_EQ(plan->info().cache, "new");
  EXPECT_EQ(d.stats().save_failures, 1u);
  EXPECT_NE(d.stats().last_save_error.find("not overwritten"), std::string::npos) << d.stats().last_save_error;
  std::ifstream in(f.path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{ this is not json");
  for (const auto& e : fs::directory_iterator(f.path.parent_path()))  // no temp file left behind
    EXPECT_EQ(e.path().filename().string().find(f.path.filename().string() + ".tmp"), std::string::npos) << e.path();
}

// A file entry of this build that is not a plan any more is planned anew and replaced in the file:
// a damaged kernel string (dropped at load: rejected_entries) or a kernel that cannot run the problem
// on this arch (found when planning: bad_entries). The next process uses the new entry.
TEST(PlanCache, DamagedOrUnplannableEntriesArePlannedAnewAndReplaced) {
  const Problem p = parse_problem("gemm rcr m96 n80 k64 bf16");
  for (const bool parses : {false, true}) {
    TempFile f;
    std::string kernel;
    {
      Dispatcher d(Selector::default_selector(), f.path.string());
      kernel = d.plan(p, offline())->info().kernel;
    }
    auto j = read_json(f.path);  // stamps still match
    j["entries"][0]["kernel"] = parses ? "fam=sm90 tile=128x128x128 warps=2x1 stages=3"  // tile_k of fp8 inputs
                                       : "fam=sm80 tile=banana";
    std::ofstream(f.path) << j.dump();
    Dispatcher d(Selector::default_selector(), f.path.string());
    auto plan = d.plan(p, offline());
    EXPECT_EQ(plan->info().cache, "new");
    EXPECT_EQ(plan->info().kernel, kernel);
    EXPECT_EQ(d.stats().rejected_entries, parses ? 0u : 1u);
    EXPECT_EQ(d.stats().bad_entries, parses ? 1u : 0u);
    const auto after = read_json(f.path)["entries"];
    ASSERT_EQ(after.size(), 1u);  // replaced (same key), not kept beside
    EXPECT_EQ(after[0]["kernel"], kernel);
    Dispatcher again(Selector::default_selector(), f.path.string());
    EXPECT_EQ(again.plan(p, offline())->info().cache, "file");
  }
}

// A save keeps the newest max_entries entries: its cost is bounded however many plans were made.
TEST(PlanCache, ASaveKeepsTheNewestEntriesUpToTheBound) {
  TempFile f;
  PlanCacheFile file;
  file.max_entries = 3;
  const Problem p = parse_problem("gemm rcr m64 n64 k64 bf16");
  for (int i = 0; i < 5; ++i) {
    PlanInfo info;
    info.problem = to_string(p), info.kernel = "fam=sm80 tile=64x64x32 warps=2x2 stages=3";
    PlanCacheEntry e = make_entry("key" + std::to_string(i), info, p);
    e.created = "2026-11-2" + std::to_string(i) + "T00:00:00Z";
    file.entries[e.key] = e;
  }
  file.save(f.path.string());
  const auto saved = read_json(f.path)["entries"];
  ASSERT_EQ(saved.size(), 3u);
  std::set<std::string> keys;
  for (const auto& e : saved) keys.insert(e["key"].get<std::string>());
  EXPECT_EQ(keys, (std::set<std::string>{"key2", "key3", "key4"}));
  EXPECT_EQ(file.entries.size(), 3u);
  EXPECT_EQ(PlanCacheFile::load(f.path.string()).entries.size(), 3u);
}

// A cache path that cannot be written (here a directory) costs the file, never the plan: the plan is
// returned, kept in memory, and the failure counted (it used to surface as std::future_error).
TEST(PlanCache, AFailedSaveKeepsThePlan) {
  TempFile f;
  fs::create_directories(f.path);
  Dispatcher d(Selector::default_selector(), f.path.string());
  const Problem p = parse_problem("gemm rcr m64 n64 k64 bf16");
  auto plan = d.plan(p, offline());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->info().cache, "new");
  EXPECT_EQ(d.stats().save_failures, 1u);
  EXPECT_FALSE(d.stats().last_save_error.empty());
  EXPECT_EQ(d.plan(p, offline()).get(), plan.get());  // served from memory
  EXPECT_EQ(d.stats().memory_hits, 1u);
  EXPECT_TRUE(fs::is_directory(f.path));  // nothing written over it
  fs::remove_all(f.path);
}

TEST(PlanCache, FixedPlansAreNotPersisted) {
  TempFile f;
  Dispatcher d(Selector::default_selector(), f.path.string());
  PlanOptions o = offline();
  o.strategy = Strategy::fixed;
  o.config = "fam=sm80 tile=64x64x32 warps=2x2 stages=3";
  d.plan(parse_problem("gemm rcr m64 n64 k64 bf16"), o);
  EXPECT_FALSE(fs::exists(f.path));
}

TEST(PlanCache, ConcurrentPlanningGivesOnePlanPerKey) {
  TempFile f;
  Dispatcher d(Selector::default_selector(), f.path.string());
  const std::vector<Problem> problems = {
      parse_problem("gemm rcr m512 n512 k512 bf16"), parse_problem("gemm rrr m100 n70 k33 f16"),
      parse_problem("fwd g1 mb4 ic32 ih14 iw14 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16"),
      parse_problem("bwd_data g1 mb4 ic32 ih14 iw14 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16"),
      parse_problem("bwd_weight g4 mb4 ic32 ih14 iw14 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16")};
  const int threads = 8, iterations = 20;
  std::vector<std::vector<const Plan*>> seen(threads, std::vector<const Plan*>(problems.size() * 2, nullptr));
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int i = 0; i < iterations; ++i)
          for (std::size_t n = 0; n < problems.size() * 2; ++n) {
            const std::size_t k = (n + static_cast<std::size_t>(t)) % (problems.size() * 2);
            auto plan = d.plan(problems[k / 2], offline(k % 2 ? VendorMode::off : VendorMode::automatic));
            if (seen[t][k] && seen[t][k] != plan.get()) ++mismatches;
            seen[t][k] = plan.get();
          }
      } catch (...) {
        ++errors;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  for (std::size_t k = 0; k < problems.size() * 2; ++k) {
    std::set<const Plan*> distinct;
    for (int t = 0; t < threads; ++t) distinct.insert(seen[t][k]);
    EXPECT_EQ(distinct.size(), 1u) << "key " << k;
  }
  const auto s = d.stats();
  EXPECT_EQ(s.new_plans, problems.size() * 2);
  EXPECT_EQ(s.memory_hits + s.new_plans, static_cast<std::size_t>(threads * iterations) * problems.size() * 2);
  EXPECT_EQ(read_json(f.path)["entries"].size(), problems.size() * 2);
}

TEST(PlanCache, SurvivesAProcessRestartThroughTheCli) {
  TempFile f;
  const std::string args = "plan -p 'gemm rcr m123 n456 k789 bf16' --arch h200 --json --cache " + f.path.string();
  auto first = test::run_cli(args);
  ASSERT_EQ(first.code, 0) << first.out;
  auto second = test::run_cli(args);
  ASSERT_EQ(second.code, 0) << second.out;
  const auto a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(second.out);
  EXPECT_EQ(a[0]["cache"], "new");
  EXPECT_EQ(b[0]["cache"], "file");
  EXPECT_EQ(a[0]["kernel"], b[0]["kernel"]);
}

}  // namespace
}  // namespace tilepick
