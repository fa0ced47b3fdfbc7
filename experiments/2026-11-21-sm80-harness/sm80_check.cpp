// Standalone harness for the sm80 family (not part of the CMake build): plans from the real plan
// builders, NVRTC compiles, driver-API launches, CPU fp64 references, cuBLAS timings.
//
//   sm80_check compile CASES            NVRTC-compile every case's programs (no GPU needed); times
//   sm80_check check CASES              run every case on random data, compare with the reference
//   sm80_check bench BENCH              time configs against cuBLAS (GEMM) on cold L2
//
// CASES lines:  <problem> | <config>            one case
//               <problem> | registry <n> [seed]  n legal configs of the registry (sm_90), sampled
// BENCH lines:  <problem> | <config>   (gemm rcr problems also time cuBLAS once per problem)
// Build: experiments/2026-11-21-sm80-harness/build.sh (needs CUDA toolkit; links libtilepick sources directly).
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/ref.hpp"
#include "tilepick/registry.hpp"

using namespace tilepick;

#define CK(x)                                                                      \
  do {                                                                             \
    CUresult r_ = (x);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                      \
      const char* s_ = nullptr;                                                    \
      cuGetErrorName(r_, &s_);                                                     \
      throw std::runtime_error(std::string(#x) + " failed: " + (s_ ? s_ : "?"));   \
    }                                                                              \
  } while (0)

static std::string g_kernels_dir = "kernels";
static std::string g_arch = "sm_90a";

struct Case {
  std::string problem_text, config_text;
  Problem problem;
  KernelConfig config;
};

static std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

static std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Case> cases;
  const ArchSpec& arch = find_arch(default_arch_specs(), "sm_90");
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    auto bar = line.find('|');
    std::string pt = trim(line.substr(0, bar)), ct = trim(line.substr(bar + 1));
    Problem p = parse_problem(pt);
    if (ct.rfind("registry", 0) == 0) {
      std::istringstream ss(ct.substr(8));
      int n = 1, seed = 1;
      ss >> n >> seed;
      auto entries = Registry::default_registry().lookup(p, arch);
      std::mt19937 rng(seed);
      std::shuffle(entries.begin(), entries.end(), rng);
      for (int i = 0; i < n && i < static_cast<int>(entries.size()); ++i)
        cases.push_back({pt, to_string(entries[i].config), p, entries[i].config});
      if (entries.empty()) std::printf("WARN no legal registry config for %s\n", pt.c_str());
    } else {
      KernelConfig c = resolve(parse_config(ct), p);
      auto v = legal(p, c, arch);
      if (!v) std::printf("NOTE illegal per legality (%s: %s), running anyway: %s | %s\n", v.rule.c_str(),
                          v.reason.c_str(), pt.c_str(), ct.c_str());
      cases.push_back({pt, to_string(c), p, c});
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
struct Compiled {
  std::vector<char> cubin;
  double seconds = 0;
  std::string log;
  bool ok = false;
};

static Compiled nvrtc_compile(const KernelSource& s) {
  Compiled r;
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, s.code.c_str(), (s.name + ".cu").c_str(), 0, nullptr, nullptr);
  std::string arch = "--gpu-architecture=" + g_arch, inc = "--include-path=" + g_kernels_dir;
  const char* opts[] = {arch.c_str(), inc.c_str(), "-std=c++17", "--ptxas-options=-v"};  // as src/jit/nvrtc.cpp
  nvrtcResult res = nvrtcCompileProgram(prog, 4, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  r.log.resize(n);
  if (n) nvrtcGetProgramLog(prog, r.log.data());
  if (res == NVRTC_SUCCESS) {
    nvrtcGetCUBINSize(prog, &n);
    r.cubin.resize(n);
    nvrtcGetCUBIN(prog, r.cubin.data());
    r.ok = true;
  }
  nvrtcDestroyProgram(&prog);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Compiles every distinct program of the cases in parallel; returns name -> result.
static std::map<std::string, Compiled> compile_all(const std::vector<KernelSource>& srcs, int threads) {
  std::map<std::string, const KernelSource*> uniq;
  for (auto& s : srcs) uniq[s.name] = &s;
  std::vector<const KernelSource*> list;
  for (auto& [k, v] : uniq) list.push_back(v);
  std::vector<Compiled> out(list.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < list.size();) out[i] = nvrtc_compile(*list[i]);
    });
  for (auto& t : pool) t.join();
  std::map<std::string, Compiled> m;
  for (size_t i = 0; i < list.size(); ++i) m[list[i]->name] = std::move(out[i]);
  return m;
}

// ---------------------------------------------------------------------------------------------
static unsigned short f16_bits(double v) {
  float f = static_cast<float>(v);  // v is representable in f16, hence in f32
  unsigned x;
  std::memcpy(&x, &f, 4);
  unsigned sign = (x >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.f) return sign | 0x7c00;
  if (a < 6.103515625e-05f) {  // subnormal: multiple of 2^-24
    return sign | static_cast<unsigned short>(std::lrint(a * 16777216.0f));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  unsigned mant = static_cast<unsigned>(std::lrint((m * 2 - 1) * 1024));
  unsigned exp = static_cast<unsigned>(e - 1 + 15);
  if (mant == 1024) mant = 0, ++exp;
  return static_cast<unsigned short>(sign | (exp << 10) | mant);
}
static double f16_value(unsigned short h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
static unsigned short bf16_bits(double v) {
  float f = static_cast<float>(v);
  unsigned x;
  std::memcpy(&x, &f, 4);
  return static_cast<unsigned short>(x >> 16);  // exact: v is representable
}
static double bf16_value(unsigned short h) {
  unsigned x = unsigned(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

static std::vector<unsigned char> encode(DType t, const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * size_bytes(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32) {
      float f = static_cast<float>(v[i]);
      std::memcpy(&out[i * 4], &f, 4);
    } else {
      unsigned short h = t == DType::f16 ? f16_bits(v[i]) : bf16_bits(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}
static std::vector<double> decode(DType t, const std::vector<unsigned char>& b) {
  std::vector<double> v(b.size() / size_bytes(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32) {
      float f;
      std::memcpy(&f, &b[i * 4], 4);
      v[i] = f;
    } else {
      unsigned short h;
      std::memcpy(&h, &b[i * 2], 2);
      v[i] = t == DType::f16 ? f16_value(h) : bf16_value(h);
    }
  }
  return v;
}

static std::vector<double> random_tensor(size_t n, DType t, std::mt19937& rng, bool tf32) {
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = tf32 ? ref::round_to_tf32(nd(rng)) : ref::round_to_dtype(t, nd(rng));
  return v;
}

struct DevBuf {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  explicit DevBuf(size_t n) : bytes(std::max<size_t>(n, 256)) { CK(cuMemAlloc(&p, bytes)); }
  ~DevBuf() { if (p) cuMemFree(p); }
  DevBuf(const DevBuf&) = delete;
  void up(const std::vector<unsigned char>& h) { CK(cuMemcpyHtoD(p, h.data(), h.size())); }
  std::vector<unsigned char> down(size_t n) const {
    std::vector<unsigned char> h(n);
    CK(cuMemcpyDtoH(h.data(), p, n));
    return h;
  }
  void* ptr() const { return reinterpret_cast<void*>(p); }
};

struct Loaded {
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  int regs = 0, local = 0;
};

static Loaded load(const Compiled& c, const std::string& name) {
  Loaded l;
  CK(cuModuleLoadData(&l.mod, c.cubin.data()));
  CK(cuModuleGetFunction(&l.fn, l.mod, name.c_str()));
  CK(cuFuncSetAttribute(l.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024));
  cuFuncGetAttribute(&l.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l.fn);
  cuFuncGetAttribute(&l.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, l.fn);
  return l;
}

static void run_plan(const KernelPlan& plan, const std::vector<Loaded>& ks, const Operands& ops, CUstream st = 0) {
  for (auto& l : plan.launches(ops)) {
    if (l.zero_workspace_bytes) CK(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ops.workspace), 0, l.zero_workspace_bytes, st));
    void* args[] = {const_cast<unsigned char*>(l.params.data())};
    CK(cuLaunchKernel(ks[l.kernel].fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                      l.smem_bytes, st, args, nullptr));
  }
}

// Tensor element counts and dtypes of (a, b, c/out) for a problem.
struct Shapes {
  size_t a, b, out, bias;
  DType ta, tb, tout;
  double kred;  // reduction length (for tolerances)
};
static Shapes shapes(const Problem& pr) {
  if (auto* g = std::get_if<GemmProblem>(&pr))
    return {size_t(g->m * g->k * g->batch), size_t(g->k * g->n * g->batch), size_t(g->m * g->n * g->batch),
            size_t(g->n), g->a, g->b, g->c, double(g->k)};
  const auto& c = std::get<ConvProblem>(pr);
  auto v = c.gemm();
  switch (c.dir) {
    case ConvDir::fwd: return {size_t(c.x_elems()), size_t(c.w_elems()), size_t(c.y_elems()), size_t(c.k), c.x, c.w, c.y, double(v.k)};
    case ConvDir::bwd_data: return {size_t(c.y_elems()), size_t(c.w_elems()), size_t(c.x_elems()), 0, c.y, c.w, c.x, double(v.k)};
    default: return {size_t(c.x_elems()), size_t(c.y_elems()), size_t(c.w_elems()), 0, c.x, c.y, c.w, double(v.k)};
  }
}

static int cmd_compile(const std::vector<Case>& cases) {
  std::vector<KernelSource> srcs;
  int plan_fail = 0;
  for (auto& c : cases) {
    try {
      auto plan = make_plan(c.problem, c.config);
      for (auto& k : plan.kernels) srcs.push_back(k);
    } catch (std::exception& e) {
      ++plan_fail;
      std::printf("PLANFAIL %s | %s: %s\n", c.problem_text.c_str(), c.config_text.c_str(), e.what());
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto m = compile_all(srcs, std::max(1u, std::thread::hardware_concurrency()));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> times;
  int fail = 0;
  for (auto& [name, c] : m) {
    times.push_back(c.seconds);
    if (!c.ok) {
      ++fail;
      std::printf("COMPILEFAIL %s\n%s\n", name.c_str(), c.log.c_str());
    }
  }
  std::vector<std::pair<double, std::string>> slow;
  for (auto& [name, c] : m) slow.push_back({c.seconds, name});
  std::sort(slow.rbegin(), slow.rend());
  for (size_t i = 0; i < slow.size() && i < 12; ++i) {
    for (auto& s : srcs)
      if (s.name == slow[i].second) { std::printf("slow %.2fs %s", slow[i].first, s.code.substr(0, s.code.find('\n') + 1).c_str()); break; }
  }
  std::sort(times.begin(), times.end());
  if (!times.empty())
    std::printf("compiled %zu programs (%d failed, %d plan failures) wall %.1fs; per program median %.3fs p90 %.3fs max %.3fs\n",
                times.size(), fail, plan_fail, wall, times[times.size() / 2], times[times.size() * 9 / 10], times.back());
  return fail || plan_fail;
}

static int cmd_check(const std::vector<Case>& cases) {
  std::vector<KernelSource> srcs;
  std::vector<KernelPlan> plans(cases.size());
  std::vector<bool> planned(cases.size(), false);
  for (size_t i = 0; i < cases.size(); ++i) {
    try {
      plans[i] = make_plan(cases[i].problem, cases[i].config);
      planned[i] = true;
      for (auto& k : plans[i].kernels) srcs.push_back(k);
    } catch (std::exception& e) {
      std::printf("PLANFAIL %s | %s: %s\n", cases[i].problem_text.c_str(), cases[i].config_text.c_str(), e.what());
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto compiled = compile_all(srcs, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> times;
  for (auto& [n, c] : compiled) times.push_back(c.seconds);
  std::sort(times.begin(), times.end());
  std::printf("compiled %zu programs in %.1fs wall; median %.3fs max %.3fs\n", compiled.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              times.empty() ? 0 : times[times.size() / 2], times.empty() ? 0 : times.back());
  std::map<std::string, Loaded> loaded;
  int pass = 0, fail = 0;
  std::mt19937 rng(12345);
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!planned[i]) { ++fail; continue; }
    const Case& cs = cases[i];
    const KernelPlan& plan = plans[i];
    std::string what = cs.problem_text + " | " + cs.config_text;
    try {
      std::vector<Loaded> ks;
      for (auto& k : plan.kernels) {
        auto& c = compiled.at(k.name);
        if (!c.ok) throw std::runtime_error("compile failed: " + c.log.substr(0, 2000));
        if (!loaded.count(k.name)) loaded[k.name] = load(c, k.name);
        ks.push_back(loaded[k.name]);
      }
      Shapes s = shapes(cs.problem);
      const bool tf32 = s.ta == DType::f32;
      auto ha = random_tensor(s.a, s.ta, rng, tf32), hb = random_tensor(s.b, s.tb, rng, tf32);
      auto hc = random_tensor(s.out, s.tout, rng, false), hbias = random_tensor(std::max<size_t>(s.bias, 1), s.tout, rng, false);
      std::vector<double> ref(s.out);
      const double* cptr = nullptr;
      const double* biasptr = nullptr;
      if (auto* g = std::get_if<GemmProblem>(&cs.problem)) {
        cptr = g->beta != 0 ? hc.data() : nullptr;
        biasptr = g->epilogue.bias ? hbias.data() : nullptr;
        ref::gemm(*g, ha.data(), hb.data(), cptr, biasptr, ref.data());
      } else {
        const auto& c = std::get<ConvProblem>(cs.problem);
        biasptr = c.epilogue.bias ? hbias.data() : nullptr;
        if (c.dir == ConvDir::fwd) ref::conv_fwd(c, ha.data(), hb.data(), biasptr, ref.data());
        else if (c.dir == ConvDir::bwd_data) ref::conv_bwd_data(c, ha.data(), hb.data(), ref.data());
        else ref::conv_bwd_weight(c, ha.data(), hb.data(), ref.data());
      }
      DevBuf da(s.a * size_bytes(s.ta)), db(s.b * size_bytes(s.tb)), dc(s.out * size_bytes(s.tout)),
          dd(s.out * size_bytes(s.tout)), dbias(std::max<size_t>(s.bias, 1) * size_bytes(s.tout)),
          dw(plan.workspace_bytes + 256);
      da.up(encode(s.ta, ha)), db.up(encode(s.tb, hb)), dc.up(encode(s.tout, hc)), dbias.up(encode(s.tout, hbias));
      CK(cuMemsetD8(dw.p, 0xab, dw.bytes));  // garbage: the plan must zero what it needs
      Operands ops;
      ops.a = da.ptr(), ops.b = db.ptr(), ops.c = dc.ptr(), ops.d = dd.ptr(), ops.bias = biasptr ? dbias.ptr() : nullptr;
      ops.workspace = dw.ptr();
      std::vector<unsigned char> out[2];
      for (int rep = 0; rep < 2; ++rep) {
        CK(cuMemsetD8(dd.p, 0xff, dd.bytes));  // poison: NaN in every dtype
        run_plan(plan, ks, ops);
        CK(cuCtxSynchronize());
        out[rep] = dd.down(s.out * size_bytes(s.tout));
      }
      auto got = decode(s.tout, out[0]);
      double rms = 0;
      for (double r : ref) rms += r * r;
      rms = std::sqrt(rms / std::max<size_t>(ref.size(), 1)) + 1e-30;
      const double tol = s.tout == DType::bf16 ? 1.2e-2 : s.tout == DType::f16 ? 2.5e-3 : (tf32 ? 2e-4 : 1e-4);
      double worst = 0;
      size_t worst_i = 0, bad = 0, nan = 0;
      for (size_t j = 0; j < ref.size(); ++j) {
        if (std::isnan(got[j])) { ++nan; worst = INFINITY; worst_i = j; continue; }
        double e = std::fabs(got[j] - ref[j]) / (std::fabs(ref[j]) + rms);
        if (e > tol) ++bad;
        if (e > worst) worst = e, worst_i = j;
      }
      const bool same = out[0] == out[1];
      const bool ok = bad == 0 && nan == 0 && same;
      ok ? ++pass : ++fail;
      std::printf("%s %-70s | %s  err=%.2e (tol %.0e) bad=%zu nan=%zu det=%d regs=%d local=%d launches=%zu ws=%zu",
                  ok ? "PASS" : "FAIL", cs.problem_text.c_str(), cs.config_text.c_str(), worst, tol, bad, nan, int(same),
                  ks[0].regs, ks[0].local, plan.launches(ops).size(), plan.workspace_bytes);
      if (!ok) std::printf(" worst@%zu got=%g ref=%g", worst_i, got[worst_i], ref[worst_i]);
      std::printf("\n");
    } catch (std::exception& e) {
      ++fail;
      std::printf("FAIL %s: %s\n", what.c_str(), e.what());
      CUresult st = cuCtxSynchronize();
      if (st != CUDA_SUCCESS) { std::printf("context broken, stopping\n"); break; }
    }
    std::fflush(stdout);
  }
  std::printf("check: %d passed, %d failed\n", pass, fail);
  return fail != 0;
}

// ---------------------------------------------------------------------------------------------
static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times fn(set) over rotating operand sets; returns the median ms per call.
template <class F> static double time_ms(F fn, int sets, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) fn(i % sets);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    fn(i % sets);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  return median(ms);
}

static int cmd_bench(const std::vector<Case>& cases) {
  std::vector<KernelSource> srcs;
  std::vector<KernelPlan> plans;
  for (auto& c : cases) {
    plans.push_back(make_plan(c.problem, c.config));
    for (auto& k : plans.back().kernels) srcs.push_back(k);
  }

  auto compiled = compile_all(srcs, std::max(1u, std::thread::hardware_concurrency()));
  cublasHandle_t h;
  cublasCreate(&h);
  int dev;
  cudaGetDevice(&dev);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, dev);
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::string last_problem;
  std::mt19937 rng(7);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& cs = cases[i];
    Shapes s = shapes(cs.problem);
    size_t set_bytes = s.a * size_bytes(s.ta) + s.b * size_bytes(s.tb) + s.out * size_bytes(s.tout);
    int sets = static_cast<int>(std::min<size_t>(16, std::max<size_t>(1, (3 * size_t(prop.l2CacheSize)) / set_bytes + 1)));
    std::vector<std::unique_ptr<DevBuf>> A, B, D;
    for (int k = 0; k < sets; ++k) {
      A.emplace_back(new DevBuf(s.a * size_bytes(s.ta)));
      B.emplace_back(new DevBuf(s.b * size_bytes(s.tb)));
      D.emplace_back(new DevBuf(s.out * size_bytes(s.tout)));
      A[k]->up(encode(s.ta, random_tensor(s.a, s.ta, rng, false)));
      B[k]->up(encode(s.tb, random_tensor(s.b, s.tb, rng, false)));
    }
    DevBuf bias(std::max<size_t>(s.bias, 1) * 4), ws(plans[i].workspace_bytes + 256);
    double flops = std::visit([](auto& p) { return p.flops(); }, cs.problem);
    auto* g = std::get_if<GemmProblem>(&cs.problem);
    if (g && cs.problem_text != last_problem && g->layout_string() == "rcr" && g->batch == 1) {
      last_problem = cs.problem_text;
      cudaDataType t = g->a == DType::bf16 ? CUDA_R_16BF : g->a == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
      cudaDataType tcd = g->c == DType::bf16 ? CUDA_R_16BF : g->c == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
      float alpha = 1, beta = 0;
      auto fn = [&](int k) {
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(g->n), int(g->m), int(g->k), &alpha, B[k]->ptr(), t, int(g->k),
                     A[k]->ptr(), t, int(g->k), &beta, D[k]->ptr(), tcd, int(g->n),
                     g->a == DType::f32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      };
      double ms = time_ms(fn, sets, 20);
      std::printf("BENCH %-55s | %-85s %8.3f ms %7.1f TFLOPS\n", cs.problem_text.c_str(), "cublas", ms, flops / ms / 1e9);
    }
    std::vector<Loaded> ks;
    for (auto& k : plans[i].kernels) {
      auto& c = compiled.at(k.name);
      if (!c.ok) { std::printf("COMPILEFAIL %s\n%s\n", k.name.c_str(), c.log.c_str()); return 1; }
      ks.push_back(load(c, k.name));
    }
    auto fn = [&](int k) {
      Operands o;
      o.a = A[k]->ptr(), o.b = B[k]->ptr(), o.c = D[k]->ptr(), o.d = D[k]->ptr(), o.bias = bias.ptr(), o.workspace = ws.ptr();
      run_plan(plans[i], ks, o);
    };
    double ms = time_ms(fn, sets, 20);
    std::printf("BENCH %-55s | %-85s %8.3f ms %7.1f TFLOPS regs=%d local=%d\n", cs.problem_text.c_str(),
                cs.config_text.c_str(), ms, flops / ms / 1e9, ks[0].regs, ks[0].local);
    std::fflush(stdout);
  }
  cublasDestroy(h);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sm80_check compile|check|bench FILE [kernels_dir] [arch]\n");
    return 2;
  }
  std::string cmd = argv[1];
  if (argc > 3) g_kernels_dir = argv[3];
  if (argc > 4) g_arch = argv[4];
  try {
    auto cases = read_cases(argv[2]);
    std::printf("%zu cases\n", cases.size());
    if (cmd == "compile") return cmd_compile(cases);
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    if (cmd == "check") return cmd_check(cases);
    if (cmd == "bench") return cmd_bench(cases);
  } catch (std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 2;
}
