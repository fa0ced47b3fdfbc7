// Vendor baselines: library discovery and the problem -> cuBLASLt / cuDNN descriptor mappings,
// checked by simulating the libraries' documented semantics on the CPU against src/ref. The GPU
// test at the end skips without a CUDA driver.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <fstream>
#include <random>
#include <set>

#include "run/vendor.hpp"
#include "run/verify.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::run::vendor {
namespace {

namespace fs = std::filesystem;

// ---- discovery ----------------------------------------------------------------------------------

TEST(VendorLib, OverrideIsTheOnlyCandidate) {
  auto c = library_candidates(Lib::cudnn, "/x/libcudnn.so.9", {"/usr/local/cuda/lib64"}, {});
  EXPECT_EQ(c, std::vector<std::string>{"/x/libcudnn.so.9"});
}

TEST(VendorLib, SearchOrderLoaderThenCudaThenSitePackages) {
  fs::path root = fs::temp_directory_path() / ("tp_vendor_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::path sp = root / "venv/lib/python3.12/site-packages";
  fs::create_directories(sp / "nvidia/cudnn/lib");
  fs::create_directories(sp / "nvidia/cublas/lib");
  std::ofstream(sp / "nvidia/cudnn/lib/libcudnn.so.9") << "";
  std::ofstream(sp / "nvidia/cublas/lib/libcublasLt.so.12") << "";
  const std::vector<std::string> sps = {sp.string(), (root / "missing").string()};

  auto dnn = library_candidates(Lib::cudnn, "", {"/cuda/lib64", "/cuda/lib"}, sps);
  EXPECT_EQ(dnn, (std::vector<std::string>{"libcudnn.so.9", "/cuda/lib64/libcudnn.so.9", "/cuda/lib/libcudnn.so.9",
                                           (sp / "nvidia/cudnn/lib/libcudnn.so.9").string()}));
  auto lt = library_candidates(Lib::cublaslt, "", {"/cuda/lib64"}, sps);
  ASSERT_EQ(lt.size(), 7u);
  EXPECT_EQ(lt[0], "libcublasLt.so.13");
  EXPECT_EQ(lt[1], "libcublasLt.so.12");
  EXPECT_EQ(lt[2], "libcublasLt.so");
  EXPECT_EQ(lt[3], "/cuda/lib64/libcublasLt.so.13");
  EXPECT_EQ(lt[6], (sp / "nvidia/cublas/lib/libcublasLt.so.12").string());  // only files that exist there
  // Duplicated directories give each path once.
  EXPECT_EQ(library_candidates(Lib::cudnn, "", {"/a", "/a"}, {}).size(), 2u);
  fs::remove_all(root);
}

TEST(VendorLib, SitePackagesAreExistingDirectories) {
  auto sps = python_site_packages();
  for (const auto& s : sps) EXPECT_TRUE(fs::is_directory(s)) << s;
  EXPECT_EQ(std::set<std::string>(sps.begin(), sps.end()).size(), sps.size());
  EXPECT_FALSE(cuda_lib_dirs().empty());
}

TEST(VendorLib, UnloadableCandidatesAreAllNamedInTheError) {
  fs::path bogus = fs::temp_directory_path() / "tp_not_a_library.so";
  std::ofstream(bogus) << "not an ELF file";
  auto info = open_library(Lib::cudnn, {"/nonexistent/libcudnn.so.9", bogus.string()});
  EXPECT_FALSE(info.loaded);
  EXPECT_NE(info.error.find("cuDNN not available"), std::string::npos) << info.error;
  EXPECT_NE(info.error.find("/nonexistent/libcudnn.so.9"), std::string::npos) << info.error;
  EXPECT_NE(info.error.find(bogus.string()), std::string::npos) << info.error;
  fs::remove(bogus);
  EXPECT_FALSE(open_library(Lib::cublaslt, {}).loaded);
}

// The toolkit on the build machine ships cuBLASLt and cuDNN: they load without a GPU (symbols and
// version checked).
TEST(VendorLib, ToolkitLibrariesLoadWhenPresent) {
  int checked = 0;
  for (Lib lib : {Lib::cublaslt, Lib::cudnn}) {
    if (!compiled_with(lib)) continue;
    std::vector<std::string> present;
    for (const auto& d : cuda_lib_dirs())
      for (const auto& n : lib_sonames(lib))
        if (fs::exists(d + "/" + n)) present.push_back(d + "/" + n);
    if (present.empty()) continue;
    auto info = open_library(lib, present);
    ASSERT_TRUE(info.loaded) << info.error;
    EXPECT_EQ(info.path, present[0]);
    EXPECT_GE(std::stoi(info.version), lib == Lib::cudnn ? 9 : 11) << info.version;
    ++checked;
  }
  if (!checked) GTEST_SKIP() << "no vendor library in the CUDA lib dirs";
}

// ---- cuBLASLt mapping ---------------------------------------------------------------------------

// cuBLASLt's semantics on the CPU: D = act(alpha op(A) op(B) + beta C + bias[row]) over stored
// column-major (or row-ordered) matrices described by `g`.
std::vector<double> simulate_lt(const LtGemm& g, const GemmProblem& p, const std::vector<double>& a,
                                const std::vector<double>& b, const std::vector<double>& c,
                                const std::vector<double>& bias) {
  const auto& A = g.swap_ab ? b : a;
  const auto& B = g.swap_ab ? a : b;
  auto at = [](const LtMatrix& m, int batch, std::uint64_t r, std::uint64_t col) {
    EXPECT_LT(r, m.rows);
    EXPECT_LT(col, m.cols);
    std::int64_t off = m.row_order ? std::int64_t(r) * m.ld + std::int64_t(col) : std::int64_t(r) + std::int64_t(col) * m.ld;
    return batch * m.batch_stride + off;
  };
  std::vector<double> d(c.size(), 0.0);
  for (int bt = 0; bt < g.batch; ++bt)
    for (std::uint64_t i = 0; i < g.m; ++i)
      for (std::uint64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (std::uint64_t k = 0; k < g.k; ++k) {
          double x = A[at(g.a, bt, g.trans_a ? k : i, g.trans_a ? i : k)];
          double y = B[at(g.b, bt, g.trans_b ? j : k, g.trans_b ? k : j)];
          acc += x * y;
        }
        const auto o = at(g.cd, bt, i, j);
        double v = p.alpha * acc + (p.beta != 0 ? p.beta * c[o] : 0.0);
        if (p.epilogue.bias) v += bias[i];
        d[o] = apply_activation(p.epilogue.act, v);
      }
  return d;
}

class LtMapping : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(LtMapping, MatchesTheReference) {
  const auto [layouts, bias] = GetParam();
  GemmProblem p = parse_gemm("gemm " + layouts + " batch2 m5 n7 k3 f16 alpha=1.5 beta=0.5" +
                             (bias ? " ep=bias+relu" : ""));
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd;
  auto rnd = [&](std::int64_t n) {
    std::vector<double> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
  };
  auto a = rnd(p.m * p.k * p.batch), b = rnd(p.k * p.n * p.batch), c = rnd(p.m * p.n * p.batch), bias_v = rnd(p.n);
  std::vector<double> want(c.size());
  ref::gemm(p, a.data(), b.data(), c.data(), bias ? bias_v.data() : nullptr, want.data());
  const LtGemm g = map_gemm(p);
  // Row-major D and every bias use the transposed product, so the bias runs along cuBLASLt's rows.
  EXPECT_EQ(g.swap_ab, p.layout_c == MatLayout::row || bias);
  EXPECT_EQ(g.cd.row_order, p.layout_c == MatLayout::col && bias);
  for (const LtMatrix* m : {&g.a, &g.b, &g.cd})
    EXPECT_GE(std::uint64_t(m->ld), m->row_order ? m->cols : m->rows);
  auto got = simulate_lt(g, p, a, b, c, bias_v);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << layouts << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, LtMapping,
                         ::testing::Combine(::testing::Values("rrr", "rcr", "crr", "ccr", "rrc", "rcc", "crc", "ccc"),
                                            ::testing::Bool()));

TEST(LtMapping, RcrIsTheTnFormatFp8Needs) {
  const LtGemm g = map_gemm(parse_gemm("gemm rcr m64 n32 k128 e4m3:e4m3:bf16"));
  EXPECT_TRUE(g.swap_ab);
  EXPECT_TRUE(g.trans_a);   // cuBLAS A = B^T, stored as B (col-major K x N)
  EXPECT_FALSE(g.trans_b);  // cuBLAS B = A^T, which is row-major A
  EXPECT_EQ(g.m, 32u);
  EXPECT_EQ(g.n, 64u);
  EXPECT_EQ(g.a.ld, 128);
  EXPECT_EQ(g.cd.ld, 32);
}

TEST(VendorSupport, CublasLtReasons) {
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 bf16 ep=bias+gelu_tanh")), "");
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 f16:f16:f32 ep=relu")), "");
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 f16 ep=bias+silu")).find("silu"), std::string::npos);
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 f16 ep=gelu_erf")).find("gelu_erf"), std::string::npos);
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m16 n16 k16 e5m2:e5m2:bf16")).find("e5m2"), std::string::npos);
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m16 n16 k16 e4m3:e5m2:bf16")), "");
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m16 n16 k16 f32")), "");
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 f32:f32:bf16")).find("f32 x f32 -> bf16"), std::string::npos);
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m8 n8 k8 f16:f16:bf16")).find("f16 x f16 -> bf16"), std::string::npos);
}

// fp8 block scales: cuBLASLt runs no batches and pads SB's k-blocks to 4 (only where N spans several blocks).
TEST(VendorSupport, CublasLtBlockScaleReasons) {
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m256 n384 k512 e4m3:e4m3:bf16 scale=block")), "");
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m256 n128 k384 e4m3:e4m3:bf16 scale=block")), "");
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr m256 n384 k400 e4m3:e4m3:bf16 scale=block")), "");  // 4 blocks
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr m256 n384 k384 e4m3:e4m3:bf16 scale=block")).find("K/128 = 3"),
            std::string::npos);
  EXPECT_NE(cublaslt_unsupported(parse_gemm("gemm rcr batch2 m256 n256 k512 e4m3:e4m3:bf16 scale=block")).find("batch"),
            std::string::npos);
  EXPECT_EQ(cublaslt_unsupported(parse_gemm("gemm rcr batch2 m256 n384 k384 e4m3:e4m3:bf16")), "");
}

// ---- cuDNN mapping ------------------------------------------------------------------------------

std::int64_t offset(const CudnnTensor& t, const std::vector<std::int64_t>& idx) {
  std::int64_t o = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) o += idx[i] * t.strides[i];
  return o;
}

TEST(CudnnMapping, Grouped2dDimsAndStrides) {
  const ConvProblem p = parse_conv("fwd g4 mb2 ic32 ih10 iw12 oc16 kh3 kw5 sh2 sw1 ph1 pw2 dh1 dw2 f16");
  const CudnnConv c = map_conv(p);
  EXPECT_EQ(c.spatial, 2);
  EXPECT_EQ(c.groups, 4);
  EXPECT_EQ(c.x.dims, (std::vector<int>{2, 32, 10, 12}));
  EXPECT_EQ(c.x.strides, (std::vector<int>{10 * 12 * 32, 1, 12 * 32, 32}));
  const auto out = p.out();
  EXPECT_EQ(c.y.dims, (std::vector<int>{2, 16, int(out[1]), int(out[2])}));
  EXPECT_EQ(c.y.strides, (std::vector<int>{int(out[1] * out[2] * 16), 1, int(out[2] * 16), 16}));
  EXPECT_EQ(c.w_dims, (std::vector<int>{16, 8, 3, 5}));
  EXPECT_EQ(c.pad, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.stride, (std::vector<int>{2, 1}));
  EXPECT_EQ(c.dilation, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.bias.dims, (std::vector<int>{1, 16, 1, 1}));
}

// Every (n, c, d, h, w) of cuDNN's NCDHW view lands on tilepick's NDHWGC offset (3-D grouped).
TEST(CudnnMapping, Grouped3dStridesAreChannelsLast) {
  const ConvProblem p = parse_conv(
      "bwd_data g3 mb2 ic6 id4 ih5 iw3 oc9 kd3 kh1 kw3 sd2 sh1 sw1 pd1 ph0 pw1 dd1 dh1 dw2 bf16");
  const CudnnConv c = map_conv(p);
  EXPECT_EQ(c.spatial, 3);
  EXPECT_EQ(c.w_dims, (std::vector<int>{9, 2, 3, 1, 3}));
  EXPECT_EQ(c.pad, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(c.dilation, (std::vector<int>{1, 1, 2}));
  const std::int64_t G = p.g, Cg = p.c_per_group(), D = p.in[0], H = p.in[1], W = p.in[2];
  std::set<std::int64_t> seen;
  for (std::int64_t n = 0; n < p.n; ++n)
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t cg = 0; cg < Cg; ++cg)
        for (std::int64_t d = 0; d < D; ++d)
          for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t w = 0; w < W; ++w) {
              const std::int64_t want = ((((n * D + d) * H + h) * W + w) * G + g) * Cg + cg;
              EXPECT_EQ(offset(c.x, {n, g * Cg + cg, d, h, w}), want);
              seen.insert(want);
            }
  EXPECT_EQ(std::int64_t(seen.size()), p.x_elems());
  const auto out = p.out();
  EXPECT_EQ(c.y.dims, (std::vector<int>{2, 9, int(out[0]), int(out[1]), int(out[2])}));
  EXPECT_EQ(offset(c.y, {1, 8, out[0] - 1, out[1] - 1, out[2] - 1}) + 1, p.y_elems());
  // The NHWC filter [K][Z][Y][X][Cg] is tilepick's GKZYXC.
  std::int64_t w_elems = 1;
  for (int d : c.w_dims) w_elems *= d;
  EXPECT_EQ(w_elems, p.w_elems());
}

// The graph API's tensors are described by dims and channels-last strides: for x and y they are the legacy
// descriptors' strides, and the filter's lands every (k, cg, z, y, x) on tilepick's [K][Z][Y][X][Cg] offset.
TEST(CudnnMapping, GraphStridesAreTheLegacyLayouts) {
  for (const char* text : {"fwd g4 mb3 ic12 ih7 iw5 oc8 kh3 kw2 sh2 sw1 ph1 pw0 dh1 dw2 bf16",
                           "bwd_weight g3 mb2 ic6 id4 ih5 iw3 oc9 kd3 kh1 kw3 sd2 sh1 sw1 pd1 ph0 pw1 dd1 dh1 dw2 f16"}) {
    SCOPED_TRACE(text);
    const ConvProblem p = parse_conv(text);
    const CudnnConv c = map_conv(p);
    for (const CudnnTensor* t : {&c.x, &c.y})
      EXPECT_EQ(channels_last_strides(t->dims), std::vector<std::int64_t>(t->strides.begin(), t->strides.end()));
    const auto ws = channels_last_strides(c.w_dims);
    std::vector<std::int64_t> dims(c.w_dims.begin(), c.w_dims.end());  // K, Cg, [Z,] Y, X
    const std::int64_t nsp = static_cast<std::int64_t>(dims.size()) - 2;
    std::vector<std::int64_t> idx(dims.size(), 0);
    std::int64_t count = 0;
    for (;;) {  // every filter element, odometer order
      std::int64_t want = idx[0];
      for (std::int64_t s = 0; s < nsp; ++s) want = want * dims[2 + s] + idx[2 + s];
      want = want * dims[1] + idx[1];
      std::int64_t got = 0;
      for (std::size_t i = 0; i < dims.size(); ++i) got += idx[i] * ws[i];
      ASSERT_EQ(got, want);
      ++count;
      std::size_t i = dims.size();
      while (i-- > 0 && ++idx[i] == dims[i]) idx[i] = 0;
      if (i == static_cast<std::size_t>(-1)) break;
    }
    EXPECT_EQ(count, p.w_elems());
  }
  EXPECT_THROW(channels_last_strides({4, 8}), tilepick::Error);
}

TEST(VendorSupport, CudnnReasons) {
  EXPECT_EQ(cudnn_unsupported(parse_conv("fwd g2 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f16 ep=bias+relu")), "");
  EXPECT_EQ(cudnn_unsupported(parse_conv("fwd g2 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f32 ep=bias")), "");
  EXPECT_NE(cudnn_unsupported(parse_conv("fwd g1 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f32 ep=bias+tanh"))
                .find("tanh"), std::string::npos);
  EXPECT_NE(cudnn_unsupported(parse_conv("fwd g1 mb1 ic8 ih8 iw8 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f16:f16:f32"))
                .find("one data type"), std::string::npos);
}

// ---- on a GPU -----------------------------------------------------------------------------------

TEST(VendorGpu, EveryAlgorithmMatchesTheReference) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << why;
  cuda::init_device(0);
  for (const char* text : {"gemm rcr batch2 m96 n80 k64 bf16 beta=1 ep=bias+relu", "gemm ccc m33 n17 k40 f32",
                           "gemm rcr m64 n384 k512 e4m3:e4m3:bf16 ep=bias scale=block",
                           "fwd g4 mb2 ic32 ih9 iw9 oc32 kh3 kw3 sh1 sw1 ph1 pw1 f16 ep=bias",
                           "bwd_data g2 mb2 ic16 id4 ih6 iw6 oc16 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 f16",
                           "bwd_weight g1 mb2 ic8 ih8 iw8 oc16 kh3 kw3 sh2 sw2 ph1 pw1 bf16"}) {
    const Problem p = parse_problem(text);
    const Lib lib = std::holds_alternative<GemmProblem>(p) ? Lib::cublaslt : Lib::cudnn;
    if (!library(lib).loaded) {
      std::cerr << "skipping " << text << ": " << library(lib).error << "\n";
      continue;
    }
    auto set = VendorSet::create(p, &why);
    if (!set) {
      ADD_FAILURE() << text << ": " << why;
      continue;
    }
    ASSERT_GE(set->heuristic_index(), 0);
    ProblemBench bench(p, VerifyOptions{});
    for (int i = 0; i < int(set->algos().size()); ++i) {
      auto r = bench.run([&](const Operands& ops, void* s) { set->run(i, ops, ops.workspace, s); },
                         set->algos()[i].name, set->algos()[i].workspace_bytes);
      EXPECT_TRUE(r.ok) << text << " " << r.config << ": rel " << r.rel_l2 << " " << r.error;
    }
  }
}

}  // namespace
}  // namespace tilepick::run::vendor
