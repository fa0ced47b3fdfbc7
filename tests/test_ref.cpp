// Tests of the CPU references (src/ref): GEMM and conv against brute-force formulas written here,
// the conv adjoint identities, fused epilogues, dtype rounding, and thread-count independence.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ref/parallel.hpp"
#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

namespace tilepick {
namespace {

using I64 = std::int64_t;
using Vec = std::vector<double>;
using Rng = std::mt19937_64;

constexpr Activation kActs[] = {Activation::none,     Activation::relu,    Activation::gelu_tanh,
                                Activation::gelu_erf, Activation::silu,    Activation::sigmoid,
                                Activation::tanh};

I64 uniform(Rng& rng, I64 lo, I64 hi) { return std::uniform_int_distribution<I64>(lo, hi)(rng); }

// Random normal values rounded to `t` (what the GPU kernels will see).
Vec random_vec(Rng& rng, I64 n, DType t = DType::f32) {
  std::normal_distribution<double> dist;
  Vec v(static_cast<std::size_t>(n));
  for (auto& e : v) e = ref::round_to_dtype(t, dist(rng));
  return v;
}
// Small integers: every sum and product below is exact in fp64.
Vec random_ints(Rng& rng, I64 n) {
  Vec v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<double>(uniform(rng, -3, 3));
  return v;
}
Vec abs_of(Vec v) {
  for (auto& e : v) e = std::fabs(e);
  return v;
}
double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Sets TILEPICK_NUM_THREADS for one scope and restores the previous value.
class ThreadsEnv {
 public:
  explicit ThreadsEnv(int n) {
    if (const char* v = std::getenv("TILEPICK_NUM_THREADS")) old_ = v;
    setenv("TILEPICK_NUM_THREADS", std::to_string(n).c_str(), 1);
  }
  ~ThreadsEnv() {
    if (old_) setenv("TILEPICK_NUM_THREADS", old_->c_str(), 1);
    else unsetenv("TILEPICK_NUM_THREADS");
  }

 private:
  std::optional<std::string> old_;
};

// ---------------------------------------------------------------------------------------------
// GEMM

// Element (r, c) of a rows x cols matrix in either layout.
I64 at(MatLayout l, I64 rows, I64 cols, I64 r, I64 c) { return l == MatLayout::row ? r * cols + c : c * rows + r; }

// Textbook triple loop; `scale` receives the same formula on absolute values (the error scale).
void brute_gemm(const GemmProblem& p, const Vec& a, const Vec& b, const Vec& c, const Vec& bias, Vec& d,
                Vec& scale) {
  const I64 M = p.m, N = p.n, K = p.k;
  for (I64 bt = 0; bt < p.batch; ++bt)
    for (I64 i = 0; i < M; ++i)
      for (I64 j = 0; j < N; ++j) {
        double sum = 0, abs_sum = 0;
        for (I64 k = 0; k < K; ++k) {
          double t = a[bt * M * K + at(p.layout_a, M, K, i, k)] * b[bt * K * N + at(p.layout_b, K, N, k, j)];
          sum += t;
          abs_sum += std::fabs(t);
        }
        const I64 o = bt * M * N + at(p.layout_c, M, N, i, j);
        double pre = p.alpha * sum + (p.beta != 0 ? p.beta * c[o] : 0.0) + (p.epilogue.bias ? bias[j] : 0.0);
        d[o] = apply_activation(p.epilogue.act, pre);
        scale[o] = std::fabs(p.alpha) * abs_sum + std::fabs(p.beta * (p.beta != 0 ? c[o] : 0.0)) +
                   (p.epilogue.bias ? std::fabs(bias[j]) : 0.0) + 1.0;
      }
}

TEST(RefGemm, MatchesBruteForce) {
  Rng rng(20261101);
  const double alphas[] = {1.0, -0.5, 2.25}, betas[] = {0.0, 1.0, -1.5};
  const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
  int problems = 0;
  for (int layout = 0; layout < 8; ++layout)
    for (Activation act : kActs)
      for (int with_bias = 0; with_bias < 2; ++with_bias)
        for (int rep = 0; rep < 3; ++rep) {
          GemmProblem p;
          p.layout_a = (layout & 4) ? MatLayout::col : MatLayout::row;
          p.layout_b = (layout & 2) ? MatLayout::col : MatLayout::row;
          p.layout_c = (layout & 1) ? MatLayout::col : MatLayout::row;
          // rep 0 forces one of M, N, K to 1; the others are odd-ish sizes.
          p.m = uniform(rng, 1, 19), p.n = uniform(rng, 1, 19), p.k = uniform(rng, 1, 23);
          if (rep == 0) (layout % 3 == 0 ? p.m : layout % 3 == 1 ? p.n : p.k) = 1;
          p.batch = uniform(rng, 1, 3);
          p.a = p.b = p.c = dtypes[uniform(rng, 0, 2)];
          p.alpha = alphas[uniform(rng, 0, 2)];
          p.beta = betas[uniform(rng, 0, 2)];
          p.epilogue = {with_bias == 1, act};
          validate(p);

          Vec a = random_vec(rng, p.batch * p.m * p.k, p.a), b = random_vec(rng, p.batch * p.k * p.n, p.b);
          Vec c = random_vec(rng, p.batch * p.m * p.n, p.c), bias = random_vec(rng, p.n, p.c);
          Vec d(c.size(), std::nan("")), want(c.size()), scale(c.size());
          ref::gemm(p, a.data(), b.data(), p.beta != 0 ? c.data() : nullptr,
                    p.epilogue.bias ? bias.data() : nullptr, d.data());
          brute_gemm(p, a, b, c, bias, want, scale);
          for (std::size_t i = 0; i < d.size(); ++i)
            ASSERT_NEAR(d[i], want[i], 1e-13 * scale[i]) << to_string(p) << " element " << i;
          ++problems;
        }
  EXPECT_EQ(problems, 8 * 7 * 2 * 3);
}

TEST(RefGemm, NullOperandsAreRejected) {
  GemmProblem p;
  p.beta = 1.0;
  Vec a(1, 1.0), b(1, 1.0), d(1);
  EXPECT_THROW(ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data()), Error);
  p.beta = 0.0;
  p.epilogue.bias = true;
  EXPECT_THROW(ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data()), Error);
}

// Block scales (scale=block): the reference equals the plain reference on inputs dequantized by hand,
// A'[i][k] = SA[k/128][i] A[i][k] and B'[k][j] = SB[j/128][k/128] B[k][j], on sizes with K and N past a
// 128 block and two batches. Small integers and power-of-two scales keep every sum exact (equal bit for bit);
// fp8 normals with fp32 scales agree to rounding.
TEST(RefGemm, BlockScalesEqualDequantizedInputs) {
  Rng rng(20261129);
  for (int rep = 0; rep < 6; ++rep) {
    const bool exact = rep % 2 == 0;
    const I64 m = uniform(rng, 1, 9), n = 128 * uniform(rng, 1, 2) + uniform(rng, 1, 127),
              k = 128 * uniform(rng, 1, 3) + uniform(rng, 1, 127);
    GemmProblem p = std::get<GemmProblem>(parse_problem(
        "gemm rcr batch2 m" + std::to_string(m) + " n" + std::to_string(n) + " k" + std::to_string(k) +
        " e4m3:e4m3:f32 alpha=0.75 beta=0.5 ep=bias+relu scale=block"));
    ASSERT_NE(k % 128, 0);
    ASSERT_NE(n % 128, 0);
    const I64 kb = p.k_blocks(), nb = (n + 127) / 128;
    ASSERT_EQ(p.scale_a_elems(), 2 * kb * m);
    ASSERT_EQ(p.scale_b_elems(), 2 * nb * kb);
    Vec a = exact ? random_ints(rng, 2 * m * k) : random_vec(rng, 2 * m * k, DType::e4m3);
    Vec b = exact ? random_ints(rng, 2 * k * n) : random_vec(rng, 2 * k * n, DType::e4m3);
    Vec c = random_ints(rng, 2 * m * n), bias = random_ints(rng, n);
    auto scales = [&](I64 count) {
      Vec v(static_cast<std::size_t>(count));
      for (auto& e : v)
        e = exact ? std::ldexp(1.0, static_cast<int>(uniform(rng, -3, 3)))
                  : ref::round_to_dtype(DType::f32, std::exp(0.5 * std::normal_distribution<double>()(rng)));
      return v;
    };
    Vec sa = scales(p.scale_a_elems()), sb = scales(p.scale_b_elems());
    // rcr: A [batch][m][k], B [batch][n][k] (column-major K x N).
    Vec a_deq = a, b_deq = b;
    for (I64 bt = 0; bt < 2; ++bt)
      for (I64 kk = 0; kk < k; ++kk) {
        for (I64 i = 0; i < m; ++i) a_deq[(bt * m + i) * k + kk] *= sa[(bt * kb + kk / 128) * m + i];
        for (I64 j = 0; j < n; ++j) b_deq[(bt * n + j) * k + kk] *= sb[(bt * nb + j / 128) * kb + kk / 128];
      }
    GemmProblem plain = p;
    plain.scale = GemmScale::tensor;
    Vec got(c.size()), want(c.size());
    ref::gemm(p, a.data(), b.data(), c.data(), bias.data(), got.data(), sa.data(), sb.data());
    ref::gemm(plain, a_deq.data(), b_deq.data(), c.data(), bias.data(), want.data());
    double max_ref = 0;
    for (double w : want) max_ref = std::max(max_ref, std::fabs(w));
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (exact) ASSERT_EQ(got[i], want[i]) << to_string(p) << " element " << i;
      else ASSERT_NEAR(got[i], want[i], 1e-13 * max_ref) << to_string(p) << " element " << i;
    }
  }
}

TEST(RefGemm, BlockScalesAreRequiredExactlyWithScaleBlock) {
  GemmProblem p = std::get<GemmProblem>(parse_problem("gemm rcr m1 n1 k1 e4m3:e4m3:bf16 scale=block"));
  Vec a(1, 1.0), b(1, 1.0), d(1), s(1, 2.0);
  EXPECT_THROW(ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data()), Error);
  EXPECT_THROW(ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data(), s.data(), nullptr), Error);
  ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data(), s.data(), s.data());
  EXPECT_EQ(d[0], 4.0);
  p.scale = GemmScale::tensor;
  EXPECT_THROW(ref::gemm(p, a.data(), b.data(), nullptr, nullptr, d.data(), s.data(), s.data()), Error);
}

// ---------------------------------------------------------------------------------------------
// Convolution

// NCDHW-style view of the channels-last grouped buffers: global channel indices, explicit (d, h, w).
struct ConvIndex {
  const ConvProblem& p;
  std::array<I64, 3> o = p.out();
  I64 x_at(I64 n, I64 c, I64 d, I64 h, I64 w) const {
    return (((n * p.in[0] + d) * p.in[1] + h) * p.in[2] + w) * p.c + c;
  }
  I64 w_at(I64 k, I64 c_in_group, I64 z, I64 y, I64 x) const {
    return (((k * p.filter[0] + z) * p.filter[1] + y) * p.filter[2] + x) * p.c_per_group() + c_in_group;
  }
  I64 y_at(I64 n, I64 k, I64 d, I64 h, I64 w) const {
    return (((n * o[0] + d) * o[1] + h) * o[2] + w) * p.k + k;
  }
};

// Calls term(xi, wi, yi) for every product x[xi] * w[wi] that contributes to y[yi].
void for_each_term(const ConvProblem& p, const std::function<void(I64, I64, I64)>& term) {
  const ConvIndex ix{p};
  const I64 cg = p.c_per_group(), kg = p.k_per_group();
  for (I64 n = 0; n < p.n; ++n)
    for (I64 k = 0; k < p.k; ++k)
      for (I64 c = 0; c < cg; ++c)
        for (I64 od = 0; od < ix.o[0]; ++od)
          for (I64 oh = 0; oh < ix.o[1]; ++oh)
            for (I64 ow = 0; ow < ix.o[2]; ++ow)
              for (I64 z = 0; z < p.filter[0]; ++z)
                for (I64 y = 0; y < p.filter[1]; ++y)
                  for (I64 xx = 0; xx < p.filter[2]; ++xx) {
                    I64 id = od * p.stride[0] + z * p.dilation[0] - p.pad[0];
                    I64 ih = oh * p.stride[1] + y * p.dilation[1] - p.pad[1];
                    I64 iw = ow * p.stride[2] + xx * p.dilation[2] - p.pad[2];
                    bool inside = id >= 0 && id < p.in[0] && ih >= 0 && ih < p.in[1] && iw >= 0 && iw < p.in[2];
                    if (inside)
                      term(ix.x_at(n, (k / kg) * cg + c, id, ih, iw), ix.w_at(k, c, z, y, xx),
                           ix.y_at(n, k, od, oh, ow));
                  }
}

Vec brute_fwd(const ConvProblem& p, const Vec& x, const Vec& w) {
  Vec y(static_cast<std::size_t>(p.y_elems()), 0.0);
  for_each_term(p, [&](I64 xi, I64 wi, I64 yi) { y[yi] += x[xi] * w[wi]; });
  return y;
}
Vec brute_bwd_data(const ConvProblem& p, const Vec& dy, const Vec& w) {
  Vec dx(static_cast<std::size_t>(p.x_elems()), 0.0);
  for_each_term(p, [&](I64 xi, I64 wi, I64 yi) { dx[xi] += dy[yi] * w[wi]; });
  return dx;
}
Vec brute_bwd_weight(const ConvProblem& p, const Vec& x, const Vec& dy) {
  Vec dw(static_cast<std::size_t>(p.w_elems()), 0.0);
  for_each_term(p, [&](I64 xi, I64 wi, I64 yi) { dw[wi] += x[xi] * dy[yi]; });
  return dw;
}

// The three references on one problem; outputs start as NaN so unwritten elements show.
struct ConvOut {
  Vec y, dx, dw;
};
ConvOut run_ref(const ConvProblem& p, const Vec& x, const Vec& w, const Vec& dy, const Vec* bias = nullptr) {
  ConvOut r{Vec(dy.size(), std::nan("")), Vec(x.size(), std::nan("")), Vec(w.size(), std::nan(""))};
  ref::conv_fwd(p, x.data(), w.data(), bias ? bias->data() : nullptr, r.y.data());
  ref::conv_bwd_data(p, dy.data(), w.data(), r.dx.data());
  ref::conv_bwd_weight(p, x.data(), dy.data(), r.dw.data());
  return r;
}

// Random small problem: odd sizes, stride 1-3, pad 0-2, dilation 1-2, G in {1, 2, 3, depthwise}.
ConvProblem random_conv(Rng& rng, int ndim) {
  ConvProblem p;
  p.ndim = ndim;
  p.n = uniform(rng, 1, 3);
  const I64 groups[] = {1, 2, 3, 0};  // 0: depthwise
  p.g = groups[uniform(rng, 0, 3)];
  if (p.g == 0) {
    p.g = p.c = p.k = uniform(rng, 2, 5);
  } else {
    p.c = p.g * uniform(rng, 1, 3);
    p.k = p.g * uniform(rng, 1, 3);
  }
  for (int a = 3 - ndim; a < 3; ++a) {
    p.filter[a] = uniform(rng, 1, 3);
    p.stride[a] = uniform(rng, 1, 3);
    p.pad[a] = uniform(rng, 0, 2);
    p.dilation[a] = uniform(rng, 1, 2);
    I64 span = p.dilation[a] * (p.filter[a] - 1) + 1;
    p.in[a] = uniform(rng, std::max<I64>(1, span - 2 * p.pad[a]), span + (ndim == 3 ? 3 : 6));
  }
  validate(p);
  return p;
}

void expect_close(const Vec& got, const Vec& want, const Vec& scale, const ConvProblem& p, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-13 * (scale[i] + 1e-300)) << what << " " << to_string(p) << " element " << i;
}

// Direct comparison with the brute-force formula (all three directions) plus the adjoint
// identities <fwd(x,w), dy> == <x, bwd_data(dy,w)> == <w, bwd_weight(x,dy)>.
void check_conv(const ConvProblem& p, Rng& rng) {
  // Random normal values. Tolerances are relative to the sum of |terms| (the rounding-error scale):
  // 1e-13 of that scale (observed: ~3e-16 of it, ~3e-14 relative to the inner products themselves).
  Vec x = random_vec(rng, p.x_elems()), w = random_vec(rng, p.w_elems()), dy = random_vec(rng, p.y_elems());
  ConvOut r = run_ref(p, x, w, dy);
  Vec ax = abs_of(x), aw = abs_of(w), ady = abs_of(dy);
  expect_close(r.y, brute_fwd(p, x, w), brute_fwd(p, ax, aw), p, "fwd");
  expect_close(r.dx, brute_bwd_data(p, dy, w), brute_bwd_data(p, ady, aw), p, "bwd_data");
  expect_close(r.dw, brute_bwd_weight(p, x, dy), brute_bwd_weight(p, ax, ady), p, "bwd_weight");
  const double fwd = dot(r.y, dy), bwd_data = dot(x, r.dx), bwd_weight = dot(w, r.dw);
  const double scale = dot(brute_fwd(p, ax, aw), ady) + 1e-300;
  EXPECT_LE(std::fabs(fwd - bwd_data), 1e-13 * scale) << to_string(p);
  EXPECT_LE(std::fabs(fwd - bwd_weight), 1e-13 * scale) << to_string(p);

  // Small integers: everything is exact, so the identities hold with equality.
  x = random_ints(rng, p.x_elems()), w = random_ints(rng, p.w_elems()), dy = random_ints(rng, p.y_elems());
  r = run_ref(p, x, w, dy);
  EXPECT_EQ(r.y, brute_fwd(p, x, w)) << to_string(p);
  EXPECT_EQ(dot(r.y, dy), dot(x, r.dx)) << to_string(p);
  EXPECT_EQ(dot(r.y, dy), dot(w, r.dw)) << to_string(p);
}

// A 1x1, stride-1, unpadded, ungrouped convolution is the GEMM ConvProblem::pointwise_gemm names
// (sm90 runs such layers on its GEMM kernel): the GEMM reference on the conv's buffers, in the
// operand order Operands documents, gives the conv reference's result exactly (small integers),
// bias and activation included; any other geometry has no such GEMM.
TEST(RefConv, PointwiseConvIsItsGemm) {
  Rng rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    ConvProblem p;
    p.ndim = trial % 3 == 0 ? 3 : 2;
    p.n = uniform(rng, 1, 3), p.c = uniform(rng, 1, 9), p.k = uniform(rng, 1, 9);
    for (int a = 3 - p.ndim; a < 3; ++a) p.in[a] = uniform(rng, 1, 7);
    p.dir = static_cast<ConvDir>(trial % 3);
    if (p.dir == ConvDir::fwd) p.epilogue = {trial % 2 == 0, kActs[trial % 7]};
    validate(p);
    const std::optional<GemmProblem> g = p.pointwise_gemm();
    ASSERT_TRUE(g) << to_string(p);
    const Vec x = random_ints(rng, p.x_elems()), w = random_ints(rng, p.w_elems()), dy = random_ints(rng, p.y_elems());
    const Vec bias = random_ints(rng, p.k);
    const ConvOut r = run_ref(p, x, w, dy, p.epilogue.bias ? &bias : nullptr);
    Vec got(static_cast<std::size_t>(g->m * g->n));
    switch (p.dir) {
      case ConvDir::fwd:
        ref::gemm(*g, x.data(), w.data(), nullptr, p.epilogue.bias ? bias.data() : nullptr, got.data());
        EXPECT_EQ(got, r.y) << to_string(p);
        break;
      case ConvDir::bwd_data:
        ref::gemm(*g, dy.data(), w.data(), nullptr, nullptr, got.data());
        EXPECT_EQ(got, r.dx) << to_string(p);
        break;
      case ConvDir::bwd_weight:
        ref::gemm(*g, dy.data(), x.data(), nullptr, nullptr, got.data());
        EXPECT_EQ(got, r.dw) << to_string(p);
        break;
    }
  }
  ConvProblem p;
  p.n = 2, p.c = 4, p.k = 4, p.in = {1, 5, 5};
  EXPECT_TRUE(p.pointwise_gemm());
  for (auto change : std::initializer_list<std::function<void(ConvProblem&)>>{
           [](ConvProblem& q) { q.filter[2] = 3; }, [](ConvProblem& q) { q.stride[1] = 2; },
           [](ConvProblem& q) { q.pad[2] = 1; }, [](ConvProblem& q) { q.dilation[1] = 2; },
           [](ConvProblem& q) { q.g = 2; }}) {
    ConvProblem q = p;
    change(q);
    EXPECT_FALSE(q.pointwise_gemm()) << to_string(q);
  }
}

TEST(RefConv, BruteForceAndAdjoint2D) {
  Rng rng(7);
  for (int i = 0; i < 500; ++i) {
    check_conv(random_conv(rng, 2), rng);
    if (HasFailure()) return;
  }
}

TEST(RefConv, BruteForceAndAdjoint3D) {
  Rng rng(8);
  for (int i = 0; i < 250; ++i) {
    check_conv(random_conv(rng, 3), rng);
    if (HasFailure()) return;
  }
}

TEST(RefConv, EpilogueEqualsPlainConvThenBiasAndActivation) {
  Rng rng(9);
  for (Activation act : kActs)
    for (int with_bias = 0; with_bias < 2; ++with_bias)
      for (int rep = 0; rep < 6; ++rep) {
        ConvProblem p = random_conv(rng, rep % 2 ? 3 : 2);
        p.epilogue = {with_bias == 1, act};
        validate(p);
        Vec x = random_vec(rng, p.x_elems(), DType::bf16), w = random_vec(rng, p.w_elems(), DType::bf16);
        Vec bias = random_vec(rng, p.k, DType::bf16);
        ConvProblem plain = p;
        plain.epilogue = {};
        Vec y(static_cast<std::size_t>(p.y_elems())), fused(y.size());
        ref::conv_fwd(plain, x.data(), w.data(), nullptr, y.data());
        ref::conv_fwd(p, x.data(), w.data(), with_bias ? bias.data() : nullptr, fused.data());
        for (std::size_t i = 0; i < y.size(); ++i) {
          const double pre = y[i] + (with_bias ? bias[i % static_cast<std::size_t>(p.k)] : 0.0);
          ASSERT_DOUBLE_EQ(fused[i], apply_activation(act, pre)) << to_string(p) << " element " << i;
        }
      }
}

TEST(RefConv, NullBiasIsRejected) {
  ConvProblem p;
  p.epilogue.bias = true;
  Vec x(1, 1.0), w(1, 1.0), y(1);
  EXPECT_THROW(ref::conv_fwd(p, x.data(), w.data(), nullptr, y.data()), Error);
}

// ---------------------------------------------------------------------------------------------
// Rounding to dtypes

double q(DType t, double v) { return ref::round_to_dtype(t, v); }

TEST(RefQuantize, KnownValues) {
  const double inf = std::numeric_limits<double>::infinity();
  // bf16: 8-bit significand; ties go to the even neighbour.
  EXPECT_EQ(q(DType::bf16, 1 + 0x1p-8), 1.0);                      // tie -> even (1.0000000)
  EXPECT_EQ(q(DType::bf16, 1 + 3 * 0x1p-8), 1 + 0x1p-6);           // tie -> even (1.0000010)
  EXPECT_EQ(q(DType::bf16, 1 + 0x1p-8 + 0x1p-30), 1 + 0x1p-7);     // just above the tie
  EXPECT_EQ(q(DType::bf16, 1 + 3 * 0x1p-9), 1 + 0x1p-7);           // 1.5 half-ulps -> nearest
  EXPECT_EQ(q(DType::bf16, -(1 + 0x1p-8)), -1.0);
  EXPECT_EQ(q(DType::bf16, 0x1p127 * (2 - 0x1p-7)), 0x1p127 * (2 - 0x1p-7));  // max finite
  EXPECT_EQ(q(DType::bf16, 0x1p128), inf);
  EXPECT_EQ(q(DType::bf16, 0x1p-133), 0x1p-133);                    // min subnormal (as in f32)
  EXPECT_EQ(q(DType::bf16, 0x1p-134), 0.0);                         // tie -> 0
  // f16
  EXPECT_EQ(q(DType::f16, 65504), 65504);
  EXPECT_EQ(q(DType::f16, 65519.99), 65504);
  EXPECT_EQ(q(DType::f16, 65520), inf);                             // tie rounds to 2^16 -> inf
  EXPECT_EQ(q(DType::f16, -1e6), -inf);
  EXPECT_EQ(q(DType::f16, 1 + 0x1p-11), 1.0);
  EXPECT_EQ(q(DType::f16, 1 + 3 * 0x1p-11), 1 + 0x1p-9);
  EXPECT_EQ(q(DType::f16, 0x1p-24), 0x1p-24);                       // min subnormal
  EXPECT_EQ(q(DType::f16, 0x1p-25), 0.0);                           // tie -> 0
  EXPECT_EQ(q(DType::f16, 0x1p-25 * 1.0001), 0x1p-24);
  EXPECT_EQ(q(DType::f16, 3 * 0x1p-25), 0x1p-23);                   // tie -> even (2 * 2^-24)
  EXPECT_EQ(q(DType::f16, 0x1p-14 - 0x1p-24), 0x1p-14 - 0x1p-24);   // max subnormal
  EXPECT_TRUE(std::signbit(q(DType::f16, -0x1p-30)));               // underflow keeps the sign
  // e4m3 (OCP E4M3FN): max 448, saturating, min subnormal 2^-9
  EXPECT_EQ(q(DType::e4m3, 448), 448);
  EXPECT_EQ(q(DType::e4m3, 464), 448);                              // tie with (absent) 480
  EXPECT_EQ(q(DType::e4m3, 1000), 448);
  EXPECT_EQ(q(DType::e4m3, -1e30), -448);
  EXPECT_EQ(q(DType::e4m3, inf), 448);
  EXPECT_EQ(q(DType::e4m3, -inf), -448);
  EXPECT_EQ(q(DType::e4m3, 1.0625), 1.0);                           // tie -> even
  EXPECT_EQ(q(DType::e4m3, 1.1875), 1.25);                          // tie -> even
  EXPECT_EQ(q(DType::e4m3, 0x1p-9), 0x1p-9);
  EXPECT_EQ(q(DType::e4m3, 0x1p-10), 0.0);
  EXPECT_EQ(q(DType::e4m3, 0.7 * 0x1p-9), 0x1p-9);
  EXPECT_EQ(q(DType::e4m3, 0x1p-6 - 0x1p-9), 0x1p-6 - 0x1p-9);      // max subnormal
  // e5m2: max 57344, saturating, min subnormal 2^-16
  EXPECT_EQ(q(DType::e5m2, 57344), 57344);
  EXPECT_EQ(q(DType::e5m2, 61440), 57344);
  EXPECT_EQ(q(DType::e5m2, 1e9), 57344);
  EXPECT_EQ(q(DType::e5m2, -inf), -57344);
  EXPECT_EQ(q(DType::e5m2, 1.125), 1.0);                            // tie -> even
  EXPECT_EQ(q(DType::e5m2, 1.375), 1.5);                            // tie -> even
  EXPECT_EQ(q(DType::e5m2, 0x1p-16), 0x1p-16);
  EXPECT_EQ(q(DType::e5m2, 0x1p-17), 0.0);
  // f32 and tf32
  EXPECT_EQ(q(DType::f32, 1 + 0x1p-24), 1.0);
  EXPECT_EQ(q(DType::f32, 1 + 0x1p-23), 1 + 0x1p-23);
  EXPECT_EQ(q(DType::f32, 0x1p-149), 0x1p-149);
  EXPECT_EQ(q(DType::f32, 1e39), inf);
  EXPECT_EQ(ref::round_to_tf32(1 + 0x1p-11), 1.0);
  EXPECT_EQ(ref::round_to_tf32(1 + 3 * 0x1p-11), 1 + 0x1p-9);
  EXPECT_EQ(ref::round_to_tf32(0x1p-136), 0x1p-136);                // min subnormal (2^-126-10)
  EXPECT_EQ(ref::round_to_tf32(1e39), inf);
  // Zeros and NaN pass through.
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f32}) {
    EXPECT_EQ(q(t, 0.0), 0.0);
    EXPECT_TRUE(std::signbit(q(t, -0.0)));
    EXPECT_TRUE(std::isnan(q(t, std::nan(""))));
  }
}

// Every positive finite value of a format, by code (ascending; even code = even significand).
using Decoder = std::function<double(std::uint32_t)>;
double ieee_decode(std::uint32_t code, int exp_bits, int mant_bits) {
  const std::uint32_t e = code >> mant_bits, m = code & ((1u << mant_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  if (e == 0) return std::ldexp(m, 1 - bias - mant_bits);  // subnormal: 0.m * 2^(1-bias)
  return std::ldexp((1u << mant_bits) + m, int(e) - bias - mant_bits);
}
double f32_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Checks that every value is a fixed point, every midpoint rounds to the even neighbour, points
// just beside a midpoint round to the nearer neighbour, and values past the top go to `overflow`.
void check_format(const std::function<double(double)>& round, std::uint32_t max_code, const Decoder& decode,
                  double overflow, const char* name) {
  double prev = decode(0);
  ASSERT_EQ(prev, 0.0) << name;
  for (std::uint32_t code = 1; code <= max_code; ++code) {
    const double v = decode(code), mid = (prev + v) / 2, even = (code % 2 == 0) ? v : prev;
    ASSERT_EQ(round(v), v) << name << " code " << code;
    ASSERT_EQ(round(-v), -v) << name << " code " << code;
    ASSERT_EQ(round(mid), even) << name << " midpoint below code " << code;
    ASSERT_EQ(round(-mid), -even) << name << " midpoint below code " << code;
    ASSERT_EQ(round(std::nextafter(mid, 0.0)), prev) << name << " code " << code;
    ASSERT_EQ(round(std::nextafter(mid, 1e300)), v) << name << " code " << code;
    prev = v;
  }
  const double ulp = prev - decode(max_code - 1), above = prev + ulp / 2;
  EXPECT_EQ(round(above), overflow) << name;
  EXPECT_EQ(round(-above), -overflow) << name;
  EXPECT_EQ(round(std::nextafter(above, 0.0)), prev) << name;
}

TEST(RefQuantize, ExhaustiveOverEveryValue) {
  const double inf = std::numeric_limits<double>::infinity();
  auto dt = [](DType t) { return [t](double v) { return ref::round_to_dtype(t, v); }; };
  check_format(dt(DType::f16), 0x7BFF, [](std::uint32_t c) { return ieee_decode(c, 5, 10); }, inf, "f16");
  check_format(dt(DType::bf16), 0x7F7F, [](std::uint32_t c) { return f32_bits(c << 16); }, inf, "bf16");
  check_format(ref::round_to_tf32, (254u << 10) | 1023u, [](std::uint32_t c) { return f32_bits(c << 13); },
               inf, "tf32");
  check_format(dt(DType::e4m3), 0x7E, [](std::uint32_t c) { return ieee_decode(c, 4, 3); }, 448, "e4m3");
  check_format(dt(DType::e5m2), 0x7B, [](std::uint32_t c) { return ieee_decode(c, 5, 2); }, 57344, "e5m2");
}

TEST(RefQuantize, IdempotentAndWithinHalfUlp) {
  struct Case {
    DType t;
    double unit_roundoff, min_normal, max_finite;
  };
  const Case cases[] = {{DType::f16, 0x1p-11, 0x1p-14, 65504},
                        {DType::bf16, 0x1p-8, 0x1p-126, 0x1p127 * (2 - 0x1p-7)},
                        {DType::e4m3, 0x1p-4, 0x1p-6, 448},
                        {DType::e5m2, 0x1p-3, 0x1p-14, 57344},
                        {DType::f32, 0x1p-24, 0x1p-126, 0x1p127 * (2 - 0x1p-23)}};
  Rng rng(11);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (const Case& c : cases)
    for (int i = 0; i < 20000; ++i) {
      const double v = (i % 2 ? -1 : 1) * std::ldexp(mant(rng), int(uniform(rng, -150, 130)));
      const double r = q(c.t, v);
      ASSERT_EQ(q(c.t, r), r) << to_string(c.t) << " " << v;
      const double a = std::fabs(v);
      if (a >= c.min_normal && a <= c.max_finite) {
        ASSERT_LE(std::fabs(r - v), c.unit_roundoff * a) << to_string(c.t) << " " << v;
      }
    }
}

#ifdef __FLT16_MAX__
TEST(RefQuantize, F16MatchesCompilerConversion) {
  Rng rng(12);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int i = 0; i < 100000; ++i) {
    const double v = (i % 2 ? -1 : 1) * std::ldexp(mant(rng), int(uniform(rng, -27, 17)));
    ASSERT_EQ(q(DType::f16, v), static_cast<double>(static_cast<_Float16>(v))) << v;
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// Threads

TEST(RefThreads, ParallelForVisitsEveryIndexOnce) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadsEnv env(threads);
    for (I64 n : {0, 1, 5, 100}) {
      std::vector<int> hits(static_cast<std::size_t>(n), 0);
      ref::parallel_for(10, 10 + n, [&](I64 i) { ++hits[static_cast<std::size_t>(i - 10)]; });
      EXPECT_EQ(hits, std::vector<int>(static_cast<std::size_t>(n), 1)) << threads << " threads, n=" << n;
    }
  }
}

TEST(RefThreads, ParallelForUsesThreadsAndPropagatesErrors) {
  ThreadsEnv env(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  ref::parallel_for(0, 8, [&](I64) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 4u);
  ids.clear();
  ref::parallel_for(0, 8, [&](I64) { ids.insert(std::this_thread::get_id()); }, /*grain=*/8);
  EXPECT_EQ(ids.size(), 1u);  // one chunk: runs inline
  EXPECT_THROW(ref::parallel_for(0, 100, [](I64 i) { if (i == 77) throw std::runtime_error("boom"); }),
               std::runtime_error);
}

// All outputs of the references on a few problems large enough to be split over threads.
std::vector<Vec> run_all(int threads) {
  ThreadsEnv env(threads);
  Rng rng(13);
  std::vector<Vec> out;

  GemmProblem g;
  g.m = 67, g.n = 45, g.k = 39, g.batch = 2, g.layout_a = MatLayout::col, g.layout_b = MatLayout::row;
  g.beta = 0.5, g.epilogue = {true, Activation::gelu_erf};
  validate(g);
  Vec a = random_vec(rng, g.m * g.k * g.batch), b = random_vec(rng, g.k * g.n * g.batch);
  Vec c = random_vec(rng, g.m * g.n * g.batch), bias = random_vec(rng, g.n), d(c.size());
  ref::gemm(g, a.data(), b.data(), c.data(), bias.data(), d.data());
  out.push_back(d);

  ConvProblem p2;
  p2.n = 2, p2.g = 2, p2.c = 16, p2.k = 16, p2.in = {1, 16, 17}, p2.filter = {1, 3, 3};
  p2.stride = {1, 2, 1}, p2.pad = {0, 1, 2}, p2.dilation = {1, 1, 2}, p2.epilogue = {true, Activation::silu};
  ConvProblem p3;
  p3.ndim = 3, p3.n = 1, p3.g = 3, p3.c = 6, p3.k = 9, p3.in = {8, 7, 9}, p3.filter = {3, 3, 3};
  p3.pad = {1, 1, 1}, p3.dilation = {2, 1, 1};
  for (const ConvProblem& p : {p2, p3}) {
    validate(p);
    Vec x = random_vec(rng, p.x_elems()), w = random_vec(rng, p.w_elems()), dy = random_vec(rng, p.y_elems());
    Vec cb = random_vec(rng, p.k), y(dy.size()), dx(x.size()), dw(w.size());
    ref::conv_fwd(p, x.data(), w.data(), cb.data(), y.data());
    ref::conv_bwd_data(p, dy.data(), w.data(), dx.data());
    ref::conv_bwd_weight(p, x.data(), dy.data(), dw.data());
    out.insert(out.end(), {y, dx, dw});
  }
  return out;
}

TEST(RefThreads, MultiThreadedEqualsSingleThreadedBitForBit) {
  const std::vector<Vec> one = run_all(1), many = run_all(4);
  ASSERT_EQ(one.size(), many.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i].size(), many[i].size());
    EXPECT_EQ(std::memcmp(one[i].data(), many[i].data(), one[i].size() * sizeof(double)), 0) << "output " << i;
  }
}

}  // namespace
}  // namespace tilepick
