// Dispatcher without a GPU: operand specs and tensor checks, offline plans against the selector,
// option errors, the in-memory cache and applicability.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "test_util.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {

using Shape = std::vector<std::int64_t>;

PlanOptions offline(Strategy s = Strategy::heuristic) {
  PlanOptions o;
  o.strategy = s;
  o.offline_arch = "h200";
  return o;
}

template <class F>
std::string error_of(F&& f, Status want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(DispatchSpecs, GemmLayoutsBatchBiasAndC) {
  auto s = operand_specs(parse_problem("gemm rcr m33 n65 k17 bf16 ep=bias+relu"));
  ASSERT_EQ(s.size(), 4u);  // A B D bias (no C with beta 0)
  EXPECT_EQ(s[0].name, "A");
  EXPECT_EQ(s[0].dims, "MK");
  EXPECT_EQ(s[0].shape, (Shape{33, 17}));
  EXPECT_EQ(s[1].dims, "NK");
  EXPECT_EQ(s[1].shape, (Shape{65, 17}));  // column-major K x N
  EXPECT_EQ(s[2].slot, "d");
  EXPECT_TRUE(s[2].output);
  EXPECT_EQ(s[2].shape, (Shape{33, 65}));
  EXPECT_EQ(s[3].name, "bias");
  EXPECT_EQ(s[3].shape, (Shape{65}));

  s = operand_specs(parse_problem("gemm ccc batch3 m5 n7 k9 f16 beta=1"));
  ASSERT_EQ(s.size(), 4u);  // A B C D
  EXPECT_EQ(s[0].dims, "BKM");
  EXPECT_EQ(s[0].shape, (Shape{3, 9, 5}));
  EXPECT_EQ(s[1].dims, "BNK");
  EXPECT_EQ(s[1].shape, (Shape{3, 7, 9}));
  EXPECT_EQ(s[2].name, "C");
  EXPECT_EQ(s[2].dims, "BNM");
  EXPECT_EQ(s[3].name, "D");
  EXPECT_EQ(s[3].shape, (Shape{3, 7, 5}));
}

TEST(DispatchSpecs, ConvDirectionsAndRanks) {
  auto s = operand_specs(parse_problem("fwd g2 mb3 ic8 ih9 iw11 oc6 kh3 kw3 sh2 sw2 ph1 pw1 bf16 ep=bias"));
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].name, "x");
  EXPECT_EQ(s[0].dims, "NHWC");
  EXPECT_EQ(s[0].shape, (Shape{3, 9, 11, 8}));
  EXPECT_EQ(s[1].name, "w");
  EXPECT_EQ(s[1].dims, "KYXC");
  EXPECT_EQ(s[1].shape, (Shape{6, 3, 3, 4}));
  EXPECT_EQ(s[2].name, "y");
  EXPECT_EQ(s[2].shape, (Shape{3, 5, 6, 6}));
  EXPECT_EQ(s[3].shape, (Shape{6}));

  s = operand_specs(parse_problem("bwd_data g1 mb2 ic4 ih5 iw5 oc8 kh1 kw1 sh1 sw1 ph0 pw0 f16"));
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "dy");
  EXPECT_EQ(s[1].name, "w");
  EXPECT_EQ(s[2].name, "dx");
  EXPECT_EQ(s[2].shape, (Shape{2, 5, 5, 4}));

  s = operand_specs(parse_problem("bwd_weight g1 mb2 ic4 id3 ih5 iw5 oc8 kd1 kh3 kw3 sd1 sh1 sw1 pd0 ph1 pw1 bf16"));
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].dims, "NDHWC");
  EXPECT_EQ(s[1].name, "dy");
  EXPECT_EQ(s[2].name, "dw");
  EXPECT_EQ(s[2].dims, "KZYXC");
  EXPECT_EQ(s[2].shape, (Shape{8, 1, 3, 3, 4}));
}

TEST(DispatchSpecs, TensorChecksNameWhatIsWrong) {
  const auto specs = operand_specs(parse_problem("fwd g1 mb2 ic8 ih5 iw7 oc4 kh3 kw3 sh1 sw1 ph1 pw1 bf16"));
  const TensorSpec& x = specs[0];
  alignas(256) static unsigned char mem[4096];
  TensorArg t{mem, DType::bf16, {2, 5, 7, 8}, {}, 0};
  EXPECT_NO_THROW(check_tensor(x, t, 0, 16));
  // A torch NCHW tensor in channels_last memory: logical [N, C, H, W], strides [HWC, 1, WC, C].
  TensorArg cl{mem, DType::bf16, {2, 8, 5, 7}, {280, 1, 56, 8}, 0};
  EXPECT_NO_THROW(check_tensor(x, cl, 0, 16));
  // The same tensor in NCHW-contiguous memory is refused with a hint.
  TensorArg nchw{mem, DType::bf16, {2, 8, 5, 7}, {}, 0};
  auto msg = error_of([&] { check_tensor(x, nchw, 0, 16); }, Status::invalid_argument);
  EXPECT_NE(msg.find("operand x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("channels-last"), std::string::npos) << msg;
  // A sliced (non-dense) view.
  TensorArg sliced{mem, DType::bf16, {2, 5, 7, 8}, {560, 112, 16, 1}, 0};
  EXPECT_NE(error_of([&] { check_tensor(x, sliced, 0, 16); }, Status::invalid_argument).find("not the dense"),
            std::string::npos);
  TensorArg wrong = t;
  wrong.dtype = DType::f16;
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("dtype f16, expected bf16"),
            std::string::npos);
  wrong = t, wrong.device = -1;
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("host memory"),
            std::string::npos);
  wrong = t, wrong.device = 1;
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("on device 1"),
            std::string::npos);
  wrong = t, wrong.data = nullptr;
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("null"), std::string::npos);
  wrong = t, wrong.data = mem + 2;
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("aligned to 16"),
            std::string::npos);
  wrong = t, wrong.shape = {2, 5, 7, 9};
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("elements"),
            std::string::npos);
  wrong = t, wrong.shape = {2, 7, 5, 8};  // same count, H and W swapped
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("not the dense"),
            std::string::npos);
  // A GEMM operand as its logical matrix: column-major B (memory [N][K]) given as K x N with strides
  // [1, K] (torch's w.t()) is accepted; a row-major K x N is not.
  const auto g = operand_specs(parse_problem("gemm rcr m8 n16 k32 f16"));
  EXPECT_NO_THROW(check_tensor(g[1], TensorArg{mem, DType::f16, {32, 16}, {1, 32}, 0}, 0, 16));
  EXPECT_NO_THROW(check_tensor(g[1], TensorArg{mem, DType::f16, {16, 32}, {}, 0}, 0, 16));
  EXPECT_NE(error_of([&] { check_tensor(g[1], TensorArg{mem, DType::f16, {32, 16}, {}, 0}, 0, 16); },
                     Status::invalid_argument)
                .find("transposed strides"),
            std::string::npos);
  wrong = t, wrong.strides = {1, 2};
  EXPECT_NE(error_of([&] { check_tensor(x, wrong, 0, 16); }, Status::invalid_argument).find("strides"),
            std::string::npos);
}

TEST(DispatchOffline, HeuristicPlanIsTheSelectorsTopOne) {
  Dispatcher d(Selector::default_selector());
  const ArchSpec& h200 = test::arch("h200");
  for (const char* text : {"gemm rcr m4096 n4096 k4096 bf16", "gemm rrr m77 n300 k129 f16 ep=bias+gelu_tanh",
                           "fwd g1 mb8 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                           "bwd_data g1 mb8 ic64 ih28 iw28 oc128 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
                           "bwd_weight g32 mb4 ic256 ih14 iw14 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                           "fwd g64 mb2 ic64 ih33 iw33 oc64 kh5 kw5 sh1 sw1 ph2 pw2 f16"}) {
    const Problem p = parse_problem(text);
    auto plan = d.plan(p, offline());
    const Selection s = Selector::default_selector().select(p, h200, 1);
    ASSERT_FALSE(s.top.empty()) << text;
    EXPECT_EQ(plan->info().kernel, s.top.front().text) << text;
    EXPECT_FALSE(plan->info().vendor);
    EXPECT_EQ(plan->info().pool_size, s.pool_size);
    EXPECT_EQ(plan->info().arch, "h200");
    EXPECT_EQ(plan->info().device, -1);
    EXPECT_EQ(plan->info().cache, "new");
    EXPECT_FALSE(plan->runnable());
    EXPECT_NE(error_of([&] { plan->run(Operands{}); }, Status::unsupported).find("offline"), std::string::npos);
    EXPECT_NE(plan->info().model_version.find("_half_h200@"), std::string::npos) << plan->info().model_version;
    EXPECT_EQ(to_json(plan->info())["kernel"], plan->info().kernel);
  }
}

TEST(DispatchOffline, FixedConfigsAndOptionErrors) {
  Dispatcher d(Selector::default_selector());
  const Problem p = parse_problem("gemm rcr m256 n256 k256 f16");
  PlanOptions o = offline(Strategy::fixed);
  o.config = "fam=sm80 tile=64x64x32 warps=2x2 stages=3";
  auto plan = d.plan(p, o);
  EXPECT_EQ(plan->info().kernel, to_string(resolve(parse_config(o.config), p)));
  EXPECT_EQ(plan->info().selection_source, "fixed");
  EXPECT_EQ(plan->alignment("a"), 16u);  // 8 f16 elements per vector load
  o.config = "fam=sm80 tile=256x256x64 warps=1x1 stages=8";
  error_of([&] { d.plan(p, o); }, Status::unsupported);
  o.config = "cublaslt:algo0";
  EXPECT_NE(error_of([&] { d.plan(p, o); }, Status::unsupported).find("needs a GPU"), std::string::npos);
  o.config = "";
  EXPECT_NE(error_of([&] { d.plan(p, o); }, Status::invalid_argument).find("needs PlanOptions::config"),
            std::string::npos);
  EXPECT_NE(error_of([&] { d.plan(p, offline(Strategy::top_k)); }, Status::invalid_argument).find("cannot plan offline"),
            std::string::npos);
  EXPECT_NE(error_of([&] { d.plan(p, offline(Strategy::race)); }, Status::invalid_argument).find("strategy race times"),
            std::string::npos);
  PlanOptions bad_k = offline(Strategy::top_k);
  bad_k.offline_arch.clear();
  bad_k.k = 0;
  error_of([&] { d.plan(p, bad_k); }, Status::invalid_argument);
  PlanOptions bad_arch = offline();
  bad_arch.offline_arch = "no_such_gpu";
  error_of([&] { d.plan(p, bad_arch); }, Status::not_found);
  // fp8 runs on fam=sm90 (wgmma) only: a tilepick kernel on h200, none on an A100.
  const Problem fp8 = parse_problem("gemm rcr m64 n64 k64 e4m3:e4m3:bf16");
  EXPECT_EQ(d.plan(fp8, offline())->info().kernel.rfind("fam=sm90 ", 0), 0u);
  PlanOptions a100 = offline();
  a100.offline_arch = "a100_sxm";
  EXPECT_NE(error_of([&] { d.plan(fp8, a100); }, Status::unsupported).find("no legal tilepick kernel"), std::string::npos);
  GemmProblem g;
  g.m = 0;
  error_of([&] { d.plan(g, offline()); }, Status::invalid_problem);
}

// auto (the default) is heuristic offline: it times only on a GPU, where the first choice is estimated long.
TEST(DispatchOffline, AutoIsTheDefaultAndOfflineTheHeuristicPlan) {
  EXPECT_EQ(PlanOptions{}.strategy, Strategy::automatic);
  Dispatcher d(Selector::default_selector());
  for (const char* text : {"gemm rcr m8192 n8192 k8192 bf16",  // estimated at milliseconds: timed on a GPU
                           "bwd_data g1 mb128 ic3 ih224 iw224 oc64 kh11 kw11 sh4 sw4 ph2 pw2 bf16",
                           "fwd g1 mb1 ic64 ih14 iw14 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"}) {
    const Problem p = parse_problem(text);
    auto a = d.plan(p, offline(Strategy::automatic));
    auto h = d.plan(p, offline(Strategy::heuristic));
    EXPECT_NE(a.get(), h.get()) << text;  // separate cache entries
    EXPECT_EQ(a->info().kernel, h->info().kernel) << text;
    // the same source, and what a GPU plan would do
    const std::string& source = a->info().selection_source;
    EXPECT_EQ(source.rfind(h->info().selection_source + " (auto: first choice estimated at ", 0), 0u) << source;
    // the GEMM model is vendor_first: its timed plans time the vendor's algorithms alone
    const std::string t(text);
    const char* expected = t.rfind("gemm", 0) == 0
                               ? ">= 100 us: timed on a GPU, the vendor's algorithms alone (vendor_first), not offline)"
                           : t.rfind("bwd_data", 0) == 0 ? ">= 100 us: timed as top_k on a GPU, not offline)"
                                                         : "< 100 us: not timed)";
    EXPECT_NE(source.find(expected), std::string::npos) << source;
    EXPECT_EQ(a->info().strategy, Strategy::automatic);
    ASSERT_EQ(a->info().candidates.size(), h->info().candidates.size());
    for (const auto& c : a->info().candidates) EXPECT_LT(c.time_us, 0) << text;
  }
}

TEST(DispatchOffline, AutoThresholdOptionsAndTheirErrors) {
  Dispatcher d(Selector::default_selector());
  const Problem p = parse_problem("gemm rcr m1000 n512 k300 bf16");
  PlanOptions o = offline(Strategy::automatic);
  auto base = d.plan(p, o);
  o.auto_time_us = 250.0;  // another threshold is another plan
  EXPECT_NE(d.plan(p, o).get(), base.get());
  o.auto_time_us = std::numeric_limits<double>::infinity();
  EXPECT_NE(d.plan(p, o).get(), base.get());
  EXPECT_EQ(d.stats().new_plans, 3u);
  o.auto_time_us = -1.0;
  EXPECT_NE(error_of([&] { d.plan(p, o); }, Status::invalid_argument).find("auto_time_us must be >= 0"),
            std::string::npos);
  o.auto_time_us = std::nan("");
  error_of([&] { d.plan(p, o); }, Status::invalid_argument);
  o.auto_time_us.reset();
  o.vendor = VendorMode::only;  // the heuristic strategy's vendor-only plan: none offline
  EXPECT_NE(error_of([&] { d.plan(p, o); }, Status::unsupported).find("vendor mode only"), std::string::npos);
  o.vendor.reset();
  o.k = 0;
  EXPECT_NE(error_of([&] { d.plan(p, o); }, Status::invalid_argument).find("strategy auto needs k >= 1"),
            std::string::npos);
}

// TILEPICK_POLICY replaced TILEPICK_VENDOR, TILEPICK_AUTO_TIME_US and TILEPICK_VENDOR_CHOICE: each of those, set,
// is an error naming the TILEPICK_POLICY value that replaces it.
TEST(DispatchEnv, ThePolicyVariableReplacesTheOldOnes) {
  ::unsetenv("TILEPICK_POLICY");
  EXPECT_EQ(environment_policy(), policy_preset(Strategy::automatic));
  ::setenv("TILEPICK_POLICY", "auto:time_us=250.5", 1);
  EXPECT_EQ(environment_policy().time_us, 250.5);
  ::setenv("TILEPICK_POLICY", "top_k:k=8,vendor=off", 1);
  EXPECT_EQ(to_string(environment_policy()), "top_k:k=8,vendor=off");
  ::setenv("TILEPICK_POLICY", "auto:time_us=fast", 1);
  EXPECT_NE(error_of([] { environment_policy(); }, Status::invalid_argument).find("TILEPICK_POLICY: policy 'auto:time_us=fast'"),
            std::string::npos);
  ::unsetenv("TILEPICK_POLICY");
  const struct {
    const char *name, *value, *replacement;
  } removed[] = {{"TILEPICK_VENDOR", "off", "TILEPICK_POLICY=auto:vendor=off"},
                 {"TILEPICK_VENDOR", "only", "TILEPICK_POLICY=auto:vendor=only"},
                 {"TILEPICK_AUTO_TIME_US", "250", "TILEPICK_POLICY=auto:time_us=250"},
                 {"TILEPICK_AUTO_TIME_US", "off", "TILEPICK_POLICY=auto:time_us=inf"},
                 {"TILEPICK_VENDOR_CHOICE", "off", "TILEPICK_POLICY=auto:vendor_choice=off"}};
  Dispatcher d(Selector::default_selector());
  const Problem p = parse_problem("gemm rcr m1000 n512 k300 bf16");
  for (const auto& r : removed) {
    ::setenv(r.name, r.value, 1);
    const std::string e = error_of([] { environment_policy(); }, Status::invalid_argument);
    EXPECT_NE(e.find(std::string(r.name) + " is no longer read"), std::string::npos) << e;
    EXPECT_NE(e.find(r.replacement), std::string::npos) << e;
    EXPECT_NE(error_of([&] { d.plan(p, offline()); }, Status::invalid_argument).find(r.replacement), std::string::npos);
    ::unsetenv(r.name);
  }
  EXPECT_NO_THROW(d.plan(p, offline()));
}

TEST(DispatchOffline, MemoryCacheKeysOnOptions) {
  Dispatcher d(Selector::default_selector());
  const Problem p = parse_problem("gemm rcr m1000 n512 k300 bf16");
  auto a = d.plan(p, offline());
  auto b = d.plan(p, offline());
  EXPECT_EQ(a.get(), b.get());
  PlanOptions off = offline();
  off.vendor = VendorMode::off;
  auto c = d.plan(p, off);
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(a->info().kernel, c->info().kernel);  // same choice, separate entry
  auto s = d.stats();
  EXPECT_EQ(s.new_plans, 2u);
  EXPECT_EQ(s.memory_hits, 1u);
  d.clear_memory();
  EXPECT_NE(d.plan(p, offline()).get(), a.get());
}

// A memory hit is found by value (no key strings): it must still follow the environment's defaults that the
// string key holds (TILEPICK_POLICY) and the options.
TEST(DispatchOffline, MemoryHitsFollowTheEnvironmentDefaults) {
  ::unsetenv("TILEPICK_POLICY");
  Dispatcher d(Selector::default_selector());
  PlanOptions o;
  o.offline_arch = "h200";
  o.strategy = Strategy::automatic;
  const Problem p = parse_problem("gemm rcr m1000 n512 k300 bf16");
  auto a = d.plan(p, o);
  EXPECT_EQ(d.plan(parse_problem("gemm  rcr m1000 n512 k300 bf16"), o).get(), a.get());  // equal by value
  ::setenv("TILEPICK_POLICY", "auto:vendor=off", 1);
  auto off = d.plan(p, o);
  EXPECT_NE(off.get(), a.get());
  EXPECT_EQ(d.plan(p, o).get(), off.get());
  ::unsetenv("TILEPICK_POLICY");
  EXPECT_EQ(d.plan(p, o).get(), a.get());
  ::setenv("TILEPICK_POLICY", "auto:time_us=250", 1);
  EXPECT_NE(d.plan(p, o).get(), a.get());
  ::unsetenv("TILEPICK_POLICY");
  o.k = 3;
  EXPECT_NE(d.plan(p, o).get(), a.get());  // auto keys on k
  o.k = 0;
  EXPECT_THROW(d.plan(p, o), Error);  // never kept, so never found
  auto s = d.stats();
  EXPECT_EQ(s.new_plans, 4u);
  EXPECT_EQ(s.memory_hits, 3u);
}

// TILEPICK_LOG_LEVEL=info says which kernel each new plan runs and why; warn (the default) does not.
TEST(DispatchOffline, InfoLogsEachPlanMade) {
  Dispatcher d(Selector::default_selector());
  const Problem p = parse_problem("gemm rcr m72 n64 k64 bf16");
  ::setenv("TILEPICK_LOG_LEVEL", "info", 1);
  ::testing::internal::CaptureStderr();
  const auto plan = d.plan(p, offline());
  const std::string said = ::testing::internal::GetCapturedStderr();
  ::unsetenv("TILEPICK_LOG_LEVEL");
  EXPECT_NE(said.find("tilepick: plan " + to_string(p) + " -> " + plan->info().kernel), std::string::npos) << said;
  EXPECT_NE(said.find(plan->info().selection_source), std::string::npos) << said;
  EXPECT_NE(said.find("from new"), std::string::npos) << said;
  ::testing::internal::CaptureStderr();
  d.plan(parse_problem("gemm rcr m73 n64 k64 bf16"), offline());
  EXPECT_EQ(::testing::internal::GetCapturedStderr().find("tilepick: plan"), std::string::npos);
}

TEST(DispatchOffline, PlanRunChecksTensorCountFirst) {
  Dispatcher d(Selector::default_selector());
  auto plan = d.plan(parse_problem("gemm rcr m64 n64 k64 bf16"), offline());
  auto msg = error_of([&] { plan->run(std::vector<TensorArg>(2), nullptr); }, Status::invalid_argument);
  EXPECT_NE(msg.find("takes 3 tensors (A, B, D)"), std::string::npos) << msg;
}

TEST(DispatchOffline, Applicability) {
  Dispatcher d(Selector::default_selector());
  auto a = d.check(parse_problem("fwd g1 mb1 ic32 ih8 iw8 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu"), offline());
  EXPECT_TRUE(a.ok) << a.reason;
  EXPECT_GT(a.tilepick_candidates, 0u);
  EXPECT_FALSE(a.vendor_candidate);  // vendors are not used offline
  // fp8: fam=sm90 kernels on h200, none on an A100 (and vendors are not used offline).
  const Problem fp8 = parse_problem("gemm rcr m64 n64 k64 e4m3:e4m3:bf16");
  a = d.check(fp8, offline());
  EXPECT_TRUE(a.ok) << a.reason;
  PlanOptions a100 = offline();
  a100.offline_arch = "a100_sxm";
  a = d.check(fp8, a100);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("no legal tilepick kernel"), std::string::npos) << a.reason;
  PlanOptions only = offline();
  only.vendor = VendorMode::only;
  a = d.check(parse_problem("gemm rcr m64 n64 k64 bf16"), only);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.tilepick_candidates, 0u);
  GemmProblem g;
  g.k = -1;
  a = d.check(g, offline());
  EXPECT_FALSE(a.ok);
  EXPECT_FALSE(a.reason.empty());
}

TEST(DispatchStrings, StrategyAndVendorNamesRoundTrip) {
  for (Strategy s : {Strategy::heuristic, Strategy::top_k, Strategy::exhaustive, Strategy::fixed, Strategy::race,
                     Strategy::automatic})
    EXPECT_EQ(parse_strategy(to_string(s)), s);
  EXPECT_EQ(to_string(Strategy::automatic), "auto");
  for (VendorMode v : {VendorMode::off, VendorMode::automatic, VendorMode::only})
    EXPECT_EQ(parse_vendor_mode(to_string(v)), v);
  EXPECT_FALSE(parse_strategy("fastest"));
  EXPECT_FALSE(parse_vendor_mode("always"));
}

}  // namespace
}  // namespace tilepick
