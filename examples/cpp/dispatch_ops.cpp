// The plan API from C++ on every kind of op tilepick runs: a GEMM with a fused bias+ReLU epilogue,
// conv forward 2-D and 3-D, backward-data 3-D (strided), backward-weight grouped, depthwise forward.
// For each: check -> plan -> workspace size -> run on random inputs -> compare with tilepick's fp64
// CPU reference. Without a GPU it plans offline for an H200 (selection only) and says so.
//
//   build/examples/example_dispatch_ops            (TILEPICK_POLICY=auto:vendor=off: tilepick kernels only)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "tilepick/dispatch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

using namespace tilepick;

namespace {

const char* kProblems[] = {
    "gemm rcr m333 n250 k200 bf16 ep=bias+relu",                                    // fused epilogue
    "fwd g1 mb2 ic32 ih17 iw15 oc40 kh3 kw3 sh1 sw1 ph1 pw1 bf16",                   // conv 2-D
    "fwd g1 mb2 ic16 id5 ih9 iw9 oc24 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 f16",      // conv 3-D
    "bwd_data g1 mb2 ic24 id5 ih9 iw9 oc16 kd3 kh3 kw3 sd1 sh2 sw2 pd1 ph1 pw1 f16",  // 3-D, strided
    "bwd_weight g4 mb2 ic32 ih13 iw13 oc64 kh3 kw3 sh2 sw2 ph1 pw1 bf16",             // grouped
    "fwd g48 mb2 ic48 ih13 iw11 oc48 kh5 kw5 sh1 sw1 ph2 pw2 bf16",                   // depthwise
};

std::size_t elems(const TensorSpec& s) {
  std::size_t n = 1;
  for (auto v : s.shape) n *= static_cast<std::size_t>(v);
  return n;
}

// 16-bit device values <-> doubles (the values are already representable: see ref::round_to_dtype).
std::vector<std::uint16_t> encode(DType t, const std::vector<double>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i]);
    if (t == DType::bf16) out[i] = __nv_bfloat16_raw(__float2bfloat16_rn(f)).x;
    else out[i] = __half_raw(__float2half_rn(f)).x;
  }
  return out;
}

double decode(DType t, std::uint16_t bits) {
  if (t == DType::bf16) {
    __nv_bfloat16_raw r;
    r.x = bits;
    return __bfloat162float(__nv_bfloat16(r));
  }
  __half_raw r;
  r.x = bits;
  return __half2float(__half(r));
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(Status::cuda_error, std::string(what) + ": " + cudaGetErrorString(e));
}

// The fp64 reference of the problem's output from the inputs in operand_specs order (dense memory).
std::vector<double> reference(const Problem& p, const std::vector<TensorSpec>& specs,
                              const std::vector<std::vector<double>>& in, std::size_t out_elems) {
  std::vector<double> out(out_elems);
  const double* bias = nullptr;
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].slot == "bias") bias = in[i].data();
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    ref::gemm(*g, in[0].data(), in[1].data(), nullptr, bias, out.data());
    return out;
  }
  const auto& c = std::get<ConvProblem>(p);
  if (c.dir == ConvDir::fwd) ref::conv_fwd(c, in[0].data(), in[1].data(), bias, out.data());
  if (c.dir == ConvDir::bwd_data) ref::conv_bwd_data(c, in[0].data(), in[1].data(), out.data());
  if (c.dir == ConvDir::bwd_weight) ref::conv_bwd_weight(c, in[0].data(), in[1].data(), out.data());
  return out;
}

// Random inputs, the plan run on the GPU, and the relative L2 error against the reference.
double run_on_gpu(const Problem& p, const Plan& plan, std::mt19937& rng) {
  const auto specs = operand_specs(p);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> host(specs.size());
  std::vector<void*> dev(specs.size(), nullptr);
  std::size_t out_index = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    host[i].resize(elems(s));
    if (s.output) out_index = i;
    else
      for (auto& v : host[i]) v = ref::round_to_dtype(s.dtype, normal(rng));
    cuda_ok(cudaMalloc(&dev[i], host[i].size() * 2), "cudaMalloc");
    const auto bits = encode(s.dtype, host[i]);
    cuda_ok(cudaMemcpy(dev[i], bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void* workspace = nullptr;
  if (plan.workspace_bytes() > 0) cuda_ok(cudaMalloc(&workspace, plan.workspace_bytes()), "cudaMalloc");

  std::vector<TensorArg> tensors;  // dense memory order; torch-style views are accepted too
  for (std::size_t i = 0; i < specs.size(); ++i) tensors.push_back({dev[i], specs[i].dtype, specs[i].shape, {}, 0});
  plan.run(tensors, workspace, /*stream=*/nullptr);
  cuda_ok(cudaDeviceSynchronize(), "run");

  const auto& out_spec = specs[out_index];
  std::vector<std::uint16_t> bits(elems(out_spec));
  cuda_ok(cudaMemcpy(bits.data(), dev[out_index], bits.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const auto want = reference(p, specs, host, bits.size());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const double d = decode(out_spec.dtype, bits[i]) - want[i];
    err += d * d, norm += want[i] * want[i];
  }
  for (void* ptr : dev) cudaFree(ptr);
  if (workspace) cudaFree(workspace);
  return std::sqrt(err / std::max(norm, 1e-300));
}

}  // namespace

int main() {
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (!gpu) std::printf("no GPU: planning offline for h200 (selection only, nothing runs)\n");
  Dispatcher& dispatcher = Dispatcher::default_dispatcher();
  std::mt19937 rng(7);
  int failures = 0;
  for (const char* text : kProblems) {
    const Problem p = parse_problem(text);
    PlanOptions opt;  // the environment's policy (TILEPICK_POLICY, default auto)
    if (!gpu) opt.offline_arch = "h200";
    const Applicability a = dispatcher.check(p, opt);
    std::printf("%s\n  applicable: %s (%zu tilepick kernels%s)%s%s\n", text, a.ok ? "yes" : "no",
                a.tilepick_candidates, a.vendor_candidate ? " + vendor" : "", a.ok ? "" : ": ",
                a.reason.c_str());
    if (!a.ok) {
      ++failures;
      continue;
    }
    try {
      const auto plan = dispatcher.plan(p, opt);
      std::printf("  plan: %s%s, workspace %zu bytes\n", plan->info().kernel.c_str(),
                  plan->info().vendor ? " (vendor)" : "", plan->workspace_bytes());
      if (!gpu) continue;
      const double rel = run_on_gpu(p, *plan, rng);
      const bool bf16 = plan->info().problem.find("bf16") != std::string::npos;
      const bool ok = rel < (bf16 ? 1e-2 : 2e-3);  // a few units of the output dtype's rounding
      std::printf("  run: relative L2 error vs fp64 %.2e %s\n", rel, ok ? "ok" : "TOO LARGE");
      failures += !ok;
    } catch (const Error& e) {
      std::printf("  error: %s\n", e.what());
      ++failures;
    }
  }
  std::printf("%s\n", failures ? "FAILED" : "all ok");
  return failures ? 1 : 0;
}
