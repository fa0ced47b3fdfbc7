// The header-only C++ wrapper over the C API (include/tilepick/tilepick.hpp): RAII handles,
// exceptions carrying the C status, offline plans matching the C++ dispatcher. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <type_traits>

#include "tilepick/dispatch.hpp"
#include "tilepick/tilepick.hpp"

namespace {

const char* kGemm = "gemm rcr m128 n256 k64 bf16";

template <class F>
tp::Error thrown(F&& f) {
  try {
    f();
  } catch (const tp::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no tp::Error thrown";
  return tp::Error(tp_status_ok, "");
}

tp::PlanOptions offline(const std::string& arch = "h200") {
  tp::PlanOptions o;
  o.offline_arch = arch;
  return o;
}

TEST(CapiWrapper, HandlesAreMoveOnly) {
  static_assert(!std::is_copy_constructible_v<tp::Problem> && std::is_nothrow_move_constructible_v<tp::Problem>);
  static_assert(!std::is_copy_assignable_v<tp::Plan> && std::is_nothrow_move_assignable_v<tp::Plan>);
  static_assert(!std::is_copy_constructible_v<tp::Dispatcher>);
  tp::Problem a(kGemm);
  tp::Problem b = std::move(a);
  EXPECT_EQ(b.op(), "gemm");
  // A moved-from handle is NULL: the C API refuses it with a message instead of crashing.
  const tp::Error e = thrown([&] { (void)a.str(); });  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(e.status(), tp_status_invalid_argument);
  EXPECT_NE(std::string(e.what()).find("argument 'problem' is NULL"), std::string::npos) << e.what();
}

TEST(CapiWrapper, ProblemAndOperands) {
  tp::Problem p("fwd g2 mb1 ic8 ih6 iw6 oc4 kh3 kw3 sh1 sw1 ph1 pw1 f16");
  EXPECT_EQ(p.str(), tilepick::to_string(tilepick::parse_problem(p.str())));
  const auto ops = p.operands();
  const auto want = tilepick::operand_specs(tilepick::parse_problem(p.str()));
  ASSERT_EQ(ops.size(), want.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].name, want[i].name);
    EXPECT_EQ(ops[i].slot, want[i].slot);
    EXPECT_EQ(ops[i].dims, want[i].dims);
    EXPECT_EQ(static_cast<int>(ops[i].dtype), static_cast<int>(want[i].dtype));
    EXPECT_EQ(ops[i].shape, want[i].shape);
    EXPECT_EQ(ops[i].output, want[i].output);
  }
  EXPECT_EQ(ops[1].shape, (std::vector<std::int64_t>{4, 3, 3, 4}));  // w: K Y X C/G
}

TEST(CapiWrapper, ErrorsCarryTheStatus) {
  tp::Error e = thrown([] { tp::Problem("gemm rcr m1 n1 k1 f99"); });
  EXPECT_EQ(e.status(), tp_status_parse_error);
  EXPECT_STREQ(e.status_name(), "parse_error");
  EXPECT_NE(std::string(e.what()).find("f99"), std::string::npos) << e.what();

  e = thrown([] { tp::Problem("fwd g3 mb1 ic8 ih8 iw8 oc9 kh1 kw1 sh1 sw1 ph0 pw0 f16"); });
  EXPECT_EQ(e.status(), tp_status_invalid_problem);

  tp::Problem p(kGemm);
  tp::PlanOptions o = offline();
  o.strategy = static_cast<tp_strategy>(17);
  e = thrown([&] { tp::plan(p, o); });
  EXPECT_EQ(e.status(), tp_status_invalid_argument);
  EXPECT_NE(std::string(e.what()).find("options.strategy 17"), std::string::npos) << e.what();

  e = thrown([&] { tp::plan(p, offline("not_an_arch")); });
  EXPECT_EQ(e.status(), tp_status_not_found);

  tp::Problem fp8("gemm rcr m256 n256 k256 e4m3:e4m3:bf16");
  tp::PlanOptions ampere = offline("a100_sxm");
  ampere.vendor = tp_vendor_off;
  const tp::Applicability a = tp::check_problem(fp8, ampere);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("no legal tilepick kernel"), std::string::npos) << a.reason;
  e = thrown([&] { tp::plan(fp8, ampere); });
  EXPECT_EQ(e.status(), tp_status_unsupported);
}

TEST(CapiWrapper, OfflinePlanMatchesTheDispatcher) {
  tp::Problem p(kGemm);
  tp::Plan plan = tp::plan(p, offline());
  tilepick::PlanOptions o;
  o.offline_arch = "h200";
  const auto direct = tilepick::Dispatcher::default_dispatcher().plan(tilepick::parse_problem(kGemm), o);
  EXPECT_EQ(plan.kernel(), direct->info().kernel);
  EXPECT_EQ(plan.workspace_bytes(), direct->workspace_bytes());
  EXPECT_EQ(plan.alignment("a"), direct->alignment("a"));
  EXPECT_FALSE(plan.runnable());
  const auto info = nlohmann::json::parse(plan.info_json());
  EXPECT_EQ(info["kernel"], plan.kernel());
  EXPECT_EQ(info["arch"], "h200");

  const tp::Error e = thrown([&] { plan.run(nullptr, nullptr, nullptr, nullptr); });
  EXPECT_EQ(e.status(), tp_status_unsupported);
  EXPECT_NE(std::string(e.what()).find("made offline for arch h200"), std::string::npos) << e.what();
  const tp::Error e2 = thrown([&] { plan.run(std::vector<tp_tensor>(1)); });
  EXPECT_EQ(e2.status(), tp_status_invalid_argument);
  EXPECT_NE(std::string(e2.what()).find("takes 3 tensors"), std::string::npos) << e2.what();
}

TEST(CapiWrapper, OwnDispatcherCachesPlans) {
  tp::Dispatcher d;
  tp::Problem p(kGemm);
  tp::Plan a = d.plan(p, offline());
  tp::Plan b = d.plan(p, offline());
  EXPECT_EQ(a.kernel(), b.kernel());
  const tp_cache_stats s = d.stats();
  EXPECT_EQ(s.new_plans, 1u);
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_TRUE(d.check_problem(p, offline()).ok);
  d.save();  // no file: a no-op
  d.clear_memory();
}

TEST(CapiWrapper, LastErrorIsPerThread) {
  std::string in_thread;
  std::thread t([&] {
    tp_problem* p = nullptr;
    EXPECT_EQ(tp_problem_parse("gemm rcr m1 n1 k1 nope", &p), tp_status_parse_error);
    in_thread = tp_last_error();
  });
  tp_problem* p = nullptr;
  EXPECT_EQ(tp_problem_parse(nullptr, &p), tp_status_invalid_argument);
  t.join();
  EXPECT_NE(std::string(tp_last_error()).find("'text' is NULL"), std::string::npos) << tp_last_error();
  EXPECT_NE(in_thread.find("nope"), std::string::npos) << in_thread;
  EXPECT_EQ(tp_problem_parse(kGemm, &p), tp_status_ok);
  EXPECT_STREQ(tp_last_error(), "");  // success clears it
  tp_problem_destroy(p);
}

}  // namespace
