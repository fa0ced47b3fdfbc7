// tilepick search: explore a family's full config-field domains with the model (or the analytic
// fallback) and propose configs to measure next, compared with the best of the default pool.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/search.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::cli {
namespace {

struct SearchArgs {
  std::vector<std::string> problems;
  std::string file, arch = "h200", method = "de", space, family, models, out;
  int warm = 0;
  search::DeOptions opt;
};

Family parse_family(const std::string& name) {
  std::string known;
  for (Family f : kFamilies) {
    if (to_string(f) == name) return f;
    known += (known.empty() ? "" : ", ") + std::string(to_string(f));
  }
  throw InvalidArgument("search: unknown family '" + name + "' (" + known + ")");
}

// --family, else the families of the problem's legal pool, else those the spaces declare for its op.
std::vector<Family> families_for(const SearchArgs& a, const Problem& p, const ArchSpec& arch) {
  if (!a.family.empty()) return {parse_family(a.family)};
  std::vector<Family> out;
  auto add = [&](Family f) {
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (const auto& e : Registry::default_registry().lookup(p, arch)) add(e.config.fam());
  if (out.empty())
    for (const auto& e : Registry::default_registry().candidates(op_name(p), arch)) add(e.config.fam());
  if (out.empty()) throw Unsupported("search: no config space covers " + op_name(p) + " on " + arch.name);
  return out;
}

struct Proposal {
  std::string problem, config;
};

void search_problem(const SearchArgs& a, const Selector& selector, const NamedProblem& np, const ArchSpec& arch,
                    std::vector<Proposal>& proposals) {
  const Problem& p = np.problem;
  std::string source;
  const search::Scorer scorer = search::selector_scorer(selector, p, arch, &source);
  const std::vector<Ranked> pool = selector.rank(p, arch, 1);
  const std::size_t pool_size = Registry::default_registry().lookup(p, arch).size();
  std::cout << "# " << (np.name.empty() ? "" : np.name + ": ") << to_string(p) << " | arch " << arch.name
            << " | scorer " << source << " | pool " << pool_size << " legal";
  if (!pool.empty()) std::cout << ", best " << fmt(pool[0].score, "%.5g") << " (" << pool[0].text << ")";
  std::cout << "\n";
  const std::vector<Ranked> ranked_pool = a.warm > 0 ? selector.rank(p, arch) : std::vector<Ranked>{};
  std::vector<search::Found> all;
  bool any_best = false;
  search::Found best;
  std::optional<search::Found> best_outside;
  for (Family fam : families_for(a, p, arch)) {
    const search::Space space = a.space.empty() ? search::full_space(fam) : search::narrowed_space(find_space(a.space), fam);
    search::DeOptions opt = a.opt;  // warm start: the model's best pool configs of this family
    for (const auto& r : ranked_pool)
      if (r.config.fam() == fam && static_cast<int>(opt.initial.size()) < a.warm) opt.initial.push_back(r.config);
    const auto t0 = std::chrono::steady_clock::now();
    search::Result r;
    try {
      r = search::run(a.method, p, arch, space, scorer, opt);
    } catch (const Unsupported& e) {
      std::cout << "# family " << to_string(fam) << ": " << e.what() << "\n";
      continue;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "# family " << to_string(fam) << ": " << space.source << ", " << space.axes.size() << " axes, "
              << search::format_count(r.raw_size) << " raw configs | " << a.method;
    if (a.method == "de")
      std::cout << " population " << opt.population << " (" << std::min<std::size_t>(opt.initial.size(), opt.population)
                << " from the pool), " << r.generations << " generations";
    std::cout << " | " << r.evaluations << " scored, " << r.illegal << " illegal draws | " << fmt(secs, "%.2f")
              << " s\n";
    if (!any_best || r.best_any.score > best.score) best = r.best_any, any_best = true;
    if (r.best_outside_pool && (!best_outside || r.best_outside_pool->score > best_outside->score))
      best_outside = r.best_outside_pool;
    all.insert(all.end(), r.top.begin(), r.top.end());
  }
  if (!any_best) throw Unsupported("search: no legal config found for '" + to_string(p) + "' in any family");
  std::stable_sort(all.begin(), all.end(), [](const search::Found& x, const search::Found& y) {
    if (x.score != y.score) return x.score > y.score;
    if (x.in_pool != y.in_pool) return x.in_pool;
    if (x.unseen != y.unseen) return x.unseen < y.unseen;
    return x.text < y.text;
  });
  if (all.size() > static_cast<std::size_t>(a.opt.top_k)) all.resize(static_cast<std::size_t>(a.opt.top_k));
  std::cout << "rank  score        in_pool  unseen  config\n";
  int rank = 0, outside = 0;
  for (const auto& f : all) {
    std::cout << fmt(++rank, "%-4.0f") << "  " << fmt(f.score, "%-11.5g") << "  " << (f.in_pool ? "yes    " : "no     ")
              << "  " << fmt(f.unseen, "%-6.0f") << "  " << f.text << "\n";
    outside += !f.in_pool;
    proposals.push_back({to_string(p), f.text});
  }
  auto versus = [&](double score) {
    if (pool.empty()) return std::string();
    const double d = score - pool[0].score;
    return " (" + fmt(d, "%+.4g") + (d > 0 ? ", above" : d == 0 ? ", ties" : ", below") + " the pool best)";
  };
  std::cout << "# pool best " << (pool.empty() ? std::string("-") : fmt(pool[0].score, "%.5g")) << " | best found "
            << fmt(best.score, "%.5g") << (best.in_pool ? " (a pool config)" : versus(best.score))
            << " | best outside the pool "
            << (best_outside ? fmt(best_outside->score, "%.5g") + versus(best_outside->score) : std::string("-"))
            << " | " << outside << " of the " << all.size() << " listed are outside the pool\n";
}

void write_proposals(const SearchArgs& a, const std::vector<Proposal>& proposals) {
  std::ofstream out(a.out);
  if (!out) throw Error(Status::io_error, "search: cannot write " + a.out);
  out << "# tilepick search proposals (" << a.method << ", budget " << a.opt.budget << ", seed " << a.opt.seed
      << ", arch " << a.arch << "): one 'problem|config' pair per line, best first per problem\n";
  for (const auto& pr : proposals) out << pr.problem << "|" << pr.config << "\n";
  if (!out) throw Error(Status::io_error, "search: error writing " + a.out);
}

void run(const SearchArgs& a) {
  if (a.method != "de" && a.method != "random")
    throw InvalidArgument("search: unknown method '" + a.method + "' (de, random)");
  if (a.opt.budget < 1) throw InvalidArgument("search: --budget " + std::to_string(a.opt.budget) + " must be at least 1");
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw Error(Status::parse_error, "search: give --problem or --file");
  const ArchSpec& arch = find_arch(default_arch_specs(), a.arch);
  std::unique_ptr<Selector> own;
  if (!a.models.empty()) own = std::make_unique<Selector>(a.models);
  const Selector& selector = own ? *own : Selector::default_selector();
  std::vector<Proposal> proposals;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (i) std::cout << "\n";
    search_problem(a, selector, problems[i], arch, proposals);
  }
  if (!a.out.empty()) write_proposals(a, proposals);
}

}  // namespace

void add_search_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("search", "search a family's full config-field domains with the model and "
                                           "propose configs to measure (compared with the default pool)");
  auto args = std::make_shared<SearchArgs>();
  auto& o = args->opt;
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("--arch", args->arch, "arch spec name or target")->capture_default_str();
  cmd->add_option("--method", args->method, "de (differential evolution) or random")->capture_default_str();
  cmd->add_option("--budget", o.budget, "configs scored per family")->capture_default_str();
  cmd->add_option("--seed", o.seed, "random seed")->capture_default_str();
  cmd->add_option("--top", o.top_k, "configs listed per problem")->capture_default_str();
  cmd->add_flag("--exclude-pool", o.exclude_pool, "list only configs outside the default pool");
  cmd->add_option("--out", args->out, "write the listed configs as 'problem|config' lines");
  cmd->add_option("--family", args->family, "search this family (default: the families of the problem's pool)");
  cmd->add_option("--space", args->space, "narrow the domains to a space file's value lists and filters");
  cmd->add_option("--models", args->models, "models folder (default: TILEPICK_MODELS_DIR or the source tree's models/)");
  cmd->add_option("--population", o.population, "DE population")->capture_default_str();
  cmd->add_option("--generations", o.generations, "DE generations at most (0 = until the budget is used)")
      ->capture_default_str();
  cmd->add_option("--warm", args->warm, "DE: start from the model's N best pool configs (0 = a random population)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--de-f", o.F, "DE differential weight")->capture_default_str();
  cmd->add_option("--de-cr", o.CR, "DE crossover probability")->capture_default_str();
  cmd->callback([args] { run(*args); });
}

}  // namespace tilepick::cli
