// What each operand of a problem must look like in memory, and the check of a caller's tensor
// against it: dtype, a dense layout (any order of logical dimensions whose memory matches), device
// and base alignment.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "tilepick/dispatch.hpp"
#include "tilepick/error.hpp"

namespace tilepick {
namespace {

using Shape = std::vector<std::int64_t>;

TensorSpec spec(std::string name, std::string slot, std::string dims, DType t, Shape shape, bool output = false) {
  return {std::move(name), std::move(slot), std::move(dims), t, std::move(shape), output};
}

// Memory dims of an M x N matrix stored row- or column-major, with a leading batch when batch > 1.
void matrix(std::string& dims, Shape& shape, MatLayout l, char r, char c, std::int64_t rows, std::int64_t cols,
            std::int64_t batch) {
  dims.clear(), shape.clear();
  if (batch > 1) dims += 'B', shape.push_back(batch);
  if (l == MatLayout::row) dims += {r, c}, shape.insert(shape.end(), {rows, cols});
  else dims += {c, r}, shape.insert(shape.end(), {cols, rows});
}

std::vector<TensorSpec> gemm_specs(const GemmProblem& g) {
  std::vector<TensorSpec> out;
  std::string dims;
  Shape shape;
  matrix(dims, shape, g.layout_a, 'M', 'K', g.m, g.k, g.batch);
  out.push_back(spec("A", "a", dims, g.a, shape));
  matrix(dims, shape, g.layout_b, 'K', 'N', g.k, g.n, g.batch);
  out.push_back(spec("B", "b", dims, g.b, shape));
  matrix(dims, shape, g.layout_c, 'M', 'N', g.m, g.n, g.batch);
  if (g.beta != 0) out.push_back(spec("C", "c", dims, g.c, shape));
  out.push_back(spec("D", "d", dims, g.c, shape, true));
  if (g.epilogue.bias) out.push_back(spec("bias", "bias", "N", g.c, {g.n}));
  if (g.scale == GemmScale::block) {  // fp32 block scales (problem.hpp): SA [kb][M], SB [N/128][kb]
    const std::int64_t kb = g.k_blocks(), nb = g.n_blocks();
    const bool batched = g.batch > 1;
    auto with_batch = [&](Shape s) {
      if (batched) s.insert(s.begin(), g.batch);
      return s;
    };
    out.push_back(spec("SA", "scale_a", batched ? "BKM" : "KM", DType::f32, with_batch({kb, g.m})));
    out.push_back(spec("SB", "scale_b", batched ? "BNK" : "NK", DType::f32, with_batch({nb, kb})));
  }
  return out;
}

std::vector<TensorSpec> conv_specs(const ConvProblem& c) {
  const bool d3 = c.ndim == 3;
  auto spatial = [&](const std::array<std::int64_t, 3>& s) {
    return d3 ? Shape{s[0], s[1], s[2]} : Shape{s[1], s[2]};
  };
  auto join = [](std::int64_t lead, Shape mid, std::int64_t last) {
    mid.insert(mid.begin(), lead);
    mid.push_back(last);
    return mid;
  };
  const std::string sp = d3 ? "DHW" : "HW", fsp = d3 ? "ZYX" : "YX";
  const Shape x = join(c.n, spatial(c.in), c.c), y = join(c.n, spatial(c.out()), c.k),
              w = join(c.k, spatial(c.filter), c.c_per_group());
  const std::string xd = "N" + sp + "C", yd = "N" + sp + "K", wd = "K" + fsp + "C";
  switch (c.dir) {
    case ConvDir::fwd: {
      std::vector<TensorSpec> out{spec("x", "a", xd, c.x, x), spec("w", "b", wd, c.w, w), spec("y", "d", yd, c.y, y, true)};
      if (c.epilogue.bias) out.push_back(spec("bias", "bias", "K", c.y, {c.k}));
      return out;
    }
    case ConvDir::bwd_data:
      return {spec("dy", "a", yd, c.y, y), spec("w", "b", wd, c.w, w), spec("dx", "d", xd, c.x, x, true)};
    case ConvDir::bwd_weight:
      return {spec("x", "a", xd, c.x, x), spec("dy", "b", yd, c.y, y), spec("dw", "d", wd, c.w, w, true)};
  }
  return {};
}

std::string list(const Shape& v) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << ']';
  return s.str();
}

std::string describe(const TensorSpec& s) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < s.shape.size(); ++i) o << (i ? ", " : "") << s.dims[i] << '=' << s.shape[i];
  o << "] (" << s.dims << ", dense)";
  return o.str();
}

// The orders, as permutations of the memory dims, in which a caller may present an operand: memory
// order, and the logical order frameworks use: a matrix as rows x cols however it is stored (torch's
// transposed view of a column-major matrix), a conv tensor as N C (D) H W (torch's channels_last).
std::vector<std::vector<std::size_t>> accepted_orders(const TensorSpec& s) {
  const std::size_t n = s.shape.size();
  std::vector<std::size_t> id(n);
  for (std::size_t i = 0; i < n; ++i) id[i] = i;
  std::vector<std::vector<std::size_t>> out{id};
  if (n >= 4) {  // conv: channels (last in memory) second
    std::vector<std::size_t> p{0, n - 1};
    for (std::size_t i = 1; i + 1 < n; ++i) p.push_back(i);
    out.push_back(p);
  } else if (n >= 2) {  // matrix: the two inner dims swapped
    auto p = id;
    std::swap(p[n - 2], p[n - 1]);
    out.push_back(p);
  }
  return out;
}

// True when the tensor, read in `order`, is the spec's dense memory (strides of size-1 dims are free).
bool matches(const TensorSpec& s, const std::vector<std::size_t>& order, const Shape& shape, const Shape& strides) {
  if (shape.size() != s.shape.size()) return false;
  Shape dense(s.shape.size(), 1);
  for (std::size_t i = s.shape.size(); i-- > 1;) dense[i - 1] = dense[i] * s.shape[i];
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != s.shape[order[i]]) return false;
    if (shape[i] != 1 && strides[i] != dense[order[i]]) return false;
  }
  return true;
}

std::string alternatives(const TensorSpec& s) {
  std::string out = describe(s);
  const auto orders = accepted_orders(s);
  if (orders.size() > 1) {
    out += ", or its logical view [";
    for (std::size_t i = 0; i < orders[1].size(); ++i) out += (i ? ", " : "") + std::string(1, s.dims[orders[1][i]]);
    out += s.shape.size() >= 4 ? "] with channels-last strides" : "] with the transposed strides";
  }
  return out;
}

}  // namespace

std::vector<TensorSpec> operand_specs(const Problem& p) {
  if (auto* g = std::get_if<GemmProblem>(&p)) return gemm_specs(*g);
  return conv_specs(std::get<ConvProblem>(p));
}

void check_tensor(const TensorSpec& s, const TensorArg& t, int device, std::size_t align_bytes) {
  auto who = [&] { return "operand " + s.name + ": "; };  // built only for an error
  if (!t.data) throw InvalidArgument(who() + "data pointer is null");
  if (t.dtype != s.dtype)
    throw InvalidArgument(who() + "dtype " + std::string(to_string(t.dtype)) + ", expected " +
                          std::string(to_string(s.dtype)));
  if (t.device != device)
    throw InvalidArgument(who() + (t.device < 0 ? std::string("in host memory") : "on device " + std::to_string(t.device)) +
                          ", the plan runs on device " + std::to_string(device));
  if (!t.strides.empty() && t.strides.size() != t.shape.size())
    throw InvalidArgument(who() + std::to_string(t.shape.size()) + " sizes but " + std::to_string(t.strides.size()) +
                          " strides");
  Shape strides = t.strides;
  if (strides.empty()) {
    strides.assign(t.shape.size(), 1);
    for (std::size_t i = t.shape.size(); i-- > 1;) strides[i - 1] = strides[i] * t.shape[i];
  }
  std::int64_t numel = 1, want = 1;
  for (auto v : t.shape) {
    if (v < 0) throw InvalidArgument(who() + "negative size in shape " + list(t.shape));
    numel *= v;
  }
  for (auto v : s.shape) want *= v;
  if (numel != want)
    throw InvalidArgument(who() + "shape " + list(t.shape) + " has " + std::to_string(numel) + " elements, expected " +
                          describe(s));
  bool ok = false;
  for (const auto& order : accepted_orders(s)) ok = ok || matches(s, order, t.shape, strides);
  if (!ok)
    throw InvalidArgument(who() + "shape " + list(t.shape) + " with strides " + list(strides) +
                          " is not the dense memory layout " + alternatives(s) +
                          (s.dims.size() >= 4 ? "; conv tensors must be channels-last" : "") +
                          " (a sliced or permuted view needs a contiguous copy)");
  if (align_bytes > 1 && reinterpret_cast<std::uintptr_t>(t.data) % align_bytes != 0)
    throw InvalidArgument(who() + "data pointer is not aligned to " + std::to_string(align_bytes) +
                          " bytes, as the kernel's vector loads need");
}

}  // namespace tilepick
