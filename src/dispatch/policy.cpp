// Policy: presets, the string form, and what_to_time(), the one rule shared by the dispatcher and `tilepick eval`.
#include "tilepick/policy.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/registry.hpp"

namespace tilepick {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::heuristic: return "heuristic";
    case Strategy::top_k: return "top_k";
    case Strategy::exhaustive: return "exhaustive";
    case Strategy::fixed: return "fixed";
    case Strategy::race: return "race";
    case Strategy::automatic: return "auto";
  }
  return "?";
}

namespace {

constexpr Strategy kStrategies[] = {Strategy::heuristic, Strategy::top_k, Strategy::exhaustive, Strategy::fixed,
                                    Strategy::race, Strategy::automatic};

bool takes_k(Strategy s) { return s == Strategy::top_k || s == Strategy::automatic; }
bool takes_time_us(Strategy s) { return s != Strategy::heuristic && s != Strategy::fixed; }
bool takes_vendor_choice(Strategy s) { return s != Strategy::fixed; }

std::string number(double v) {
  if (std::isinf(v)) return "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back the same
  return std::string(buf, r.ptr);
}

}  // namespace

std::optional<Strategy> parse_strategy(std::string_view s) {
  for (Strategy v : kStrategies)
    if (s == to_string(v)) return v;
  if (s == "topk") return Strategy::top_k;
  return std::nullopt;
}

std::string strategy_names() {
  std::string out;
  for (Strategy v : kStrategies) out += (out.empty() ? "" : ", ") + std::string(to_string(v));
  return out;
}

std::string_view to_string(VendorMode v) {
  switch (v) {
    case VendorMode::off: return "off";
    case VendorMode::automatic: return "auto";
    case VendorMode::only: return "only";
  }
  return "?";
}

std::optional<VendorMode> parse_vendor_mode(std::string_view s) {
  for (VendorMode v : {VendorMode::off, VendorMode::automatic, VendorMode::only})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

Policy::Time Policy::time() const {
  switch (preset) {
    case Strategy::heuristic:
    case Strategy::fixed: return Time::none;
    case Strategy::exhaustive: return Time::all;
    default: return Time::first;
  }
}

Policy policy_preset(Strategy preset) {
  Policy p;
  p.preset = preset;
  p.time_us = preset == Strategy::automatic ? 100.0 : 0.0;
  return p;
}

Policy normalized(Policy p) {
  const Policy d = policy_preset(p.preset);
  if (!takes_k(p.preset)) p.k = d.k;
  if (!takes_time_us(p.preset)) p.time_us = d.time_us;
  if (!takes_vendor_choice(p.preset)) p.vendor_choice = d.vendor_choice;
  return p;
}

void validate(const Policy& p) {
  if (takes_k(p.preset) && p.k < 1)
    throw InvalidArgument("strategy " + std::string(to_string(p.preset)) + " needs k >= 1, got " + std::to_string(p.k));
  if (!(p.time_us >= 0))
    throw InvalidArgument("policy time_us must be >= 0 (inf: never time), got " + number(p.time_us));
}

std::string to_string(const Policy& p) {
  const Policy d = policy_preset(p.preset);
  std::string keys;
  auto add = [&](const std::string& kv) { keys += (keys.empty() ? ":" : ",") + kv; };
  if (takes_k(p.preset) && p.k != d.k) add("k=" + std::to_string(p.k));
  if (takes_time_us(p.preset) && p.time_us != d.time_us) add("time_us=" + number(p.time_us));
  if (p.vendor != d.vendor) add("vendor=" + std::string(to_string(p.vendor)));
  if (takes_vendor_choice(p.preset) && p.vendor_choice != d.vendor_choice)
    add(std::string("vendor_choice=") + (p.vendor_choice ? "on" : "off"));
  return std::string(to_string(p.preset)) + keys;
}

Policy parse_policy(std::string_view text) {
  const std::string whole(text);
  auto fail = [&](std::string_view token, const std::string& what) -> ParseError {
    return ParseError(std::string(token), "policy '" + whole + "': " + what + " (" + policy_help() + ")");
  };
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const auto preset = parse_strategy(name);
  if (!preset) throw fail(name, "unknown preset '" + std::string(name) + "', not one of " + strategy_names());
  Policy p = policy_preset(*preset);
  if (colon == std::string_view::npos) return p;
  std::string_view rest = text.substr(colon + 1);
  if (rest.empty()) throw fail("", "nothing after ':'");
  std::vector<std::string> seen;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw fail(item, "'" + std::string(item) + "' is not <key>=<value>");
    const std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    for (const auto& s : seen)
      if (s == key) throw fail(key, "key '" + key + "' given twice");
    seen.push_back(key);
    auto not_taken = [&] { return fail(key, "preset " + std::string(to_string(p.preset)) + " takes no '" + key + "'"); };
    if (key == "k") {
      if (!takes_k(p.preset)) throw not_taken();
      int k = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), k);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size() || k < 1)
        throw fail(value, "k='" + value + "' is not an integer >= 1");
      p.k = k;
    } else if (key == "time_us") {
      if (!takes_time_us(p.preset)) throw not_taken();
      double us = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), us);
      const bool ok = value == "inf" || (r.ec == std::errc() && r.ptr == value.data() + value.size() &&
                                         std::isfinite(us) && us >= 0);
      if (!ok) throw fail(value, "time_us='" + value + "' is not a number of microseconds >= 0 or inf");
      p.time_us = value == "inf" ? std::numeric_limits<double>::infinity() : us;
    } else if (key == "vendor") {
      const auto v = parse_vendor_mode(value);
      if (!v) throw fail(value, "vendor='" + value + "' is not one of off, auto, only");
      p.vendor = *v;
    } else if (key == "vendor_choice") {
      if (!takes_vendor_choice(p.preset)) throw not_taken();
      if (value != "on" && value != "off") throw fail(value, "vendor_choice='" + value + "' is not on or off");
      p.vendor_choice = value == "on";
    } else {
      throw fail(key, "unknown key '" + key + "', not one of k, time_us, vendor, vendor_choice");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return p;
}

Policy environment_policy(bool check_replaced) {
  thread_local std::string last_text;  // plans read it on every call: parsed once per value
  thread_local Policy last;
  std::string checked;
  const char* text = nullptr;
  if (check_replaced) {
    checked = env::policy();
    text = checked.empty() ? nullptr : checked.c_str();
  } else {
    text = env::policy_unchecked();
  }
  if (!text) return policy_preset(Strategy::automatic);
  if (text != last_text) {
    try {
      last = normalized(parse_policy(text));
    } catch (const Error& e) {
      throw Error(Status::invalid_argument, "TILEPICK_POLICY: " + std::string(e.what()));
    }
    last_text = text;
  }
  return last;
}

std::string policy_help() {
  return "<preset>[:<key>=<value>,...]; presets " + strategy_names() +
         "; keys k=N (top_k, auto), time_us=T|inf (timed presets), vendor=off|auto|only, vendor_choice=on|off";
}

bool auto_times(const Problem& p, const KernelConfig& first, const ArchSpec& arch, double limit_us, double* estimate_us) {
  *estimate_us = estimated_time_us(p, first, arch);
  return *estimate_us >= limit_us;
}

bool heuristic_runs_vendor(VendorMode mode, const Selection& sel) {
  return mode == VendorMode::only ||
         (mode == VendorMode::automatic && (sel.top.empty() || !sel.from_model || sel.vendor_first));
}

bool auto_times_vendor_alone(VendorMode mode, const Selection& sel) {
  return mode == VendorMode::automatic && sel.vendor_first && !sel.vendor_chosen;
}

// cuBLASLt's heuristic kernel under a vendor_first model never failed in 3,345 records: only the vendor choice.
bool heuristic_checks_vendor(VendorMode mode, const Selection& sel) {
  return mode == VendorMode::automatic && sel.vendor_chosen && !sel.top.empty();
}

Timing what_to_time(const Policy& policy, const Selector& selector, const Problem& p, const ArchSpec& arch,
                    const TimingContext& ctx) {
  const VendorMode mode = policy.vendor;
  const bool automatic = policy.preset == Strategy::automatic;
  Timing t;
  // What the ranking is: select's first few (heuristic, race, and the first look of a threshold), the shortlist
  // (top_k: the full model's first k, which it compiles and times anyway), or every legal config (exhaustive).
  auto rank = [&](Strategy how) {
    const int kind = how == Strategy::top_k ? 1 : how == Strategy::exhaustive ? 2 : 0;
    const int k = how == Strategy::exhaustive ? 0 : how == Strategy::top_k ? policy.k : 5;
    const auto key = std::make_tuple(kind, k, static_cast<int>(ctx.shortlist));
    if (ctx.memo)
      if (auto it = ctx.memo->find(key); it != ctx.memo->end()) return it->second;
    Selection sel = kind == 1 ? selector.shortlist(p, arch, k, ctx.shortlist) : selector.select(p, arch, k);
    if (kind == 2 && sel.pruned) {  // exhaustive times the whole legal pool
      const auto all = Registry::default_registry().lookup_configs(p, arch);
      sel.top = selector.rank_configs(p, arch, all, 0);
      sel.pool_size = all.size(), sel.pruned = false;
    }
    if (!policy.vendor_choice && sel.vendor_chosen) sel.vendor_first = sel.vendor_chosen = false;
    if (ctx.memo) ctx.memo->emplace(key, sel);
    return sel;
  };
  auto use = [&](Selection sel) {
    t.ranked = true;
    t.ranking = std::move(sel);
  };

  // auto becomes top_k (its first choice estimated long, online) or heuristic; another timed preset with a
  // threshold (time_us > 0) becomes itself or heuristic the same way.
  Strategy how = policy.preset;
  const bool threshold = automatic || (policy.time() != Policy::Time::none && policy.time_us > 0);
  if (mode == VendorMode::only || how == Strategy::fixed) {
    if (automatic) how = Strategy::heuristic;  // vendor only: nothing of ours to estimate
  } else if (!threshold) {
    use(rank(how));
  } else {
    use(rank(Strategy::heuristic));
    if (automatic) how = Strategy::heuristic;
    if (!t.ranking.top.empty()) {  // offline plans say what a GPU plan would do
      const Strategy timed_as = automatic ? Strategy::top_k : policy.preset;
      const bool timed = auto_times(p, t.ranking.top.front().config, arch, policy.time_us, &t.estimate_us);
      char text[256];
      std::snprintf(text, sizeof text, " (%s: first choice estimated at %.0f us, %s %s us: %s)",
                    std::string(to_string(policy.preset)).c_str(), t.estimate_us, timed ? ">=" : "<",
                    number(policy.time_us).c_str(),
                    !timed       ? "not timed"
                    : ctx.online ? (automatic ? "timed as top_k" : "timed")
                    : automatic && auto_times_vendor_alone(mode, t.ranking)
                        ? "timed on a GPU, the vendor's algorithms alone (vendor_first), not offline"
                        : automatic ? "timed as top_k on a GPU, not offline" : "timed on a GPU, not offline");
      t.note = text;
      how = timed && ctx.online ? timed_as : Strategy::heuristic;
      if (how == Strategy::top_k || how == Strategy::exhaustive) use(rank(how));
    }
  }
  const bool vendor_ok = ctx.online && mode != VendorMode::off;
  auto vendor_can = [&] { return ctx.vendor_can ? ctx.vendor_can() : false; };

  // race with nothing to race (vendor off or only, or no vendor for the problem) is the untimed heuristic strategy
  if (how == Strategy::race && !(mode == VendorMode::automatic && vendor_ok && vendor_can())) how = Strategy::heuristic;
  t.run = how;
  switch (how) {
    case Strategy::heuristic:
      t.run_vendor = heuristic_runs_vendor(mode, t.ranking);
      t.check_vendor = t.run_vendor && heuristic_checks_vendor(mode, t.ranking);
      break;
    case Strategy::top_k:
    case Strategy::exhaustive:
      t.vendor = vendor_ok && vendor_can();
      t.vendor_alone_first = automatic && t.vendor && auto_times_vendor_alone(mode, t.ranking);
      for (const auto& r : t.ranking.top) t.ours.push_back(r.text);
      break;
    case Strategy::race:
      if (!t.ranking.top.empty()) t.ours.push_back(t.ranking.top.front().text);
      t.vendor = true, t.vendor_heuristic_only = true;
      break;
    default:
      break;
  }
  return t;
}

}  // namespace tilepick
