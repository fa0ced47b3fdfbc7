// tilepick eval: the Selector's choices over measured candidates, against the oracle and the vendor.
#include "select/selector_eval.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "tilepick/policy.hpp"
#include "tilepick/env.hpp"
#include "tilepick/legality.hpp"

namespace tilepick::eval {
namespace {

struct Measured {
  double us = kNaN;          // over the ok rows: their minimum or median (Repeats)
  std::string status;        // "ok" when any row is ok, else the first failure
  std::vector<double> oks;   // the ok rows' times
};

struct ProblemRows {
  Problem problem;
  std::vector<std::string> order;  // config texts, first-appearance order
  std::map<std::string, Measured> configs;
  std::map<std::string, Measured> vendor;  // "cublaslt:heur" -> ...
};

void merge(Measured& m, const sweep::Record& r) {
  if (r.status == "ok") {
    m.oks.push_back(r.median_us);
    m.status = "ok";
  } else if (m.status.empty()) {
    m.status = r.status;
  }
}

// A pair recorded more than once: the fastest time, or the median (the lower middle of an even count).
void settle(Measured& m, Repeats repeats) {
  if (m.oks.empty()) return;
  std::sort(m.oks.begin(), m.oks.end());
  m.us = repeats == Repeats::fastest ? m.oks.front() : m.oks[(m.oks.size() - 1) / 2];
}

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

bool within_band(double us, double ref) { return !std::isnan(us) && us <= ref * (1 + kTieBand); }

Pick score_ranking(const std::vector<Ranked>& ranked, const ProblemRows& rows, const std::string& oracle,
                   double oracle_us) {
  Pick p;
  if (ranked.empty()) return p;
  const Measured& m = rows.configs.at(ranked.front().text);
  p.config = ranked.front().text;
  p.source = ranked.front().source;
  p.status = m.status;
  p.failed = m.status != "ok";
  p.us = p.failed ? kNaN : m.us;
  p.efficiency = p.failed ? 0.0 : oracle_us / m.us;
  p.top1 = within_band(p.us, oracle_us);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const Measured& c = rows.configs.at(ranked[i].text);
    if (i < 5 && c.status == "ok" && within_band(c.us, oracle_us)) p.top5 = true;
    if (ranked[i].text == oracle) p.oracle_rank = static_cast<int>(i) + 1;
  }
  return p;
}

// oracle_us / us of a pick that ran; 0 for one that failed (NaN time).
double efficiency_of(double oracle_us, double us) { return std::isnan(us) ? 0.0 : oracle_us / us; }

// Accumulates the four pick kinds of one group.
struct Acc {
  struct One {
    std::vector<double> eff, regret;
    std::size_t failed = 0, top1 = 0, top5 = 0;
    double sum_ref_us = 0, sum_chosen_us = 0;  // over picks that ran: the time-weighted efficiency
    void add(double e, double chosen_us, double ref_us, bool fail, bool t1, bool t5) {
      eff.push_back(e);
      if (!fail) {
        regret.push_back(chosen_us - ref_us);
        sum_ref_us += ref_us;
        sum_chosen_us += chosen_us;
      }
      failed += fail;
      top1 += t1;
      top5 += t5;
    }
  } model, fallback, vendor_own, vendor_oracle, timed, own_first_pick, own_timed_pick, dispatch, ours_alone,
      vendor_alone, race, auto_;
  std::size_t own_first = 0, own_top_k = 0, dispatch_vendor = 0, auto_timed = 0;

  // What heuristic + vendor auto runs, and either side alone, against the fastest measured kernel.
  void add_dispatch(const ProblemEval& p) {
    const double ref = p.best_known_us;
    auto pick = [&](One& o, double us) {
      o.add(efficiency_of(ref, us), us, ref, std::isnan(us), within_band(us, ref), false);
    };
    pick(dispatch, p.dispatch_us);
    pick(ours_alone, p.own_first_us);
    pick(vendor_alone, p.vendor_heur_us);
    pick(race, p.race_us);
    pick(auto_, p.auto_us);
    dispatch_vendor += p.dispatch_vendor;
    auto_timed += p.auto_timed;
  }

  void add(const ProblemEval& p) {
    model.add(p.model.efficiency, p.model.us, p.oracle_us, p.model.failed, p.model.top1, p.model.top5);
    const bool timed_fail = std::isnan(p.timed_us);
    timed.add(p.timed_efficiency, p.timed_us, p.oracle_us, timed_fail, within_band(p.timed_us, p.oracle_us), false);
    own_first += p.own_first_measured;
    own_top_k += p.own_top_k_all;
    if (p.own_first_measured)
      own_first_pick.add(efficiency_of(p.oracle_us, p.own_first_us), p.own_first_us, p.oracle_us,
                         p.own_first_failed, within_band(p.own_first_us, p.oracle_us), false);
    if (p.own_top_k_all)
      own_timed_pick.add(efficiency_of(p.oracle_us, p.own_timed_us), p.own_timed_us, p.oracle_us,
                         std::isnan(p.own_timed_us), within_band(p.own_timed_us, p.oracle_us), false);
    fallback.add(p.fallback.efficiency, p.fallback.us, p.oracle_us, p.fallback.failed, p.fallback.top1,
                 p.fallback.top5);
    if (p.dispatch_defined) add_dispatch(p);
    if (p.vendor_heur_status.empty()) return;
    const bool fail = p.vendor_heur_status != "ok";
    const double h = p.vendor_heur_us;
    vendor_own.add(fail ? 0.0 : p.vendor_best_us / h, h, p.vendor_best_us, fail, within_band(h, p.vendor_best_us),
                   false);
    vendor_oracle.add(fail ? 0.0 : p.oracle_us / h, h, p.oracle_us, fail, within_band(h, p.oracle_us), false);
  }
  GroupEval finish(const std::string& name) const {
    auto s = [](const One& o, bool top5) {
      Stats st = summarize(o.eff, o.regret, o.failed, o.top1, o.top5, top5);
      // A pick that failed leaves the group's layers unable to run: 0, as its efficiency is.
      if (!o.eff.empty()) st.time_weighted = o.failed ? 0.0 : o.sum_ref_us / o.sum_chosen_us;
      return st;
    };
    const double n = static_cast<double>(model.eff.size());
    GroupEval g;
    g.name = name;
    g.model = s(model, true);
    g.fallback = s(fallback, true);
    g.vendor_own = s(vendor_own, false);
    g.vendor_vs_oracle = s(vendor_oracle, false);
    g.timed = s(timed, false);
    g.own_first_measured = static_cast<double>(own_first) / n;
    g.own_top_k_measured = static_cast<double>(own_top_k) / n;
    g.own_first = s(own_first_pick, false);
    g.own_timed = s(own_timed_pick, false);
    g.dispatch = s(dispatch, false);
    g.ours_alone = s(ours_alone, false);
    g.vendor_alone = s(vendor_alone, false);
    g.race = s(race, false);
    g.auto_ = s(auto_, false);
    if (!dispatch.eff.empty()) {
      g.dispatch_vendor_share = static_cast<double>(dispatch_vendor) / static_cast<double>(dispatch.eff.size());
      g.auto_timed_share = static_cast<double>(auto_timed) / static_cast<double>(dispatch.eff.size());
    }
    return g;
  }
};

int op_order(const std::string& op) {
  static const char* order[] = {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"};
  for (int i = 0; i < 4; ++i)
    if (op == order[i]) return i;
  return 4;
}

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json stats_json(const Stats& s) {
  return {{"count", s.count}, {"failed", s.failed},    {"mean", num(s.mean)}, {"median", num(s.median)},
          {"p10", num(s.p10)}, {"p1", num(s.p1)},      {"min", num(s.min)},   {"top1", num(s.top1)},
          {"top5", num(s.top5)}, {"regret_us", num(s.regret_us)}, {"time_weighted", num(s.time_weighted)}};
}

std::string fmt(double v, const char* f = "%.4f") {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// Whether the model's own choices over its whole pool were measured (ProblemEval), as dispatch makes them: its
// policy rule (what_to_time) under the heuristic preset (the first choice), top_k (the k it times), race (ours in the
// race) and `automatic` (auto's decision), each with vendor auto and the vendor present where the records have a vendor row.
void own_choices(const Selector& selector, const ArchSpec& arch, const ProblemRows& rows, const EvalOptions& o,
                 const Policy& automatic, ProblemEval& e) {
  std::map<std::tuple<int, int, int>, Selection> memo;  // one ranking per kind for the three decisions
  TimingContext ctx;
  ctx.online = true;
  ctx.vendor_can = [&e] { return !e.vendor.empty(); };
  ctx.shortlist = o.shortlist;
  ctx.memo = &memo;
  Policy heuristic = policy_preset(Strategy::heuristic), top_k = policy_preset(Strategy::top_k),
         race_policy = policy_preset(Strategy::race);
  heuristic.vendor_choice = top_k.vendor_choice = race_policy.vendor_choice = automatic.vendor_choice;
  top_k.k = automatic.k;
  Timing first, timed, auto_, race;
  try {
    first = what_to_time(heuristic, selector, rows.problem, arch, ctx);
    timed = what_to_time(top_k, selector, rows.problem, arch, ctx);
    auto_ = what_to_time(automatic, selector, rows.problem, arch, ctx);
    race = what_to_time(race_policy, selector, rows.problem, arch, ctx);
  } catch (const Error&) {
    return;  // no legal candidate for this arch: nothing of its own to compare
  }
  const Selection& own = first.ranking;
  if (!own.top.empty()) {
    const auto it = rows.configs.find(own.top.front().text);
    const bool measured = it != rows.configs.end(), ok = measured && it->second.status == "ok";
    e.own_first_measured = measured;
    e.own_first_failed = measured && !ok;
    if (ok) e.own_first_us = it->second.us;
    e.auto_timed = auto_.run == Strategy::top_k;
    e.own_first_est_us = auto_.estimate_us;
  }
  double fastest = kNaN;
  for (const Ranked& r : timed.ranking.top) {
    const auto it = rows.configs.find(r.text);
    const bool measured = it != rows.configs.end();
    if (measured && it->second.status == "ok" && !(it->second.us >= fastest)) fastest = it->second.us;
    e.own_top_k_measured += measured;
  }
  e.own_top_k_all = !timed.ranking.top.empty() && e.own_top_k_measured == static_cast<int>(timed.ranking.top.size());
  if (e.own_top_k_all) e.own_timed_us = fastest;
  e.own_confidence = own.confidence;
  e.own_vendor_first = own.vendor_first;
  e.own_vendor_chosen = own.vendor_chosen;
  e.dispatch_vendor = first.run_vendor;
  e.auto_vendor_alone = auto_.vendor_alone_first;
  e.dispatch_checks_vendor = o.vendor_check && first.check_vendor;
  if (race.run == Strategy::race && !race.ours.empty())  // ours of the race (the vendor's heuristic kernel beside it)
    if (const auto it = rows.configs.find(race.ours.front()); it != rows.configs.end() && it->second.status == "ok")
      e.race_ours_us = it->second.us;
}

// best_known_us, and what heuristic + vendor auto runs where its first choice was measured and a vendor
// heuristic row is present (e.vendor set); a pick that failed is NaN, as in own_first_us. Where dispatch checks the
// vendor's kernel first (heuristic_checks_vendor), a vendor heuristic row that failed sends it to the model's pick.
void dispatch_choice(ProblemEval& e) {
  e.best_known_us = std::isnan(e.vendor_best_us) ? e.oracle_us : std::min(e.oracle_us, e.vendor_best_us);
  if (!e.own_first_measured || e.vendor.empty()) {
    e.auto_timed = false;  // what auto runs is scored only where the heuristic's is
    return;
  }
  if (e.dispatch_vendor && e.dispatch_checks_vendor && e.vendor_heur_failed)
    e.dispatch_vendor = false;
  e.dispatch_defined = true;
  e.dispatch_us = e.dispatch_vendor ? e.vendor_heur_us : e.own_first_us;
  e.dispatch_failed = std::isnan(e.dispatch_us);
  const double vendor_us = e.vendor_heur_failed ? kNaN : e.vendor_heur_us;  // race checks it, a failure loses
  e.race_us = std::isnan(e.race_ours_us) ? vendor_us
              : std::isnan(vendor_us)    ? e.race_ours_us
                                         : std::min(e.race_ours_us, vendor_us);
  if (!e.auto_timed) {
    e.auto_us = e.dispatch_us;
    return;
  }
  if (e.auto_vendor_alone && !std::isnan(e.vendor_best_us)) {  // ours only where none of the vendor's passed
    e.auto_us = e.vendor_best_us;
    return;
  }
  const double ours = std::isnan(e.own_timed_us) ? e.own_first_us : e.own_timed_us;
  e.auto_us = std::fmin(ours, e.vendor_best_us);  // top_k with vendor auto: both of the vendor's, checked; NaN: failed
}

}  // namespace

std::vector<std::string> problem_slices(const Problem& p) {
  if (const auto* g = std::get_if<GemmProblem>(&p)) {
    const char* b = g->m <= 16 ? "tiny" : g->m <= 256 ? "small" : g->m <= 2048 ? "medium" : "large";
    return {std::string("m=") + b};
  }
  const auto& c = std::get<ConvProblem>(p);
  std::vector<std::string> s;
  s.push_back(std::string("conv=") + (c.g == 1 ? "dense" : c.depthwise() ? "depthwise" : "grouped"));
  const int first = c.ndim == 3 ? 0 : 1;
  bool square = true;
  std::string filter;
  for (int i = first; i < 3; ++i) {
    square = square && c.filter[i] == c.filter[first];
    filter += (i > first ? "x" : "") + std::to_string(c.filter[i]);
  }
  const auto f0 = c.filter[first];
  s.push_back("filter=" + (square && (f0 == 1 || f0 == 3 || f0 == 7) ? filter : std::string("other")));
  const bool strided = std::any_of(c.stride.begin(), c.stride.end(), [](auto v) { return v > 1; });
  s.push_back(strided ? "stride=strided" : "stride=1");
  s.push_back(c.ndim == 3 ? "dims=3d" : "dims=2d");
  return s;
}

Stats summarize(std::vector<double> eff, const std::vector<double>& regrets, std::size_t failed, std::size_t top1,
                std::size_t top5, bool has_top5) {
  Stats s;
  s.count = eff.size();
  s.failed = failed;
  if (eff.empty()) return s;
  std::sort(eff.begin(), eff.end());
  double sum = 0;
  for (double e : eff) sum += e;
  const double n = static_cast<double>(eff.size());
  s.mean = sum / n;
  s.median = quantile(eff, 0.5);
  s.p10 = quantile(eff, 0.1);
  s.p1 = quantile(eff, 0.01);
  s.min = eff.front();
  s.top1 = static_cast<double>(top1) / n;
  if (has_top5) s.top5 = static_cast<double>(top5) / n;
  if (!regrets.empty()) {
    double r = 0;
    for (double v : regrets) r += v;
    s.regret_us = r / static_cast<double>(regrets.size());
  }
  return s;
}

EvalReport evaluate(const Selector& selector, const std::vector<sweep::Record>& records, const ArchSpec& arch,
                    const std::map<std::string, std::string>& tags, const EvalOptions& options) {
  const int timed_k = options.timed_k;
  const Repeats repeats = options.repeats;
  if (timed_k < 1) throw Error(Status::invalid_argument, "eval: timed_k must be at least 1, not " + std::to_string(timed_k));
  EvalReport report;
  report.arch = arch.name;
  report.timed_k = timed_k;
  report.shortlist = shortlist_name(options.shortlist);
  // auto as dispatch here follows it: the environment's policy (options.policy) where it is an auto one; eval scores
  // it with vendor auto and k = timed_k.
  Policy automatic = options.policy ? *options.policy : environment_policy();
  if (automatic.preset != Strategy::automatic) {
    Policy a = policy_preset(Strategy::automatic);
    a.vendor_choice = automatic.vendor_choice;
    automatic = a;
  }
  automatic.k = timed_k;
  automatic.vendor = VendorMode::automatic;
  report.auto_time_us = automatic.time_us;
  std::vector<std::string> order;
  std::map<std::string, ProblemRows> by_problem;
  std::map<std::string, std::string> canonical;  // record problem text -> canonical
  for (const auto& r : records) {
    auto it = canonical.find(r.problem);
    if (it == canonical.end()) {
      std::string key;
      try {
        key = to_string(parse_problem(r.problem));
      } catch (const Error&) {
      }
      it = canonical.emplace(r.problem, key).first;
    }
    if (it->second.empty()) {
      ++report.unparsed;
      continue;
    }
    auto [pit, fresh] = by_problem.try_emplace(it->second);
    ProblemRows& rows = pit->second;
    if (fresh) {
      rows.problem = parse_problem(it->second);
      order.push_back(it->second);
    }
    if (r.config.rfind("vendor=", 0) == 0) {
      merge(rows.vendor[r.config.substr(7)], r);
      continue;
    }
    std::string text;
    try {
      text = to_string(resolve(parse_config(r.config), rows.problem));
    } catch (const Error&) {
      ++report.unparsed;
      continue;
    }
    if (!rows.configs.count(text)) rows.order.push_back(text);
    merge(rows.configs[text], r);
  }

  for (auto& [key, rows] : by_problem) {
    for (auto& [_, m] : rows.configs) settle(m, repeats);
    for (auto& [_, m] : rows.vendor) settle(m, repeats);
  }

  for (const auto& key : order) {
    const ProblemRows& rows = by_problem.at(key);
    ProblemEval e;
    e.problem = key;
    e.op = op_name(rows.problem);
    for (const auto& text : rows.order) {
      const Measured& m = rows.configs.at(text);
      if (m.status == "ok" && (std::isnan(e.oracle_us) || m.us < e.oracle_us)) {
        e.oracle_us = m.us;
        e.oracle_config = text;
      }
    }
    if (e.oracle_config.empty()) {
      ++report.skipped;
      continue;
    }
    e.candidates = rows.order.size();
    if (auto t = tags.find(key); t != tags.end()) e.tag = t->second;
    e.slices = problem_slices(rows.problem);
    if (!e.tag.empty()) e.slices.push_back("net=" + e.tag);
    std::vector<KernelConfig> configs;
    for (const auto& text : rows.order) configs.push_back(parse_config(text));
    const std::vector<KernelConfig> kept = selector.prune(rows.problem, arch, configs, &e.pruned);
    e.model_candidates = kept.size();
    const std::vector<Ranked> ranked = selector.rank_configs(rows.problem, arch, kept);
    e.model = score_ranking(ranked, rows, e.oracle_config, e.oracle_us);
    for (std::size_t i = 0; i < ranked.size() && i < static_cast<std::size_t>(timed_k); ++i) {
      const Measured& m = rows.configs.at(ranked[i].text);
      if (m.status == "ok" && !(m.us >= e.timed_us)) e.timed_us = m.us;
    }
    e.timed_efficiency = std::isnan(e.timed_us) ? 0.0 : e.oracle_us / e.timed_us;
    const bool gemm = e.op == "gemm";
    const std::string heur = gemm ? "cublaslt:heur" : "cudnn:heur";
    const std::string best = gemm ? "cublaslt:best" : "cudnn:exhaustive";
    if (auto h = rows.vendor.find(heur); h != rows.vendor.end()) {
      e.vendor = gemm ? "cublaslt" : "cudnn";
      e.vendor_heur_status = h->second.status;
      e.vendor_heur_failed = h->second.status != "ok";
      e.vendor_heur_us = h->second.us;
      e.vendor_best_us = h->second.us;
      if (auto b = rows.vendor.find(best); b != rows.vendor.end() && b->second.status == "ok")
        e.vendor_best_us = std::isnan(e.vendor_best_us) ? b->second.us : std::min(e.vendor_best_us, b->second.us);
      if (std::isnan(e.vendor_best_us)) e.vendor_heur_status = "";  // nothing of the vendor ran: no baseline
    }
    own_choices(selector, arch, rows, options, automatic, e);
    e.fallback =
        score_ranking(selector.rank_fallback(rows.problem, arch, configs), rows, e.oracle_config, e.oracle_us);
    dispatch_choice(e);
    report.problems.push_back(std::move(e));
  }

  // Groups: all, per op, per op and slice, per source of the model's choice.
  std::map<std::string, Acc> groups;
  std::map<std::string, std::pair<int, std::string>> rank;  // group -> sort key
  auto add = [&](const std::string& name, std::pair<int, std::string> key, const ProblemEval& p) {
    groups[name].add(p);
    rank.emplace(name, std::move(key));
  };
  for (const auto& p : report.problems) {
    const int o = op_order(p.op);
    add("all", {0, ""}, p);
    add(p.op, {1 + 2 * o, p.op}, p);
    for (const auto& s : p.slices) add(p.op + " " + s, {2 + 2 * o, p.op + " " + s}, p);
    add("source=" + p.model.source, {20, p.model.source}, p);
  }
  std::vector<std::string> names;
  for (const auto& [name, acc] : groups) names.push_back(name);
  std::sort(names.begin(), names.end(), [&](auto& a, auto& b) { return rank.at(a) < rank.at(b); });
  for (const auto& n : names) report.groups.push_back(groups.at(n).finish(n));
  return report;
}

const GroupEval* find_group(const EvalReport& r, const std::string& name) {
  for (const auto& g : r.groups)
    if (g.name == name) return &g;
  return nullptr;
}

nlohmann::json to_json(const EvalReport& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups)
    groups.push_back({{"name", g.name},
                      {"model", stats_json(g.model)},
                      {"fallback", stats_json(g.fallback)},
                      {"vendor_heur_vs_own_best", stats_json(g.vendor_own)},
                      {"vendor_heur_vs_oracle", stats_json(g.vendor_vs_oracle)},
                      {"model_timed_top_k", stats_json(g.timed)},
                      {"own_first_measured", num(g.own_first_measured)},
                      {"own_top_k_measured", num(g.own_top_k_measured)},
                      {"own_first_choice", stats_json(g.own_first)},
                      {"own_timed_top_k", stats_json(g.own_timed)},
                      {"dispatch", stats_json(g.dispatch)},
                      {"ours_alone", stats_json(g.ours_alone)},
                      {"vendor_alone", stats_json(g.vendor_alone)},
                      {"race", stats_json(g.race)},
                      {"auto", stats_json(g.auto_)},
                      {"dispatch_vendor_share", num(g.dispatch_vendor_share)},
                      {"auto_timed_share", num(g.auto_timed_share)}});
  return {{"arch", r.arch},       {"tie_band", kTieBand},   {"timed_top_k", r.timed_k},
          {"shortlist", r.shortlist}, {"auto_time_us", num(r.auto_time_us)},
          {"problems", r.problems.size()}, {"skipped", r.skipped},
          {"unparsed_records", r.unparsed}, {"groups", groups}};
}

std::string to_csv(const EvalReport& r) {
  std::ostringstream out;
  out << "op,problem,tag,source,candidates,model_candidates,chosen_config,chosen_status,chosen_us,oracle_config,oracle_us,"
         "efficiency,oracle_rank,top1,top5,fallback_config,fallback_us,fallback_efficiency,vendor,"
         "vendor_heur_us,vendor_best_us,vendor_efficiency_own,vendor_efficiency_vs_oracle,timed_us,timed_efficiency,"
         "own_first_measured,own_top_k_measured,own_confidence,own_first_us,own_first_efficiency,own_timed_us,"
         "own_timed_efficiency,own_vendor_first,own_vendor_chosen,best_known_us,dispatch_us,dispatch_efficiency,race_us,race_efficiency,"
         "own_first_est_us,auto_timed,auto_us,auto_efficiency\n";
  for (const auto& p : r.problems) {
    const bool vendor_ok = p.vendor_heur_status == "ok";
    out << p.op << ',' << quote(p.problem) << ',' << p.tag << ',' << p.model.source << ',' << p.candidates << ','
        << p.model_candidates << ','
        << quote(p.model.config) << ',' << p.model.status << ',' << fmt(p.model.us) << ','
        << quote(p.oracle_config) << ',' << fmt(p.oracle_us) << ',' << fmt(p.model.efficiency, "%.6f") << ','
        << p.model.oracle_rank << ',' << p.model.top1 << ',' << p.model.top5 << ',' << quote(p.fallback.config)
        << ',' << fmt(p.fallback.us) << ',' << fmt(p.fallback.efficiency, "%.6f") << ',' << p.vendor << ','
        << fmt(p.vendor_heur_us) << ',' << fmt(p.vendor_best_us) << ','
        << (p.vendor_heur_status.empty() ? "" : fmt(vendor_ok ? p.vendor_best_us / p.vendor_heur_us : 0.0, "%.6f"))
        << ','
        << (p.vendor_heur_status.empty() ? "" : fmt(vendor_ok ? p.oracle_us / p.vendor_heur_us : 0.0, "%.6f"))
        << ',' << fmt(p.timed_us) << ',' << fmt(p.timed_efficiency, "%.6f") << ',' << p.own_first_measured << ','
        << p.own_top_k_measured << ',' << fmt(p.own_confidence, "%.6g") << ',' << fmt(p.own_first_us) << ','
        << (p.own_first_measured ? fmt(efficiency_of(p.oracle_us, p.own_first_us), "%.6f") : "") << ','
        << fmt(p.own_timed_us) << ','
        << (p.own_top_k_all ? fmt(efficiency_of(p.oracle_us, p.own_timed_us), "%.6f") : "") << ','
        << p.own_vendor_first << ',' << p.own_vendor_chosen << ',' << fmt(p.best_known_us) << ','
        << fmt(p.dispatch_us) << ','
        << (p.dispatch_defined ? fmt(efficiency_of(p.best_known_us, p.dispatch_us), "%.6f") : "") << ','
        << fmt(p.race_us) << ','
        << (p.dispatch_defined ? fmt(efficiency_of(p.best_known_us, p.race_us), "%.6f") : "") << ','
        << fmt(p.own_first_est_us) << ',' << p.auto_timed << ',' << fmt(p.auto_us) << ','
        << (p.dispatch_defined ? fmt(efficiency_of(p.best_known_us, p.auto_us), "%.6f") : "") << '\n';
  }
  return out.str();
}

namespace {

// What heuristic + vendor auto runs, beside either side alone, per op and source (GroupEval::dispatch).
void dispatch_block(const EvalReport& r, std::ostringstream& out) {
  auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt(100 * v, "%.1f"); };
  const char* row =
      "%-38s %5s | %6s %6s %6s %6s | %6s %6s %6s %6s | %6s %6s %6s %6s %5s | %6s %6s %6s %6s | %6s %6s %6s %6s %5s\n";
  char line[512];
  bool head = false;
  for (const auto& g : r.groups) {
    if (g.name.find(' ') != std::string::npos || g.dispatch.count == 0) continue;  // ops and sources
    if (!head) {
      std::snprintf(line, sizeof line, row, "group", "n", "ours", "o_p10", "o_min", "o_tw", "vendor", "v_p10",
                    "v_min", "v_tw", "disp", "d_p10", "d_min", "d_tw", "vnd%", "race", "r_p10", "r_min", "r_tw", "auto",
                    "a_p10", "a_min", "a_tw", "tim%");
      out << "what dispatch's heuristic strategy runs (vendor auto: the model's first choice, or the vendor's "
             "heuristic kernel where the model\nis vendor_first or its vendor choice says so), against the fastest "
             "measured kernel, ours or the vendor's: mean / P10 / min | tw\n"
             "ours alone | vendor alone | dispatch (vnd%: share of the problems where the vendor runs) | race (the race "
             "strategy:\nthe faster of the first choice and the vendor's heuristic kernel, both timed on first use) | auto "
             "(the default strategy: top_k\nwith the vendor's kernels where the first choice is estimated at >= "
          << fmt(r.auto_time_us, "%g") << " us, tim%: share of the problems it times; heuristic elsewhere)\n"
          << line;
      head = true;
    }
    const Stats &o = g.ours_alone, &v = g.vendor_alone, &d = g.dispatch, &ra = g.race, &au = g.auto_;
    std::snprintf(line, sizeof line, row, g.name.substr(0, 38).c_str(), std::to_string(d.count).c_str(),
                  pct(o.mean).c_str(), pct(o.p10).c_str(), pct(o.min).c_str(), pct(o.time_weighted).c_str(),
                  pct(v.mean).c_str(), pct(v.p10).c_str(), pct(v.min).c_str(), pct(v.time_weighted).c_str(),
                  pct(d.mean).c_str(), pct(d.p10).c_str(), pct(d.min).c_str(), pct(d.time_weighted).c_str(),
                  pct(g.dispatch_vendor_share).c_str(), pct(ra.mean).c_str(), pct(ra.p10).c_str(), pct(ra.min).c_str(),
                  pct(ra.time_weighted).c_str(), pct(au.mean).c_str(), pct(au.p10).c_str(), pct(au.min).c_str(),
                  pct(au.time_weighted).c_str(), pct(g.auto_timed_share).c_str());
    out << line;
  }
}

}  // namespace

std::string format_table(const EvalReport& r) {
  std::ostringstream out;
  char line[512];
  const std::string t = "t" + std::to_string(r.timed_k);
  std::snprintf(line, sizeof line,
                "%-38s %5s | %6s %6s %6s %6s %6s %5s %5s %8s %3s | %6s %6s %5s | %6s %6s %5s | %6s | %6s %6s %6s %5s\n",
                "group", "n", "mean", "median", "p10", "p1", "min", "top1", "top5", "regret", "bad", "fb", "fb_p10",
                "fb_t1", "vnd", "v_p10", "v_t1", "v/orc", t.c_str(), (t + "_p10").c_str(), (t + "_min").c_str(), "own");
  out << "efficiency = oracle_us / chosen_us (model | fallback | vendor heur vs its best | vendor heur vs our oracle |"
         " t" << r.timed_k << ": the fastest of the model's first " << r.timed_k << ", as dispatch top_k times them);"
         " top-1/5 with a 2% band; regret in us; own: % of problems whose whole-pool first choice was measured\n"
      << line;
  auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt(100 * v, "%.1f"); };
  for (const auto& g : r.groups) {
    const Stats &m = g.model, &f = g.fallback, &v = g.vendor_own, &vo = g.vendor_vs_oracle;
    const Stats& tk = g.timed;
    std::snprintf(line, sizeof line,
                  "%-38s %5zu | %6s %6s %6s %6s %6s %5s %5s %8s %3zu | %6s %6s %5s | %6s %6s %5s | %6s | %6s %6s %6s %5s\n",
                  g.name.substr(0, 38).c_str(), m.count, pct(m.mean).c_str(), pct(m.median).c_str(),
                  pct(m.p10).c_str(), pct(m.p1).c_str(), pct(m.min).c_str(), pct(m.top1).c_str(), pct(m.top5).c_str(),
                  std::isnan(m.regret_us) ? "-" : fmt(m.regret_us, "%.2f").c_str(), m.failed, pct(f.mean).c_str(),
                  pct(f.p10).c_str(), pct(f.top1).c_str(), pct(v.mean).c_str(), pct(v.p10).c_str(),
                  pct(v.top1).c_str(), pct(vo.mean).c_str(), pct(tk.mean).c_str(), pct(tk.p10).c_str(),
                  pct(tk.min).c_str(), fmt(100 * g.own_first_measured, "%.0f").c_str());
    out << line;
  }
  // What dispatch runs: the whole-pool choices, where measured (the table above ranks the measured configs).
  // tw: time-weighted, sum of oracle times / sum of chosen times (each problem once, as layers add up).
  auto own_row = [&](const GroupEval& g) {
    const Stats &f = g.own_first, &tk = g.own_timed;
    std::snprintf(line, sizeof line, "%-38s %5zu | %6s %6s %6s %5s %6s | %5zu | %6s %6s %6s %6s\n",
                  g.name.substr(0, 38).c_str(), f.count, pct(f.mean).c_str(), pct(f.p10).c_str(), pct(f.min).c_str(),
                  pct(f.top1).c_str(), pct(f.time_weighted).c_str(), tk.count, pct(tk.mean).c_str(),
                  pct(tk.p10).c_str(), pct(tk.min).c_str(), pct(tk.time_weighted).c_str());
    out << line;
  };
  const std::string head = "%-38s %5s | %6s %6s %6s %5s %6s | %5s | %6s %6s %6s %6s\n";
  std::snprintf(line, sizeof line, head.c_str(), "group", "n", "mean", "p10", "min", "top1", "tw", "n", "mean",
                "p10", "min", "tw");
  out << "whole-pool choices (what dispatch runs), over the problems where they were measured: first choice | t"
      << r.timed_k << " (the fastest of top_k's shortlist, " << r.shortlist
      << "); tw: time-weighted (sum of oracle times / sum of chosen times)\n"
      << line;
  for (const auto& g : r.groups)
    if (g.name.find(' ') == std::string::npos) own_row(g);  // ops and sources
  bool nets = false;
  for (const auto& g : r.groups) {
    if (g.name.find(" net=") == std::string::npos) continue;
    if (!nets) out << "per network (its measured layers, each once):\n";
    nets = true;
    own_row(g);
  }
  dispatch_block(r, out);
  std::size_t pruned = 0, measured = 0, kept = 0;
  for (const auto& p : r.problems) {
    pruned += p.pruned;
    measured += p.candidates;
    kept += p.model_candidates;
  }
  if (pruned)
    out << "pruned pools (models' candidates.txt): " << pruned << " of " << r.problems.size()
        << " problems; the model chose among " << kept << " of " << measured << " measured configs\n";
  out << r.problems.size() << " problems evaluated, " << r.skipped << " skipped (no ok timing)";
  if (r.unparsed) out << ", " << r.unparsed << " records ignored (problem or config did not parse)";
  out << "\n";
  return out.str();
}

}  // namespace tilepick::eval
