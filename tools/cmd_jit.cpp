// tilepick jit build|headers, tilepick cache ls|import|clear
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "commands.hpp"
#include "jit/jit_internal.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/selector.hpp"
#include "tilepick/space.hpp"

namespace tilepick::cli {
namespace {

struct BuildArgs {
  std::vector<std::string> spaces;  // empty: all default spaces
  std::string arch = "sm_90a";
  std::vector<std::string> problems;
  std::string file;
  int threads = 0;
  int limit = 0;
  int picked = 0;  // > 0: the selector's first `picked` configs per problem instead of the spaces' pools
  bool strict = false;  // fail when ptxas serialized a kernel's wgmma
};

// Used when no problem is given: one dense and one depthwise problem per conv direction, one GEMM.
std::vector<Problem> representative_problems() {
  std::vector<Problem> out{parse_problem("gemm rcr m4096 n4096 k4096 bf16")};
  for (const char* dir : {"fwd", "bwd_data", "bwd_weight"}) {
    out.push_back(parse_problem(std::string(dir) + " g1 mb32 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"));
    out.push_back(parse_problem(std::string(dir) + " g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16"));
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

void build(const BuildArgs& a) {
  const ArchSpec& arch = find_arch(default_arch_specs(), a.arch);
  std::vector<Problem> problems;
  for (auto& np : gather_problems(a.problems, a.file)) problems.push_back(std::move(np.problem));
  if (problems.empty()) problems = representative_problems();
  std::vector<ConfigSpace> spaces;
  if (a.spaces.empty()) spaces = default_spaces();
  for (const auto& s : a.spaces) spaces.push_back(find_space(s));

  std::vector<KernelSource> sources;
  std::set<std::string> keys;
  std::size_t plans = 0;
  auto add = [&](const Problem& p, const KernelConfig& c) {
    ++plans;
    for (auto& k : make_plan(p, c).kernels)
      if (keys.insert(jit::cache_key(k, arch.jit_target)).second) sources.push_back(std::move(k));
  };
  if (a.picked > 0) {  // what dispatch runs and times first: a kernel pack
    for (const auto& p : problems)
      for (const auto& r : Selector::default_selector().select(p, arch, a.picked).top) add(p, r.config);
    spaces.clear();
  }
  std::vector<std::size_t> problem_plans(problems.size(), 0);
  std::vector<std::string> refusal(problems.size());  // per space and rule, how many configs it refuses (problems without a plan)
  for (const auto& space : spaces) {
    if (!space.has_arch(arch.sm)) continue;
    auto configs = space.enumerate();
    for (std::size_t pi = 0; pi < problems.size(); ++pi) {
      const Problem& p = problems[pi];
      if (!space.has_op(op_name(p))) continue;
      std::vector<KernelConfig> legal_configs;
      std::map<std::string, std::pair<std::size_t, std::string>> refused;  // rule -> (configs, one reason)
      for (const auto& c : configs) {
        const Verdict v = legal(p, c, arch);
        if (v) legal_configs.push_back(c);
        else if (++refused[v.rule].first == 1) refused[v.rule].second = v.reason;
      }
      if (legal_configs.empty())
        for (const auto& [rule, r] : refused)
          refusal[pi] += "\n  " + space.name + ": rule " + rule + " refuses " + std::to_string(r.first) + ", e.g. " + r.second;
      problem_plans[pi] += legal_configs.size();
      // --limit keeps N configs spread evenly over the legal pool (deterministic).
      std::size_t n = legal_configs.size(), take = a.limit > 0 ? std::min<std::size_t>(a.limit, n) : n;
      for (std::size_t i = 0; i < take; ++i) add(p, resolve(legal_configs[i * n / take], p));
    }
  }
  if (a.picked == 0)
    for (std::size_t pi = 0; pi < problems.size(); ++pi)
      if (problem_plans[pi] == 0)
        std::cout << "no legal config for '" << to_string(problems[pi]) << "' on " << arch.name
                  << (refusal[pi].empty() ? std::string(" (no space serves its op)") : ":" + refusal[pi]) << "\n";
  int threads = a.threads > 0 ? a.threads : env::num_threads();
  std::cout << "arch " << arch.name << " (" << arch.jit_target << "): " << problems.size() << " problems, " << plans
            << " plans, " << sources.size() << " distinct kernels, " << threads << " threads\n";

  auto t0 = std::chrono::steady_clock::now();
  auto compiled = jit::compile_all(sources, arch.jit_target, threads);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<double> seconds;
  std::size_t hits = 0;
  const jit::CompiledKernel* most_regs = nullptr;
  std::vector<const jit::CompiledKernel*> spilling, serialized;
  std::size_t local_arrays = 0;  // a stack frame without spills: an array indexed at run time (often accumulators)
  for (const auto& k : compiled) {
    hits += k.from_cache;
    // ptxas C7514 / C7515: every wgmma waits for the one before it (accumulators read, or written by
    // other instructions, while one is in flight).
    if (k.log.find("C7514") != std::string::npos || k.log.find("C7515") != std::string::npos) serialized.push_back(&k);
    seconds.push_back(k.compile_seconds);
    if (!most_regs || k.registers > most_regs->registers) most_regs = &k;
    if (k.spill_stores > 0 || k.spill_loads > 0) spilling.push_back(&k);
    else if (k.stack_bytes > 0) ++local_arrays;
  }
  std::cout << std::fixed << std::setprecision(2) << "compiled " << compiled.size() - hits << ", cache hits " << hits
            << ", wall " << wall << " s\n";
  if (compiled.empty()) return;
  std::cout << "compile seconds (as recorded): median " << quantile(seconds, 0.5) << ", p95 " << quantile(seconds, 0.95)
            << ", max " << quantile(seconds, 1.0) << "\n";
  std::cout << "max registers " << most_regs->registers << " (" << most_regs->name << ")\n";
  std::cout << "kernels with spills: " << spilling.size() << (spilling.size() > 10 ? " (the 10 worst)" : "") << "\n";
  std::sort(spilling.begin(), spilling.end(), [](const auto* x, const auto* y) {
    return x->spill_stores + x->spill_loads > y->spill_stores + y->spill_loads;
  });
  for (std::size_t i = 0; i < std::min<std::size_t>(spilling.size(), 10); ++i)
    std::cout << "  " << spilling[i]->name << ": " << spilling[i]->spill_stores << " bytes spill stores, "
              << spilling[i]->spill_loads << " bytes spill loads, " << spilling[i]->stack_bytes << " bytes stack\n";
  std::cout << "kernels with a stack frame but no spills (arrays in local memory): " << local_arrays << "\n";
  std::cout << "kernels whose wgmma ptxas serialized (C7514, C7515): " << serialized.size() << "\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(serialized.size(), 10); ++i) std::cout << "  " << serialized[i]->name << "\n";
  if (a.strict && !serialized.empty())
    throw Error(Status::internal, std::to_string(serialized.size()) + " kernels with serialized wgmma (ptxas C7514 or C7515), e.g. " +
                serialized.front()->name + " (its cache entry's meta.json holds the ptxas log)");
}

void headers() {
  for (const auto& h : jit::detail::bundled_headers()) std::cout << std::setw(8) << h.size << "  " << h.path << "\n";
  std::cout << "hash " << jit::bundled_headers_hash() << "\n";
}

void cache_ls() {
  std::cout << "# " << jit::cache_dir() << "\n";
  auto entries = jit::cache_list();
  std::size_t invalid = 0;
  for (const auto& e : entries) {
    invalid += !e.valid;
    std::cout << e.key.substr(0, 16) << "  " << std::left << std::setw(48) << e.name << std::setw(8) << e.target
              << std::right << std::setw(9) << e.cubin_bytes << std::fixed << std::setprecision(2) << std::setw(8)
              << e.compile_seconds << " s" << std::setw(5) << e.registers << " regs"
              << (e.spill_stores > 0 ? "  spills" : "") << (e.valid ? "" : "  INVALID") << "\n";
  }
  std::cout << "# " << entries.size() << " entries, " << invalid << " invalid\n";
}

}  // namespace

void add_jit_commands(CLI::App& app) {
  auto* jit = app.add_subcommand("jit", "NVRTC just-in-time compilation");
  jit->require_subcommand(1);
  auto args = std::make_shared<BuildArgs>();
  auto* b = jit->add_subcommand("build", "compile the plans of every legal config of the spaces for the problems");
  b->add_option("-s,--space", args->spaces, "space name or .json path (repeatable; default: all default spaces)");
  b->add_option("--arch", args->arch, "arch spec name or target")->capture_default_str();
  auto* prob = b->add_option("-p,--problem", args->problems, "problem (repeatable; default: one per op)");
  b->add_option("-f,--file", args->file, "problem file")->excludes(prob);
  b->add_option("-j,--threads", args->threads, "compile threads (default: TILEPICK_NUM_THREADS or all cores)");
  b->add_option("--limit", args->limit, "at most N legal configs per space and problem, spread evenly over the pool (0: all)");
  b->add_option("--picked", args->picked,
                "instead of the pools, the selector's first K configs per problem (what dispatch runs and times "
                "first): with TILEPICK_CACHE_DIR=PACK, a kernel pack for `tilepick cache import PACK`")
      ->check(CLI::NonNegativeNumber);
  b->add_flag("--strict", args->strict, "fail when ptxas serialized any kernel's wgmma (C7514 or C7515: a silent slowdown)");
  b->callback([args] { build(*args); });
  jit->add_subcommand("headers", "list the bundled kernels/ headers and their hash")->callback(headers);

  auto* cache = app.add_subcommand("cache", "the JIT disk cache (TILEPICK_CACHE_DIR)");
  cache->require_subcommand(1);
  cache->add_subcommand("ls", "list cache entries (key, kernel, target, cubin bytes, compile s, registers)")
      ->callback(cache_ls);
  auto from = std::make_shared<std::string>();
  auto* import = cache->add_subcommand("import", "copy the valid entries of this build from another cache directory "
                                                 "(a kernel pack) into the cache");
  import->add_option("dir", *from, "the cache directory to import from")->required();
  import->callback([from] {
    const jit::ImportStats st = jit::cache_import(*from);
    std::cout << "imported " << st.imported << " entries into " << jit::cache_dir() << " (" << st.present
              << " already there, " << st.other_build << " of another build, " << st.invalid << " invalid)\n";
    if (st.invalid) std::cerr << "tilepick: warning: first invalid entry: " << st.first_invalid << "\n";
  });
  cache->add_subcommand("clear", "remove every cache entry")->callback([] {
    std::size_t n = jit::cache_clear();
    std::cout << "removed " << n << " entries from " << jit::cache_dir() << "\n";
  });
}

}  // namespace tilepick::cli
