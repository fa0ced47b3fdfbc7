// Dispatcher: makes plans (selection, optional timing on the device, compilation) and caches them.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "dispatch/plan_cache.hpp"
#include "dispatch/plan_impl.hpp"
#include "sweep/backend.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {

namespace {

// Why the heuristic runs the vendor for a selection whose vendor choice picked it.
std::string vendor_choice_text(const Selection& sel) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", std::exp(-sel.vendor_log_ratio));
  return " (vendor choice of " + sel.source + ": predicted " + ratio + "x faster than its pick)";
}

struct Target {
  ArchSpec arch;
  int device = -1;          // -1: offline
  std::string device_name;  // "offline" when offline
};

// Makes `device`'s primary context current for a scope, restoring the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    prev_ = cuda::current_device();
    if (prev_ != device) cuda::init_device(device);
  }
  ~DeviceScope() {
    if (prev_ >= 0 && prev_ != cuda::current_device()) cuda::init_device(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = -1;
};

// The vendor library is loaded and can express the problem (no library call besides loading it);
// otherwise the reason goes to *why.
std::string vendor_unsupported(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return run::vendor::cublaslt_unsupported(*g);
  return run::vendor::cudnn_unsupported(std::get<ConvProblem>(p));
}

bool vendor_can(const Problem& p, std::string* why = nullptr) {
  std::string no = vendor_unsupported(p);
  if (no.empty()) {
    const auto& lib = run::vendor::library(std::holds_alternative<GemmProblem>(p) ? run::vendor::Lib::cublaslt
                                                                                  : run::vendor::Lib::cudnn);
    if (!lib.loaded) no = lib.error;
  }
  if (why) *why = no;
  return no.empty();
}

bool is_vendor_kernel(const std::string& k) { return k.rfind("cublaslt:", 0) == 0 || k.rfind("cudnn:", 0) == 0; }
std::string vendor_lib(const Problem& p) { return std::holds_alternative<GemmProblem>(p) ? "cublaslt" : "cudnn"; }

}  // namespace

namespace {

Policy resolve(const PlanOptions& opt, bool check_replaced) {
  if (opt.auto_time_us && !(*opt.auto_time_us >= 0))
    throw InvalidArgument("PlanOptions::auto_time_us must be >= 0 (+infinity: never time), got " +
                          std::to_string(*opt.auto_time_us));
  if (opt.policy) {
    if (opt.strategy != Strategy::automatic || opt.k != 4 || opt.auto_time_us || opt.vendor)
      throw InvalidArgument("PlanOptions::policy ('" + to_string(*opt.policy) +
                            "') is given with strategy, k, auto_time_us or vendor set: give the policy alone");
    Policy pol = normalized(*opt.policy);
    validate(pol);
    return pol;
  }
  Policy pol = environment_policy(check_replaced);
  if (opt.strategy != Strategy::automatic) {  // another preset, the environment's vendor choices kept
    Policy preset = policy_preset(opt.strategy);
    preset.vendor = pol.vendor, preset.vendor_choice = pol.vendor_choice;
    pol = preset;
  }
  if (opt.k != 4) pol.k = opt.k;
  if (opt.auto_time_us && pol.preset == Strategy::automatic) pol.time_us = *opt.auto_time_us;
  if (opt.vendor) pol.vendor = *opt.vendor;
  pol = normalized(pol);
  validate(pol);
  return pol;
}

}  // namespace

Policy resolve_policy(const PlanOptions& opt) { return resolve(opt, true); }

namespace {

// The policy's part of a plan-cache key: what changes the plan it makes (the vendor mode is a key of its own).
std::string strategy_key(const Policy& pol, const PlanOptions& opt) {
  std::string key(to_string(pol.preset));
  if (pol.preset == Strategy::top_k || pol.preset == Strategy::automatic) key += std::to_string(pol.k);
  if (pol.preset == Strategy::automatic || pol.time_us > 0) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "@%g", pol.time_us);
    key += limit;
  }
  if (!pol.vendor_choice) key += "~vendor_choice=off";
  if (pol.preset == Strategy::fixed) key += "=" + opt.config;
  return key;
}

void check_options(const PlanOptions& opt, const Policy& pol) {
  validate(pol);
  if (pol.preset == Strategy::fixed && opt.config.empty())
    throw InvalidArgument("strategy fixed needs PlanOptions::config (a config string or a vendor algorithm name)");
  if (pol.preset != Strategy::fixed && !opt.config.empty())
    throw InvalidArgument("PlanOptions::config is only used by strategy fixed, not " +
                          std::string(to_string(pol.preset)));
  if (!opt.offline_arch.empty() &&
      (pol.preset == Strategy::top_k || pol.preset == Strategy::exhaustive || pol.preset == Strategy::race))
    throw InvalidArgument("strategy " + std::string(to_string(pol.preset)) +
                          " times kernels on a GPU and cannot plan offline (offline_arch '" + opt.offline_arch + "')");
}

// The vendor algorithm index of a set by name ("cublaslt:algo2"), -1 when absent.
int vendor_index(const run::vendor::VendorSet& set, const std::string& name) {
  for (std::size_t i = 0; i < set.algos().size(); ++i)
    if (set.algos()[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

namespace {

// Every input of a plan's memory key as values (the problem, the options with the environment's defaults
// resolved, the device), so that a plan already made is found without building the key's strings: the same
// HitKey always makes the same string key within one dispatcher.
struct HitKey {
  Problem problem;
  Policy policy;            // resolved
  int device = -1;          // resolved; -1 offline
  std::string config, offline_arch;
  bool operator==(const HitKey&) const = default;
};

struct HitKeyHash {
  std::size_t operator()(const HitKey& h) const {  // a few fields; operator== compares them all
    std::size_t x = h.problem.index() * 1000003u + static_cast<std::size_t>(h.policy.preset) * 31u +
                    static_cast<std::size_t>(h.device + 1) * 7u + static_cast<std::size_t>(h.policy.vendor);
    auto mix = [&x](std::int64_t v) { x = (x ^ static_cast<std::size_t>(v)) * 0x100000001b3ull; };
    if (const auto* g = std::get_if<GemmProblem>(&h.problem)) mix(g->m), mix(g->n), mix(g->k), mix(g->batch);
    if (const auto* c = std::get_if<ConvProblem>(&h.problem))
      for (std::int64_t v : {c->n, c->c, c->k, c->g, c->in[0], c->in[1], c->in[2], c->filter[1], c->stride[1]}) mix(v);
    return x;
  }
};

}  // namespace

struct Dispatcher::State {
  const Selector* selector = nullptr;
  std::string file;
  mutable std::mutex mutex;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const Plan>>> plans;  // memory key
  struct Hit {
    std::shared_future<std::shared_ptr<const Plan>> plan;
    std::string key;  // its memory key in `plans`
  };
  std::unordered_map<HitKey, Hit, HitKeyHash> hits;  // the same plans, by value
  std::map<int, Target> targets;                                                             // by ordinal
  PlanCacheFile disk;
  bool disk_loaded = false;
  PlanCacheStats stats;

  Target target(const PlanOptions& opt);
  std::shared_ptr<Plan::Impl> build(const Problem& p, const PlanOptions& opt, const Policy& pol, const Target& t,
                                    const std::string& model_version, const PlanCacheEntry* entry);
  void finish_runnable(Plan::Impl& im, const Target& t, const std::string& kernel, bool vendor);
  std::vector<Candidate> time_candidates(const Problem& p, const Target& t, const std::vector<std::string>& configs,
                                         bool with_vendor, bool vendor_heuristic_only);
  std::vector<Candidate> fastest_first(const Problem& p, const Target& t, const std::vector<std::string>& configs,
                                       bool with_vendor, bool vendor_heuristic_only, const PlanInfo& info);
  std::vector<Candidate> timed_fastest_first(const Problem& p, const Target& t,
                                             const std::vector<std::string>& configs, bool with_vendor,
                                             bool vendor_heuristic_only, const PlanInfo& info);
  std::string vendor_heuristic_failure(const Problem& p, const Target& t);
};

namespace {

// The CUDA ordinal a plan is for (-1 offline).
int plan_device(const PlanOptions& opt) {
  if (!opt.offline_arch.empty()) return -1;
  std::string why;
  if (!cuda::driver_available(&why))
    throw Error(Status::cuda_error, "plan: no CUDA driver (" + why + "); set offline_arch to plan without a GPU");
  const int dev = opt.device >= 0 ? opt.device : cuda::current_device();
  return dev < 0 ? 0 : dev;
}

HitKey hit_key(const Problem& p, const PlanOptions& opt) {
  return {p, resolve(opt, false), plan_device(opt), opt.config, opt.offline_arch};  // checked where the plan was made
}

}  // namespace

Target Dispatcher::State::target(const PlanOptions& opt) {
  if (!opt.offline_arch.empty()) return {find_arch(default_arch_specs(), opt.offline_arch), -1, "offline"};
  std::string why;
  const int dev = plan_device(opt);
  std::lock_guard lock(mutex);
  if (auto it = targets.find(dev); it != targets.end()) return it->second;
  auto props = query_device(dev, &why);
  if (!props) throw Error(Status::cuda_error, "plan: device " + std::to_string(dev) + ": " + why);
  return targets.emplace(dev, Target{match_arch(default_arch_specs(), *props), dev, props->name}).first->second;
}

std::vector<Candidate> Dispatcher::State::time_candidates(const Problem& p, const Target& t,
                                                          const std::vector<std::string>& configs, bool with_vendor,
                                                          bool vendor_heuristic_only) {
  std::vector<KernelSource> srcs;
  for (const auto& c : configs)
    for (auto& k : make_plan(p, parse_config(c)).kernels) srcs.push_back(std::move(k));
  jit::compile_all(srcs, t.arch.jit_target);  // in parallel, into the caches, before any timing

  sweep::BackendOptions bo;
  bo.gpu = t.device;
  bo.min_timed_ms = 2, bo.min_reps = 3, bo.max_reps = 20, bo.prune = 3;
  bo.pruned_reps = 0;  // a candidate 3x slower than the best so far cannot win: its first cold-L2 timing stands
  bo.graph_mb = 64;  // operand copies for graph timing of small problems: at most 64 MiB on the user's GPU
  bo.vendor_heuristic_only = vendor_heuristic_only;
  bo.vendor_find = false;  // cuDNN's own search is only a note in sweep records; here it costs seconds on large convs
  auto backend = sweep::make_gpu_backend(bo);
  const sweep::Beat beat = [] {};
  backend->begin_problem(p, beat);
  std::vector<Candidate> out;
  for (const auto& c : configs) {
    const auto r = backend->measure(c, beat).front();
    out.push_back({c, false, 0, r.status == "ok" ? r.median_us : -1, r.status});
    if (backend->must_restart()) throw Error(Status::cuda_error, "timing " + c + " left the device unusable: " + r.detail);
  }
  if (with_vendor) {
    // The vendor's heuristic choice and (unless vendor_heuristic_only) its best algorithm (records :heur and
    // :best/:exhaustive; a record that did not run or failed its output check is left out).
    for (const auto& r : backend->measure("vendor=" + vendor_lib(p), beat)) {
      if (r.status != "ok") continue;
      const std::string algo = r.detail.substr(0, r.detail.find(' '));
      bool seen = false;
      for (const auto& c : out) seen = seen || c.kernel == algo;
      if (!seen) out.push_back({algo, true, 0, r.median_us, "ok"});
    }
  }
  backend->end_problem();
  return out;
}

// The candidates timed on the device (model scores kept beside the times), fastest first; an error when none passed
// its output check.
std::vector<Candidate> Dispatcher::State::fastest_first(const Problem& p, const Target& t,
                                                        const std::vector<std::string>& configs, bool with_vendor,
                                                        bool vendor_heuristic_only, const PlanInfo& info) {
  if (configs.empty() && !with_vendor)
    throw Unsupported("no candidate to time for '" + info.problem + "' on " + t.arch.name);
  auto timed = timed_fastest_first(p, t, configs, with_vendor, vendor_heuristic_only, info);
  if (timed.empty() || timed.front().time_us < 0)
    throw Error(Status::cuda_error, "no candidate for '" + info.problem + "' passed the output check");
  return timed;
}

// fastest_first without its check: empty, or failed candidates only, where none passed.
std::vector<Candidate> Dispatcher::State::timed_fastest_first(const Problem& p, const Target& t,
                                                              const std::vector<std::string>& configs,
                                                              bool with_vendor, bool vendor_heuristic_only,
                                                              const PlanInfo& info) {
  std::vector<Candidate> timed;
  {
    DeviceScope scope(t.device);
    timed = time_candidates(p, t, configs, with_vendor, vendor_heuristic_only);
  }
  for (auto& c : timed)
    for (const auto& s : info.candidates)
      if (s.kernel == c.kernel) c.score = s.score;
  std::stable_sort(timed.begin(), timed.end(), [](const Candidate& a, const Candidate& b) {
    if ((a.time_us >= 0) != (b.time_us >= 0)) return a.time_us >= 0;
    return a.time_us < b.time_us;
  });
  return timed;
}

// "" when the vendor's heuristic kernel matches the fp64 GPU reference on random inputs (one run, as a sweep checks
// it), else why not. cuDNN's heuristic kernel misses the tolerance on some bf16 bwd_weight convs (docs/selection.md).
std::string Dispatcher::State::vendor_heuristic_failure(const Problem& p, const Target& t) {
  sweep::BackendOptions bo;
  bo.gpu = t.device;
  bo.min_timed_ms = 0, bo.min_reps = 1, bo.max_reps = 1, bo.graph_mb = 0;
  bo.vendor_heuristic_only = true;
  bo.vendor_find = false;
  auto backend = sweep::make_gpu_backend(bo);
  const sweep::Beat beat = [] {};
  backend->begin_problem(p, beat);
  const auto r = backend->measure("vendor=" + vendor_lib(p), beat).front();  // the :heur record
  backend->end_problem();
  if (backend->must_restart()) throw Error(Status::cuda_error, "checking the vendor's kernel left the device unusable: " + r.detail);
  return r.status == "ok" ? "" : r.status + ": " + r.detail;
}

void Dispatcher::State::finish_runnable(Plan::Impl& im, const Target& t, const std::string& kernel, bool vendor) {
  if (!vendor) {
    const KernelConfig cfg = resolve(parse_config(kernel), im.problem);
    if (Verdict v = legal(im.problem, cfg, t.arch); !v)
      throw Unsupported("config '" + kernel + "' cannot run '" + im.info.problem + "' on " + t.arch.name + ": " +
                        v.rule + ": " + v.reason);
    im.config = cfg;
    im.align = kernel_alignment(im.problem, cfg);
    im.info.kernel = to_string(cfg);
    if (t.device < 0) {
      im.workspace_bytes = make_plan(im.problem, cfg).workspace_bytes;
      return;
    }
    DeviceScope scope(t.device);
    im.exe = std::make_unique<cuda::Executable>(make_plan(im.problem, cfg), t.arch.jit_target);
    im.workspace_bytes = im.exe->workspace_bytes();
    return;
  }
  if (t.device < 0) throw Unsupported("vendor algorithm '" + kernel + "' needs a GPU; this plan is offline");
  DeviceScope scope(t.device);
  std::string why;
  if (!im.vendor_set) im.vendor_set = run::vendor::VendorSet::create(im.problem, &why, /*cudnn_find=*/false);
  if (!im.vendor_set) throw Unsupported("vendor library for '" + im.info.problem + "': " + why);
  im.vendor_index = kernel.find(':') != std::string::npos && kernel.substr(kernel.find(':')) == ":heur"
                        ? im.vendor_set->heuristic_index()
                        : vendor_index(*im.vendor_set, kernel);
  if (im.vendor_index < 0) {
    std::string names;
    for (const auto& a : im.vendor_set->algos()) names += (names.empty() ? "" : ", ") + a.name;
    throw NotFound("vendor algorithm '" + kernel + "' is not offered for '" + im.info.problem + "' (offered: " +
                   names + ")");
  }
  im.info.kernel = im.vendor_set->algos()[static_cast<std::size_t>(im.vendor_index)].name;
  im.info.vendor = true;
  im.workspace_bytes = im.vendor_set->algos()[static_cast<std::size_t>(im.vendor_index)].workspace_bytes;
  im.align = vendor_alignment(im.problem);
}

std::shared_ptr<Plan::Impl> Dispatcher::State::build(const Problem& p, const PlanOptions& opt, const Policy& pol,
                                                     const Target& t, const std::string& model_version,
                                                     const PlanCacheEntry* entry) {
  const VendorMode mode = pol.vendor;
  const auto t0 = std::chrono::steady_clock::now();
  auto im = std::make_shared<Plan::Impl>();
  im->problem = p;
  im->specs = operand_specs(p);
  PlanInfo& info = im->info;
  info.problem = to_string(p);
  info.strategy = pol.preset;
  info.vendor_mode = mode;
  info.policy = to_string(pol);
  info.arch = t.arch.name;
  info.device = t.device;
  info.device_name = t.device_name;
  info.model_version = model_version;
  const bool online = t.device >= 0;

  if (entry) {  // a tuned choice from the plan-cache file
    info.candidates = entry->candidates;
    info.selection_source = entry->selection_source;
    info.pool_size = entry->pool_size;
    info.cache = "file";
    finish_runnable(*im, t, entry->kernel, entry->vendor);
    info.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return im;
  }
  info.cache = "new";

  // What the plan runs or times: the policy's rule (what_to_time), shared with `tilepick eval`.
  TimingContext ctx;
  ctx.online = online;
  ctx.vendor_can = [&p] { return vendor_can(p); };
  const Timing timing = what_to_time(pol, *selector, p, t.arch, ctx);
  const Selection& sel = timing.ranking;
  if (timing.ranked) {
    info.pool_size = sel.pool_size;
    info.selection_source = sel.from_model ? sel.source : "fallback: " + sel.reason;
    for (const auto& r : sel.top) info.candidates.push_back({r.text, false, r.score, -1, ""});
  }
  std::string auto_note = timing.note;
  const bool vendor_ok = online && mode != VendorMode::off;

  std::string kernel, vendor_note;
  bool vendor = false;
  switch (timing.run) {
    case Strategy::fixed:
      kernel = opt.config, vendor = is_vendor_kernel(opt.config);
      if (vendor && mode == VendorMode::off)
        throw InvalidArgument("fixed config '" + kernel + "' is a vendor algorithm but the vendor mode is off");
      if (!vendor && mode == VendorMode::only)
        throw InvalidArgument("fixed config '" + kernel + "' is a tilepick kernel but the vendor mode is only");
      info.selection_source = "fixed";
      break;
    case Strategy::heuristic:
      if (timing.run_vendor) {
        if (vendor_ok && vendor_can(p)) {
          DeviceScope scope(t.device);
          im->vendor_set = run::vendor::VendorSet::create(p, nullptr, /*cudnn_find=*/false);
          if (im->vendor_set && timing.check_vendor) {  // once per plan, before it is trusted
            if (std::string failed = vendor_heuristic_failure(p, t); !failed.empty()) {
              im->vendor_set.reset();
              vendor_note = " (its vendor choice picked the vendor, whose heuristic kernel failed the output check: " +
                            failed + ")";
            }
          }
        }
        if (im->vendor_set) {
          kernel = vendor_lib(p) + ":heur", vendor = true;
          info.selection_source = std::string("vendor heuristic") +
                                  (mode == VendorMode::only ? ""
                                   : sel.top.empty()        ? " (no legal tilepick kernel)"
                                   : !sel.from_model        ? " (no usable model)"
                                   : sel.vendor_chosen      ? vendor_choice_text(sel)
                                                            : " (" + sel.source + " is vendor_first: measured slower than the vendor)");
          break;
        }
        if (mode == VendorMode::only)
          throw Unsupported("vendor mode only: " + vendor_lib(p) + " cannot run '" + info.problem + "'" +
                            (online ? "" : " offline (no GPU)"));
      }
      if (sel.top.empty())
        throw Unsupported("no legal tilepick kernel for '" + info.problem + "' on " + t.arch.name +
                          (mode == VendorMode::off ? " and the vendor mode is off"
                           : !online             ? " (vendor libraries are not used offline)"
                                                 : " and no vendor library can run it"));
      kernel = sel.top.front().text;
      info.selection_source += vendor_note;
      break;
    case Strategy::top_k:
    case Strategy::exhaustive: {
      std::vector<Candidate> timed;
      if (timing.vendor_alone_first) {
        timed = timed_fastest_first(p, t, {}, true, false, info);
        if (!timed.empty() && timed.front().time_us >= 0)
          auto_note += " (vendor_first: the vendor's algorithms timed alone)";
        else
          timed.clear();
      }
      if (timed.empty())  // ours too: the shortlist (top_k) or every legal config (exhaustive)
        timed = fastest_first(p, t, timing.ours, timing.vendor, false, info);
      info.candidates = std::move(timed);
      kernel = info.candidates.front().kernel, vendor = info.candidates.front().vendor;
      break;
    }
    case Strategy::race:  // the ranking's first choice against the vendor's heuristic kernel, each checked and timed
      info.candidates = fastest_first(p, t, timing.ours, timing.vendor, timing.vendor_heuristic_only, info);
      kernel = info.candidates.front().kernel, vendor = info.candidates.front().vendor;
      break;
    case Strategy::automatic:
      throw Error(Status::internal, "auto strategy left undecided");  // decided by what_to_time
  }
  info.selection_source += auto_note;
  finish_runnable(*im, t, kernel, vendor);
  info.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return im;
}

Dispatcher::Dispatcher(const Selector& selector, std::string cache_file) : state_(std::make_unique<State>()) {
  state_->selector = &selector;
  state_->file = std::move(cache_file);
}

Dispatcher::~Dispatcher() = default;

Dispatcher& Dispatcher::default_dispatcher() {
  static Dispatcher d(Selector::default_selector(), env::plan_cache_file());
  return d;
}

std::shared_ptr<const Plan> Dispatcher::plan(const Problem& p, const PlanOptions& opt) {
  State& s = *state_;
  std::optional<HitKey> hit;
  try {
    hit = hit_key(p, opt);
  } catch (const Error&) {  // the checks below say what is wrong, in their order
  }
  if (hit) {  // a plan made before: no key strings, no checks (only valid inputs are kept)
    std::unique_lock lock(s.mutex);
    if (auto it = s.hits.find(*hit); it != s.hits.end()) {
      auto fut = it->second.plan;
      ++s.stats.memory_hits;
      lock.unlock();
      return fut.get();  // waits when another thread is still making it
    }
  }
  validate(p);
  const Policy pol = resolve_policy(opt);
  check_options(opt, pol);
  const Target t = s.target(opt);
  const ModelEntry* m = s.selector->model_for(p, t.arch);
  // a vendor_first flag or vendor choice model changes what the heuristic strategy runs: cached plans key on them too
  const std::string model_version = m ? m->spec.version + (m->spec.vendor_first ? "+vendor_first" : "") +
                                            (m->vendor_model ? "+" + m->vendor_version : "")
                                      : "none";
  const std::string file_key = plan_cache_key(to_string(p), t.arch.name, t.device_name, model_version,
                                              strategy_key(pol, opt),
                                              std::string(to_string(pol.vendor)));
  const std::string key = file_key + "|dev" + std::to_string(t.device);
  const bool persist = pol.preset != Strategy::fixed;

  std::promise<std::shared_ptr<const Plan>> promise;
  std::optional<PlanCacheEntry> entry;
  {
    std::unique_lock lock(s.mutex);
    if (auto it = s.plans.find(key); it != s.plans.end()) {
      auto fut = it->second;
      ++s.stats.memory_hits;
      if (hit) s.hits.emplace(*hit, State::Hit{fut, key});
      lock.unlock();
      return fut.get();  // waits when another thread is still making it
    }
    auto fut = s.plans.emplace(key, promise.get_future().share()).first->second;
    if (hit) s.hits.emplace(*hit, State::Hit{fut, key});
    if (persist && !s.file.empty()) {
      if (!s.disk_loaded) {
        s.disk = PlanCacheFile::load(s.file);
        s.disk_loaded = true;
        s.stats.file_entries = s.disk.entries.size();
        s.stats.rejected_entries = s.disk.rejected;
      }
      if (auto it = s.disk.entries.find(file_key); it != s.disk.entries.end() && stamps_match(it->second, p))
        entry = it->second;
    }
  }
  std::shared_ptr<const Plan> plan;
  auto build = [&] {
    return std::make_shared<const Plan>(s.build(p, opt, pol, t, model_version, entry ? &*entry : nullptr));
  };
  try {
    try {
      plan = build();
    } catch (const std::exception& err) {
      if (!entry) throw;
      // A file entry that no longer plans (a damaged kernel string, a kernel that fails to build):
      // planned anew, and the new plan replaces it in the file.
      if (env::log_level() >= 1)
        std::cerr << "tilepick: warning: plan cache entry for '" << to_string(p) << "' did not plan (" << err.what()
                  << "); planning anew\n";
      {
        std::lock_guard lock(s.mutex);
        ++s.stats.bad_entries;
        s.disk.entries.erase(file_key);
      }
      entry.reset();
      plan = build();
    }
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(s.mutex);
    s.plans.erase(key);  // a later call may try again, also by another value of the same key
    std::erase_if(s.hits, [&](const auto& h) { return h.second.key == key; });
    throw;
  }
  promise.set_value(plan);
  if (env::log_level() >= 2) {  // info: every plan made or read from the file, and why
    const PlanInfo& i = plan->info();
    std::cerr << "tilepick: plan " << i.problem << " -> " << (i.vendor ? "vendor " : "") << i.kernel << " ("
              << i.policy << ", " << (i.selection_source.empty() ? "fixed" : i.selection_source)
              << ", from " << i.cache << (i.candidates.empty() ? "" : ", " + std::to_string(i.candidates.size()) + " candidates")
              << ", " << i.plan_seconds << " s)\n";
  }
  std::lock_guard lock(s.mutex);
  if (entry) ++s.stats.file_hits;
  else ++s.stats.new_plans;
  if (persist && !entry) s.disk.entries[file_key] = make_entry(file_key, plan->info(), p);
  if (persist && !entry && !s.file.empty()) {
    // The plan stands even when the file cannot take it (unwritable, a directory, a full disk).
    try {
      s.disk.save(s.file);
    } catch (const std::exception& e) {
      ++s.stats.save_failures;
      s.stats.last_save_error = e.what();
      if (env::log_level() >= 1 && s.stats.save_failures == 1)
        std::cerr << "tilepick: warning: plan cache not saved: " << e.what() << " (plans stay in memory)\n";
    }
  }
  return plan;
}

Applicability Dispatcher::check(const Problem& p, const PlanOptions& opt) const {
  Applicability a;
  try {
    validate(p);
    const Policy pol = resolve_policy(opt);
    check_options(opt, pol);
    const VendorMode mode = pol.vendor;
    const Target t = state_->target(opt);
    if (mode != VendorMode::only) a.tilepick_candidates = Registry::default_registry().lookup(p, t.arch).size();
    if (mode != VendorMode::off) {
      std::string why = vendor_unsupported(p);
      a.vendor_candidate = why.empty() && t.device >= 0 && vendor_can(p, &why);
      if (!a.vendor_candidate && a.tilepick_candidates == 0)
        a.reason = vendor_lib(p) + ": " + (why.empty() ? "not used offline" : why);
    }
    a.ok = a.tilepick_candidates > 0 || a.vendor_candidate;
    if (!a.ok)
      a.reason = "no legal tilepick kernel for '" + to_string(p) + "' on " + t.arch.name +
                 (a.reason.empty() ? "" : "; vendor " + a.reason);
  } catch (const Error& e) {
    a.ok = false;
    a.reason = e.what();
  }
  return a;
}

void Dispatcher::save() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->file.empty()) state_->disk.save(state_->file);
}

PlanCacheStats Dispatcher::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

void Dispatcher::clear_memory() {
  std::lock_guard lock(state_->mutex);
  state_->plans.clear();
  state_->hits.clear();
}

const std::string& Dispatcher::cache_file() const { return state_->file; }

}  // namespace tilepick
