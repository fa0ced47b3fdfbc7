// Host side of the GPU references that needs no GPU: input and output descriptions, tolerance,
// the check rule, and element encoding (the device's kernels/ref/numeric.cuh compiled for the host).
#include <cmath>
#include <cstring>

#include "ref/gpu_ref.hpp"
#include "run/verify.hpp"
#include "tilepick/error.hpp"

#define TP_HD inline
#include "../../kernels/ref/numeric.cuh"

namespace tilepick::ref::gpu {

std::vector<InputTensor> input_tensors(const Problem& p) {
  auto n = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    std::vector<InputTensor> t{{Slot::a, g->a, n(g->m * g->k * g->batch)}, {Slot::b, g->b, n(g->k * g->n * g->batch)}};
    if (g->beta != 0) t.push_back({Slot::c, g->c, n(g->m * g->n * g->batch)});
    if (g->epilogue.bias) t.push_back({Slot::bias, g->c, n(g->n)});
    if (g->scale == GemmScale::block) {
      t.push_back({Slot::scale_a, DType::f32, n(g->scale_a_elems())});
      t.push_back({Slot::scale_b, DType::f32, n(g->scale_b_elems())});
    }
    return t;
  }
  const auto& c = std::get<ConvProblem>(p);
  switch (c.dir) {
    case ConvDir::fwd: {
      std::vector<InputTensor> t{{Slot::a, c.x, n(c.x_elems())}, {Slot::b, c.w, n(c.w_elems())}};
      if (c.epilogue.bias) t.push_back({Slot::bias, c.y, n(c.k)});
      return t;
    }
    case ConvDir::bwd_data: return {{Slot::a, c.y, n(c.y_elems())}, {Slot::b, c.w, n(c.w_elems())}};
    case ConvDir::bwd_weight: return {{Slot::a, c.x, n(c.x_elems())}, {Slot::b, c.y, n(c.y_elems())}};
  }
  return {};
}

DType output_dtype(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return g->c;
  const auto& c = std::get<ConvProblem>(p);
  return c.dir == ConvDir::fwd ? c.y : c.dir == ConvDir::bwd_data ? c.x : c.w;
}

std::size_t output_elems(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return static_cast<std::size_t>(g->m * g->n * g->batch);
  const auto& c = std::get<ConvProblem>(p);
  return static_cast<std::size_t>(c.dir == ConvDir::fwd ? c.y_elems() : c.dir == ConvDir::bwd_data ? c.x_elems()
                                                                                                   : c.w_elems());
}

const char* slot_name(Slot s) {
  static const char* names[kSlots] = {"a", "b", "c", "bias", "scale_a", "scale_b"};
  return names[static_cast<int>(s)];
}

void bind(Operands& ops, Slot slot, const void* p) {
  switch (slot) {
    case Slot::a: ops.a = p; break;
    case Slot::b: ops.b = p; break;
    case Slot::c: ops.c = p; break;
    case Slot::bias: ops.bias = p; break;
    case Slot::scale_a: ops.scale_a = static_cast<const float*>(p); break;
    case Slot::scale_b: ops.scale_b = static_cast<const float*>(p); break;
  }
}

const void* bound(const Operands& ops, Slot slot) {
  switch (slot) {
    case Slot::a: return ops.a;
    case Slot::b: return ops.b;
    case Slot::c: return ops.c;
    case Slot::bias: return ops.bias;
    case Slot::scale_a: return ops.scale_a;
    case Slot::scale_b: return ops.scale_b;
  }
  return nullptr;
}

std::uint64_t slot_seed(std::uint64_t seed, Slot s) {
  // splitmix64 finalizer of (seed, slot): unrelated Philox keys for the tensors of one problem. The
  // scale slots (4, 5) take another offset, so that they never meet slots 0, 1 of seed + 1 (seed * 4 + slot).
  const std::uint64_t offset = is_scale(s) ? 0x632be59bd9b4e019ull : 0x9e3779b97f4a7c15ull;
  std::uint64_t z = seed * 4 + static_cast<std::uint64_t>(s) + offset;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double accumulation_tolerance(const Problem& p) {
  DType acc;
  std::int64_t length;
  if (auto* g = std::get_if<GemmProblem>(&p)) acc = g->acc, length = g->k;
  else acc = std::get<ConvProblem>(p).acc, length = std::get<ConvProblem>(p).gemm().k;
  const double u = acc == DType::f16 ? 0x1p-11 : acc == DType::bf16 ? 0x1p-8 : 0x1p-24;  // unit roundoff
  return 2 * u * std::sqrt(static_cast<double>(length));
}

double tolerance(const Problem& p) { return run::tolerance(p) + accumulation_tolerance(p); }

CheckResult check_result(const CompareSums& s, double tol) {
  CheckResult r;
  r.tol = tol;
  r.nonfinite = s.nonfinite;
  r.rel_l2 = s.ref2 > 0 ? std::sqrt(s.err2 / s.ref2) : std::sqrt(s.err2);
  r.max_rel_err = s.max_abs_ref > 0 ? s.max_abs_err / s.max_abs_ref : s.max_abs_err;
  r.ok = r.nonfinite == 0 && r.rel_l2 <= tol && r.max_rel_err <= 8 * tol;
  return r;
}

std::vector<double> decode(DType t, const void* bytes, std::size_t n) {
  const int size = size_bytes(t), id = static_cast<int>(t);
  const auto* src = static_cast<const unsigned char*>(bytes);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, src + i * size, size);  // little-endian: the low bytes
    out[i] = tp::refnum::decode(id, bits);
  }
  return out;
}

std::vector<unsigned char> encode(DType t, const std::vector<double>& values) {
  const int size = size_bytes(t), id = static_cast<int>(t);
  std::vector<unsigned char> out(values.size() * size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint32_t bits = tp::refnum::encode(id, values[i]);
    std::memcpy(out.data() + i * size, &bits, size);
  }
  return out;
}

}  // namespace tilepick::ref::gpu
