// tilepick verify: run (problem, config) pairs on the GPU against the fp64 CPU reference.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>

#include "commands.hpp"
#include "core/hash.hpp"
#include "run/verify.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

namespace tilepick::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> problems, configs, families;
  std::string file, csv;
  int max_configs = 4;
  int device = 0;
  bool time = false, all = false;
  std::uint64_t seed = 1;
};

std::string csv_escape(const std::string& s) { return "\"" + s + "\""; }

int verify(const VerifyArgs& a) {
  std::vector<NamedProblem> problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw Error(Status::parse_error, "verify: give problems (-p) or --file");
  std::string why;
  auto dev = query_device(a.device, &why);
  if (!dev) throw Error(Status::cuda_error, "verify needs a GPU: " + why);
  cuda::init_device(a.device);
  const ArchSpec arch = match_arch(default_arch_specs(), *dev);
  const std::string target = cuda::target_for_current_device();
  std::cerr << "verify: " << dev->name << " (" << arch.name << ", " << target << "), " << problems.size()
            << " problems\n";
  std::ofstream csv;
  if (!a.csv.empty()) {
    csv.open(a.csv);
    csv << "name,problem,config,ok,check,rel_l2,max_err,tol,unwritten,registers,spills,compile_s,median_us,iqr_us,"
           "reps,tflops,gbps,error\n";
  }
  run::VerifyOptions opt;
  opt.time = a.time;
  opt.seed = a.seed;
  // Choose the configs of every problem first, then compile every kernel in parallel (cached).
  std::vector<std::vector<KernelConfig>> chosen;
  for (const auto& np : problems) {
    std::vector<KernelConfig> configs;
    for (const auto& s : a.configs) {
      KernelConfig c = parse_config(s);
      if (Verdict v = legal(np.problem, c, arch); !v) {
        std::cerr << "skip " << s << ": illegal [" << v.rule << "] " << v.reason << "\n";
        continue;
      }
      configs.push_back(resolve(c, np.problem));
    }
    if (a.configs.empty()) {
      std::vector<KernelConfig> pool;
      for (const auto& e : Registry::default_registry().lookup(np.problem, arch))
        if (a.families.empty() ||
            std::find(a.families.begin(), a.families.end(), std::string(to_string(e.config.fam()))) != a.families.end())
          pool.push_back(e.config);
      std::mt19937_64 rng(a.seed ^ fnv1a64(to_string(np.problem)));
      if (!a.all && static_cast<int>(pool.size()) > a.max_configs) {
        std::shuffle(pool.begin(), pool.end(), rng);
        pool.resize(a.max_configs);
      }
      configs = pool;
    }
    chosen.push_back(configs);
  }
  std::vector<KernelSource> sources;
  for (std::size_t i = 0; i < problems.size(); ++i)
    for (const auto& c : chosen[i]) {
      try {
        for (auto& k : make_plan(problems[i].problem, c).kernels)
          if (std::none_of(sources.begin(), sources.end(), [&](const KernelSource& s) { return s.name == k.name; }))
            sources.push_back(std::move(k));
      } catch (const Error&) {
        // reported per pair below
      }
    }
  auto t0 = std::chrono::steady_clock::now();
  try {
    jit::compile_all(sources, target);
  } catch (const Error& e) {
    std::cerr << "verify: some kernels failed to compile (reported per pair): " << std::string(e.what()).substr(0, 200)
              << "\n";
  }
  std::cerr << "verify: " << sources.size() << " kernels ready in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  int pairs = 0, failed = 0;
  for (std::size_t pi = 0; pi < problems.size(); ++pi) {
    const auto& np = problems[pi];
    const auto& configs = chosen[pi];
    run::ProblemBench bench(np.problem, opt);
    for (const auto& c : configs) {
      auto r = bench.run(c, target);
      ++pairs;
      failed += !r.ok;
      std::printf("%-4s %-10s rel %.2e max %.2e%s %s | %s | %s%s\n", r.ok ? "ok" : "FAIL", r.check.c_str(), r.rel_l2,
                  r.max_err, r.unwritten ? (" unwritten " + std::to_string(r.unwritten)).c_str() : "",
                  r.median_us > 0 ? (std::to_string(r.median_us) + " us " + std::to_string(r.tflops) + " TF").c_str() : "",
                  r.problem.c_str(), r.config.c_str(), r.error.empty() ? "" : ("\n     error: " + r.error).c_str());
      std::fflush(stdout);
      if (csv.is_open())
        csv << csv_escape(np.name) << "," << csv_escape(r.problem) << "," << csv_escape(r.config) << "," << r.ok << ","
            << r.check << "," << r.rel_l2 << "," << r.max_err << "," << r.tol << "," << r.unwritten << ","
            << r.registers << "," << r.spills << "," << r.compile_s << "," << r.median_us << "," << r.iqr_us << ","
            << r.reps << "," << r.tflops << "," << r.gbps << "," << csv_escape(r.error.substr(0, 300)) << "\n";
    }
  }
  std::printf("%d passed, %d failed\n", pairs - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace

void add_verify_commands(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  auto* cmd = app.add_subcommand("verify", "run (problem, config) pairs on the GPU and check them against the fp64 "
                                           "CPU reference (random normal inputs, poisoned outputs)");
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("-c,--config", args->configs, "config string (repeatable; default: sample the legal pool)");
  cmd->add_option("--family", args->families, "only configs of this family (sm80, dw; repeatable)");
  cmd->add_option("-n,--max-configs", args->max_configs, "configs sampled per problem from the legal pool")
      ->capture_default_str();
  cmd->add_flag("--all", args->all, "every legal config of the pool");
  cmd->add_flag("--time", args->time, "also time each passing pair (cold L2, median of repeats)");
  cmd->add_option("--seed", args->seed, "random seed for inputs and sampling")->capture_default_str();
  cmd->add_option("--device", args->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--csv", args->csv, "write one row per pair to this CSV file");
  cmd->callback([args] {
    int rc = verify(*args);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tilepick::cli
