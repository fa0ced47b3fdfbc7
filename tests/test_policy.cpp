// Policy: the string form (presets, keys, errors, round trip) and what_to_time(), the one rule that decides what a
// plan times, against the rules the strategies followed before it (written out here from the dispatcher's code of
// 2026-11-29) on problems of every op, with the shipped models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/policy.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PolicyText, PresetsAreTheStrategies) {
  for (Strategy s : {Strategy::heuristic, Strategy::top_k, Strategy::exhaustive, Strategy::fixed, Strategy::race,
                     Strategy::automatic}) {
    const Policy p = parse_policy(to_string(s));
    EXPECT_EQ(p, policy_preset(s));
    EXPECT_EQ(to_string(p), to_string(s));
    EXPECT_EQ(p.k, 4);
    EXPECT_EQ(p.vendor, VendorMode::automatic);
    EXPECT_TRUE(p.vendor_choice);
  }
  EXPECT_EQ(policy_preset(Strategy::automatic).time_us, 100);
  EXPECT_EQ(policy_preset(Strategy::top_k).time_us, 0);
  EXPECT_EQ(PlanOptions{}.policy, std::nullopt);
  EXPECT_EQ(policy_preset(Strategy::heuristic).time(), Policy::Time::none);
  EXPECT_EQ(policy_preset(Strategy::fixed).time(), Policy::Time::none);
  EXPECT_EQ(policy_preset(Strategy::top_k).time(), Policy::Time::first);
  EXPECT_EQ(policy_preset(Strategy::automatic).time(), Policy::Time::first);
  EXPECT_EQ(policy_preset(Strategy::race).time(), Policy::Time::first);
  EXPECT_EQ(policy_preset(Strategy::exhaustive).time(), Policy::Time::all);
  EXPECT_EQ(to_string(parse_policy("topk")), "top_k");  // the old alias reads, the canonical name prints
}

TEST(PolicyText, RoundTripsWithKeysInOneOrder) {
  for (const char* text : {"auto:k=8", "auto:time_us=50", "auto:time_us=inf", "auto:time_us=0.25,vendor=off",
                           "auto:k=2,time_us=1000,vendor=only,vendor_choice=off", "top_k:k=8", "top_k:time_us=100",
                           "heuristic:vendor=off", "heuristic:vendor_choice=off", "exhaustive:vendor=only",
                           "race:time_us=20", "fixed:vendor=only"}) {
    const Policy p = parse_policy(text);
    EXPECT_EQ(to_string(p), text);
    EXPECT_EQ(parse_policy(to_string(p)), p) << text;
  }
  // Keys in another order or at their defaults print canonically.
  EXPECT_EQ(to_string(parse_policy("auto:vendor=off,time_us=50")), "auto:time_us=50,vendor=off");
  EXPECT_EQ(to_string(parse_policy("auto:k=4,time_us=100,vendor=auto,vendor_choice=on")), "auto");
  const Policy p = parse_policy("auto:time_us=inf");
  EXPECT_TRUE(std::isinf(p.time_us));
  // A value made in code round-trips too.
  Policy q = policy_preset(Strategy::automatic);
  q.time_us = 123.456789;
  q.k = 3;
  EXPECT_EQ(parse_policy(to_string(q)), q);
  // Keys a preset does not take are reset by normalized().
  Policy h = policy_preset(Strategy::heuristic);
  h.k = 9, h.time_us = 5;
  EXPECT_EQ(normalized(h), policy_preset(Strategy::heuristic));
  EXPECT_EQ(to_string(h), "heuristic");
}

std::string parse_error(const std::string& text) {
  try {
    parse_policy(text);
  } catch (const ParseError& e) {
    EXPECT_EQ(e.status(), Status::parse_error);
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return "";
}

TEST(PolicyText, ErrorsNameWhatIsWrong) {
  const struct {
    const char *text, *says;
  } bad[] = {{"fastest", "unknown preset 'fastest', not one of heuristic, top_k, exhaustive, fixed, race, auto"},
             {"", "unknown preset ''"},
             {"auto:", "nothing after ':'"},
             {"auto:k", "'k' is not <key>=<value>"},
             {"auto:k=0", "k='0' is not an integer >= 1"},
             {"auto:k=2x", "k='2x' is not an integer >= 1"},
             {"auto:time_us=-1", "time_us='-1' is not a number of microseconds >= 0 or inf"},
             {"auto:time_us=nan", "time_us='nan' is not a number"},
             {"auto:time_us=off", "time_us='off' is not a number"},
             {"auto:vendor=always", "vendor='always' is not one of off, auto, only"},
             {"auto:vendor_choice=maybe", "vendor_choice='maybe' is not on or off"},
             {"auto:speed=1", "unknown key 'speed', not one of k, time_us, vendor, vendor_choice"},
             {"auto:k=2,k=3", "key 'k' given twice"},
             {"heuristic:k=8", "preset heuristic takes no 'k'"},
             {"race:k=2", "preset race takes no 'k'"},
             {"heuristic:time_us=5", "preset heuristic takes no 'time_us'"},
             {"fixed:vendor_choice=off", "preset fixed takes no 'vendor_choice'"},
             {"auto,k=2", "unknown preset 'auto,k=2'"}};
  for (const auto& b : bad) {
    const std::string e = parse_error(b.text);
    EXPECT_NE(e.find(b.says), std::string::npos) << b.text << ": " << e;
    EXPECT_NE(e.find("policy '" + std::string(b.text) + "'"), std::string::npos) << e;
  }
}

// PlanOptions: a policy, or the shorthand fields (strategy, k, auto_time_us, vendor) over the environment's policy.
TEST(PolicyOptions, ShorthandAndPolicyResolveAlike) {
  ::unsetenv("TILEPICK_POLICY");
  PlanOptions o;
  EXPECT_EQ(resolve_policy(o), policy_preset(Strategy::automatic));
  o.strategy = Strategy::top_k, o.k = 8, o.vendor = VendorMode::off;
  EXPECT_EQ(to_string(resolve_policy(o)), "top_k:k=8,vendor=off");
  o = PlanOptions{};
  o.auto_time_us = 50;
  EXPECT_EQ(to_string(resolve_policy(o)), "auto:time_us=50");
  o.strategy = Strategy::heuristic;  // auto_time_us is auto's only
  EXPECT_EQ(to_string(resolve_policy(o)), "heuristic");
  o = PlanOptions{};
  o.policy = parse_policy("race:vendor=off");
  EXPECT_EQ(to_string(resolve_policy(o)), "race:vendor=off");
  o.k = 3;
  try {
    resolve_policy(o);
    ADD_FAILURE() << "policy and shorthand both taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("give the policy alone"), std::string::npos) << e.what();
  }
  // The environment's policy is the default the shorthand applies to; its vendor choices stay with another preset.
  ::setenv("TILEPICK_POLICY", "top_k:k=8,vendor=off,vendor_choice=off", 1);
  EXPECT_EQ(to_string(resolve_policy(PlanOptions{})), "top_k:k=8,vendor=off,vendor_choice=off");
  PlanOptions h;
  h.strategy = Strategy::heuristic;
  EXPECT_EQ(to_string(resolve_policy(h)), "heuristic:vendor=off,vendor_choice=off");
  h.vendor = VendorMode::automatic;
  EXPECT_EQ(to_string(resolve_policy(h)), "heuristic:vendor_choice=off");
  ::unsetenv("TILEPICK_POLICY");
}

// An offline plan by a policy equals the one by the shorthand options, and says which policy it followed.
TEST(PolicyOptions, OfflinePlansByPolicyEqualThoseByStrategy) {
  ::unsetenv("TILEPICK_POLICY");
  Dispatcher d(Selector::default_selector());
  for (const char* text : {"gemm rcr m8192 n8192 k8192 bf16", "fwd g1 mb1 ic64 ih14 iw14 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"}) {
    const Problem p = parse_problem(text);
    for (Strategy s : {Strategy::heuristic, Strategy::automatic}) {
      PlanOptions by_strategy;
      by_strategy.strategy = s, by_strategy.offline_arch = "h200", by_strategy.vendor = VendorMode::off;
      PlanOptions by_policy;
      by_policy.offline_arch = "h200";
      by_policy.policy = parse_policy(std::string(to_string(s)) + ":vendor=off");
      const auto a = d.plan(p, by_strategy), b = d.plan(p, by_policy);
      EXPECT_EQ(a.get(), b.get()) << text;  // the same plan: one policy, one cache entry
      EXPECT_EQ(b->info().policy, std::string(to_string(s)) + ":vendor=off");
      EXPECT_EQ(b->info().strategy, s);
      EXPECT_EQ(b->info().vendor_mode, VendorMode::off);
    }
  }
}

// The rules of the strategies before Policy (dispatcher.cpp, selector_eval.cpp), written out independently.
struct Expected {
  Strategy run;
  std::vector<std::string> ours;
  bool vendor = false, heuristic_only = false, alone = false, run_vendor = false, check_vendor = false;
};

std::vector<std::string> texts(const std::vector<Ranked>& r) {
  std::vector<std::string> out;
  for (const auto& x : r) out.push_back(x.text);
  return out;
}

Expected before(Strategy strategy, const Selector& sel, const Problem& p, const ArchSpec& arch, bool online,
                bool vendor_can) {  // vendor auto
  Expected e{strategy == Strategy::automatic ? Strategy::heuristic : strategy, {}};
  Selection s = e.run == Strategy::top_k ? sel.shortlist(p, arch, 4) : sel.select(p, arch, e.run == Strategy::exhaustive ? 0 : 5);
  if (e.run == Strategy::exhaustive && s.pruned) s.top = sel.rank_configs(p, arch, Registry::default_registry().lookup_configs(p, arch), 0);
  if (strategy == Strategy::automatic && !s.top.empty() &&
      estimated_time_us(p, s.top.front().config, arch) >= 100 && online) {
    e.run = Strategy::top_k;
    s = sel.shortlist(p, arch, 4);
  }
  if (e.run == Strategy::race && !(online && vendor_can)) e.run = Strategy::heuristic;
  switch (e.run) {
    case Strategy::heuristic:
      e.run_vendor = s.top.empty() || !s.from_model || s.vendor_first;
      e.check_vendor = s.vendor_chosen && !s.top.empty();
      break;
    case Strategy::top_k:
    case Strategy::exhaustive:
      e.ours = texts(s.top);
      e.vendor = online && vendor_can;
      e.alone = strategy == Strategy::automatic && e.vendor && s.vendor_first && !s.vendor_chosen;
      break;
    case Strategy::race:
      e.ours = {s.top.front().text};
      e.vendor = e.heuristic_only = true;
      break;
    default:
      break;
  }
  return e;
}

TEST(PolicyTiming, EachPresetDecidesAsItsStrategyDid) {
  const Selector& sel = Selector::default_selector();
  const ArchSpec& h200 = test::arch("h200");
  for (const char* text : {"gemm rcr m8192 n8192 k8192 bf16",  // estimated long; the GEMM model is vendor_first
                           "gemm rcr m16 n4096 k4096 bf16",
                           "fwd g1 mb1 ic64 ih14 iw14 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                           "fwd g32 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                           "bwd_data g1 mb128 ic3 ih224 iw224 oc64 kh11 kw11 sh4 sw4 ph2 pw2 bf16",
                           "bwd_weight g1 mb8 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"}) {
    const Problem p = parse_problem(text);
    for (Strategy s : {Strategy::heuristic, Strategy::top_k, Strategy::exhaustive, Strategy::race, Strategy::automatic})
      for (bool online : {true, false})
        for (bool vendor_can : {true, false}) {
          if (!online && (s == Strategy::top_k || s == Strategy::exhaustive || s == Strategy::race)) continue;
          const std::string what = std::string(text) + " [" + std::string(to_string(s)) + (online ? ", online" : "") +
                                   (vendor_can ? ", vendor" : "") + "]";
          TimingContext ctx;
          ctx.online = online;
          ctx.vendor_can = [vendor_can] { return vendor_can; };
          const Timing t = what_to_time(policy_preset(s), sel, p, h200, ctx);
          const Expected e = before(s, sel, p, h200, online, vendor_can);
          EXPECT_EQ(t.run, e.run) << what;
          EXPECT_EQ(t.ours, e.ours) << what;
          EXPECT_EQ(t.vendor, e.vendor) << what;
          EXPECT_EQ(t.vendor_heuristic_only, e.heuristic_only) << what;
          EXPECT_EQ(t.vendor_alone_first, e.alone) << what;
          EXPECT_EQ(t.run_vendor, e.run_vendor) << what;
          EXPECT_EQ(t.check_vendor, e.check_vendor) << what;
          EXPECT_TRUE(t.ranked) << what;
          EXPECT_EQ(std::isnan(t.estimate_us), s != Strategy::automatic) << what;
        }
  }
}

TEST(PolicyTiming, ThresholdsAndVendorModes) {
  const Selector& sel = Selector::default_selector();
  const ArchSpec& h200 = test::arch("h200");
  const Problem big = parse_problem("gemm rcr m8192 n8192 k8192 bf16");
  const Problem small = parse_problem("fwd g1 mb1 ic64 ih14 iw14 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16");
  TimingContext ctx;
  ctx.vendor_can = [] { return true; };
  // time_us: 0 always, inf never; on top_k too.
  EXPECT_EQ(what_to_time(parse_policy("auto:time_us=0"), sel, small, h200, ctx).run, Strategy::top_k);
  EXPECT_EQ(what_to_time(parse_policy("auto:time_us=inf"), sel, big, h200, ctx).run, Strategy::heuristic);
  EXPECT_EQ(what_to_time(parse_policy("top_k:time_us=100"), sel, small, h200, ctx).run, Strategy::heuristic);
  const Timing tk = what_to_time(parse_policy("top_k:time_us=100,k=2"), sel, big, h200, ctx);
  EXPECT_EQ(tk.run, Strategy::top_k);
  EXPECT_EQ(tk.ours.size(), 2u);
  EXPECT_FALSE(tk.vendor_alone_first);  // auto's rule only
  EXPECT_NE(tk.note.find("(top_k: first choice estimated at "), std::string::npos) << tk.note;
  EXPECT_TRUE(what_to_time(parse_policy("auto"), sel, big, h200, ctx).vendor_alone_first);
  // vendor off: never the vendor; only: no ranking of ours.
  const Timing off = what_to_time(parse_policy("auto:vendor=off,time_us=0"), sel, big, h200, ctx);
  EXPECT_FALSE(off.vendor);
  EXPECT_FALSE(off.vendor_alone_first);
  EXPECT_EQ(what_to_time(parse_policy("race:vendor=off"), sel, big, h200, ctx).run, Strategy::heuristic);
  const Timing only = what_to_time(parse_policy("top_k:vendor=only"), sel, big, h200, ctx);
  EXPECT_FALSE(only.ranked);
  EXPECT_TRUE(only.ours.empty());
  EXPECT_TRUE(only.vendor);
  EXPECT_TRUE(what_to_time(parse_policy("auto:vendor=only"), sel, big, h200, ctx).run_vendor);
  EXPECT_EQ(what_to_time(parse_policy("fixed"), sel, big, h200, ctx).run, Strategy::fixed);
}

}  // namespace
}  // namespace tilepick
