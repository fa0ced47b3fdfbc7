// The real sweep backend: random normal inputs generated on the GPU, the fp64 GPU reference
// computed once per problem, and for every item: poison the output, run, check against the
// reference, then (only when correct) time with cold L2 and CUDA events (DESIGN: measurement rules):
// as a CUDA graph, for small problems of several launches over copies of the operands (run/timing.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

#include "ref/gpu_ref.hpp"
#include "run/timing.hpp"
#include "run/vendor.hpp"
#include "run/verify.hpp"
#include "sweep/backend.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"

namespace tilepick::sweep {
namespace {

namespace gpu = ref::gpu;

// A kernel that traps or spins forever, to prove that the sweep survives both.
KernelSource fault_source() {
  KernelSource s;
  s.name = "tp_sweep_fault";
  s.threads = 32;
  s.specialization = "fault";
  s.code =
      "struct FaultParams { const volatile int* flag; int hang; };\n"
      "extern \"C\" __global__ void tp_sweep_fault(FaultParams p) {\n"
      "  if (!p.hang) asm volatile(\"trap;\");\n"
      "  while (*p.flag == 0) { }  // the flag stays 0: never returns\n"
      "}\n";
  return s;
}


class GpuBackend : public Backend {
  using Run = std::function<void(const Operands&, void* stream)>;

 public:
  explicit GpuBackend(const BackendOptions& opt) : opt_(opt) {
    std::string why;
    auto dev = query_device(opt.gpu, &why);
    if (!dev) throw Error(Status::cuda_error, "sweep worker: no GPU " + std::to_string(opt.gpu) + ": " + why);
    dev_ = *dev;
    cuda::init_device(opt.gpu);
    target_ = cuda::target_for_current_device();
    arch_ = match_arch(default_arch_specs(), dev_).name;
    flush_ = run::l2_flush_buffer(dev_.l2_bytes);
  }

  nlohmann::json device() override {
    return {{"name", dev_.name},
            {"ordinal", dev_.ordinal},
            {"arch", arch_},
            {"target", target_},
            {"cc", std::to_string(dev_.cc_major) + "." + std::to_string(dev_.cc_minor)},
            {"sm_count", dev_.sm_count},
            {"clock_mhz", dev_.clock_mhz},
            {"mem_clock_mhz", dev_.mem_clock_mhz},
            {"mem_bus_bits", dev_.mem_bus_bits},
            {"l2_bytes", dev_.l2_bytes},
            {"total_mem_bytes", dev_.total_mem_bytes},
            {"driver", std::to_string(dev_.driver_version / 1000) + "." + std::to_string(dev_.driver_version % 1000 / 10)},
            {"cublaslt", run::vendor::library(run::vendor::Lib::cublaslt).version},
            {"cudnn", run::vendor::library(run::vendor::Lib::cudnn).version},
            {"backend", "gpu"}};
  }

  void begin_problem(const Problem& p, const Beat& beat) override {
    problem_ = p;
    best_us_ = 0;
    inputs_.clear(), slots_.clear(), copies_.clear();
    ops_ = Operands{};
    std::size_t set_bytes = 0;
    for (const auto& t : gpu::input_tensors(p)) {
      auto& buf = inputs_.emplace_back(std::max<std::size_t>(t.elems * size_bytes(t.dtype), 1));
      gpu::fill_input(buf.get(), t, opt_.seed);
      slots_.push_back(t.slot);
      gpu::bind(ops_, t.slot, buf.get());
      set_bytes += buf.size();
    }
    out_dtype_ = gpu::output_dtype(p);
    out_elems_ = gpu::output_elems(p);
    d_ = cuda::DeviceBuffer(std::max<std::size_t>(out_elems_ * size_bytes(out_dtype_), 1));
    ref_ = cuda::DeviceBuffer(std::max<std::size_t>(out_elems_ * sizeof(double), 1));
    ops_.d = d_.get();
    set_bytes += d_.size();
    launches_ = run::graph_launches(set_bytes, static_cast<std::size_t>(std::max(opt_.graph_mb, 0.0) * (1 << 20)),
                                    opt_.graph_launches);
    for (int i = 1; i < launches_; ++i) {  // copies 1.. of the operands; copy 0 is the originals
      OperandCopy& c = copies_.emplace_back();
      for (std::size_t j = 0; j < inputs_.size(); ++j) {
        c.inputs.emplace_back(inputs_[j].size()).copy_from(inputs_[j]);
        gpu::bind(c.ops, slots_[j], c.inputs.back().get());
      }
      c.d = cuda::DeviceBuffer(d_.size());
      c.ops.d = c.d.get();
    }
    beat();
    gpu::GpuReference(p, target_).compute(ops_, ref_.get());
    cuda::synchronize();
    beat();
    if (auto* g = std::get_if<GemmProblem>(&p)) flops_ = g->flops(), bytes_ = g->min_bytes();
    else flops_ = std::get<ConvProblem>(p).flops(), bytes_ = std::get<ConvProblem>(p).min_bytes();
  }

  std::vector<Record> measure(const std::string& item, const Beat& beat) override {
    if (item == "fault=trap" || item == "fault=hang") return {fault(item)};
    if (item.rfind("vendor=", 0) == 0) return vendor(item, beat);
    Record r;
    r.config = item;
    try {
      KernelPlan plan = make_plan(problem_, parse_config(item));
      cuda::Executable exe(plan, target_);
      for (const auto& k : exe.compiled()) {
        r.compile_s += k.compile_seconds;
        r.registers = std::max(r.registers, k.registers);
        r.spills = std::max(r.spills, k.spill_stores);
        r.cached = r.cached || k.from_cache;
      }
      ensure_workspace(plan.workspace_bytes);
      check_and_time(r, [&](const Operands& ops, void* stream) { exe.run(ops, stream); }, beat);
    } catch (const Unsupported& e) {
      r.status = "unsupported", r.detail = e.what();
    } catch (const Error& e) {
      fail(r, e);
    }
    return {r};
  }

  void end_problem() override {
    inputs_.clear(), copies_.clear();
    d_ = {}, ref_ = {}, ws_ = {};
  }

  bool must_restart() const override { return fatal_; }

 private:
  // A launch error leaves the context usable; an error at synchronization (illegal address, trap)
  // does not, and the worker must restart.
  void fail(Record& r, const Error& e) {
    r.status = "error", r.detail = e.what();
    try {
      cuda::synchronize();
    } catch (const Error&) {
      r.status = "crash";
      fatal_ = true;
    }
  }

  void ensure_workspace(std::size_t bytes) {
    if (ws_.size() < bytes) ws_ = cuda::DeviceBuffer(bytes);
    for (auto& c : copies_)
      if (c.ws.size() < bytes) c.ws = cuda::DeviceBuffer(bytes), c.ops.workspace = c.ws.get();
  }

  // Operand copy i (0: the originals), with its workspace.
  Operands operands(int i) const {
    if (i == 0) {
      Operands o = ops_;
      o.workspace = ws_.get();
      return o;
    }
    return copies_[static_cast<std::size_t>(i - 1)].ops;
  }

  // Checks the output `d` against the reference; on a mismatch sets r wrong (with `where`) and returns false.
  bool output_ok(Record& r, const void* d, const std::string& where) {
    auto c = gpu::check(problem_, d, ref_.get());
    r.rel_err = std::max(r.rel_err, c.rel_l2), r.max_err = std::max(r.max_err, c.max_rel_err), r.tol = c.tol;
    if (c.ok) return true;
    char buf[200];
    std::snprintf(buf, sizeof buf, "output check failed%s: rel_l2 %.3g max_rel %.3g tol %.3g nonfinite %lld",
                  where.c_str(), c.rel_l2, c.max_rel_err, c.tol, static_cast<long long>(c.nonfinite));
    r.status = "wrong", r.detail = buf;
    return false;
  }

  // A graph of one launch per operand copy, each output poisoned, run once and checked; empty (with
  // the reason in r.detail) when the work cannot be captured, so the caller times single launches.
  cuda::Graph checked_graph(Record& r, const Run& run) {
    run::TimedLaunch t = run::timed_launch([&](void* stream) {
      for (int i = 0; i < launches_; ++i) run(operands(i), stream);
    });
    if (!t.graph) {
      r.detail = sanitize_field("graph capture failed, timed single launches: " + t.why_not, 200);
      return {};
    }
    cuda::Graph g = std::move(t.graph);
    d_.fill_bytes(0xff);
    for (auto& c : copies_) c.d.fill_bytes(0xff);
    g.launch();
    cuda::synchronize();
    for (int i = 0; i < launches_; ++i)
      if (!output_ok(r, operands(i).d, " on operand copy " + std::to_string(i) + " of the timed graph")) return {};
    return g;
  }

  // Poison, run once, check; then time with cold L2 if correct. Leaves r.status ok or wrong.
  void check_and_time(Record& r, const Run& run, const Beat& beat) {
    d_.fill_bytes(0xff);
    run(operands(0), nullptr);
    cuda::synchronize();
    if (!output_ok(r, d_.get(), "")) return;
    beat();
    cuda::Graph graph;
    if (opt_.graph_mb > 0) {
      graph = checked_graph(r, run);
      if (r.status == "wrong") return;
    }
    const int per_region = graph ? launches_ : 1;
    cuda::Timer timer;
    const std::function<void()> single = [&] { run(operands(0), nullptr); };
    const std::function<void()> replay = [&] { graph.launch(); };
    const std::function<void()>& timed = graph ? replay : single;
    auto time_once = [&](unsigned char fill) {  // per launch
      return run::time_cold_us(timed, flush_, timer, fill) / per_region;
    };
    if (!graph) single();  // warm-up (instruction cache, clocks); the graph ran once above
    double first_us = time_once(1);
    beat();
    int reps = static_cast<int>(std::ceil(opt_.min_timed_ms * 1e3 / std::max(first_us * per_region, 1.0)));
    reps = std::clamp(reps, opt_.min_reps, opt_.max_reps);
    if (opt_.prune > 0 && best_us_ > 0 && first_us > opt_.prune * best_us_)
      reps = opt_.pruned_reps >= 0 ? opt_.pruned_reps : opt_.min_reps;
    std::vector<double> us;
    if (reps == 0) us.push_back(first_us);  // a pruned config's first timing, enough to lose
    for (int i = 0; i < reps; ++i) {
      us.push_back(time_once(static_cast<unsigned char>(i)));
      beat();
    }
    const run::Timing t = run::summarize_times(us);
    if (graph) r.detail = "graph of " + std::to_string(launches_) + (launches_ > 1 ? " launches" : " launch");
    r.status = "ok";
    r.reps = t.reps, r.median_us = t.median_us, r.iqr_us = t.iqr_us;
    r.tflops = flops_ / (r.median_us * 1e-6) / 1e12;
    r.gbps = bytes_ / (r.median_us * 1e-6) / 1e9;
    best_us_ = best_us_ > 0 ? std::min(best_us_, r.median_us) : r.median_us;
  }

  std::vector<Record> vendor(const std::string& item, const Beat& beat) {
    const std::string lib = item.substr(7);
    std::string why;
    std::unique_ptr<run::vendor::VendorSet> set;
    try {
      set = run::vendor::VendorSet::create(problem_, &why, opt_.vendor_find);
    } catch (const Error& e) {
      why = e.what();
    }
    Record heur, best;
    heur.config = item + ":heur", best.config = vendor_best_config(item);
    if (!set) {
      heur.status = best.status = "unsupported";
      heur.detail = best.detail = why;
      return {heur, best};
    }
    ensure_workspace(set->max_workspace_bytes());
    const auto& algos = set->algos();
    const int h = set->heuristic_index();
    std::vector<Record> per_algo(algos.size());
    int tried = 0, ok = 0;
    for (std::size_t i = 0; i < algos.size(); ++i) {
      Record& r = per_algo[i];
      r.config = item + ":" + algos[i].name;
      if (opt_.vendor_heuristic_only && static_cast<int>(i) != h) {
        mark_not_run(r);
        continue;
      }
      try {
        check_and_time(r, [&](const Operands& ops, void* stream) { set->run(static_cast<int>(i), ops, ops.workspace, stream); },
                       beat);
      } catch (const Error& e) {
        fail(r, e);
        if (fatal_) break;
      }
      ++tried, ok += r.status == "ok";
    }
    heur = per_algo[h];
    heur.config = item + ":heur";
    heur.detail = algos[h].name + " " + algos[h].detail + (heur.detail.empty() ? "" : "; " + heur.detail);
    if (opt_.vendor_heuristic_only) {
      mark_not_run(best);
      return {heur, best};
    }
    int b = -1;
    for (std::size_t i = 0; i < per_algo.size(); ++i)
      if (per_algo[i].status == "ok" && (b < 0 || per_algo[i].median_us < per_algo[b].median_us)) b = static_cast<int>(i);
    if (b >= 0) {
      best = per_algo[b];
      best.detail = algos[b].name + " " + algos[b].detail;
    } else {
      best.status = "error";
      best.detail = "no algorithm passed the check";
    }
    best.config = vendor_best_config(item);
    best.detail += "; " + std::to_string(ok) + " of " + std::to_string(tried) + " algorithms ok";
    if (lib == "cudnn" && set->find_index() >= 0) best.detail += "; find chose " + algos[set->find_index()].name;
    return {heur, best};
  }

  Record fault(const std::string& item) {
    Record r;
    r.config = item;
    static const jit::CompiledKernel k = jit::compile(fault_source(), target_);
    cuda::LoadedKernel kernel(k);
    cuda::DeviceBuffer flag(sizeof(int));
    flag.fill_bytes(0);
    struct {
      const void* flag;
      int hang;
    } params{flag.get(), item == "fault=hang"};
    Launch l;
    l.block[0] = 32;
    l.params.resize(sizeof params);
    std::memcpy(l.params.data(), &params, sizeof params);
    try {
      kernel.launch(l);
      cuda::synchronize();
      r.status = "error", r.detail = "the fault kernel returned";
    } catch (const Error& e) {
      fail(r, e);
    }
    return r;
  }

  BackendOptions opt_;
  DeviceProps dev_;
  std::string target_, arch_;
  cuda::DeviceBuffer flush_;
  Problem problem_;
  std::vector<cuda::DeviceBuffer> inputs_;
  std::vector<gpu::Slot> slots_;  // of inputs_
  Operands ops_;
  struct OperandCopy {  // another copy of the inputs, with its own output and workspace
    std::vector<cuda::DeviceBuffer> inputs;
    cuda::DeviceBuffer d, ws;
    Operands ops;
  };
  std::vector<OperandCopy> copies_;  // launches_ - 1 of them
  int launches_ = 1;                 // per timed region
  DType out_dtype_ = DType::f32;
  std::size_t out_elems_ = 0;
  cuda::DeviceBuffer d_, ref_, ws_;
  double flops_ = 0, bytes_ = 0, best_us_ = 0;
  bool fatal_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const BackendOptions& opt) { return std::make_unique<GpuBackend>(opt); }

}  // namespace tilepick::sweep
