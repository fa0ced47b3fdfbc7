// Problem strings: round trips, derived sizes, golden canonical names and every error class.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "tilepick/error.hpp"
#include "tilepick/problem.hpp"

using namespace tilepick;

namespace {

// Runs `fn`, expects a tilepick::Error whose message contains every fragment.
template <class Fn>
void expect_error(Fn fn, std::initializer_list<std::string> fragments, Status status) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected one mentioning '" << *fragments.begin() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

void expect_parse_error(const std::string& text, std::initializer_list<std::string> fragments) {
  expect_error([&] { parse_problem(text); }, fragments, Status::parse_error);
}

}  // namespace

TEST(Problem, ConvExampleFromTheIssue) {
  auto p = parse_conv("fwd g32 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16");
  EXPECT_EQ(p.g, 32);
  EXPECT_EQ(p.c_per_group(), 8);
  EXPECT_EQ(p.out()[1], 56);
  EXPECT_EQ(p.out()[2], 56);
  EXPECT_EQ(to_string(p), "fwd g32 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16");
  auto v = p.gemm();
  EXPECT_EQ(v.m, 32 * 56 * 56);
  EXPECT_EQ(v.n, 8);
  EXPECT_EQ(v.k, 8 * 9);
  EXPECT_EQ(v.batch, 32);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 32 * 56 * 56 * 256 * 8 * 9);
}

TEST(Problem, ImplicitGemmViewPerDirection) {
  auto f = parse_conv("fwd g2 mb3 ic8 ih9 iw7 oc6 kh3 kw2 sh2 sw1 ph1 pw0 f16");
  auto o = f.out();
  EXPECT_EQ(o[1], (9 + 2 - 3) / 2 + 1);
  EXPECT_EQ(o[2], (7 - 2) / 1 + 1);
  auto d = parse_conv("bwd_data g2 mb3 ic8 ih9 iw7 oc6 kh3 kw2 sh2 sw1 ph1 pw0 f16").gemm();
  EXPECT_EQ(d.m, 3 * 9 * 7);
  EXPECT_EQ(d.n, 4);
  EXPECT_EQ(d.k, 3 * 3 * 2);
  auto w = parse_conv("bwd_weight g2 mb3 ic8 ih9 iw7 oc6 kh3 kw2 sh2 sw1 ph1 pw0 f16").gemm();
  EXPECT_EQ(w.m, 3);
  EXPECT_EQ(w.n, 4 * 3 * 2);
  EXPECT_EQ(w.k, 3 * o[1] * o[2]);
  EXPECT_EQ(w.batch, 2);
}

TEST(Problem, DilationAnd3D) {
  auto p = parse_conv("fwd g1 mb1 ic4 id9 ih10 iw11 oc4 kd3 kh3 kw3 sd2 sh1 sw1 pd0 ph2 pw2 dd1 dh2 dw2 f32");
  EXPECT_EQ(p.ndim, 3);
  auto o = p.out();
  EXPECT_EQ(o[0], (9 - 3) / 2 + 1);
  EXPECT_EQ(o[1], 10 + 4 - 5 + 1);
  EXPECT_EQ(o[2], 11 + 4 - 5 + 1);
  EXPECT_EQ(to_string(p),
            "fwd g1 mb1 ic4 id9 ih10 iw11 oc4 kd3 kh3 kw3 sd2 sh1 sw1 pd0 ph2 pw2 dd1 dh2 dw2 f32");
  EXPECT_EQ(op_name(Problem{p}), "conv_fwd");
}

TEST(Problem, GemmDefaultsAndOptionalTokens) {
  auto g = parse_gemm("gemm rcr m4096 n4096 k4096 bf16");
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.acc, DType::f32);
  EXPECT_EQ(to_string(g), "gemm rcr m4096 n4096 k4096 bf16");
  // Token order does not matter; aliases canonicalize.
  auto h = parse_gemm("gemm k7 m3 n5 fp16:fp16:fp32 ccr batch4 beta=0.5 alpha=2 ep=bias+gelu_tanh");
  EXPECT_EQ(to_string(h), "gemm ccr batch4 m3 n5 k7 f16:f16:f32 alpha=2 beta=0.5 ep=bias+gelu_tanh");
  EXPECT_EQ(h.layout_a, MatLayout::col);
  EXPECT_TRUE(h.epilogue.bias);
  EXPECT_EQ(h.epilogue.act, Activation::gelu_tanh);
}

// fp8 block scales (scale=block): printed last, sizes of the two scale tensors, JSON field.
TEST(Problem, GemmBlockScale) {
  auto g = parse_gemm("gemm rcr scale=block m300 n260 k520 e4m3:e4m3:bf16 ep=bias");
  EXPECT_EQ(g.scale, GemmScale::block);
  EXPECT_EQ(to_string(g), "gemm rcr m300 n260 k520 e4m3:e4m3:bf16 ep=bias scale=block");
  EXPECT_EQ(parse_gemm(to_string(g)), g);
  EXPECT_EQ(g.k_blocks(), 5);
  EXPECT_EQ(g.scale_a_elems(), 5 * 300);
  EXPECT_EQ(g.scale_b_elems(), 3 * 5);
  EXPECT_NE(to_json_text(g).find("\"scale\":\"block\""), std::string::npos);
  auto t = parse_gemm("gemm rcr m8 n8 k8 e4m3:e4m3:bf16 scale=tensor");
  EXPECT_EQ(t.scale, GemmScale::tensor);
  EXPECT_EQ(to_string(t), "gemm rcr m8 n8 k8 e4m3:e4m3:bf16");
  EXPECT_EQ(t.scale_a_elems() + t.scale_b_elems(), 0);
  auto batched = parse_gemm("gemm rcr batch3 m8 n130 k129 e5m2:e4m3:f32 scale=block");
  EXPECT_EQ(batched.scale_a_elems(), 3 * 2 * 8);
  EXPECT_EQ(batched.scale_b_elems(), 3 * 2 * 2);
}

TEST(Problem, DepthwiseDetection) {
  EXPECT_TRUE(parse_conv("fwd g96 mb1 ic96 ih7 iw7 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16").depthwise());
  EXPECT_FALSE(parse_conv("fwd g32 mb1 ic96 ih7 iw7 oc96 kh3 kw3 sh1 sw1 ph1 pw1 bf16").depthwise());
  EXPECT_FALSE(parse_conv("fwd g1 mb1 ic1 ih7 iw7 oc1 kh3 kw3 sh1 sw1 ph1 pw1 bf16").depthwise());
}

// Random valid problems print, parse back to equal values, and print identically.
TEST(Problem, RandomRoundTrip) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const DType dts[] = {DType::f16, DType::bf16, DType::f32};
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    Problem p;
    if (i % 2 == 0) {
      GemmProblem g;
      g.m = pick(1, 5000), g.n = pick(1, 5000), g.k = pick(1, 5000), g.batch = pick(1, 3) == 1 ? pick(1, 64) : 1;
      g.layout_a = pick(0, 1) ? MatLayout::row : MatLayout::col;
      g.layout_b = pick(0, 1) ? MatLayout::row : MatLayout::col;
      g.layout_c = pick(0, 1) ? MatLayout::row : MatLayout::col;
      g.a = g.b = dts[pick(0, 2)];
      g.c = dts[pick(0, 2)];
      g.alpha = pick(0, 1) ? 1.0 : pick(-100, 100) / 8.0;
      g.beta = pick(0, 1) ? 0.0 : 0.1 * pick(-9, 9);
      g.epilogue = {pick(0, 1) == 1, static_cast<Activation>(pick(0, 6))};
      p = g;
    } else {
      ConvProblem c;
      c.dir = static_cast<ConvDir>(pick(0, 2));
      c.ndim = pick(2, 3);
      c.g = pick(1, 4);
      c.c = c.g * pick(1, 9), c.k = c.g * pick(1, 9), c.n = pick(1, 4);
      for (int a = c.ndim == 3 ? 0 : 1; a < 3; ++a) {
        c.filter[a] = pick(1, 4), c.stride[a] = pick(1, 3), c.dilation[a] = pick(1, 2), c.pad[a] = pick(0, 2);
        c.in[a] = pick(c.dilation[a] * (c.filter[a] - 1) + 1, 40);
      }
      c.x = c.w = dts[pick(0, 2)];
      c.y = dts[pick(0, 2)];
      if (c.dir == ConvDir::fwd) c.epilogue = {pick(0, 1) == 1, static_cast<Activation>(pick(0, 6))};
      p = c;
    }
    validate(p);
    std::string s = to_string(p);
    Problem q = parse_problem(s);
    ASSERT_EQ(to_string(q), s);
    ASSERT_TRUE(p == q) << s;
    ++checked;
  }
  EXPECT_EQ(checked, 2000);
}

// The canonical names of the problems in golden/problems_in.txt must equal golden/problem_names.txt.
TEST(Problem, GoldenCanonicalNames) {
  auto in = load_problem_file(std::string(TILEPICK_TEST_GOLDEN_DIR) + "/problems_in.txt");
  std::ifstream golden(std::string(TILEPICK_TEST_GOLDEN_DIR) + "/problem_names.txt");
  ASSERT_TRUE(golden.good());
  std::string line;
  std::size_t i = 0;
  while (std::getline(golden, line)) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_LT(i, in.size());
    EXPECT_EQ((in[i].name.empty() ? "" : in[i].name + ": ") + to_string(in[i].problem), line);
    ++i;
  }
  EXPECT_EQ(i, in.size());
}

TEST(ProblemFile, NamesCommentsAndLineNumbers) {
  auto v = parse_problem_list(
      "# header\n\nresnet50.conv1: fwd g1 mb32 ic3 ih224 iw224 oc64 kh7 kw7 sh2 sw2 ph3 pw3 bf16  # stem\n"
      "   gemm rcr m1 n4096 k4096 bf16\r\n",
      "t.txt");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "resnet50.conv1");
  EXPECT_EQ(v[0].line, 3);
  EXPECT_EQ(v[1].name, "");
  EXPECT_EQ(v[1].line, 4);
  expect_error([] { parse_problem_list("ok: gemm rcr m1 n1 k1 f16\nbad: gemm rcr m1 n1 k1 f17\n", "x.txt"); },
               {"x.txt:2:", "f17"}, Status::parse_error);
  expect_error([] { load_problem_file("/nonexistent/problems.txt"); }, {"/nonexistent/problems.txt"},
               Status::not_found);
}

TEST(ProblemErrors, Grammar) {
  expect_parse_error("", {"empty"});
  expect_parse_error("fwdd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16", {"fwdd", "fwd, bwd_data or bwd_weight"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 foo7", {"foo7", "unknown token"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 bf16", {"missing kw"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3", {"missing the dtype"});
  expect_parse_error("fwd g1 mb1 ic3 ih5x iw5 oc3 kh3 kw3 bf16", {"ih5x", "integer"});
  expect_parse_error("fwd g1 mb1 ic3 ic4 ih5 iw5 oc3 kh3 kw3 bf16", {"ic4", "twice"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf17", {"bf17", "unknown token"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 ep=bias+swish", {"swish", "unknown activation"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 alpha=2", {"alpha", "unknown key"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16:bf16", {"three names"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 ndhwgc", {"ndhwgc", "2-D"});
  expect_parse_error("fwd g1 mb1 ic3 ih99999999999999999999 iw5 oc3 kh3 kw3 bf16", {"64 bits"});
  expect_parse_error("gemm m1 n1 k1 f16", {"missing the layout"});
  expect_parse_error("gemm rcr m1 k1 f16", {"missing n"});
  expect_parse_error("gemm rcr m1 n1 k1 f16 rrr", {"rrr", "twice"});
  expect_parse_error("gemm rcr m1 n1 k1 f16 beta=x", {"beta=x", "number"});
  expect_parse_error("gemm rcr m1 n1 k1 f16 acc=f99", {"f99", "unknown dtype"});
  expect_parse_error("gemm rcx m1 n1 k1 f16", {"rcx", "unknown token"});
  // No silent defaults: non-finite scalars and repeated keys are refused (the last one does not win).
  expect_parse_error("gemm rcr m8 n8 k8 bf16 alpha=nan", {"alpha=nan", "finite"});
  expect_parse_error("gemm rcr m8 n8 k8 bf16 beta=inf", {"beta=inf", "finite"});
  expect_parse_error("gemm rcr m8 n8 k8 bf16 beta=-inf", {"beta=-inf", "finite"});
  expect_parse_error("gemm rcr m8 n8 k8 bf16 ep=bias ep=relu", {"ep=relu", "given twice"});
  expect_parse_error("gemm rcr m8 n8 k8 bf16 alpha=2 alpha=2", {"alpha", "given twice"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 acc=f32 acc=f32", {"acc", "given twice"});
  expect_parse_error("gemm rcr m8 n8 k8 e4m3:e4m3:bf16 scale=row", {"scale=row", "tensor or block"});
  expect_parse_error("gemm rcr m8 n8 k8 e4m3:e4m3:bf16 scale=block scale=block", {"scale=", "given twice"});
  expect_parse_error("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 scale=block", {"scale", "unknown key"});
}

TEST(ProblemErrors, Rules) {
  auto invalid = [](const std::string& s, std::initializer_list<std::string> frag) {
    expect_error([&] { parse_problem(s); }, frag, Status::invalid_problem);
  };
  invalid("fwd g3 mb1 ic8 ih5 iw5 oc3 kh3 kw3 bf16", {"ic8", "divisible", "g3"});
  invalid("fwd g3 mb1 ic9 ih5 iw5 oc4 kh3 kw3 bf16", {"oc4", "divisible"});
  invalid("fwd g1 mb0 ic3 ih5 iw5 oc3 kh3 kw3 bf16", {"mb0", ">= 1"});
  invalid("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 ph-1 bf16", {"ph-1", ">= 0"});
  invalid("gemm rcr m0 n1 k1 f16", {"m0", ">= 1"});
  invalid("gemm rcr m3000000000 n1 k1 f16", {"m3000000000", "limit"});
  invalid("gemm rcr batch2000000000 m2000000000 n2000000000 k1 f16", {"overflows"});
  invalid("fwd g1 mb1 ic3 ih5 iw5 oc3 kh7 kw3 bf16", {"empty output", "h"});
  invalid("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 dh3 bf16", {"empty output"});
  invalid("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 sh1 sw1 ph1 pw1 oh4 bf16", {"oh4", "output size is 5"});
  invalid("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 sh1 sw1 ph1 pw1 oh0 ow0 bf16", {"oh0", "output size is 5"});  // not "not given"
  EXPECT_NO_THROW(parse_problem("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 sh1 sw1 ph1 pw1 oh5 ow5 bf16"));
  auto unsupported = [](const std::string& s, std::initializer_list<std::string> frag) {
    expect_error([&] { parse_problem(s); }, frag, Status::unsupported);
  };
  unsupported("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 nchw", {"nchw", "channels-last"});
  unsupported("bwd_data g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 bf16 ep=relu", {"ep=relu", "only supported for fwd"});
  unsupported("gemm rcr m8 n8 k8 f16:bf16:f16", {"same dtype"});
  unsupported("gemm rcr m8 n8 k8 e4m3:e4m3:e4m3", {"fp8 outputs"});
  unsupported("gemm rrr m8 n8 k8 e4m3:e4m3:bf16", {"rrr", "fp8"});
  unsupported("gemm rcr m8 n8 k8 bf16 acc=f16", {"acc=f16"});
  unsupported("gemm rcr m8 n8 k8 bf16 scale=block", {"scale=block", "fp8"});
  unsupported("fwd g1 mb1 ic3 ih5 iw5 oc3 kh3 kw3 e4m3:e4m3:bf16", {"fp8"});
}
