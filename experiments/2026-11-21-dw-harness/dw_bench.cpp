// Standalone GPU harness for the depthwise family (fam=dw); not part of the CMake build.
// Builds plans with the real plan builder (src/jit/family_dw.cpp), compiles them with NVRTC (cubins
// cached on disk, so a machine without a GPU can precompile), checks every direction against an fp64
// GPU reference with poisoned outputs, and times configs with a rotated (cold-L2) buffer set.
//
//   experiments/2026-11-21-dw-harness/dw_build.sh                       -> build-dwdev/dw_bench
//   dw_bench compile <check|perf|all> <cubins>  NVRTC only (no GPU needed)
//   dw_bench run <check|perf|all> <cubins> [csv] check (+ time for perf jobs) on GPU 0
// Run from the repository root (NVRTC include path kernels/, data/ for the registry).
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jit/families.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

using namespace tilepick;

#define CU(call)                                                                          \
  do {                                                                                    \
    CUresult r_ = (call);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                             \
      const char* s_ = nullptr;                                                           \
      cuGetErrorName(r_, &s_);                                                            \
      std::fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::uint64_t fnv(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::uint64_t headers_hash() {
  std::uint64_t h = 0;
  for (const char* f : {"kernels/common/types.cuh", "kernels/conv/dw.cuh", "kernels/conv/dw_params.cuh",
                        "kernels/conv/dw_common.cuh", "kernels/conv/dw_fwd.cuh", "kernels/conv/dw_bwd_weight.cuh"})
    h = fnv(read_file(f), h ^ fnv(f));
  return h;
}

// ---------------------------------------------------------------------------------------------
// Jobs

struct Job {
  std::string tag;  // layer name for perf jobs, "check" otherwise
  ConvProblem p;
  KernelConfig c;
  bool time = false;
};

const char* kCheckProblems[] = {
    // fwd 2-D
    "fwd g32 mb2 ic32 ih13 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "fwd g48 mb2 ic48 ih15 iw17 oc48 kh5 kw5 sh2 sw2 ph2 pw2 f16 ep=bias+relu",
    "fwd g64 mb1 ic64 ih20 iw19 oc64 kh7 kw7 sh1 sw1 ph6 pw6 dh2 dw2 bf16 ep=bias+gelu_erf",
    "fwd g24 mb2 ic24 ih11 iw12 oc24 kh4 kw4 sh1 sw1 ph1 pw2 f32 ep=bias+gelu_tanh",
    "fwd g40 mb1 ic40 ih18 iw21 oc40 kh9 kw9 sh2 sw2 ph4 pw4 bf16 ep=silu",
    "fwd g6 mb2 ic6 ih9 iw10 oc6 kh3 kw3 sh3 sw3 ph1 pw1 bf16 ep=bias+sigmoid",
    "fwd g5 mb2 ic5 ih12 iw7 oc5 kh3 kw5 sh1 sw2 ph1 pw2 f16 ep=tanh",
    "fwd g96 mb2 ic96 ih14 iw14 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16",
    "fwd g72 mb1 ic72 ih9 iw9 oc72 kh1 kw1 sh1 sw1 ph0 pw0 f32 ep=bias",
    // fwd 3-D
    "fwd g16 mb2 ic16 id5 ih9 iw10 oc16 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16 ep=bias+relu",
    "fwd g24 mb1 ic24 id7 ih9 iw8 oc24 kd3 kh3 kw3 sd2 sh2 sw2 pd1 ph1 pw1 f16",
    "fwd g8 mb1 ic8 id6 ih7 iw7 oc8 kd2 kh5 kw5 sd1 sh1 sw1 pd1 ph2 pw2 dd2 dh1 dw1 f32",
    // bwd_data
    "bwd_data g32 mb2 ic32 ih13 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "bwd_data g48 mb2 ic48 ih15 iw17 oc48 kh3 kw3 sh2 sw2 ph1 pw1 f16",
    "bwd_data g64 mb1 ic64 ih20 iw19 oc64 kh7 kw7 sh1 sw1 ph6 pw6 dh2 dw2 bf16",
    "bwd_data g24 mb2 ic24 ih11 iw12 oc24 kh4 kw4 sh2 sw2 ph1 pw2 f32",
    "bwd_data g40 mb1 ic40 ih18 iw21 oc40 kh5 kw5 sh2 sw2 ph4 pw4 dh2 dw2 bf16",
    "bwd_data g6 mb2 ic6 ih10 iw11 oc6 kh3 kw3 sh3 sw3 ph0 pw1 bf16",
    "bwd_data g5 mb2 ic5 ih12 iw7 oc5 kh3 kw5 sh1 sw2 ph1 pw2 f16",
    "bwd_data g96 mb2 ic96 ih14 iw14 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16",
    "bwd_data g16 mb2 ic16 id5 ih9 iw10 oc16 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16",
    "bwd_data g24 mb1 ic24 id7 ih9 iw8 oc24 kd3 kh3 kw3 sd2 sh2 sw2 pd1 ph1 pw1 f16",
    "bwd_data g8 mb1 ic8 id6 ih7 iw7 oc8 kd2 kh5 kw5 sd1 sh1 sw1 pd1 ph2 pw2 dd2 dh1 dw1 f32",
    // bwd_weight
    "bwd_weight g32 mb2 ic32 ih13 iw11 oc32 kh3 kw3 sh1 sw1 ph1 pw1 bf16",
    "bwd_weight g48 mb3 ic48 ih15 iw17 oc48 kh3 kw3 sh2 sw2 ph1 pw1 f16",
    "bwd_weight g64 mb1 ic64 ih20 iw19 oc64 kh7 kw7 sh1 sw1 ph6 pw6 dh2 dw2 bf16",
    "bwd_weight g24 mb2 ic24 ih11 iw12 oc24 kh4 kw4 sh2 sw2 ph1 pw2 f32",
    "bwd_weight g40 mb2 ic40 ih18 iw21 oc40 kh5 kw5 sh1 sw1 ph2 pw2 bf16",
    "bwd_weight g6 mb2 ic6 ih10 iw11 oc6 kh3 kw3 sh3 sw3 ph0 pw1 bf16",
    "bwd_weight g5 mb2 ic5 ih12 iw7 oc5 kh3 kw5 sh1 sw2 ph1 pw2 f16",
    "bwd_weight g96 mb4 ic96 ih14 iw14 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16",
    "bwd_weight g16 mb2 ic16 id5 ih9 iw10 oc16 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16",
    "bwd_weight g24 mb1 ic24 id7 ih9 iw8 oc24 kd3 kh3 kw3 sd2 sh2 sw2 pd1 ph1 pw1 f16",
    "bwd_weight g8 mb1 ic8 id6 ih7 iw7 oc8 kd2 kh5 kw5 sd1 sh1 sw1 pd1 ph2 pw2 dd2 dh1 dw1 f32",
};

// Configs outside the default space (still legal), to reach the corners.
const char* kExtraConfigs[] = {
    "fam=dw dwtile=1x32x32 ppt=8 cpt=2 splitk=1",  "fam=dw dwtile=2x8x64 ppt=1 cpt=4 splitk=1",
    "fam=dw dwtile=8x4x8 ppt=4 cpt=1 splitk=1",    "fam=dw dwtile=4x16x16 ppt=2 cpt=8 splitk=3",
    "fam=dw dwtile=16x8x128 ppt=8 cpt=8 splitk=2", "fam=dw dwtile=1x4x256 ppt=4 cpt=8 splitk=5",
};

// Hand-picked configs added to every perf layer (where legal), beside the random sample of the space.
const char* kPerfConfigs[] = {
    "fam=dw dwtile=8x8x32 ppt=4 cpt=2 splitk=1",   "fam=dw dwtile=8x16x32 ppt=4 cpt=2 splitk=1",
    "fam=dw dwtile=8x16x32 ppt=8 cpt=2 splitk=1",  "fam=dw dwtile=8x32x32 ppt=8 cpt=2 splitk=1",
    "fam=dw dwtile=4x16x64 ppt=4 cpt=4 splitk=1",  "fam=dw dwtile=8x8x32 ppt=2 cpt=4 splitk=1",
    "fam=dw dwtile=8x16x64 ppt=4 cpt=8 splitk=1",  "fam=dw dwtile=4x32x32 ppt=8 cpt=4 splitk=1",
    "fam=dw dwtile=8x16x16 ppt=4 cpt=2 splitk=1",  "fam=dw dwtile=16x16x32 ppt=8 cpt=4 splitk=1",
    "fam=dw dwtile=4x8x32 ppt=2 cpt=2 splitk=1",   "fam=dw dwtile=4x8x64 ppt=2 cpt=8 splitk=1",
    "fam=dw dwtile=8x8x32 ppt=4 cpt=2 splitk=4",   "fam=dw dwtile=8x8x32 ppt=4 cpt=2 splitk=8",
    "fam=dw dwtile=8x16x32 ppt=4 cpt=2 splitk=4",  "fam=dw dwtile=8x16x32 ppt=4 cpt=2 splitk=8",
    "fam=dw dwtile=4x16x32 ppt=4 cpt=2 splitk=8",  "fam=dw dwtile=8x8x16 ppt=2 cpt=2 splitk=8",
    "fam=dw dwtile=8x32x32 ppt=8 cpt=2 splitk=8",  "fam=dw dwtile=8x8x32 ppt=4 cpt=2 splitk=16",
    "fam=dw dwtile=8x16x32 ppt=8 cpt=1 splitk=8",  "fam=dw dwtile=8x16x32 ppt=4 cpt=4 splitk=8",
    "fam=dw dwtile=8x8x64 ppt=4 cpt=2 splitk=8",   "fam=dw dwtile=16x16x32 ppt=8 cpt=2 splitk=4",
    "fam=dw dwtile=8x8x64 ppt=8 cpt=8 splitk=8",   "fam=dw dwtile=8x32x16 ppt=8 cpt=2 splitk=4",
    "fam=dw dwtile=8x32x16 ppt=8 cpt=2 splitk=2",  "fam=dw dwtile=8x32x16 ppt=8 cpt=2 splitk=8",
    "fam=dw dwtile=8x32x8 ppt=4 cpt=4 splitk=4",   "fam=dw dwtile=8x32x8 ppt=4 cpt=4 splitk=8",
    "fam=dw dwtile=8x32x8 ppt=4 cpt=4 splitk=16",  "fam=dw dwtile=16x32x16 ppt=8 cpt=2 splitk=4",
    "fam=dw dwtile=8x32x16 ppt=8 cpt=4 splitk=4",  "fam=dw dwtile=4x32x16 ppt=4 cpt=4 splitk=16",
    "fam=dw dwtile=4x32x16 ppt=8 cpt=4 splitk=8",  "fam=dw dwtile=8x32x32 ppt=8 cpt=4 splitk=4",
    "fam=dw dwtile=8x32x32 ppt=8 cpt=4 splitk=1",  "fam=dw dwtile=4x32x64 ppt=8 cpt=8 splitk=1",
    "fam=dw dwtile=4x32x16 ppt=8 cpt=4 splitk=1",  "fam=dw dwtile=2x32x32 ppt=8 cpt=4 splitk=1",
    "fam=dw dwtile=16x32x32 ppt=16 cpt=4 splitk=1", "fam=dw dwtile=8x32x32 ppt=16 cpt=4 splitk=1",
};

struct Layer {
  const char* name;
  const char* fwd;  // the fwd problem; bwd_data and bwd_weight use the same shape
};
const Layer kPerfLayers[] = {
    {"convnext_t.s1.dw7", "fwd g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16"},
    {"mobilenetv2.dw3s2", "fwd g144 mb32 ic144 ih56 iw56 oc144 kh3 kw3 sh2 sw2 ph1 pw1 bf16"},
    {"convnext_t.s2.dw7", "fwd g192 mb32 ic192 ih28 iw28 oc192 kh7 kw7 sh1 sw1 ph3 pw3 bf16"},
    {"mobilenetv2.dw3s1", "fwd g192 mb32 ic192 ih28 iw28 oc192 kh3 kw3 sh1 sw1 ph1 pw1 bf16"},
};

std::vector<KernelConfig> sample(std::vector<KernelConfig> v, std::size_t k, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  if (v.size() > k) v.resize(k);
  return v;
}

std::vector<KernelConfig> space_configs(const ConvProblem& p, const ArchSpec& arch) {
  std::vector<KernelConfig> out;
  for (const auto& e : Registry::default_registry().lookup(p, arch))
    if (e.config.fam() == Family::dw) out.push_back(e.config);
  return out;
}

std::vector<Job> make_jobs(const std::string& which, const ArchSpec& arch) {
  std::vector<Job> jobs;
  std::uint32_t seed = 1;
  if (which == "check" || which == "all") {
    for (const char* s : kCheckProblems) {
      ConvProblem p = parse_conv(s);
      auto cs = sample(space_configs(p, arch), 7, seed++);
      for (const char* e : kExtraConfigs) {
        KernelConfig c = parse_config(e);
        if (legal(p, c, arch)) cs.push_back(c);
      }
      for (auto& c : cs) jobs.push_back({"check", p, c, false});
    }
  }
  if (which == "perf" || which == "all") {
    for (const auto& L : kPerfLayers) {
      for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_weight}) {
        ConvProblem p = parse_conv(L.fwd);
        p.dir = d;
        auto all = space_configs(p, arch);
        // Bias the sample toward the shapes that suit memory-bound depthwise work.
        std::vector<KernelConfig> good, rest;
        for (auto& c : all) {
          const bool vec = c.dw_cpt * size_bytes(p.x) >= 4 && c.dw_tile_c * size_bytes(p.x) >= 32;
          (vec ? good : rest).push_back(c);
        }
        auto cs = sample(good, L.name[0] == 'c' && L.name[11] == '1' ? 90 : 60, seed++);
        for (auto& c : sample(rest, 6, seed++)) cs.push_back(c);
        for (const char* e : kPerfConfigs) {
          KernelConfig c = parse_config(e);
          if (legal(p, c, arch) && std::find(cs.begin(), cs.end(), c) == cs.end()) cs.push_back(c);
        }
        for (auto& c : cs) jobs.push_back({L.name, p, c, true});
      }
    }
  }
  return jobs;
}

// ---------------------------------------------------------------------------------------------
// NVRTC with a disk cache

struct Cubin {
  std::string name;
  std::vector<char> data;
  double seconds = 0;
  int regs = -1;
};

std::string cubin_path(const std::string& dir, const KernelSource& k, std::uint64_t hh) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fnv(k.code, hh));
  return dir + "/" + k.name + "." + buf + ".cubin";
}

bool compile_one(const KernelSource& k, const std::string& path, double* seconds, std::string* log) {
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, k.code.c_str(), (k.name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return false;
  const char* opts[] = {"--gpu-architecture=sm_90a", "-std=c++17", "--include-path=kernels"};  // as src/jit/nvrtc.cpp
  nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  log->assign(n, '\0');
  nvrtcGetProgramLog(prog, log->data());
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return false;
  }
  nvrtcGetCUBINSize(prog, &n);
  std::vector<char> bin(n);
  nvrtcGetCUBIN(prog, bin.data());
  nvrtcDestroyProgram(&prog);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ofstream(path + ".tmp", std::ios::binary).write(bin.data(), bin.size());
  std::rename((path + ".tmp").c_str(), path.c_str());
  return true;
}

// Compiles every distinct program of the jobs that is not cached; returns the compile times.
std::vector<double> compile_all(const std::vector<KernelSource>& srcs, const std::string& dir, std::uint64_t hh,
                                int nthreads) {
  std::vector<double> times;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < srcs.size();) {
      const std::string path = cubin_path(dir, srcs[i], hh);
      if (std::ifstream(path).good()) continue;
      double sec = 0;
      std::string log;
      if (!compile_one(srcs[i], path, &sec, &log)) {
        std::lock_guard<std::mutex> g(mu);
        std::fprintf(stderr, "NVRTC FAILED %s\n%s\n%s\n", srcs[i].name.c_str(), srcs[i].code.c_str(), log.c_str());
        ++failures;
        continue;
      }
      std::lock_guard<std::mutex> g(mu);
      times.push_back(sec);
      if (std::getenv("DW_VERBOSE")) std::printf("compile %.3f s %s | %s\n", sec, srcs[i].name.c_str(), srcs[i].specialization.c_str());
      if (!log.empty() && log.size() > 2) std::fprintf(stderr, "NVRTC log %s: %s\n", srcs[i].name.c_str(), log.c_str());
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < nthreads; ++t) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  if (failures) std::fprintf(stderr, "%d programs failed to compile\n", failures.load());
  return times;
}

// ---------------------------------------------------------------------------------------------
// fp64 GPU reference (NVRTC)

const char* kRefSource = R"(
#include "common/types.cuh"
struct G { int n, c, in[3], out[3], f[3], s[3], p[3], d[3], act, bias; };
__device__ double actd(int a, double x) {
  if (a == 1) return x > 0 ? x : 0;
  if (a == 2) return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  if (a == 3) return 0.5 * x * (1 + erf(x * 0.7071067811865476));
  if (a == 4) return x / (1 + exp(-x));
  if (a == 5) return 1 / (1 + exp(-x));
  if (a == 6) return tanh(x);
  return x;
}
template <class T> __device__ double ld(const T* p, long long i) { return (double)tp::to_float(p[i]); }
// y (fwd), dx (bwd_data): one thread per output element, channel fastest.
template <class T> __device__ void fwd(G g, const T* x, const T* w, const T* b, double* y, double* ya) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long tot = (long long)g.n * g.out[0] * g.out[1] * g.out[2] * g.c;
  if (i >= tot) return;
  long long r = i; int c = r % g.c; r /= g.c; int ow = r % g.out[2]; r /= g.out[2]; int oh = r % g.out[1]; r /= g.out[1];
  int od = r % g.out[0]; int n = r / g.out[0];
  double acc = 0, aa = 0;
  for (int z = 0; z < g.f[0]; ++z) for (int yy = 0; yy < g.f[1]; ++yy) for (int xx = 0; xx < g.f[2]; ++xx) {
    int iz = od * g.s[0] - g.p[0] + z * g.d[0], iy = oh * g.s[1] - g.p[1] + yy * g.d[1], ix = ow * g.s[2] - g.p[2] + xx * g.d[2];
    if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 || ix >= g.in[2]) continue;
    double t = ld(x, ((((long long)n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * g.c + c) *
               ld(w, ((long long)c * g.f[0] + z) * g.f[1] * g.f[2] + yy * g.f[2] + xx);
    acc += t; aa += fabs(t);
  }
  if (g.bias) { double bb = ld(b, c); acc += bb; aa += fabs(bb); }
  y[i] = actd(g.act, acc); ya[i] = aa;
}
// dx: in = x dims (dx), out = y dims (dy)
template <class T> __device__ void bwdd(G g, const T* dy, const T* w, double* dx, double* dxa) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long tot = (long long)g.n * g.in[0] * g.in[1] * g.in[2] * g.c;
  if (i >= tot) return;
  long long r = i; int c = r % g.c; r /= g.c; int iw = r % g.in[2]; r /= g.in[2]; int ih = r % g.in[1]; r /= g.in[1];
  int id = r % g.in[0]; int n = r / g.in[0];
  double acc = 0, aa = 0;
  for (int z = 0; z < g.f[0]; ++z) for (int yy = 0; yy < g.f[1]; ++yy) for (int xx = 0; xx < g.f[2]; ++xx) {
    int tz = id + g.p[0] - z * g.d[0], ty = ih + g.p[1] - yy * g.d[1], tx = iw + g.p[2] - xx * g.d[2];
    if (tz < 0 || ty < 0 || tx < 0 || tz % g.s[0] || ty % g.s[1] || tx % g.s[2]) continue;
    int od = tz / g.s[0], oh = ty / g.s[1], ow = tx / g.s[2];
    if (od >= g.out[0] || oh >= g.out[1] || ow >= g.out[2]) continue;
    double t = ld(dy, ((((long long)n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * g.c + c) *
               ld(w, ((long long)c * g.f[0] + z) * g.f[1] * g.f[2] + yy * g.f[2] + xx);
    acc += t; aa += fabs(t);
  }
  dx[i] = acc; dxa[i] = aa;
}
// dw[c][tap]: one thread per (tap, c), channel fastest.
template <class T> __device__ void bwdw(G g, const T* x, const T* dy, double* dw, double* dwa) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  int taps = g.f[0] * g.f[1] * g.f[2];
  if (i >= (long long)taps * g.c) return;
  int c = i % g.c, t = i / g.c;
  int z = t / (g.f[1] * g.f[2]), yy = (t / g.f[2]) % g.f[1], xx = t % g.f[2];
  double acc = 0, aa = 0;
  for (int n = 0; n < g.n; ++n) for (int od = 0; od < g.out[0]; ++od) for (int oh = 0; oh < g.out[1]; ++oh)
  for (int ow = 0; ow < g.out[2]; ++ow) {
    int iz = od * g.s[0] - g.p[0] + z * g.d[0], iy = oh * g.s[1] - g.p[1] + yy * g.d[1], ix = ow * g.s[2] - g.p[2] + xx * g.d[2];
    if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 || ix >= g.in[2]) continue;
    double v = ld(x, ((((long long)n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix) * g.c + c) *
               ld(dy, ((((long long)n * g.out[0] + od) * g.out[1] + oh) * g.out[2] + ow) * g.c + c);
    acc += v; aa += fabs(v);
  }
  dw[(long long)c * taps + t] = acc; dwa[(long long)c * taps + t] = aa;
}
// Random normal values (hash + Box-Muller), and the check of an output against the reference.
__device__ unsigned hash32(unsigned long long x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return (unsigned)x;
}
template <class T> __device__ void fill(T* p, long long n, unsigned long long seed, float scale) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float u1 = (hash32(seed * 0x9E3779B97F4A7C15ull + 2 * i) + 1.0f) * 2.3283064e-10f;
  float u2 = hash32(seed * 0x9E3779B97F4A7C15ull + 2 * i + 1) * 2.3283064e-10f;
  p[i] = tp::from_float<T>(scale * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
}
// err = |got - ref| / (sum |terms| + 1e-3); counts err > tol (NaN too), max err as ordered bits.
template <class T> __device__ void compare(const T* got, const double* ref, const double* refa, long long n,
                                           double tol, unsigned long long* bad, unsigned* maxbits) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double e = fabs((double)tp::to_float(got[i]) - ref[i]) / (refa[i] + 1e-3);
  if (!(e <= tol)) atomicAdd(bad, 1ull);
  float ef = e <= 3e38 ? (float)e : 3e38f;
  atomicMax(maxbits, __float_as_uint(ef));
}
#define INST(T, S) \
extern "C" __global__ void fill_##S(T* p, long long n, unsigned long long seed, float scale) { fill<T>(p, n, seed, scale); } \
extern "C" __global__ void compare_##S(const T* got, const double* ref, const double* refa, long long n, double tol, \
                                       unsigned long long* bad, unsigned* maxbits) { compare<T>(got, ref, refa, n, tol, bad, maxbits); } \
extern "C" __global__ void ref_fwd_##S(G g, const T* x, const T* w, const T* b, double* y, double* ya) { fwd<T>(g, x, w, b, y, ya); } \
extern "C" __global__ void ref_bwdd_##S(G g, const T* dy, const T* w, double* dx, double* dxa) { bwdd<T>(g, dy, w, dx, dxa); } \
extern "C" __global__ void ref_bwdw_##S(G g, const T* x, const T* dy, double* dw, double* dwa) { bwdw<T>(g, x, dy, dw, dwa); }
INST(tp::f16, f16)
INST(tp::bf16, bf16)
INST(float, f32)
)";

struct RefG {
  int n, c, in[3], out[3], f[3], s[3], p[3], d[3], act, bias;
};

// ---------------------------------------------------------------------------------------------
// Device buffers

struct Dev {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  Dev() = default;
  explicit Dev(size_t b) : bytes(b) { CU(cuMemAlloc(&p, std::max<size_t>(b, 256))); }
  ~Dev() {
    if (p) cuMemFree(p);
  }
  Dev(const Dev&) = delete;
  Dev(Dev&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = 0; }
  Dev& operator=(Dev&& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
  void* ptr() const { return reinterpret_cast<void*>(p); }
};

// ---------------------------------------------------------------------------------------------
// Runner

struct Loaded {
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  int regs = 0;
};

class Runner {
 public:
  Runner(std::string dir, std::uint64_t hh) : dir_(std::move(dir)), hh_(hh) {
    CU(cuInit(0));
    CU(cuDeviceGet(&dev_, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
    CU(cuCtxSetCurrent(ctx_));
    char name[256];
    cuDeviceGetName(name, sizeof name, dev_);
    device_name_ = name;
    int l2 = 0;
    cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_);
    l2_bytes_ = l2;
    // Reference module.
    KernelSource ref;
    ref.name = "dw_reference";
    ref.code = kRefSource;
    const std::string path = cubin_path(dir_, ref, hh_);
    if (!std::ifstream(path).good()) {
      double s;
      std::string log;
      if (!compile_one(ref, path, &s, &log)) {
        std::fprintf(stderr, "reference compile failed: %s\n", log.c_str());
        std::exit(2);
      }
    }
    const std::string bin = read_file(path);
    CU(cuModuleLoadData(&ref_mod_, bin.data()));
    CU(cuEventCreate(&e0_, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&e1_, CU_EVENT_DEFAULT));
  }
  const std::string& device_name() const { return device_name_; }
  size_t l2_bytes() const { return l2_bytes_; }

  const Loaded& load(const KernelSource& k) {
    const std::string path = cubin_path(dir_, k, hh_);
    auto it = cache_.find(path);
    if (it != cache_.end()) return it->second;
    std::string bin = read_file(path);
    if (bin.empty()) {
      double s;
      std::string log;
      if (!compile_one(k, path, &s, &log)) {
        std::fprintf(stderr, "compile failed %s: %s\n", k.name.c_str(), log.c_str());
        std::exit(2);
      }
      bin = read_file(path);
    }
    Loaded l;
    CU(cuModuleLoadData(&l.mod, bin.data()));
    CU(cuModuleGetFunction(&l.fn, l.mod, k.name.c_str()));
    cuFuncGetAttribute(&l.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, l.fn);
    return cache_[path] = l;
  }

  void launch(const KernelPlan& plan, const std::vector<Launch>& ls, void* workspace) {
    for (const auto& l : ls) {
      const Loaded& k = load(plan.kernels[l.kernel]);
      if (l.zero_workspace_bytes)
        CU(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(workspace), 0, l.zero_workspace_bytes, nullptr));
      if (l.smem_bytes > 48 * 1024)
        CU(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l.smem_bytes));
      void* args[] = {const_cast<unsigned char*>(l.params.data())};
      CU(cuLaunchKernel(k.fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.smem_bytes,
                        nullptr, args, nullptr));
    }
  }

  Dev random(std::int64_t n, DType t, unsigned long long seed, float scale) {
    Dev d(n * size_bytes(t));
    void* p = d.ptr();
    void* args[] = {&p, &n, &seed, &scale};
    CU(cuLaunchKernel(ref_fn(std::string("fill_") + (t == DType::f16 ? "f16" : t == DType::bf16 ? "bf16" : "f32")),
                      static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    return d;
  }

  CUfunction ref_fn(const std::string& name) {
    CUfunction f;
    CU(cuModuleGetFunction(&f, ref_mod_, name.c_str()));
    return f;
  }

  // Times `count` back-to-back runs (each its own launches) between two events; returns ms.
  float time_batch(const std::function<void(int)>& run, int count) {
    CU(cuEventRecord(e0_, nullptr));
    for (int i = 0; i < count; ++i) run(i);
    CU(cuEventRecord(e1_, nullptr));
    CU(cuEventSynchronize(e1_));
    float ms = 0;
    CU(cuEventElapsedTime(&ms, e0_, e1_));
    return ms;
  }

 private:
  std::string dir_;
  std::uint64_t hh_;
  CUdevice dev_;
  CUcontext ctx_;
  CUmodule ref_mod_ = nullptr;
  CUevent e0_, e1_;
  std::map<std::string, Loaded> cache_;
  std::string device_name_;
  size_t l2_bytes_ = 0;
};

const char* dtype_suffix(DType t) { return t == DType::f16 ? "f16" : t == DType::bf16 ? "bf16" : "f32"; }

struct CheckResult {
  double max_err = 0;  // max |got - ref| / (sum |terms|)
  long long bad = 0;
  bool pass = false;
};

double tolerance(DType t) { return t == DType::bf16 ? 8e-3 : t == DType::f16 ? 2e-3 : 1e-4; }

// Problem data, reference results and output buffers of one problem (shared by its jobs).
struct ProblemData {
  ConvProblem p;
  Dev x, w, y, bias;           // the real tensors (the problem's x, w, y roles)
  Dev ref, refa;               // fp64 reference of this direction's output, and sum |terms|
  std::int64_t out_elems = 0;
};

std::unique_ptr<ProblemData> prepare(Runner& R, const ConvProblem& p, std::mt19937& rng) {
  auto d = std::make_unique<ProblemData>();
  d->p = p;
  const auto out = p.out();
  RefG g{};
  g.n = (int)p.n, g.c = (int)p.c;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = (int)p.in[i], g.out[i] = (int)out[i], g.f[i] = (int)p.filter[i], g.s[i] = (int)p.stride[i];
    g.p[i] = (int)p.pad[i], g.d[i] = (int)p.dilation[i];
  }
  g.act = static_cast<int>(p.epilogue.act), g.bias = p.epilogue.bias ? 1 : 0;
  d->x = R.random(p.x_elems(), p.x, rng(), 1.f);
  d->w = R.random(p.w_elems(), p.x, rng(), 0.5f);
  d->y = R.random(p.y_elems(), p.x, rng(), 1.f);
  d->bias = R.random(p.c, p.x, rng(), 1.f);
  const std::int64_t n = p.dir == ConvDir::fwd ? p.y_elems() : p.dir == ConvDir::bwd_data ? p.x_elems() : p.w_elems();
  d->out_elems = n;
  Dev r(n * 8), ra(n * 8);
  std::string sfx = dtype_suffix(p.x);
  void* rp = r.ptr();
  void* rap = ra.ptr();
  void* xp = d->x.ptr();
  void* wp = d->w.ptr();
  void* yp = d->y.ptr();
  void* bp = d->bias.ptr();
  const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
  if (p.dir == ConvDir::fwd) {
    void* args[] = {&g, &xp, &wp, &bp, &rp, &rap};
    CU(cuLaunchKernel(R.ref_fn("ref_fwd_" + sfx), blocks, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  } else if (p.dir == ConvDir::bwd_data) {
    void* args[] = {&g, &yp, &wp, &rp, &rap};
    CU(cuLaunchKernel(R.ref_fn("ref_bwdd_" + sfx), blocks, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  } else {
    void* args[] = {&g, &xp, &yp, &rp, &rap};
    CU(cuLaunchKernel(R.ref_fn("ref_bwdw_" + sfx), blocks, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  }
  CU(cuCtxSynchronize());
  d->ref = std::move(r), d->refa = std::move(ra);
  return d;
}

Operands operands(const ProblemData& d, void* out, void* ws) {
  Operands o;
  switch (d.p.dir) {
    case ConvDir::fwd: o.a = d.x.ptr(), o.b = d.w.ptr(), o.bias = d.p.epilogue.bias ? d.bias.ptr() : nullptr; break;
    case ConvDir::bwd_data: o.a = d.y.ptr(), o.b = d.w.ptr(); break;
    case ConvDir::bwd_weight: o.a = d.x.ptr(), o.b = d.y.ptr(); break;
  }
  o.d = out, o.workspace = ws;
  return o;
}

CheckResult check(Runner& R, const ProblemData& d, const KernelPlan& plan) {
  const int b = size_bytes(d.p.x);
  Dev out(d.out_elems * b), ws(plan.workspace_bytes);
  CU(cuMemsetD8(out.p, 0xff, d.out_elems * b));  // NaN poison
  if (plan.workspace_bytes) CU(cuMemsetD8(ws.p, 0xff, plan.workspace_bytes));
  R.launch(plan, plan.launches(operands(d, out.ptr(), ws.ptr())), ws.ptr());
  Dev cnt(16);
  CU(cuMemsetD8(cnt.p, 0, 16));
  void* gp = out.ptr();
  void* rp = d.ref.ptr();
  void* rap = d.refa.ptr();
  long long n = d.out_elems;
  double tol = tolerance(d.p.x);
  void* badp = cnt.ptr();
  void* maxp = reinterpret_cast<char*>(cnt.ptr()) + 8;
  void* args[] = {&gp, &rp, &rap, &n, &tol, &badp, &maxp};
  CU(cuLaunchKernel(R.ref_fn(std::string("compare_") + dtype_suffix(d.p.x)), static_cast<unsigned>((n + 255) / 256), 1, 1,
                    256, 1, 1, 0, nullptr, args, nullptr));
  unsigned long long h[2];
  CU(cuMemcpyDtoH(h, cnt.p, 16));
  CheckResult res;
  res.bad = static_cast<long long>(h[0]);
  unsigned bits = static_cast<unsigned>(h[1]);
  float mf;
  std::memcpy(&mf, &bits, 4);
  res.max_err = mf;
  res.pass = res.bad == 0;
  return res;
}

// Median time (us) of one run over a rotated set of buffers larger than 3x L2.
double time_plan(Runner& R, const ConvProblem& p, const KernelPlan& plan, std::vector<Dev>& xs, std::vector<Dev>& ys,
                 std::vector<Dev>& outs, const Dev& w, const Dev& bias, const Dev& ws) {
  const int sets = static_cast<int>(xs.size());
  std::vector<std::vector<Launch>> ls(sets);
  for (int i = 0; i < sets; ++i) {
    Operands o;
    switch (p.dir) {
      case ConvDir::fwd: o.a = xs[i].ptr(), o.b = w.ptr(), o.bias = p.epilogue.bias ? bias.ptr() : nullptr; break;
      case ConvDir::bwd_data: o.a = ys[i].ptr(), o.b = w.ptr(); break;
      case ConvDir::bwd_weight: o.a = xs[i].ptr(), o.b = ys[i].ptr(); break;
    }
    o.d = outs[i].ptr(), o.workspace = ws.ptr();
    ls[i] = plan.launches(o);
  }
  auto run = [&](int i) { R.launch(plan, ls[i % sets], ws.ptr()); };
  R.time_batch(run, sets);  // warm-up (module load, attributes)
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) t.push_back(1000.0 * R.time_batch(run, 2 * sets) / (2 * sets));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: dw_bench compile|run check|perf|all <cubin_dir> [out.csv]\n");
    return 1;
  }
  const std::string mode = argv[1], which = argv[2], dir = argv[3];
  const ArchSpec& arch = find_arch(default_arch_specs(), "h100_sxm");
  const auto all_jobs = make_jobs(which, arch);
  const std::uint64_t hh = headers_hash();

  // Plans (the plan builder is exercised for every job, GPU or not).
  std::vector<KernelPlan> plans;
  std::vector<KernelSource> srcs;
  std::map<std::string, bool> seen;
  std::vector<Job> jobs_ok;
  for (const auto& j : all_jobs) {
    try {
      plans.push_back(family::plan_dw(j.p, j.c));
    } catch (const Unsupported& e) {
      std::printf("REFUSED (legal but no plan): %s\n", e.what());
      continue;
    }
    jobs_ok.push_back(j);
    for (const auto& k : plans.back().kernels)
      if (!seen[k.name]) seen[k.name] = true, srcs.push_back(k);
  }
  const auto& jobs = jobs_ok;
  std::fprintf(stderr, "%zu jobs, %zu programs\n", jobs.size(), srcs.size());

  if (mode == "prune") {  // removes the cubins of <cubin_dir> that no job of the set needs
    std::map<std::string, bool> keep;
    for (const auto& k : srcs) keep[cubin_path(dir, k, hh)] = true;
    KernelSource ref;
    ref.name = "dw_reference";
    ref.code = kRefSource;
    keep[cubin_path(dir, ref, hh)] = true;
    int removed = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (!keep.count(e.path().string())) std::filesystem::remove(e.path()), ++removed;
    std::printf("pruned %d stale cubins\n", removed);
    return 0;
  }
  if (mode == "compile") {
    // DW_LIMIT=k keeps k programs spread over the list (for compile-time measurements), DW_THREADS=t.
    if (const char* lim = std::getenv("DW_LIMIT")) {
      const size_t k = std::max<size_t>(1, std::strtoul(lim, nullptr, 10));
      std::vector<KernelSource> some;
      for (size_t i = 0; i < k && i < srcs.size(); ++i) some.push_back(srcs[i * srcs.size() / k]);
      srcs = some;
    }
    const char* nt = std::getenv("DW_THREADS");
    auto t = compile_all(srcs, dir, hh, nt ? std::atoi(nt) : std::max(1u, std::thread::hardware_concurrency()));
    std::sort(t.begin(), t.end());
    if (!t.empty())
      std::printf("compiled %zu programs: median %.3f s, p90 %.3f s, max %.3f s\n", t.size(), t[t.size() / 2],
                  t[t.size() * 9 / 10], t.back());
    return 0;
  }

  Runner R(dir, hh);
  {  // compile what is missing (in parallel) before the GPU work
    auto t = compile_all(srcs, dir, hh, std::max(1u, std::thread::hardware_concurrency()));
    if (!t.empty()) std::printf("compiled %zu missing programs here\n", t.size());
  }
  std::FILE* csv = argc > 4 ? std::fopen(argv[4], "w") : nullptr;
  if (csv) std::fprintf(csv, "device,tag,problem,config,kernel,regs,smem,pass,max_err,us,gbps\n");
  std::printf("device: %s, L2 %zu MB\n", R.device_name().c_str(), R.l2_bytes() >> 20);
  std::mt19937 rng(12345);
  int fails = 0, checked = 0;
  std::unique_ptr<ProblemData> data;
  // Rotated buffers for timing, per problem.
  std::vector<Dev> xs, ys, outs;
  Dev ws_t;
  struct Best {
    double us = 0, gbps = 0;
    std::string config;
  };
  std::map<std::string, Best> best;  // "tag dir" -> fastest config
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if (!data || !(data->p == j.p)) {
      data = prepare(R, j.p, rng);
      xs.clear(), ys.clear(), outs.clear();
      if (j.time) {
        const int b = size_bytes(j.p.x);
        const size_t set = (j.p.x_elems() + j.p.y_elems()) * b;
        const int sets = static_cast<int>(std::max<size_t>(2, (3 * R.l2_bytes() + set - 1) / set + 1));
        for (int s = 0; s < sets; ++s) {
          xs.push_back(R.random(j.p.x_elems(), j.p.x, rng(), 1.f));
          ys.push_back(R.random(j.p.y_elems(), j.p.x, rng(), 1.f));
          const std::int64_t on = j.p.dir == ConvDir::fwd ? j.p.y_elems() : j.p.dir == ConvDir::bwd_data ? j.p.x_elems() : j.p.w_elems();
          outs.emplace_back(on * b);
        }
      }
    }
    const KernelPlan& plan = plans[i];
    CheckResult cr = check(R, *data, plan);
    ++checked;
    if (!cr.pass) {
      ++fails;
      std::printf("FAIL %s | %s | %s | bad %lld max_err %.3g\n", to_string(j.p).c_str(), to_string(j.c).c_str(),
                  plan.kernels[0].name.c_str(), cr.bad, cr.max_err);
    }
    double us = 0, gbps = 0;
    if (j.time && cr.pass) {
      if (ws_t.bytes < plan.workspace_bytes) ws_t = Dev(plan.workspace_bytes);
      us = time_plan(R, j.p, plan, xs, ys, outs, data->w, data->bias, ws_t);
      gbps = j.p.min_bytes() / (us * 1e3);
      const std::string key = std::string(j.tag) + " " + std::string(to_string(j.p.dir));
      if (!best.count(key) || us < best[key].us) best[key] = {us, gbps, to_string(j.c)};
    }
    if (csv) {
      const auto ls = plan.launches(operands(*data, data->y.ptr(), ws_t.ptr() ? ws_t.ptr() : data->y.ptr()));
      std::fprintf(csv, "\"%s\",%s,\"%s\",\"%s\",%s,%d,%u,%d,%.3g,%.2f,%.1f\n", R.device_name().c_str(), j.tag.c_str(),
                   to_string(j.p).c_str(), to_string(j.c).c_str(), plan.kernels[0].name.c_str(),
                   R.load(plan.kernels[0]).regs, ls[0].smem_bytes, cr.pass ? 1 : 0, cr.max_err, us, gbps);
    }
  }
  std::printf("checked %d (problem, config) pairs: %d failed\n", checked, fails);
  for (const auto& [k, v] : best)
    std::printf("BEST %-32s %8.2f us %7.1f GB/s  %s\n", k.c_str(), v.us, v.gbps, v.config.c_str());
  if (csv) std::fclose(csv);
  return fails ? 3 : 0;
}
