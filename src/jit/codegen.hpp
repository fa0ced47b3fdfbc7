// Helpers shared by the kernel families' plan builders: symbol hashing, Cfg text, fast divisors,
// parameter packing.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/gemm/params.cuh"
#include "core/hash.hpp"
#include "tilepick/dtype.hpp"
#include "tilepick/kernel_plan.hpp"

namespace tilepick::codegen {

using tilepick::fnv1a64;
using tilepick::hex16;
// "tp::f16", "tp::bf16" or "float"; throws Unsupported for other types.
std::string device_type(DType t);

// Builds the `struct Cfg { ... };` block of a generated program, one member per line.
class CfgText {
 public:
  CfgText& i(const char* name, long long v);
  CfgText& b(const char* name, bool v);
  CfgText& type(const char* name, const std::string& cpp);
  std::string str() const { return "struct Cfg {\n" + body_ + "};\n"; }

 private:
  std::string body_;
};

// How the entry point is declared. Hopper kernels take their parameters as __grid_constant__ (TMA
// reads tensor maps from parameter space) and cap registers at entry with one block per SM
// (__launch_bounds__(threads, 1)), which setmaxnreg needs.
struct EntryOptions {
  bool grid_constant = false;
  int min_blocks = 0;  // 0: no second __launch_bounds__ argument
};

// One program: #include <header>, the Cfg, and
//   extern "C" __global__ void __launch_bounds__(threads) <name>(const <params> p) { <call><Cfg>(p); }
// with name = prefix + hex16(fnv1a64(specialization + "|" + config_text)).
KernelSource make_source(const std::string& prefix, const std::string& header, const CfgText& cfg,
                         const std::string& params_type, const std::string& call, const std::string& specialization,
                         const std::string& config_text, int threads, const EntryOptions& entry = {});

// tp::FastDiv as the device expects it: q = (n * mul) >> shift for 0 <= n < 2^31.
struct FastDivHost {
  unsigned d, mul, shift, pad_;
};
FastDivHost make_fastdiv(std::int64_t d);
inline std::int64_t fastdiv_apply(const FastDivHost& f, std::int64_t n) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(n) * f.mul) >> f.shift);
}

template <class P> std::vector<unsigned char> pack(const P& p) {
  std::vector<unsigned char> v(sizeof(P));
  std::memcpy(v.data(), &p, sizeof(P));
  return v;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline std::int64_t align16(std::int64_t v) { return (v + 15) / 16 * 16; }
// The direct families (fam=dw, fam=grp) bake a filter extent into the program when it is 1, 3, 5 or 7 (0 = runtime).
inline int baked_filter(std::int64_t f) { return f == 1 || f == 3 || f == 5 || f == 7 ? static_cast<int>(f) : 0; }
// A stride or dilation baked into a program (1 or 2), else 0 (read at run time).
inline int baked_step(std::int64_t s) { return s == 1 || s == 2 ? static_cast<int>(s) : 0; }
inline std::size_t round256(std::size_t n) { return (n + 255) / 256 * 256; }

// The parallel split-K reduction kernel (gemm/splitk_reduce.cuh) for an output dtype, vector
// width and epilogue; its name depends on that specialization only, so configs share it.
KernelSource splitk_reduce_source(DType out, int vec, bool beta, const Epilogue& ep);

// A GEMM's parallel split-K reduction (both GEMM families): the constructor appends its program to
// the plan (kernel 1); for_operands() gives its launch. The fp32 slices are D-shaped, out_elems apart.
class GemmSplitkReduce {
 public:
  GemmSplitkReduce(KernelPlan& plan, const GemmProblem& p, const KernelConfig& c);
  Launch for_operands(const Operands& o) const;

 private:
  Launch launch_;
  tp::ReduceParams params_{};
};

}  // namespace tilepick::codegen

namespace tilepick::codegen {

// The Cfg members common to the sm80 GEMM and conv programs (tiles, warps, pipeline, alignment,
// rasterization, split-K mode 0 none / 1 serial / 2 parallel). Throws Unsupported for shapes the
// kernels cannot run (warp tile < 16x16, tile_k not a multiple of the mma K step, ...).
CfgText sm80_cfg(const KernelConfig& c, DType input, int splitk_mode);
int sm80_threads(const KernelConfig& c);
int sm80_smem_bytes(const KernelConfig& c, DType input);
// 0 none, 1 serial, 2 parallel.
int sm80_splitk_mode(const KernelConfig& c);
// Serial split-K workspace: 2 counters per output tile (256-byte padded) + splitk fp32 partial tiles.
std::size_t sm80_serial_workspace(const KernelConfig& c, std::int64_t tiles_total);

}  // namespace tilepick::codegen
