// tilepick plan: what the dispatcher chooses for a problem (offline with --arch, or on the GPU).
// tilepick run: plan, compile, run on the GPU, check against the fp64 GPU reference, time with the
// cold-L2 rule, and the vendor library's heuristic choice side by side.
#include <optional>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ref/gpu_ref.hpp"
#include "run/timing.hpp"
#include "run/vendor.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::cli {
namespace {

struct PlanArgs {
  std::vector<std::string> problems;
  std::string file;
  std::string policy, strategy = "auto", config, vendor, arch, cache;
  int k = 4, device = -1;
  std::optional<double> auto_time_us;
  bool json = false;
  // run only
  double min_timed_ms = 20;
  std::uint64_t seed = 1;
  bool no_vendor_compare = false;
};

PlanOptions options(const PlanArgs& a) {
  PlanOptions o;
  if (!a.policy.empty()) o.policy = parse_policy(a.policy);
  auto s = parse_strategy(a.strategy);
  if (!s) throw InvalidArgument("--strategy '" + a.strategy + "' is not one of " + strategy_names());
  o.strategy = *s;
  o.k = a.k;
  o.auto_time_us = a.auto_time_us;
  o.config = a.config;
  if (!a.vendor.empty()) {
    auto v = parse_vendor_mode(a.vendor);
    if (!v) throw InvalidArgument("--vendor '" + a.vendor + "' is not one of off, auto, only");
    o.vendor = *v;
  }
  o.device = a.device;
  o.offline_arch = a.arch;
  return o;
}

void print_plan(const NamedProblem& np, const Plan& plan) {
  const PlanInfo& i = plan.info();
  std::cout << "# " << (np.name.empty() ? "" : np.name + ": ") << i.problem << "\n"
            << "kernel      " << i.kernel << (i.vendor ? "  (vendor)" : "") << "\n"
            << "policy      " << i.policy << ", from "
            << i.selection_source << "\n"
            << "target      " << i.arch << ", " << i.device_name
            << (i.device >= 0 ? " (device " + std::to_string(i.device) + ")" : "") << ", model " << i.model_version
            << "\n"
            << "plan        " << i.cache << ", " << fmt(i.plan_seconds * 1e3, "%.2f") << " ms, " << i.pool_size
            << " legal candidates, workspace " << i.workspace_bytes << " bytes\n";
  for (const auto& c : i.candidates)
    std::cout << "  " << (c.kernel == i.kernel ? "* " : "  ") << fmt(c.score, "%-10.4g") << " "
              << (c.time_us >= 0 ? fmt(c.time_us, "%10.3f us") : std::string(13 - std::min<std::size_t>(13, c.status.size()), ' ') + c.status)
              << "  " << c.kernel << "\n";
}

std::unique_ptr<Dispatcher> own_dispatcher(const PlanArgs& a) {
  if (a.cache.empty()) return nullptr;
  return std::make_unique<Dispatcher>(Selector::default_selector(), a.cache);
}

void run_plan(const PlanArgs& a) {
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw InvalidArgument("plan: give --problem or --file");
  auto own = own_dispatcher(a);
  Dispatcher& d = own ? *own : Dispatcher::default_dispatcher();
  const PlanOptions o = options(a);
  nlohmann::json all = nlohmann::json::array();
  for (std::size_t n = 0; n < problems.size(); ++n) {
    auto plan = d.plan(problems[n].problem, o);
    if (a.json) all.push_back(to_json(plan->info()));
    else {
      if (n) std::cout << "\n";
      print_plan(problems[n], *plan);
    }
  }
  if (a.json) std::cout << all.dump(1) << "\n";
}

// ---- run ----

struct Measured {
  bool ok = false;
  std::string note;
  double us = NAN;
};

Measured check_and_time(const Problem& p, const std::function<void(void* stream)>& issue, const Operands& ops,
                        const void* ref_f64, std::int64_t l2_bytes, double min_timed_ms) {
  namespace gpu = ref::gpu;
  Measured m;
  // The caller poisoned the output (0xff bytes = NaN in every float type): unwritten elements fail.
  issue(nullptr);  // warm-up and output
  cuda::synchronize();
  const auto c = gpu::check(p, ops.d, ref_f64);
  m.ok = c.ok;
  m.note = "rel_l2 " + fmt(c.rel_l2, "%.2e") + " (tol " + fmt(c.tol, "%.1e") + ")";
  if (!c.ok) return m;
  cuda::DeviceBuffer flush = run::l2_flush_buffer(l2_bytes);
  cuda::Timer timer;
  const run::TimedLaunch launch = run::timed_launch(issue);  // a graph: the host's issue cost is not timed
  const std::function<void()> once = [&] { launch(); };
  const double first = run::time_cold_us(once, flush, timer, 1);
  const int reps = std::clamp(static_cast<int>(std::ceil(min_timed_ms * 1e3 / std::max(first, 1.0))), 5, 200);
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) us.push_back(run::time_cold_us(once, flush, timer, static_cast<unsigned char>(i)));
  m.us = run::summarize_times(us).median_us;
  return m;
}

int run_run(const PlanArgs& a) {
  namespace gpu = ref::gpu;
  auto problems = gather_problems(a.problems, a.file);
  if (problems.empty()) throw InvalidArgument("run: give --problem or --file");
  if (!a.arch.empty()) throw InvalidArgument("run: --arch plans offline; run needs the GPU (leave --arch out)");
  auto own = own_dispatcher(a);
  Dispatcher& d = own ? *own : Dispatcher::default_dispatcher();
  const PlanOptions o = options(a);
  int failures = 0;
  std::cout << "problem | kernel | check | time_us | TFLOP/s | vendor | vendor_us | speedup\n";
  for (const auto& np : problems) {
    const Problem& p = np.problem;
    auto plan = d.plan(p, o);
    const int dev = plan->info().device;
    cuda::init_device(dev);
    const auto props = query_device(dev);
    const std::int64_t l2 = props ? props->l2_bytes : 0;
    std::vector<cuda::DeviceBuffer> inputs;
    Operands ops;
    for (const auto& t : gpu::input_tensors(p)) {
      auto& buf = inputs.emplace_back(std::max<std::size_t>(t.elems * size_bytes(t.dtype), 1));
      gpu::fill_input(buf.get(), t, a.seed);
      gpu::bind(ops, t.slot, buf.get());
    }
    const std::size_t out_bytes = gpu::output_elems(p) * static_cast<std::size_t>(size_bytes(gpu::output_dtype(p)));
    cuda::DeviceBuffer out(std::max<std::size_t>(out_bytes, 1)), ref(std::max<std::size_t>(gpu::output_elems(p) * 8, 1));
    ops.d = out.get();
    gpu::GpuReference(p, cuda::target_for_current_device()).compute(ops, ref.get());
    cuda::DeviceBuffer ws(std::max<std::size_t>(plan->workspace_bytes(), 1));
    ops.workspace = plan->workspace_bytes() ? ws.get() : nullptr;
    out.fill_bytes(0xff);
    const Measured mine = check_and_time(p, [&](void* stream) { plan->run(ops, stream); }, ops, ref.get(), l2, a.min_timed_ms);
    failures += !mine.ok;
    const double flops = std::holds_alternative<GemmProblem>(p) ? std::get<GemmProblem>(p).flops()
                                                                : std::get<ConvProblem>(p).flops();
    std::string vname = "-", vus = "-", speed = "-";
    if (!a.no_vendor_compare && !plan->info().vendor) {
      std::string why;
      auto set = run::vendor::VendorSet::create(p, &why, /*cudnn_find=*/false);  // the heuristic choice alone
      if (set) {
        const int h = set->heuristic_index();
        cuda::DeviceBuffer vws(std::max<std::size_t>(set->algos()[h].workspace_bytes, 1));
        out.fill_bytes(0xff);
        const Measured v = check_and_time(p, [&](void* stream) { set->run(h, ops, vws.get(), stream); }, ops, ref.get(), l2, a.min_timed_ms);
        vname = set->algos()[h].name;
        vus = v.ok ? fmt(v.us, "%.3f") : "wrong";
        if (v.ok && mine.ok) speed = fmt(v.us / mine.us, "%.3fx");
      } else {
        vname = "unsupported";
      }
    }
    std::cout << (np.name.empty() ? "" : np.name + ": ") << plan->info().problem << " | " << plan->info().kernel << " | "
              << (mine.ok ? "ok " : "WRONG ") << mine.note << " | " << (mine.ok ? fmt(mine.us, "%.3f") : "-") << " | "
              << (mine.ok ? fmt(flops / (mine.us * 1e-6) / 1e12, "%.1f") : "-") << " | " << vname << " | " << vus
              << " | " << speed << "\n";
  }
  return failures;
}

void add_common(CLI::App* cmd, PlanArgs& a) {
  cmd->add_option("-p,--problem", a.problems, "problem string (repeatable)");
  cmd->add_option("-f,--file", a.file, "problem file");
  auto* policy = cmd->add_option("--policy", a.policy,
                                 "what is timed on first use and whether vendor libraries take part: " + policy_help() +
                                     " (default: TILEPICK_POLICY, else auto; docs/dispatch.md)");
  auto* strategy = cmd->add_option("--strategy", a.strategy,
                  "shorthand for --policy PRESET: auto (top_k where the model's top-1 is estimated long, see "
                  "--auto-time-us; else heuristic) | heuristic | top_k | exhaustive | fixed | race (the model's top-1 "
                  "against the vendor's heuristic kernel, timed)")->capture_default_str();
  auto* k = cmd->add_option("-k", a.k, "the policy's k: top_k (and auto where it times): candidates timed")->capture_default_str();
  auto* limit = cmd->add_option("--auto-time-us", a.auto_time_us,
                  "the auto policy's time_us: time the plans whose first choice the analytic model estimates at >= "
                  "this many us (default: TILEPICK_POLICY's, else 100)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--config", a.config, "fixed: a config string or a vendor algorithm (cublaslt:algo0)");
  auto* vendor = cmd->add_option("--vendor", a.vendor, "the policy's vendor: off | auto | only (default: TILEPICK_POLICY's, else auto)");
  policy->excludes(strategy)->excludes(k)->excludes(limit)->excludes(vendor);
  cmd->add_option("--device", a.device, "CUDA device ordinal (default: current, else 0)");
  cmd->add_option("--cache", a.cache, "plan-cache JSON file (default: TILEPICK_PLAN_CACHE)");
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto pa = std::make_shared<PlanArgs>();
  auto* plan = app.add_subcommand("plan", "what the dispatcher picks for a problem: kernel, candidates, cache origin "
                                          "(offline with --arch, else on the GPU)");
  add_common(plan, *pa);
  plan->add_option("--arch", pa->arch, "plan offline (selection only, no GPU) for this arch spec, e.g. h200");
  plan->add_flag("--json", pa->json, "print the plans as JSON");
  plan->callback([pa] { run_plan(*pa); });

  auto ra = std::make_shared<PlanArgs>();
  auto* run = app.add_subcommand("run", "plan, compile and run problems on the GPU; check against the fp64 reference, "
                                        "time (cold L2) and compare with the vendor library's heuristic choice");
  add_common(run, *ra);
  run->add_option("--min-timed-ms", ra->min_timed_ms, "time each kernel at least this long")->capture_default_str();
  run->add_option("--seed", ra->seed, "input values")->capture_default_str();
  run->add_flag("--no-vendor", ra->no_vendor_compare, "skip the vendor comparison");
  run->callback([ra] {
    if (int failures = run_run(*ra); failures > 0)
      throw Error(Status::internal, std::to_string(failures) + " problem(s) failed the output check");
  });
}

}  // namespace tilepick::cli
