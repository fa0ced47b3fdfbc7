// Random search and differential evolution over a search space's index encoding.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/search.hpp"

namespace tilepick::search {
namespace {

constexpr double kIllegal = -std::numeric_limits<double>::infinity();
constexpr int kTrialRetries = 4;  // DE: new mutants tried for an illegal trial before keeping the target
constexpr int kStallGenerations = 20;  // DE: stop after this many generations without a new config

// Uniform numbers from the engine's bits only, so a seed gives the same run on every platform.
struct Rng {
  std::mt19937_64 engine;
  explicit Rng(std::uint64_t seed) : engine(seed) {}
  double unit() { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }  // [0, 1)
  int below(int n) { return static_cast<int>(engine() % static_cast<std::uint64_t>(n)); }
};

struct Entry {
  KernelConfig config;  // resolved
  std::string text;
  double score = kIllegal;
};

// Legality, distinctness and batched scoring shared by both methods.
class Evaluator {
 public:
  Evaluator(const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer, const Options& opt)
      : p_(p), arch_(arch), space_(space), scorer_(scorer), opt_(opt) {}

  // The archive index of a legal config (scored or queued), or -1 for an illegal one.
  long admit(std::span<const int> index) {
    const KernelConfig c = space_.decode(index);
    std::string rule;
    if (auto err = config_error(c)) rule = "config";
    else if (!filters_pass(c)) rule = "space_filter";
    else if (Verdict v = legal(p_, c, arch_); !v) rule = v.rule;
    if (!rule.empty()) {
      ++illegal_;
      ++rules_[rule];
      return -1;
    }
    Entry e{resolve(c, p_), "", kIllegal};
    e.text = to_string(e.config);
    auto [it, fresh] = by_text_.emplace(e.text, entries_.size());
    if (fresh) {
      entries_.push_back(std::move(e));
      pending_.push_back(it->second);
    }
    return static_cast<long>(it->second);
  }

  // Scores the queued configs in one scorer call, at most the budget left (the rest are dropped
  // from the archive's scored set and stay -inf).
  void flush() {
    if (pending_.empty()) return;
    const std::size_t room = static_cast<std::size_t>(opt_.budget) - std::min<std::size_t>(opt_.budget, scored_);
    std::vector<std::size_t> now(pending_.begin(), pending_.begin() + std::min(room, pending_.size()));
    pending_.clear();
    if (now.empty()) return;
    std::vector<KernelConfig> batch;
    for (auto i : now) batch.push_back(entries_[i].config);
    const std::vector<double> s = scorer_(batch);
    if (s.size() != batch.size())
      throw Error(Status::internal, "search: the scorer returned " + std::to_string(s.size()) + " scores for " +
                                        std::to_string(batch.size()) + " configs");
    for (std::size_t j = 0; j < now.size(); ++j) entries_[now[j]].score = std::isnan(s[j]) ? kIllegal : s[j];
    scored_ += now.size();
    ++batches_;
  }

  bool budget_left() const { return scored_ + pending_.size() < static_cast<std::size_t>(opt_.budget); }
  std::size_t queued() const { return pending_.size(); }
  bool scored(long i) const { return entries_[i].score != kIllegal; }
  double score(long i) const { return entries_[i].score; }
  std::size_t illegal() const { return illegal_; }
  std::size_t evaluations() const { return scored_; }
  std::size_t entries() const { return entries_.size(); }

  [[noreturn]] void no_legal_config(std::size_t draws) const {
    std::vector<std::pair<std::size_t, std::string>> counts;
    for (const auto& [rule, n] : rules_) counts.emplace_back(n, rule);
    std::sort(counts.begin(), counts.end(), std::greater<>());
    std::string rules;
    for (const auto& [n, rule] : counts) rules += (rules.empty() ? "" : ", ") + rule + " " + std::to_string(n);
    throw Unsupported("search: no legal config of family " + std::string(to_string(space_.family)) + " for '" +
                      to_string(p_) + "' on " + arch_.name + " in " + std::to_string(draws) +
                      " random draws (rejected by: " + rules + ")");
  }

  Result result(const std::string& method) const {
    std::set<std::string> pool;
    std::vector<std::set<std::array<int, 3>>> pool_values(space_.axes.size());
    for (const auto& e : Registry::default_registry().lookup(p_, arch_)) {
      pool.insert(to_string(e.config));
      for (std::size_t a = 0; a < space_.axes.size(); ++a) pool_values[a].insert(space_.axes[a].value_of(e.config));
    }
    std::vector<Found> ranked;
    for (const auto& e : entries_) {
      if (e.score == kIllegal) continue;
      Found f{e.config, e.text, e.score, pool.count(e.text) > 0, 0};
      for (std::size_t a = 0; a < space_.axes.size(); ++a) f.unseen += !pool_values[a].count(space_.axes[a].value_of(e.config));
      ranked.push_back(std::move(f));
    }
    // Among equal scores a pool config comes first (a new config must score higher to lead), then
    // the config with fewer values the pool never uses: the model cannot tell those apart.
    std::sort(ranked.begin(), ranked.end(), [](const Found& a, const Found& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.in_pool != b.in_pool) return a.in_pool;
      if (a.unseen != b.unseen) return a.unseen < b.unseen;
      return a.text < b.text;
    });
    Result r;
    r.method = method;
    r.evaluations = scored_;
    r.illegal = illegal_;
    r.raw_size = space_.raw_size();
    for (Found& f : ranked) {
      if (r.best_any.text.empty()) r.best_any = f;
      if (!f.in_pool && !r.best_outside_pool) r.best_outside_pool = f;
      if (opt_.exclude_pool && f.in_pool) continue;
      if (static_cast<int>(r.top.size()) < opt_.top_k) r.top.push_back(std::move(f));
    }
    return r;
  }

 private:
  bool filters_pass(const KernelConfig& c) const {
    if (space_.filters.empty()) return true;
    try {
      return passes(c, space_.filters);
    } catch (const Error&) {
      return false;  // a filter that cannot be evaluated on this config rejects it
    }
  }

  const Problem& p_;
  const ArchSpec& arch_;
  const Space& space_;
  const Scorer& scorer_;
  const Options& opt_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> by_text_;
  std::vector<std::size_t> pending_;
  std::size_t scored_ = 0, illegal_ = 0, batches_ = 0;
  std::map<std::string, std::size_t> rules_;
};

void check_options(const Options& opt, const Space& space) {
  if (opt.budget < 1) throw InvalidArgument("search: budget " + std::to_string(opt.budget) + " must be at least 1");
  if (opt.top_k < 1) throw InvalidArgument("search: top " + std::to_string(opt.top_k) + " must be at least 1");
  if (!(opt.max_illegal_ratio >= 1))
    throw InvalidArgument("search: max_illegal_ratio must be at least 1");
  if (space.axes.empty()) throw InvalidArgument("search: the space has no axes");
}

std::size_t draw_cap(const Options& opt) {
  return std::max<std::size_t>(10000, static_cast<std::size_t>(opt.budget * opt.max_illegal_ratio));
}

std::vector<int> random_index(const Space& space, Rng& rng) {
  std::vector<int> idx(space.axes.size());
  for (std::size_t a = 0; a < idx.size(); ++a) idx[a] = rng.below(static_cast<int>(space.axes[a].values.size()));
  return idx;
}

}  // namespace

Result random_search(const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer,
                     const Options& opt) {
  check_options(opt, space);
  Evaluator ev(p, arch, space, scorer, opt);
  Rng rng(opt.seed);
  // Draw until the budget of distinct legal configs is queued, or too many draws in a row add nothing.
  std::size_t misses = 0, draws = 0;
  const std::size_t cap = draw_cap(opt);
  while (ev.budget_left() && misses < cap) {
    const std::size_t before = ev.entries();
    ++draws;
    ev.admit(random_index(space, rng));
    misses = ev.entries() > before ? 0 : misses + 1;
  }
  if (ev.entries() == 0) ev.no_legal_config(draws);
  ev.flush();
  return ev.result("random");
}

Result differential_evolution(const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer,
                              const DeOptions& opt) {
  check_options(opt, space);
  if (opt.population < 4) throw InvalidArgument("search: DE population " + std::to_string(opt.population) + " must be at least 4");
  if (!(opt.F > 0 && opt.F <= 2)) throw InvalidArgument("search: DE F must be in (0, 2]");
  if (!(opt.CR >= 0 && opt.CR <= 1)) throw InvalidArgument("search: DE CR must be in [0, 1]");
  if (opt.generations < 0) throw InvalidArgument("search: DE generations must be >= 0");
  Evaluator ev(p, arch, space, scorer, opt);
  Rng rng(opt.seed);
  const std::size_t dims = space.axes.size(), np = static_cast<std::size_t>(opt.population);
  std::vector<double> size(dims);
  for (std::size_t d = 0; d < dims; ++d) size[d] = static_cast<double>(space.axes[d].values.size());

  // Positions are continuous, one coordinate per axis in [0, size); a config is their floor.
  auto to_index = [&](const std::vector<double>& x) {
    std::vector<int> idx(dims);
    for (std::size_t d = 0; d < dims; ++d)
      idx[d] = std::clamp(static_cast<int>(std::floor(x[d])), 0, static_cast<int>(size[d]) - 1);
    return idx;
  };

  // Initial population: random legal configs, distinct where the space allows.
  std::vector<std::vector<double>> pos;
  std::vector<long> member;
  for (const auto& c : opt.initial) {
    auto idx = space.encode(c);
    if (!idx || pos.size() >= np) continue;
    const std::size_t before = ev.entries();
    const long e = ev.admit(*idx);
    if (e < 0 || ev.entries() == before) continue;  // illegal, or a duplicate
    std::vector<double> x(dims);
    for (std::size_t d = 0; d < dims; ++d) x[d] = (*idx)[d] + rng.unit();
    pos.push_back(std::move(x));
    member.push_back(e);
  }
  std::size_t misses = 0, draws = 0;
  const std::size_t cap = draw_cap(opt);
  while (pos.size() < np && misses < cap) {
    std::vector<int> idx = random_index(space, rng);
    ++draws;
    const std::size_t before = ev.entries();
    long e = ev.admit(idx);
    if (e < 0 || (ev.entries() == before && misses < cap / 2)) {
      ++misses;
      continue;
    }
    misses = 0;
    std::vector<double> x(dims);
    for (std::size_t d = 0; d < dims; ++d) x[d] = idx[d] + rng.unit();
    pos.push_back(std::move(x));
    member.push_back(e);
  }
  if (pos.empty()) ev.no_legal_config(draws);
  ev.flush();
  // Members past the budget were never scored: drop them.
  for (std::size_t i = pos.size(); i-- > 0;)
    if (!ev.scored(member[i])) pos.erase(pos.begin() + i), member.erase(member.begin() + i);
  std::size_t gen = 0, stall = 0;
  while (pos.size() >= 4 && ev.budget_left() && (opt.generations == 0 || gen < static_cast<std::size_t>(opt.generations)) &&
         stall < kStallGenerations) {
    const std::size_t n = pos.size(), before = ev.evaluations();
    std::vector<std::vector<double>> trial(n);
    std::vector<long> trial_entry(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      for (int attempt = 0; attempt <= kTrialRetries && trial_entry[i] < 0; ++attempt) {
        std::size_t r1, r2, r3;
        do r1 = rng.below(static_cast<int>(n)); while (r1 == i);
        do r2 = rng.below(static_cast<int>(n)); while (r2 == i || r2 == r1);
        do r3 = rng.below(static_cast<int>(n)); while (r3 == i || r3 == r1 || r3 == r2);
        const std::size_t jrand = static_cast<std::size_t>(rng.below(static_cast<int>(dims)));
        std::vector<double> y = pos[i];
        for (std::size_t d = 0; d < dims; ++d)
          if (d == jrand || rng.unit() < opt.CR)
            y[d] = std::clamp(pos[r1][d] + opt.F * (pos[r2][d] - pos[r3][d]), 0.0, std::nextafter(size[d], 0.0));
        trial_entry[i] = ev.admit(to_index(y));
        trial[i] = std::move(y);
      }
    }
    ev.flush();  // one scorer call per generation
    for (std::size_t i = 0; i < n; ++i)
      if (trial_entry[i] >= 0 && ev.scored(trial_entry[i]) && ev.score(trial_entry[i]) >= ev.score(member[i])) {
        pos[i] = std::move(trial[i]);
        member[i] = trial_entry[i];
      }
    stall = ev.evaluations() == before ? stall + 1 : 0;
    ++gen;
  }
  Result r = ev.result("de");
  r.generations = gen;
  return r;
}

Result run(const std::string& method, const Problem& p, const ArchSpec& arch, const Space& space, const Scorer& scorer,
           const DeOptions& opt) {
  if (method == "de") return differential_evolution(p, arch, space, scorer, opt);
  if (method == "random") return random_search(p, arch, space, scorer, opt);
  throw InvalidArgument("search: unknown method '" + method + "' (de, random)");
}

}  // namespace tilepick::search
