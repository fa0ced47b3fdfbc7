#include "codegen.hpp"

#include <algorithm>
#include <cstdio>

#include "tilepick/error.hpp"

namespace tilepick::codegen {

std::string device_type(DType t) {
  switch (t) {
    case DType::f16: return "tp::f16";
    case DType::bf16: return "tp::bf16";
    case DType::f32: return "float";
    default: throw Unsupported("fam=sm80 has no kernels for " + std::string(to_string(t)) + " tensors");
  }
}

CfgText& CfgText::i(const char* name, long long v) {
  body_ += "  static constexpr int " + std::string(name) + " = " + std::to_string(v) + ";\n";
  return *this;
}
CfgText& CfgText::b(const char* name, bool v) {
  body_ += "  static constexpr bool " + std::string(name) + " = " + (v ? "true" : "false") + ";\n";
  return *this;
}
CfgText& CfgText::type(const char* name, const std::string& cpp) {
  body_ += "  typedef " + cpp + " " + name + ";\n";
  return *this;
}

KernelSource make_source(const std::string& prefix, const std::string& header, const CfgText& cfg,
                         const std::string& params_type, const std::string& call, const std::string& specialization,
                         const std::string& config_text, int threads, const EntryOptions& entry) {
  KernelSource s;
  s.name = prefix + hex16(fnv1a64(specialization + "|" + config_text));
  s.specialization = specialization;
  s.threads = threads;
  s.code = "// " + specialization + (config_text.empty() ? "" : " | " + config_text) + "\n#include \"" + header +
           "\"\n" + cfg.str() + "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) +
           (entry.min_blocks > 0 ? ", " + std::to_string(entry.min_blocks) : std::string()) + ") " + s.name + "(const " +
           (entry.grid_constant ? "__grid_constant__ " : "") + params_type + " p) { " + call + "<Cfg>(p); }\n";
  return s;
}

GemmSplitkReduce::GemmSplitkReduce(KernelPlan& plan, const GemmProblem& p, const KernelConfig& c) {
  const bool c_row = p.layout_c == MatLayout::row;
  const std::int64_t out_elems = p.m * p.n * p.batch;
  plan.kernels.push_back(splitk_reduce_source(p.c, c.align_c, p.beta != 0.0, p.epilogue));
  params_.total = out_elems, params_.slice_stride = out_elems, params_.splitk = c.splitk;
  params_.bias_div = static_cast<int>(c_row ? 1 : p.m), params_.bias_mod = static_cast<int>(p.n);
  params_.alpha = static_cast<float>(p.alpha), params_.beta = static_cast<float>(p.beta);
  launch_.kernel = 1;
  launch_.block[0] = 256;
  launch_.grid[0] = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(out_elems / c.align_c, 256), 1, 1 << 20));
}

Launch GemmSplitkReduce::for_operands(const Operands& o) const {
  tp::ReduceParams r = params_;
  r.ws = static_cast<const float*>(o.workspace), r.c = o.c, r.d = o.d, r.bias = o.bias;
  Launch l = launch_;
  l.params = pack(r);
  return l;
}

FastDivHost make_fastdiv(std::int64_t d) {
  if (d < 1 || d > 0x7fffffff) throw Unsupported("fast divisor out of range: " + std::to_string(d));
  unsigned l = 0;
  while ((std::int64_t{1} << l) < d) ++l;  // ceil(log2 d)
  const unsigned shift = 31 + l;
  const std::uint64_t mul = ((std::uint64_t{1} << shift) + static_cast<std::uint64_t>(d) - 1) / static_cast<std::uint64_t>(d);
  return {static_cast<unsigned>(d), static_cast<unsigned>(mul), shift, 0};
}

KernelSource splitk_reduce_source(DType out, int vec, bool beta, const Epilogue& ep) {
  const std::string spec = "splitk_reduce c=" + std::string(to_string(out)) + " vec=" + std::to_string(vec) +
                           " beta=" + (beta ? "1" : "0") + " ep=" + to_string(ep);
  CfgText cfg;
  cfg.i("vec", vec).b("has_beta", beta).b("has_bias", ep.bias).i("act", static_cast<int>(ep.act)).type("TC", device_type(out));
  KernelSource s = make_source("tp_splitk_reduce_", "gemm/splitk_reduce.cuh", cfg, "tp::ReduceParams",
                               "tp::splitk_reduce", spec, "", 256);
  return s;
}

}  // namespace tilepick::codegen

namespace tilepick::codegen {

int sm80_threads(const KernelConfig& c) { return c.warps_m * c.warps_n * 32; }

int sm80_smem_bytes(const KernelConfig& c, DType input) {
  return c.stages * (c.tile_m + c.tile_n) * c.tile_k * size_bytes(input);
}

int sm80_splitk_mode(const KernelConfig& c) {
  if (c.splitk <= 1) return 0;
  return c.splitk_mode == static_cast<int>(SplitKMode::serial) ? 1 : 2;
}

std::size_t sm80_serial_workspace(const KernelConfig& c, std::int64_t tiles_total) {
  return round256(static_cast<std::size_t>(tiles_total) * 8) +
         static_cast<std::size_t>(tiles_total) * c.splitk * c.tile_m * c.tile_n * 4;
}

CfgText sm80_cfg(const KernelConfig& c, DType input, int splitk_mode) {
  const int e = size_bytes(input);
  const std::string cs = to_string(c);
  auto bad = [&](const std::string& why) { throw Unsupported("fam=sm80: config '" + cs + "': " + why); };
  if (c.warps_m < 1 || c.warps_n < 1 || c.tile_m % c.warps_m || c.tile_n % c.warps_n) bad("tile not divisible by warps");
  const int wm = c.tile_m / c.warps_m, wn = c.tile_n / c.warps_n;
  if (wm < 16 || wn < 16 || wm % 16 || wn % 16) bad("warp tile must be a multiple of 16x16");
  if (c.tile_k % (32 / e)) bad("tile_k must be a multiple of the mma K step " + std::to_string(32 / e));
  if (c.stages < 2) bad("needs at least 2 stages");
  if (c.swizzle < 1) bad("swizzle must be >= 1");
  if (c.epi != static_cast<int>(EpiVariant::direct)) bad("only epi=direct is implemented");
  for (int a : {c.align_a, c.align_b, c.align_c})
    if (a < 1 || (a & (a - 1)) || c.tile_k % a || c.tile_m % a || c.tile_n % a)
      bad("alignment " + std::to_string(a) + " is not a power of two dividing the tile");
  if (c.align_a * e > 16 || c.align_b * e > 16) bad("input vectors wider than 16 bytes");
  const int threads = sm80_threads(c);
  if (threads & (threads - 1)) bad("warps_m * warps_n must be a power of two");
  CfgText t;
  t.i("tile_m", c.tile_m).i("tile_n", c.tile_n).i("tile_k", c.tile_k);
  t.i("warps_m", c.warps_m).i("warps_n", c.warps_n).i("stages", c.stages);
  t.i("align_a", c.align_a).i("align_b", c.align_b).i("align_c", c.align_c);
  t.i("raster", c.raster).i("swizzle", c.swizzle).i("splitk_mode", splitk_mode);
  return t;
}

}  // namespace tilepick::codegen
