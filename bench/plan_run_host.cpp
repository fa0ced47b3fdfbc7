// Host time per Plan::run (GPU machine; a probe): bf16 NHWC convolutions of ResNet-50 sizes in the three
// directions, planned by the default dispatcher with vendor off (tilepick's kernel) and only (cuDNN's
// heuristic choice), 200 asynchronous runs each (fewer than the launch queue holds, so the host never waits for the GPU) on one stream, then one sync; also the pieces of the
// check (cuda::pointer_info, cuda::current_device). One line per measurement, us per call.
//   bench_plan_run_host            (cuDNN's heuristic choice is its graph-API engine; the legacy API path was
//                                   measured with a switch of that time: bench/results/2026-11-25-h200-cudnn-graph)
#include <chrono>
#include <cstdio>
#include <functional>

#include "tilepick/config.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/problem.hpp"

using namespace tilepick;

double us_per_call(const std::function<void()>& f, int calls = 200) {  // well under the launch queue's depth: host time, not GPU time
  for (int i = 0; i < 50; ++i) f();
  cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  const auto t1 = std::chrono::steady_clock::now();
  cuda::synchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

int main() {
  cuda::init_device(0);
  const char* problems[] = {"fwd g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                            "bwd_data g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                            "bwd_weight g1 mb32 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                            "fwd g1 mb32 ic256 ih56 iw56 oc64 kh1 kw1 sh1 sw1 ph0 pw0 bf16"};
  cuda::DeviceBuffer probe(1 << 20);
  std::printf("cuda::pointer_info %.2f us, cuda::current_device %.2f us\n",
              us_per_call([&] { (void)cuda::pointer_info(probe.get()); }),
              us_per_call([&] { (void)cuda::current_device(); }));
  for (const char* text : problems) {
    const Problem p = parse_problem(text);
    const auto specs = operand_specs(p);
    std::vector<cuda::DeviceBuffer> bufs;
    std::vector<TensorArg> args;
    for (const auto& s : specs) {
      std::size_t n = 1;
      for (auto v : s.shape) n *= static_cast<std::size_t>(v);
      bufs.emplace_back(n * 2);
      bufs.back().fill_bytes(0);
      args.push_back(TensorArg{bufs.back().get(), s.dtype, s.shape, {}, 0});
    }
    for (const char* vendor : {"off", "only"}) {
      PlanOptions opt;
      opt.vendor = parse_vendor_mode(vendor);
      std::shared_ptr<const Plan> plan;
      try {
        plan = Dispatcher::default_dispatcher().plan(p, opt);
      } catch (const std::exception& e) {
        std::printf("%-70s vendor %-4s: no plan (%s)\n", text, vendor, e.what());
        continue;
      }
      cuda::DeviceBuffer ws(std::max<std::size_t>(plan->workspace_bytes(), 256));
      const double t = us_per_call([&] { plan->run(args, ws.get(), nullptr); });
      std::printf("%-70s vendor %-4s %-44s %7.2f us per Plan::run\n", text, vendor, plan->info().kernel.c_str(), t);
      if (plan->info().vendor) continue;
      // The tilepick path taken apart: the launch list alone, then Executable::run (no checks).
      const KernelPlan kp = make_plan(p, resolve(parse_config(plan->info().kernel), p));
      const cuda::Executable exe(kp, cuda::target_for_current_device());
      Operands ops;
      ops.a = bufs[0].get(), ops.b = bufs[1].get(), ops.d = bufs[2].get(), ops.workspace = ws.get();
      std::printf("%-70s   launches() %.2f us, Executable::run %.2f us\n", "",
                  us_per_call([&] { (void)kp.launches(ops); }), us_per_call([&] { exe.run(ops, nullptr); }));
    }
  }
  return 0;
}
