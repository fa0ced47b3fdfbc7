// Pure mappings of tilepick problems onto cuBLASLt and cuDNN descriptors (no library calls), and
// the problem features the libraries cannot express.
#include <limits>

#include "run/vendor.hpp"
#include "tilepick/error.hpp"

namespace tilepick::run::vendor {
namespace {

// Column-major storage of a rows x cols operand in layout l: col-major as is, or the col-major
// storage of its transpose (trans).
LtMatrix stored(MatLayout l, std::int64_t rows, std::int64_t cols, bool* trans) {
  *trans = l == MatLayout::row;
  LtMatrix m;
  m.rows = static_cast<std::uint64_t>(*trans ? cols : rows);
  m.cols = static_cast<std::uint64_t>(*trans ? rows : cols);
  m.ld = static_cast<std::int64_t>(m.rows);
  m.batch_stride = rows * cols;
  return m;
}

// The transpose of a layout: a row-major X is a col-major X^T and vice versa.
MatLayout flip(MatLayout l) { return l == MatLayout::row ? MatLayout::col : MatLayout::row; }

int to_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max())
    throw Unsupported(std::string("cuDNN: ") + what + " = " + std::to_string(v) + " does not fit cuDNN's int dims");
  return static_cast<int>(v);
}

}  // namespace

LtGemm map_gemm(const GemmProblem& p) {
  LtGemm g;
  g.k = static_cast<std::uint64_t>(p.k);
  g.batch = static_cast<int>(p.batch);
  g.swap_ab = p.layout_c == MatLayout::row || p.epilogue.bias;
  if (g.swap_ab) {
    // D^T (N x M) = B^T (N x K) x A^T (K x M).
    g.m = static_cast<std::uint64_t>(p.n), g.n = static_cast<std::uint64_t>(p.m);
    g.a = stored(flip(p.layout_b), p.n, p.k, &g.trans_a);
    g.b = stored(flip(p.layout_a), p.k, p.m, &g.trans_b);
    // A row-major D is the col-major D^T; a col-major D is D^T in row order (bias case only).
    g.cd.rows = g.m, g.cd.cols = g.n;
    g.cd.row_order = p.layout_c == MatLayout::col;
    g.cd.ld = g.cd.row_order ? p.m : p.n;
  } else {
    // Col-major D (M x N) = A (M x K) x B (K x N).
    g.m = static_cast<std::uint64_t>(p.m), g.n = static_cast<std::uint64_t>(p.n);
    g.a = stored(p.layout_a, p.m, p.k, &g.trans_a);
    g.b = stored(p.layout_b, p.k, p.n, &g.trans_b);
    g.cd.rows = g.m, g.cd.cols = g.n, g.cd.ld = p.m;
  }
  g.cd.batch_stride = p.m * p.n;
  return g;
}

CudnnConv map_conv(const ConvProblem& p) {
  CudnnConv c;
  c.spatial = p.ndim;
  c.groups = to_int(p.g, "groups");
  const int first = p.ndim == 3 ? 0 : 1;  // spatial arrays are (d, h, w); 2-D uses (h, w)
  const auto out = p.out();
  // NC[D]HW dims with channels-last strides.
  auto tensor = [&](std::int64_t channels, const std::array<std::int64_t, 3>& sp) {
    CudnnTensor t;
    t.dims = {to_int(p.n, "batch"), to_int(channels, "channels")};
    for (int a = first; a < 3; ++a) t.dims.push_back(to_int(sp[a], "spatial size"));
    for (std::int64_t s : channels_last_strides(t.dims)) t.strides.push_back(to_int(s, "stride"));
    return t;
  };
  c.x = tensor(p.c, p.in);
  c.y = tensor(p.k, out);
  c.w_dims = {to_int(p.k, "output channels"), to_int(p.c_per_group(), "channels per group")};
  for (int a = first; a < 3; ++a) {
    c.w_dims.push_back(to_int(p.filter[a], "filter size"));
    c.pad.push_back(to_int(p.pad[a], "pad"));
    c.stride.push_back(to_int(p.stride[a], "stride"));
    c.dilation.push_back(to_int(p.dilation[a], "dilation"));
  }
  c.bias.dims.assign(2 + c.spatial, 1);
  c.bias.dims[1] = c.w_dims[0];
  c.bias.strides.assign(2 + c.spatial, 1);
  c.bias.strides[0] = c.w_dims[0];
  return c;
}

std::string cublaslt_unsupported(const GemmProblem& p) {
  const auto act = p.epilogue.act;
  if (act != Activation::none && act != Activation::relu && act != Activation::gelu_tanh)
    return "cuBLASLt epilogues have relu and gelu (tanh approximation) only, not " + std::string(to_string(act));
  if (p.acc != DType::f32) return "cuBLASLt baseline runs fp32 accumulation only, not acc=" + std::string(to_string(p.acc));
  if (p.a != p.b && !(is_fp8(p.a) && is_fp8(p.b)))
    return "cuBLASLt needs one type for A and B (mixed only between fp8 types), not " +
           std::string(to_string(p.a)) + " x " + std::string(to_string(p.b));
  if (p.a == DType::e5m2 && p.b == DType::e5m2) return "cuBLASLt has no e5m2 x e5m2 matmul";
  if (is_fp8(p.c)) return "cuBLASLt fp8 outputs need scale factors; the baseline has f16/bf16/f32 outputs only";
  // cuBLASLt's type table (fp32 compute): 16F x 16F -> 16F | 32F, 16BF x 16BF -> 16BF | 32F,
  // 32F x 32F -> 32F. Other outputs are not refused by every heuristic call but give garbage.
  if (!is_fp8(p.a) && p.c != p.a && p.c != DType::f32)
    return "cuBLASLt has no " + std::string(to_string(p.a)) + " x " + std::string(to_string(p.b)) + " -> " +
           std::string(to_string(p.c)) + " matmul (C/D must be the input type or f32)";
  if (p.batch > std::numeric_limits<int>::max()) return "cuBLASLt batch count is an int";
  if (p.scale == GemmScale::block) {
    // Seen on cuBLASLt 13.1 (H200): its heuristic refuses batches, and with K/128 = 3 or 5 it reads SB as
    // if padded (wrong results), as PyTorch's scaled_mm documents: leading dimension round_up(K/128, 4).
    if (p.batch > 1) return "cuBLASLt has no batched fp8 block-scaled matmul (batch " + std::to_string(p.batch) + ")";
    const std::int64_t k_blocks = p.k_blocks();
    if (k_blocks % 4 != 0 && p.n_blocks() > 1)
      return "cuBLASLt reads 128 x 128 block scales with a leading dimension of K/128 rounded up to 4; SB here is "
             "dense [N/128][K/128] with K/128 = " + std::to_string(k_blocks);
  }
  return "";
}

std::string cudnn_unsupported(const ConvProblem& p) {
  if (p.x != p.w || p.x != p.y)
    return "cuDNN's convolution takes one data type for x, w and y, not " + dtypes_text(p.x, p.w, p.y);
  if (is_fp8(p.x)) return "cuDNN's legacy convolution API has no fp8";
  if (p.acc != DType::f32) return "cuDNN baseline runs fp32 accumulation only, not acc=" + std::string(to_string(p.acc));
  const auto act = p.epilogue.act;
  if (act != Activation::none && act != Activation::relu)
    return "cudnnConvolutionBiasActivationForward has relu and identity only, not " + std::string(to_string(act));
  return "";
}

std::vector<std::int64_t> channels_last_strides(const std::vector<int>& dims) {
  const std::size_t n = dims.size();
  if (n < 3) throw Error(Status::internal, "channels_last_strides: " + std::to_string(n) + " dims, need 3 or more");
  std::vector<std::int64_t> strides(n);
  std::int64_t s = 1;
  strides[1] = s, s *= dims[1];
  for (std::size_t i = n; i-- > 2;) strides[i] = s, s *= dims[i];
  strides[0] = s;
  return strides;
}

}  // namespace tilepick::run::vendor
