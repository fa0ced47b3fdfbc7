// Problem semantics: derived sizes, the implicit-GEMM view, and validation rules.
#include "tilepick/problem.hpp"

#include <string>
#include <vector>

#include "tilepick/error.hpp"

namespace tilepick {
namespace {

// Product of non-negative sizes; throws naming `what` when it does not fit in int64.
std::int64_t checked_product(std::initializer_list<std::int64_t> xs, const std::string& what) {
  std::int64_t r = 1;
  for (std::int64_t x : xs)
    if (__builtin_mul_overflow(r, x, &r))
      throw InvalidProblem(what + " overflows a 64-bit element count");
  return r;
}

void check_dim(const char* token, std::int64_t v, std::int64_t min = 1) {
  if (v < min)
    throw InvalidProblem(std::string(token) + std::to_string(v) + ": must be >= " + std::to_string(min));
  if (v > kMaxDim)
    throw InvalidProblem(std::string(token) + std::to_string(v) + ": exceeds the limit " +
                         std::to_string(kMaxDim));
}

}  // namespace

std::string_view to_string(ConvDir d) {
  switch (d) {
    case ConvDir::fwd: return "fwd";
    case ConvDir::bwd_data: return "bwd_data";
    case ConvDir::bwd_weight: return "bwd_weight";
  }
  return "?";
}

std::string GemmProblem::layout_string() const {
  auto ch = [](MatLayout l) { return l == MatLayout::row ? 'r' : 'c'; };
  return {ch(layout_a), ch(layout_b), ch(layout_c)};
}

double GemmProblem::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

double GemmProblem::min_bytes() const {
  double mk = double(m) * double(k), kn = double(k) * double(n), mn = double(m) * double(n);
  double bytes = mk * size_bytes(a) + kn * size_bytes(b) + mn * size_bytes(c);
  if (beta != 0.0) bytes += mn * size_bytes(c);
  if (epilogue.bias) bytes += double(n) * size_bytes(c) / double(batch);
  bytes += double(scale_a_elems() + scale_b_elems()) * 4 / double(batch);
  return bytes * double(batch);
}

std::array<std::int64_t, 3> ConvProblem::out() const {
  std::array<std::int64_t, 3> o{};
  for (int i = 0; i < 3; ++i) {
    std::int64_t span = dilation[i] * (filter[i] - 1) + 1;
    std::int64_t num = in[i] + 2 * pad[i] - span;
    o[i] = num < 0 ? 0 : num / stride[i] + 1;
  }
  return o;
}

std::int64_t ConvProblem::x_elems() const { return n * in[0] * in[1] * in[2] * c; }
std::int64_t ConvProblem::w_elems() const { return k * filter[0] * filter[1] * filter[2] * c_per_group(); }
std::int64_t ConvProblem::y_elems() const {
  auto o = out();
  return n * o[0] * o[1] * o[2] * k;
}

GemmView ConvProblem::gemm() const {
  auto o = out();
  std::int64_t filt = filter[0] * filter[1] * filter[2];
  std::int64_t out_pix = n * o[0] * o[1] * o[2];
  std::int64_t in_pix = n * in[0] * in[1] * in[2];
  switch (dir) {
    case ConvDir::fwd: return {out_pix, k_per_group(), c_per_group() * filt, g};
    case ConvDir::bwd_data: return {in_pix, c_per_group(), k_per_group() * filt, g};
    case ConvDir::bwd_weight: return {k_per_group(), c_per_group() * filt, out_pix, g};
  }
  return {0, 0, 0, 0};
}

std::vector<ConvStridePhase> conv_stride_phases(const ConvProblem& p, int axis) {
  const std::int64_t in = p.in[axis], flt = p.filter[axis], s = p.stride[axis], pad = p.pad[axis], dil = p.dilation[axis];
  std::vector<ConvStridePhase> r;
  for (std::int64_t ph = 0; ph < s && ph < in; ++ph) {
    std::vector<int> taps;  // tap z reaches dx coordinate ph + s x i when s divides ph + pad - z x dil
    for (std::int64_t z = 0; z < flt; ++z)
      if ((((ph + pad - z * dil) % s) + s) % s == 0) taps.push_back(static_cast<int>(z));
    ConvStridePhase c{static_cast<int>(ph), static_cast<int>((in - ph + s - 1) / s), 0, 1, static_cast<int>(taps.size()), 0, 0};
    if (!taps.empty()) c.tap0 = taps[0];
    if (taps.size() > 1) c.step = taps[1] - taps[0];  // s / gcd(s, dil): the taps are arithmetic
    if (!taps.empty()) {  // both numerators are exact multiples of s (the taps satisfy the congruence)
      c.doff0 = static_cast<int>((ph + pad - std::int64_t{c.tap0} * dil) / s);
      c.doffstep = taps.size() > 1 ? static_cast<int>(std::int64_t{c.step} * dil / s) : 0;
    }
    r.push_back(c);
  }
  return r;
}

std::optional<GemmProblem> ConvProblem::pointwise_gemm() const {
  for (int i = 0; i < 3; ++i)
    if (filter[i] != 1 || stride[i] != 1 || pad[i] != 0 || dilation[i] != 1) return std::nullopt;
  if (g != 1) return std::nullopt;
  const std::int64_t pixels = n * in[0] * in[1] * in[2];
  GemmProblem p;
  p.acc = acc;
  const auto row = MatLayout::row, col = MatLayout::col;
  switch (dir) {
    case ConvDir::fwd:  // y[pixels, k] = x[pixels, c] w[k, c]^T
      p.m = pixels, p.n = k, p.k = c, p.layout_a = row, p.layout_b = col, p.a = x, p.b = w, p.c = y;
      p.epilogue = epilogue;
      break;
    case ConvDir::bwd_data:  // dx[pixels, c] = dy[pixels, k] w[k, c]
      p.m = pixels, p.n = c, p.k = k, p.layout_a = row, p.layout_b = row, p.a = y, p.b = w, p.c = x;
      break;
    case ConvDir::bwd_weight:  // dw[k, c] = dy[pixels, k]^T x[pixels, c]
      p.m = k, p.n = c, p.k = pixels, p.layout_a = col, p.layout_b = row, p.a = y, p.b = x, p.c = w;
      break;
  }
  p.layout_c = row;
  return p;
}

double ConvProblem::flops() const {
  auto o = out();
  return 2.0 * double(n) * double(o[0]) * double(o[1]) * double(o[2]) * double(k) *
         double(c_per_group()) * double(filter[0]) * double(filter[1]) * double(filter[2]);
}

double ConvProblem::min_bytes() const {
  double bytes = double(x_elems()) * size_bytes(x) + double(w_elems()) * size_bytes(w) +
                 double(y_elems()) * size_bytes(y);
  if (epilogue.bias) bytes += double(k) * size_bytes(y);
  return bytes;
}

std::string op_name(const Problem& p) {
  if (std::holds_alternative<GemmProblem>(p)) return "gemm";
  return "conv_" + std::string(to_string(std::get<ConvProblem>(p).dir));
}

void validate(const GemmProblem& p) {
  check_dim("m", p.m);
  check_dim("n", p.n);
  check_dim("k", p.k);
  check_dim("batch", p.batch);
  checked_product({p.m, p.k, p.batch}, "A (m*k*batch)");
  checked_product({p.k, p.n, p.batch}, "B (k*n*batch)");
  checked_product({p.m, p.n, p.batch}, "C (m*n*batch)");
  if (p.a != p.b && !(is_fp8(p.a) && is_fp8(p.b)))
    throw Unsupported("dtypes " + std::string(to_string(p.a)) + ":" + std::string(to_string(p.b)) +
                      ": A and B must have the same dtype (or both be fp8)");
  if (is_fp8(p.c))
    throw Unsupported("output dtype " + std::string(to_string(p.c)) +
                      ": fp8 outputs are not supported (use f16, bf16 or f32)");
  if (p.acc != DType::f32 && !(p.acc == DType::f16 && p.a == DType::f16))
    throw Unsupported("acc=" + std::string(to_string(p.acc)) +
                      ": the accumulator is f32 (f16 accumulation only with f16 inputs)");
  if (is_fp8(p.a) && p.layout_string() != "rcr")
    throw Unsupported("layout " + p.layout_string() +
                      " with fp8 inputs: fp8 tensor cores need K-major A and B (rcr)");
  if (p.scale == GemmScale::block && !is_fp8(p.a))
    throw Unsupported("scale=block with " + std::string(to_string(p.a)) + " inputs: block scales are for fp8 A and B");
}

void validate(const ConvProblem& p) {
  if (p.ndim != 2 && p.ndim != 3) throw InvalidProblem("ndim " + std::to_string(p.ndim) + ": must be 2 or 3");
  check_dim("mb", p.n);
  check_dim("g", p.g);
  check_dim("ic", p.c);
  check_dim("oc", p.k);
  if (p.c % p.g != 0)
    throw InvalidProblem("ic" + std::to_string(p.c) + ": C must be divisible by the group count g" +
                         std::to_string(p.g));
  if (p.k % p.g != 0)
    throw InvalidProblem("oc" + std::to_string(p.k) + ": K must be divisible by the group count g" +
                         std::to_string(p.g));
  static const char* axes[3] = {"d", "h", "w"};
  for (int i = 0; i < 3; ++i) {
    bool used = i > 0 || p.ndim == 3;
    std::string ax = axes[i];
    if (!used) {
      if (p.in[i] != 1 || p.filter[i] != 1 || p.stride[i] != 1 || p.pad[i] != 0 || p.dilation[i] != 1)
        throw InvalidProblem("2-D problem with depth sizes: give id/kd/sd/pd/dd only for 3-D problems");
      continue;
    }
    check_dim(("i" + ax).c_str(), p.in[i]);
    check_dim(("k" + ax).c_str(), p.filter[i]);
    check_dim(("s" + ax).c_str(), p.stride[i]);
    check_dim(("p" + ax).c_str(), p.pad[i], 0);
    check_dim(("d" + ax).c_str(), p.dilation[i]);
    std::int64_t span = p.dilation[i] * (p.filter[i] - 1) + 1;
    if (p.in[i] + 2 * p.pad[i] < span)
      throw InvalidProblem("empty output along " + ax + ": i" + ax + std::to_string(p.in[i]) + " + 2*p" + ax +
                           std::to_string(p.pad[i]) + " is smaller than the dilated filter (" +
                           std::to_string(span) + ")");
  }
  checked_product({p.n, p.in[0], p.in[1], p.in[2], p.c}, "x (mb*id*ih*iw*ic)");
  checked_product({p.k, p.filter[0], p.filter[1], p.filter[2], p.c_per_group()}, "w (oc*kd*kh*kw*ic/g)");
  auto o = p.out();
  checked_product({p.n, o[0], o[1], o[2], p.k}, "y (mb*od*oh*ow*oc)");
  if (p.x != p.w && !(is_fp8(p.x) && is_fp8(p.w)))
    throw Unsupported("dtypes " + std::string(to_string(p.x)) + ":" + std::string(to_string(p.w)) +
                      ": x and w must have the same dtype");
  if (is_fp8(p.x) || is_fp8(p.y))
    throw Unsupported("fp8 convolution is not supported (use f16, bf16 or f32)");
  if (p.acc != DType::f32)
    throw Unsupported("acc=" + std::string(to_string(p.acc)) + ": convolution accumulates in f32");
  if (!p.epilogue.is_none() && p.dir != ConvDir::fwd)
    throw Unsupported("ep=" + to_string(p.epilogue) + " with " + std::string(to_string(p.dir)) +
                      ": fused bias/activation is only supported for fwd");
}

void validate(const Problem& p) {
  std::visit([](const auto& q) { validate(q); }, p);
}

}  // namespace tilepick
