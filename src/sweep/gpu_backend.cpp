// The real sweep backend: random normal inputs generated on the GPU, the fp64 GPU reference
// computed once per problem, and for every item: poison the output, run, check against the
// reference, then (only when correct) time with cold L2 and CUDA events (DESIGN: measurement rules).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

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
    inputs_.clear();
    ops_ = Operands{};
    for (const auto& t : gpu::input_tensors(p)) {
      auto& buf = inputs_.emplace_back(std::max<std::size_t>(t.elems * size_bytes(t.dtype), 1));
      gpu::fill_random_normal(buf.get(), t.dtype, t.elems, gpu::slot_seed(opt_.seed, t.slot));
      switch (t.slot) {
        case gpu::Slot::a: ops_.a = buf.get(); break;
        case gpu::Slot::b: ops_.b = buf.get(); break;
        case gpu::Slot::c: ops_.c = buf.get(); break;
        case gpu::Slot::bias: ops_.bias = buf.get(); break;
      }
    }
    out_dtype_ = gpu::output_dtype(p);
    out_elems_ = gpu::output_elems(p);
    d_ = cuda::DeviceBuffer(std::max<std::size_t>(out_elems_ * size_bytes(out_dtype_), 1));
    ref_ = cuda::DeviceBuffer(std::max<std::size_t>(out_elems_ * sizeof(double), 1));
    ops_.d = d_.get();
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
      Operands ops = ops_;
      ops.workspace = ws_.get();
      check_and_time(r, [&] { exe.run(ops); }, beat);
    } catch (const Unsupported& e) {
      r.status = "unsupported", r.detail = e.what();
    } catch (const Error& e) {
      fail(r, e);
    }
    return {r};
  }

  void end_problem() override {
    inputs_.clear();
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
  }

  // Poison, run once, check; then time with cold L2 if correct. Leaves r.status ok or wrong.
  void check_and_time(Record& r, const std::function<void()>& launch, const Beat& beat) {
    d_.fill_bytes(0xff);
    launch();
    cuda::synchronize();
    auto c = gpu::check(problem_, d_.get(), ref_.get());
    r.rel_err = c.rel_l2, r.max_err = c.max_rel_err, r.tol = c.tol;
    if (!c.ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "output check failed: rel_l2 %.3g max_rel %.3g tol %.3g nonfinite %lld", c.rel_l2,
                    c.max_rel_err, c.tol, static_cast<long long>(c.nonfinite));
      r.status = "wrong", r.detail = buf;
      return;
    }
    beat();
    cuda::Timer timer;
    launch();  // warm-up (instruction cache, clocks)
    double first_us = run::time_cold_us(launch, flush_, timer, 1);
    beat();
    int reps = static_cast<int>(std::ceil(opt_.min_timed_ms * 1e3 / std::max(first_us, 1.0)));
    reps = std::clamp(reps, opt_.min_reps, opt_.max_reps);
    if (opt_.prune > 0 && best_us_ > 0 && first_us > opt_.prune * best_us_) reps = opt_.min_reps;
    std::vector<double> us;
    for (int i = 0; i < reps; ++i) {
      us.push_back(run::time_cold_us(launch, flush_, timer, static_cast<unsigned char>(i)));
      beat();
    }
    const run::Timing t = run::summarize_times(us);
    r.status = "ok";
    r.reps = t.reps, r.median_us = t.median_us, r.iqr_us = t.iqr_us;
    r.tflops = flops_ / (r.median_us * 1e-6) / 1e12;
    r.gbps = bytes_ / (r.median_us * 1e-6) / 1e9;
    best_us_ = best_us_ > 0 ? std::min(best_us_, r.median_us) : r.median_us;
  }

  std::vector<Record> vendor(const std::string& item, const Beat& beat) {
    const std::string lib = item.substr(7);
    const std::string best_name = lib == "cudnn" ? "exhaustive" : "best";
    std::string why;
    std::unique_ptr<run::vendor::VendorSet> set;
    try {
      set = run::vendor::VendorSet::create(problem_, &why);
    } catch (const Error& e) {
      why = e.what();
    }
    Record heur, best;
    heur.config = item + ":heur", best.config = item + ":" + best_name;
    if (!set) {
      heur.status = best.status = "unsupported";
      heur.detail = best.detail = why;
      return {heur, best};
    }
    ensure_workspace(set->max_workspace_bytes());
    const auto& algos = set->algos();
    std::vector<Record> per_algo(algos.size());
    int tried = 0, ok = 0;
    for (std::size_t i = 0; i < algos.size(); ++i) {
      Record& r = per_algo[i];
      r.config = item + ":" + algos[i].name;
      try {
        check_and_time(r, [&] { set->run(static_cast<int>(i), ops_, ws_.get(), nullptr); }, beat);
      } catch (const Error& e) {
        fail(r, e);
        if (fatal_) break;
      }
      ++tried, ok += r.status == "ok";
    }
    int h = set->heuristic_index();
    heur = per_algo[h];
    heur.config = item + ":heur";
    heur.detail = algos[h].name + " " + algos[h].detail + (heur.detail.empty() ? "" : "; " + heur.detail);
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
    best.config = item + ":" + best_name;
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
  Operands ops_;
  DType out_dtype_ = DType::f32;
  std::size_t out_elems_ = 0;
  cuda::DeviceBuffer d_, ref_, ws_;
  double flops_ = 0, bytes_ = 0, best_us_ = 0;
  bool fatal_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const BackendOptions& opt) { return std::make_unique<GpuBackend>(opt); }

}  // namespace tilepick::sweep
