// tilepick selftest dispatch: the dispatcher on a GPU (no GoogleTest there). Every strategy and
// vendor mode runs and is checked against the fp64 GPU reference; every bad input is refused with
// its reason; plans are made and run from many host threads at once; with 2+ GPUs a plan refuses
// another device's memory and another current device.
#include <atomic>
#include <functional>
#include <iostream>
#include <limits>
#include <thread>

#include "commands.hpp"
#include "ref/gpu_ref.hpp"
#include "run/vendor.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/selector.hpp"

namespace tilepick::cli {
namespace {
namespace gpu = ref::gpu;

int g_failures = 0;

void report(bool ok, const std::string& what, const std::string& detail = "") {
  std::cout << (ok ? "PASS " : "FAIL ") << what << (detail.empty() ? "" : ": " + detail) << "\n";
  g_failures += !ok;
}

// Random inputs, an output and the fp64 reference of one problem on the current device.
struct Data {
  Problem p;
  std::vector<cuda::DeviceBuffer> in;
  cuda::DeviceBuffer out, ref;
  Operands ops;
  std::vector<TensorArg> tensors;  // operand_specs order, dense

  explicit Data(const Problem& prob, int device) : p(prob) {
    for (const auto& t : gpu::input_tensors(p)) {
      auto& b = in.emplace_back(std::max<std::size_t>(t.elems * size_bytes(t.dtype), 1));
      gpu::fill_input(b.get(), t, 7);
      gpu::bind(ops, t.slot, b.get());
    }
    out = cuda::DeviceBuffer(gpu::output_elems(p) * size_bytes(gpu::output_dtype(p)));
    ref = cuda::DeviceBuffer(gpu::output_elems(p) * sizeof(double));
    ops.d = out.get();
    gpu::GpuReference(p, cuda::target_for_current_device()).compute(ops, ref.get());
    for (const auto& s : operand_specs(p)) {
      const void* ptr = operand(ops, s.slot);
      tensors.push_back({const_cast<void*>(ptr), s.dtype, s.shape, {}, device});
    }
  }
  // Poison, run, check.
  bool run_and_check(const std::function<void()>& run, std::string* note) {
    out.fill_bytes(0xff);
    run();
    cuda::synchronize();
    auto c = gpu::check(p, out.get(), ref.get());
    *note = "rel_l2 " + std::to_string(c.rel_l2) + " tol " + std::to_string(c.tol);
    return c.ok;
  }
};

template <class F>
void expect_error(const std::string& what, const std::string& needle, F&& f) {
  try {
    f();
    report(false, what, "no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    report(m.find(needle) != std::string::npos, what, m);
  }
}

void strategies(Dispatcher& d, int dev) {
  const char* problems[] = {
      "gemm rcr m1000 n777 k333 bf16 ep=bias+gelu_tanh", "gemm crr m64 n4096 k4096 f16",
      "fwd g1 mb4 ic64 ih31 iw31 oc96 kh3 kw3 sh2 sw2 ph1 pw1 bf16 ep=bias+relu",
      "bwd_data g1 mb4 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 f16",
      "bwd_weight g8 mb8 ic128 ih14 iw14 oc128 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
      "fwd g96 mb8 ic96 ih27 iw27 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16",
      "fwd g1 mb2 ic32 id9 ih17 iw17 oc48 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16"};
  for (const char* text : problems) {
    const Problem p = parse_problem(text);
    Data data(p, dev);
    for (auto [strategy, vendor] : {std::pair{Strategy::heuristic, VendorMode::off}, {Strategy::heuristic, VendorMode::only},
                                    {Strategy::top_k, VendorMode::automatic}, {Strategy::race, VendorMode::automatic},
                                    {Strategy::automatic, VendorMode::automatic}}) {
      PlanOptions o;
      o.strategy = strategy, o.vendor = vendor, o.k = 3;
      if (strategy == Strategy::automatic) o.auto_time_us = 0.0;  // every plan estimated long: timed as top_k
      const std::string what = std::string(text) + " [" + std::string(to_string(strategy)) + ", vendor " +
                               std::string(to_string(vendor)) + "]";
      try {
        auto plan = d.plan(p, o);
        cuda::DeviceBuffer ws(std::max<std::size_t>(plan->workspace_bytes(), 1));
        std::string note;
        const bool ok = data.run_and_check([&] { plan->run(data.tensors, ws.get()); }, &note);
        std::string detail = plan->info().kernel + "; " + note;
        bool fine = ok && plan->info().vendor == (vendor == VendorMode::only);
        if (strategy == Strategy::top_k || strategy == Strategy::automatic) {  // the fastest timed, vendor included
          const auto& c = plan->info().candidates;
          bool has_vendor = false;
          for (const auto& x : c) has_vendor = has_vendor || x.vendor;
          fine = ok && !c.empty() && c.front().kernel == plan->info().kernel && has_vendor;
          for (const auto& x : c) fine = fine && (x.time_us < 0 || x.time_us >= c.front().time_us);
          detail += "; " + std::to_string(c.size()) + " timed, best " + std::to_string(c.front().time_us) + " us";
          if (strategy == Strategy::automatic) {  // under a vendor_first model: the vendor's algorithms alone
            const auto s = Selector::default_selector().select(p, find_arch(default_arch_specs(), plan->info().arch), 1);
            if (auto_times_vendor_alone(VendorMode::automatic, s)) {
              for (const auto& x : c) fine = fine && x.vendor;
              detail += "; vendor_first: vendor alone";
            }
          }
        }
        if (strategy == Strategy::race) {  // the faster of the first choice and the vendor's kernel, where both ran
          const auto& c = plan->info().candidates;
          const bool raced = !c.empty() && c.front().time_us >= 0;
          fine = ok && (!raced || (c.size() <= 2 && plan->info().vendor == c.front().vendor));
          for (const auto& x : c) fine = fine && (x.time_us < 0 || !raced || x.time_us >= c.front().time_us);
          detail += raced ? "; raced " + std::to_string(c.size()) + ", best " + std::to_string(c.front().time_us) + " us"
                          : "; not raced (no vendor kernel for it)";
        }
        report(fine, what, detail);
      } catch (const Error& e) {
        report(false, what, e.what());
      }
    }
    // auto below its threshold is the heuristic plan (vendor auto), untimed
    const std::string what = std::string(text) + " [auto, never timed: the heuristic plan]";
    try {
      PlanOptions o, h;
      o.auto_time_us = std::numeric_limits<double>::infinity();
      h.strategy = Strategy::heuristic;
      const auto a = d.plan(p, o), b = d.plan(p, h);
      bool fine = a->info().kernel == b->info().kernel && a->info().vendor == b->info().vendor;
      for (const auto& c : a->info().candidates) fine = fine && c.time_us < 0;
      report(fine, what, a->info().kernel + " (heuristic: " + b->info().kernel + "), " + a->info().selection_source);
    } catch (const Error& e) {
      report(false, what, e.what());
    }
  }
}

void bad_inputs(Dispatcher& d, int dev) {
  const Problem p = parse_problem("gemm rcr m256 n128 k256 bf16 ep=bias");
  Data data(p, dev);
  PlanOptions o;
  o.vendor = VendorMode::off;
  auto plan = d.plan(p, o);
  std::vector<unsigned char> host(256 * 128 * 2);
  Operands ops = data.ops;
  ops.a = host.data();
  expect_error("host pointer refused", "not device memory", [&] { plan->run(ops); });
  ops = data.ops;
  ops.b = static_cast<const char*>(data.ops.b) + 2;
  expect_error("misaligned pointer refused", "not aligned", [&] { plan->run(ops); });
  ops = data.ops;
  ops.bias = nullptr;
  expect_error("missing bias refused", "is null", [&] { plan->run(ops); });
  auto t = data.tensors;
  t[0].shape = {256, 128, 2};
  expect_error("wrong shape refused", "not the dense", [&] { plan->run(t, nullptr); });
  t = data.tensors;
  t[1].shape = {256, 128};  // B (column-major K x N) given as a row-major K x N
  t[1].strides = {128, 1};
  expect_error("row-major B refused where column-major is needed", "not the dense", [&] { plan->run(t, nullptr); });
  t = data.tensors;
  t[1].shape = {256, 128};  // ... and as the transposed view of its memory: accepted
  t[1].strides = {1, 256};
  std::string note0;
  report(data.run_and_check([&] { plan->run(t, nullptr); }, &note0), "column-major B as a transposed view", note0);
  t = data.tensors;
  t[2].dtype = DType::f16;
  expect_error("wrong dtype refused", "dtype f16, expected bf16", [&] { plan->run(t, nullptr); });
  t = data.tensors;
  t[0].device = -1;
  expect_error("host tensor refused", "host memory", [&] { plan->run(t, nullptr); });

  PlanOptions sk;
  sk.strategy = Strategy::fixed, sk.vendor = VendorMode::off;
  sk.config = "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=4 skmode=parallel";
  auto split = d.plan(p, sk);
  report(split->workspace_bytes() > 0, "split-K plan needs a workspace", std::to_string(split->workspace_bytes()));
  expect_error("missing workspace refused", "workspace", [&] { split->run(data.ops); });
  cuda::DeviceBuffer ws(split->workspace_bytes());
  Operands with_ws = data.ops;
  with_ws.workspace = ws.get();
  std::string note;
  report(data.run_and_check([&] { split->run(with_ws); }, &note), "split-K plan with workspace", note);
}

void threads(Dispatcher& d, int dev) {
  const char* texts[] = {"gemm rcr m512 n384 k256 bf16", "gemm rrr m97 n211 k300 f16",
                         "fwd g1 mb2 ic32 ih15 iw15 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
                         "bwd_weight g1 mb2 ic32 ih15 iw15 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16"};
  std::vector<std::unique_ptr<Data>> data;
  for (const char* t : texts) data.push_back(std::make_unique<Data>(parse_problem(t), dev));
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  std::vector<std::vector<cuda::DeviceBuffer>> workspaces(8);  // per thread; freed after the final sync
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&, t] {
      try {
        cuda::init_device(dev);
        for (int i = 0; i < 10; ++i) {
          auto& x = *data[static_cast<std::size_t>((t + i) % 4)];
          PlanOptions o;
          o.vendor = VendorMode::off;
          auto plan = d.plan(x.p, o);
          Operands ops = x.ops;
          if (plan->workspace_bytes() > 0) ops.workspace = workspaces[t].emplace_back(plan->workspace_bytes()).get();
          plan->run(ops);
        }
      } catch (const std::exception& e) {
        std::cerr << "thread " << t << ": " << e.what() << "\n";
        ++bad;
      }
    });
  for (auto& th : pool) th.join();
  cuda::synchronize();
  bool ok = bad == 0;
  for (auto& x : data) {  // results of the last runs (all wrote the same values)
    auto c = gpu::check(x->p, x->out.get(), x->ref.get());
    ok = ok && c.ok;
  }
  report(ok, "8 threads planning and running 4 problems", std::to_string(bad.load()) + " thread errors");
}

void other_device(Dispatcher& d) {
  int count = 0;
  while (query_device(count)) ++count;
  if (count < 2) {
    std::cout << "SKIP other-device checks: " << count << " GPU\n";
    return;
  }
  const Problem p = parse_problem("gemm rcr m256 n256 k256 bf16");
  cuda::init_device(1);
  Data on1(p, 1);
  cuda::init_device(0);
  PlanOptions o;
  o.vendor = VendorMode::off;
  auto plan0 = d.plan(p, o);  // device 0 (current)
  expect_error("memory of device 1 refused by a device-0 plan", "memory of device 1", [&] { plan0->run(on1.ops); });
  cuda::init_device(1);
  expect_error("device-0 plan refused while device 1 is current", "device 1 is current", [&] { plan0->run(on1.ops); });
  o.device = 1;
  auto plan1 = d.plan(p, o);
  std::string note;
  report(plan1->info().device == 1 && on1.run_and_check([&] { plan1->run(on1.ops); }, &note), "plan for device 1 runs there", note);
  cuda::init_device(0);
}

}  // namespace

// Dispatch's vendor sets skip cuDNN's own search (cudnn_find false): the same algorithms and heuristic choice.
void vendor_sets() {
  for (const char* text : {"fwd g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu",
                           "bwd_data g1 mb8 ic64 ih28 iw28 oc64 kh3 kw3 sh2 sw2 ph1 pw1 f16",
                           "bwd_weight g1 mb16 ic3 ih64 iw64 oc32 kh7 kw7 sh2 sw2 ph3 pw3 bf16"}) {
    const Problem p = parse_problem(text);
    std::string why;
    const auto with = run::vendor::VendorSet::create(p, &why, true), without = run::vendor::VendorSet::create(p, &why, false);
    const std::string what = std::string(text) + " [vendor set without cudnnFind]";
    if (!with || !without) {
      report(!with && !without, what, "no cuDNN set: " + why);
      continue;
    }
    bool same = with->algos().size() == without->algos().size() && with->heuristic_index() == without->heuristic_index();
    for (std::size_t i = 0; same && i < with->algos().size(); ++i) same = with->algos()[i].name == without->algos()[i].name;
    const int found = with->find_index();
    report(same && without->find_index() < 0, what,
           std::to_string(without->algos().size()) + " algorithms, heuristic " +
               without->algos()[static_cast<std::size_t>(without->heuristic_index())].name + "; with the search, find chose " +
               (found >= 0 ? with->algos()[static_cast<std::size_t>(found)].name : std::string("none of them")));
  }
}

void add_selftest_dispatch(CLI::App* selftest) {
  auto* cmd = selftest->add_subcommand("dispatch", "the dispatcher on a GPU: strategies, vendor modes, bad inputs, threads");
  auto cache = std::make_shared<std::string>();
  cmd->add_option("--cache", *cache, "plan-cache file for the dispatcher under test");
  cmd->callback([cache] {
    cuda::init_device(0);
    Dispatcher d(Selector::default_selector(), *cache);
    vendor_sets();
    strategies(d, 0);
    bad_inputs(d, 0);
    threads(d, 0);
    other_device(d);
    std::cout << (g_failures ? "FAILED " : "ALL PASSED ") << g_failures << " failure(s)\n";
    if (g_failures) throw Error(Status::internal, std::to_string(g_failures) + " dispatch self-check(s) failed");
  });
}

}  // namespace tilepick::cli
