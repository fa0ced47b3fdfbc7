// tilepick vendor list|check: the cuBLASLt / cuDNN baselines of problems, listed, or run against
// the fp64 CPU reference (and timed) with the same machinery as `tilepick verify`.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "run/vendor.hpp"
#include "run/verify.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/jit.hpp"

namespace tilepick::cli {
namespace {

namespace vendor = run::vendor;

struct VendorArgs {
  std::vector<std::string> problems;
  std::string file, csv;
  int max_problems = 0;
  int device = 0;
  bool time = false;
  std::uint64_t seed = 1;
};

std::vector<NamedProblem> problems_of(const VendorArgs& a, const char* cmd) {
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw Error(Status::parse_error, std::string("vendor ") + cmd + ": give problems (-p) or --file");
  if (a.max_problems > 0 && static_cast<int>(problems.size()) > a.max_problems) problems.resize(a.max_problems);
  std::string why;
  auto dev = query_device(a.device, &why);
  if (!dev) throw Error(Status::cuda_error, std::string("vendor ") + cmd + " needs a GPU: " + why);
  cuda::init_device(a.device);
  std::cerr << "vendor: " << dev->name << ", " << problems.size() << " problems\n";
  for (auto lib : {vendor::Lib::cublaslt, vendor::Lib::cudnn}) {
    const auto& info = vendor::library(lib);
    std::cerr << "  " << vendor::lib_name(lib) << ": "
              << (info.loaded ? info.version + " from " + info.path : "unavailable: " + info.error) << "\n";
  }
  return problems;
}

std::string marks(const vendor::VendorSet& s, int i) {
  std::string m;
  if (i == s.heuristic_index()) m += " [heuristic]";
  if (i == s.find_index()) m += " [find]";
  return m;
}

// The reason with the problem text taken out, so that reasons group across problems.
std::string reason_kind(std::string why, const std::string& problem) {
  for (std::size_t at; (at = why.find(problem)) != std::string::npos;) why.replace(at, problem.size(), "<problem>");
  return why;
}

int list(const VendorArgs& a) {
  for (const auto& np : problems_of(a, "list")) {
    const std::string text = to_string(np.problem);
    std::printf("%s%s\n", np.name.empty() ? "" : (np.name + ": ").c_str(), text.c_str());
    std::string why;
    auto set = vendor::VendorSet::create(np.problem, &why);
    if (!set) {
      std::printf("  unsupported: %s\n", why.c_str());
      continue;
    }
    for (int i = 0; i < static_cast<int>(set->algos().size()); ++i) {
      const auto& al = set->algos()[i];
      std::printf("  %2d %-44s ws %9zu  %s%s\n", i, al.name.c_str(), al.workspace_bytes, al.detail.c_str(),
                  marks(*set, i).c_str());
    }
  }
  return 0;
}

int check(const VendorArgs& a) {
  auto problems = problems_of(a, "check");
  std::ofstream csv;
  if (!a.csv.empty()) {
    csv.open(a.csv);
    csv << "name,problem,library,algo,heuristic,find,ok,check,rel_l2,max_err,tol,unwritten,workspace,median_us,"
           "iqr_us,reps,tflops,gbps,error\n";
  }
  run::VerifyOptions opt;
  opt.time = a.time;
  opt.seed = a.seed;
  int supported = 0, algos = 0, failed = 0;
  std::map<std::string, int> unsupported;  // reason -> problems
  std::vector<double> heuristic_eff, find_eff;  // best time / chosen time
  for (const auto& np : problems) {
    const std::string text = to_string(np.problem);
    std::string why;
    std::unique_ptr<vendor::VendorSet> set;
    try {
      set = vendor::VendorSet::create(np.problem, &why);
    } catch (const Error& e) {
      why = std::string("error: ") + e.what();
    }
    if (!set) {
      std::printf("skip %s\n     unsupported: %s\n", text.c_str(), why.c_str());
      ++unsupported[reason_kind(why, text)];
      continue;
    }
    ++supported;
    run::ProblemBench bench(np.problem, opt);
    std::vector<double> us(set->algos().size(), 0);
    for (int i = 0; i < static_cast<int>(set->algos().size()); ++i) {
      const auto& al = set->algos()[i];
      auto r = bench.run([&](const Operands& ops, void* stream) { set->run(i, ops, ops.workspace, stream); }, al.name,
                         al.workspace_bytes);
      ++algos;
      failed += !r.ok;
      us[i] = r.median_us;
      std::printf("%-4s %-10s rel %.2e max %.2e%s %s | %s | %s%s%s\n", r.ok ? "ok" : "FAIL", r.check.c_str(), r.rel_l2,
                  r.max_err, r.unwritten ? (" unwritten " + std::to_string(r.unwritten)).c_str() : "",
                  r.median_us > 0 ? (std::to_string(r.median_us) + " us " + std::to_string(r.tflops) + " TF").c_str() : "",
                  text.c_str(), al.name.c_str(), marks(*set, i).c_str(),
                  r.error.empty() ? "" : ("\n     error: " + r.error).c_str());
      std::fflush(stdout);
      if (csv.is_open())
        csv << "\"" << np.name << "\",\"" << text << "\"," << set->library_name() << ",\"" << al.name << "\","
            << (i == set->heuristic_index()) << "," << (i == set->find_index()) << "," << r.ok << "," << r.check << ","
            << r.rel_l2 << "," << r.max_err << "," << r.tol << "," << r.unwritten << "," << al.workspace_bytes << ","
            << r.median_us << "," << r.iqr_us << "," << r.reps << "," << r.tflops << "," << r.gbps << ",\""
            << r.error.substr(0, 300) << "\"\n";
    }
    if (a.time) {
      double best = 0;
      for (double t : us)
        if (t > 0 && (best == 0 || t < best)) best = t;
      auto eff = [&](int i, std::vector<double>& into) {
        if (best > 0 && i >= 0 && us[i] > 0) into.push_back(best / us[i]);
      };
      eff(set->heuristic_index(), heuristic_eff);
      eff(set->find_index(), find_eff);
    }
  }
  std::printf("vendor check: %zu problems, %d with algorithms, %zu unsupported; %d algorithms: %d passed, %d failed\n",
              problems.size(), supported, problems.size() - supported, algos, algos - failed, failed);
  for (const auto& [reason, n] : unsupported) std::printf("  unsupported x%d: %s\n", n, reason.c_str());
  auto summary = [](const char* what, std::vector<double> v) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    double mean = 0;
    for (double x : v) mean += x;
    std::printf("  %s pick vs best of its set: mean %.1f%%, P10 %.1f%%, min %.1f%% (%zu problems)\n", what,
                100 * mean / v.size(), 100 * v[v.size() / 10], 100 * v.front(), v.size());
  };
  summary("heuristic", heuristic_eff);
  summary("find", find_eff);
  return failed ? 1 : 0;
}

void add_common(CLI::App* cmd, VendorArgs& a) {
  cmd->add_option("-p,--problem", a.problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", a.file, "problem file");
  cmd->add_option("-n,--max-problems", a.max_problems, "only the first N problems (0 = all)")->capture_default_str();
  cmd->add_option("--device", a.device, "CUDA device ordinal")->capture_default_str();
}

}  // namespace

void add_vendor_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("vendor", "cuBLASLt (GEMM) and cuDNN (conv) baselines, loaded at run time");
  cmd->require_subcommand(1);
  auto list_args = std::make_shared<VendorArgs>();
  auto* ls = cmd->add_subcommand("list", "the vendor algorithms of problems, with the heuristic and find choices");
  add_common(ls, *list_args);
  ls->callback([list_args] { list(*list_args); });
  auto check_args = std::make_shared<VendorArgs>();
  auto* ck = cmd->add_subcommand("check", "run every vendor algorithm on random inputs against the fp64 CPU "
                                          "reference (poisoned outputs); unsupported problems are reported");
  add_common(ck, *check_args);
  ck->add_flag("--time", check_args->time, "also time each passing algorithm (cold L2, median of repeats)");
  ck->add_option("--seed", check_args->seed, "random seed for inputs")->capture_default_str();
  ck->add_option("--csv", check_args->csv, "write one row per algorithm to this CSV file");
  ck->callback([check_args] {
    int rc = check(*check_args);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tilepick::cli
