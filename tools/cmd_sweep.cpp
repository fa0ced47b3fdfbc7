// tilepick sweep: measure (problem x config) pairs on GPUs into raw record files; sweep merge;
// and the hidden sweep-worker that the sweep runs one of per GPU.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <iostream>

#include "commands.hpp"
#include "sweep/header.hpp"
#include "sweep/plan.hpp"
#include "sweep/supervisor.hpp"
#include "sweep/worker.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/jit.hpp"

namespace tilepick::cli {
namespace {

struct SweepArgs {
  std::vector<std::string> problems;
  std::string file, output, shard, arch, pairs;
  std::string gpus = "0";
  sweep::PlanOptions plan;
  sweep::BackendOptions backend;
  bool no_vendor = false, vendor_only = false, no_compile = false, quiet = false, verbose = false, dry_run = false;
  double launch_timeout = 10, setup_timeout = 300, time_limit = 0;
};

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error(Status::io_error, "sweep: cannot find its own executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::vector<int> parse_gpus(const std::string& text) {
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i < 64; ++i) {
      if (!query_device(i)) break;
      out.push_back(i);
    }
    if (out.empty()) throw Error(Status::cuda_error, "sweep --gpus all: no GPU found");
    return out;
  }
  std::vector<std::string> toks(1);
  for (char c : text) {
    if (c == ',') toks.emplace_back();
    else toks.back().push_back(c);
  }
  for (const auto& tok : toks) {
    try {
      std::size_t used = 0;
      int g = std::stoi(tok, &used);
      if (used != tok.size() || g < 0) throw std::invalid_argument("");
      out.push_back(g);
    } catch (const std::exception&) {
      throw ParseError(tok, "--gpus takes 'all' or a comma-separated list of device ordinals");
    }
  }
  return out;
}

std::vector<std::string> backend_args(const sweep::BackendOptions& b) {
  std::vector<std::string> a = {"--backend",      b.kind,
                                "--min-timed-ms", std::to_string(b.min_timed_ms),
                                "--min-reps",     std::to_string(b.min_reps),
                                "--max-reps",     std::to_string(b.max_reps),
                                "--prune",        std::to_string(b.prune),
                                "--graph-mb",     std::to_string(b.graph_mb),
                                "--graph-launches", std::to_string(b.graph_launches),
                                "--seed",         std::to_string(b.seed)};
  auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) a.insert(a.end(), {flag, v});
  };
  add("--fake-crash", b.fake_crash), add("--fake-hang", b.fake_hang), add("--fake-wrong", b.fake_wrong);
  if (b.fake_pair_ms > 0) add("--fake-pair-ms", std::to_string(b.fake_pair_ms));
  if (b.vendor_heuristic_only) a.push_back("--vendor-heuristic-only");
  return a;
}

void add_backend_options(CLI::App* cmd, sweep::BackendOptions& b) {
  cmd->add_option("--backend", b.kind, "gpu, or fake (hash timings, for testing the mechanics)")->capture_default_str();
  cmd->add_option("--min-timed-ms", b.min_timed_ms, "repeat until this much kernel time was timed")->capture_default_str();
  cmd->add_option("--min-reps", b.min_reps, "fewest timed repeats")->capture_default_str();
  cmd->add_option("--max-reps", b.max_reps, "most timed repeats")->capture_default_str();
  cmd->add_option("--prune", b.prune, "configs slower than this x the problem's best so far get --min-reps (0 = off)")
      ->capture_default_str();
  cmd->add_option("--graph-mb", b.graph_mb,
                  "time each region as a CUDA graph of as many launches as copies of the operands fit into this "
                  "many MiB (at most --graph-launches, at least 1); 0 = no graphs, one launch issued per region")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--graph-launches", b.graph_launches, "most launches (operand copies) in such a graph")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", b.seed, "random seed of the inputs (and of --sample)")->capture_default_str();
  cmd->add_flag("--vendor-heuristic-only", b.vendor_heuristic_only,
                "a vendor baseline checks and times the library's heuristic choice alone (its :heur record; the "
                "fastest-algorithm record comes out unsupported)");
  auto g = "Fault injection (fake backend)";
  cmd->add_option("--fake-crash", b.fake_crash, "fake backend: abort on items containing this")->group(g);
  cmd->add_option("--fake-hang", b.fake_hang, "fake backend: hang on items containing this")->group(g);
  cmd->add_option("--fake-wrong", b.fake_wrong, "fake backend: wrong output on items containing this")->group(g);
  cmd->add_option("--fake-pair-ms", b.fake_pair_ms, "fake backend: wall time per item")->group(g);
}

int run_sweep(SweepArgs a) {
  std::vector<NamedProblem> problems = gather_problems(a.problems, a.file);
  if (!a.pairs.empty())
    for (auto& np : sweep::load_pairs_file(a.pairs, &a.plan.pair_configs)) problems.push_back(std::move(np));
  if (problems.empty()) throw Error(Status::parse_error, "sweep: give problems (-p), --file or --pairs");
  if (a.output.empty()) throw Error(Status::parse_error, "sweep: give the record file (-o out.csv.gz)");
  env::Shard slurm = env::slurm_array_shard();
  if (!a.shard.empty()) sweep::parse_shard(a.shard, &a.plan.shard_index, &a.plan.shard_count);
  else if (slurm.count > 0) a.plan.shard_index = slurm.index, a.plan.shard_count = slurm.count;
  if (a.plan.shard_count > 1) a.output = sweep::shard_output_path(a.output, a.plan.shard_index, a.plan.shard_count);
  if (a.vendor_only && (a.no_vendor || !a.plan.configs.empty() || !a.pairs.empty()))
    throw Error(Status::parse_error, "sweep: --vendor-only measures the vendor baselines alone; it takes no "
                                     "--no-vendor, -c or --pairs");
  a.plan.vendor = !a.no_vendor;
  a.plan.vendor_only = a.vendor_only;
  a.plan.seed = a.backend.seed;
  std::vector<int> gpus = a.backend.kind == "fake" && a.gpus == "all" ? std::vector<int>{0} : parse_gpus(a.gpus);

  // The arch decides legality: the live device's spec, or --arch (fake backend, dry runs).
  ArchSpec arch;
  if (!a.arch.empty()) {
    arch = find_arch(default_arch_specs(), a.arch);
  } else {
    std::string why;
    auto dev = query_device(gpus[0], &why);
    if (!dev) throw Error(Status::cuda_error, "sweep: no GPU " + std::to_string(gpus[0]) + " (" + why + "); --arch names one for --backend fake or --dry-run");
    arch = match_arch(default_arch_specs(), *dev);
  }
  std::vector<std::string> notes;
  auto jobs = sweep::plan_jobs(problems, arch, a.plan, &notes);
  for (const auto& n : notes) std::cerr << "sweep: " << n << "\n";
  std::size_t planned = 0;
  for (const auto& j : jobs) planned += j.items.size();
  struct stat st {};
  if (::stat(a.output.c_str(), &st) == 0 && st.st_size > 0) {
    std::size_t done = sweep::drop_done(jobs, sweep::read_record_file(a.output));
    std::cerr << "sweep: resuming " << a.output << ": " << done << " of " << planned << " pairs already recorded\n";
  }
  std::size_t todo = 0;
  for (const auto& j : jobs) todo += j.items.size();
  std::cerr << "sweep: " << jobs.size() << " problems, " << todo << " pairs to measure on " << arch.name
            << (a.plan.shard_count > 1 ? " (shard " + std::to_string(a.plan.shard_index) + "/" +
                                             std::to_string(a.plan.shard_count) + ")"
                                       : "")
            << " -> " << a.output << "\n";
  if (a.dry_run) {
    for (const auto& j : jobs)
      for (const auto& i : j.items) std::cout << j.problem << "\t" << i << "\n";
    return 0;
  }
  if (jobs.empty()) return 0;

  if (a.backend.kind == "gpu" && !a.no_compile) {
    auto sources = sweep::kernel_sources(jobs);
    auto t0 = std::chrono::steady_clock::now();
    try {
      jit::compile_all(sources, arch.jit_target);
    } catch (const Error& e) {
      std::cerr << "sweep: some kernels failed to compile (recorded per pair): "
                << std::string(e.what()).substr(0, 300) << "\n";
    }
    std::cerr << "sweep: " << sources.size() << " kernels compiled or cached in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  }

  nlohmann::json options = {{"problems_file", a.file},     {"arch", arch.name},
                            {"backend", a.backend.kind},   {"sample", a.plan.sample},
                            {"seed", a.backend.seed},      {"min_timed_ms", a.backend.min_timed_ms},
                            {"min_reps", a.backend.min_reps}, {"max_reps", a.backend.max_reps},
                            {"prune", a.backend.prune},    {"launch_timeout_s", a.launch_timeout},
                            {"graph_mb", a.backend.graph_mb}, {"graph_launches", a.backend.graph_launches},
                            {"spaces", a.plan.spaces},     {"families", a.plan.families},
                            {"gpus", gpus},                {"inject_faults", a.plan.inject_faults},
                            {"repeat", a.plan.repeat},     {"time_limit_s", a.time_limit},
                            {"pairs_file", a.pairs},       {"vendor", a.vendor_only ? "only" : a.no_vendor ? "off" : "on"},
                            {"vendor_heuristic_only", a.backend.vendor_heuristic_only}};
  sweep::SupervisorOptions so;
  so.output = a.output;
  so.gpus = gpus;
  so.worker_exe = self_exe();
  so.worker_args = backend_args(a.backend);
  so.launch_timeout_s = a.launch_timeout;
  so.setup_timeout_s = a.setup_timeout;
  so.time_limit_s = a.time_limit;
  so.header = sweep::sweep_header(options);
  if (a.plan.shard_count > 1)
    so.header["shard"] = std::to_string(a.plan.shard_index) + "/" + std::to_string(a.plan.shard_count);
  so.progress = !a.quiet;
  so.verbose = a.verbose;
  auto s = sweep::run_supervisor(jobs, so);
  std::fprintf(stderr,
               "sweep: %zu pairs (%zu records) in %.1f s, %.1f pairs/s: ok %zu, wrong %zu, crash %zu, timeout %zu, "
               "error %zu, unsupported %zu; %zu worker restarts%s -> %s\n",
               s.pairs, s.records, s.seconds, s.seconds > 0 ? s.pairs / s.seconds : 0.0, s.ok, s.wrong, s.crash,
               s.timeout, s.error, s.unsupported, s.restarts, s.interrupted ? "; INTERRUPTED (re-run to resume)" : "",
               a.output.c_str());
  return s.interrupted ? 130 : 0;
}

}  // namespace

void add_sweep_commands(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "measure every legal config (or a sample, or -c configs) on every problem "
                                          "on GPUs, verified, with vendor baselines, into a record file");
  cmd->add_option("-p,--problem", args->problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", args->file, "problem file");
  cmd->add_option("-o,--output", args->output, "record file (.csv.gz); an existing one is resumed");
  cmd->add_option("-c,--config", args->plan.configs, "config string (repeatable; default: the legal pool)");
  cmd->add_option("--pairs", args->pairs, "'problem|config' lines, plain or gzip (tilepick search --out): those "
                                          "configs on those problems");
  cmd->add_option("--space", args->plan.spaces, "only configs of this space: a default space's name or a .json space file such as a trial space (repeatable)");
  cmd->add_option("--family", args->plan.families, "only configs of this family (repeatable)");
  cmd->add_option("--sample", args->plan.sample, "measure this many configs per problem (seeded; 0 = all)")
      ->capture_default_str();
  cmd->add_flag("--no-vendor", args->no_vendor, "skip the cuBLASLt / cuDNN baselines");
  cmd->add_flag("--vendor-only", args->vendor_only, "measure only the cuBLASLt / cuDNN baselines, no tilepick configs");
  cmd->add_option("--gpus", args->gpus, "device ordinals, comma-separated, or 'all': one worker per GPU")
      ->capture_default_str();
  cmd->add_option("--shard", args->shard, "i/n: measure every n-th problem from the i-th (default: Slurm array "
                                          "task, else all); the output name gets .shardIofN");
  cmd->add_option("--arch", args->arch, "arch spec for legality instead of the live device (fake backend, dry run)");
  cmd->add_option("--launch-timeout", args->launch_timeout, "seconds without progress on one item before the worker "
                                                            "is killed and restarted")->capture_default_str();
  cmd->add_option("--setup-timeout", args->setup_timeout, "seconds for worker start-up and per-problem setup")
      ->capture_default_str();
  cmd->add_option("--time-limit", args->time_limit, "stop after this many seconds (records kept; re-run resumes)");
  cmd->add_option("--repeat", args->plan.repeat, "measure every pair this many times, in later passes "
                                                  "(repeatability checks; resume treats a pair as done once)")
      ->capture_default_str();
  cmd->add_option("--inject-fault", args->plan.inject_faults,
                  "add a trapping (trap) or hanging (hang) kernel to the first problems (repeatable)");
  cmd->add_flag("--no-compile", args->no_compile, "skip the parallel compile phase (workers compile on demand)");
  cmd->add_flag("--dry-run", args->dry_run, "print the pairs that would be measured");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress line");
  cmd->add_flag("-v,--verbose", args->verbose, "forward the workers' stderr");
  add_backend_options(cmd, args->backend);

  auto margs = std::make_shared<std::pair<std::vector<std::string>, std::string>>();
  auto allow_mixed = std::make_shared<bool>(false);
  auto* merge = cmd->add_subcommand("merge", "merge record files (shards, hosts) into one");
  merge->add_option("inputs", margs->first, "record files")->required();
  merge->add_option("-o,--output", margs->second, "merged record file (must not exist)")->required();
  merge->add_flag("--allow-mixed", *allow_mixed, "merge files recorded on different device names");
  merge->callback([margs, allow_mixed] {
    auto s = sweep::merge_record_files(margs->first, margs->second, *allow_mixed);
    std::cerr << "sweep merge: " << s.inputs << " files, " << s.records << " records (" << s.duplicates
              << " duplicates resolved) -> " << margs->second << "\n";
  });
  cmd->require_subcommand(0, 1);
  cmd->callback([args, merge] {
    if (merge->parsed()) return;
    int rc = run_sweep(*args);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });

  auto wopt = std::make_shared<sweep::BackendOptions>();
  auto* worker = app.add_subcommand("sweep-worker", "");  // hidden: started by tilepick sweep
  worker->group("");
  worker->add_option("--gpu", wopt->gpu, "device ordinal");
  add_backend_options(worker, *wopt);
  worker->callback([wopt] {
    int rc = sweep::run_worker(*wopt);
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace tilepick::cli
