// Host encodings of test tensors: the bytes the GPU reads decode back to the exact values.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "run/tensors.hpp"
#include "run/verify.hpp"
#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

using namespace tilepick;

TEST(Tensors, RandomValuesAreRepresentableAndRoundTrip) {
  std::mt19937_64 rng(3);
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f32}) {
    auto v = run::random_values(t, 5000, rng);
    double mean = 0, var = 0;
    for (double x : v) {
      EXPECT_EQ(ref::round_to_dtype(t, x), x);
      mean += x / v.size();
    }
    for (double x : v) var += (x - mean) * (x - mean) / v.size();
    EXPECT_NEAR(mean, 0.0, 0.06);
    EXPECT_NEAR(var, 1.0, 0.1);
    auto bytes = run::encode(t, v);
    ASSERT_EQ(bytes.size(), v.size() * size_bytes(t));
    EXPECT_EQ(run::decode(t, bytes), v);
  }
}

TEST(Tensors, KnownBitPatterns) {
  auto h = run::encode(DType::f16, {1.0, -2.0});
  EXPECT_EQ(h[0] | (h[1] << 8), 0x3c00);
  EXPECT_EQ(h[2] | (h[3] << 8), 0xc000);
  auto b = run::encode(DType::bf16, {1.0});
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3f80);
  // Poison (0xff bytes) decodes to NaN in every float type: unwritten outputs are detectable.
  // fp8 (fam=sm90 inputs): 1.0 is 0x38 in e4m3 (bias 7), 0x3c in e5m2 (bias 15).
  EXPECT_EQ(run::encode(DType::e4m3, {1.0, -2.0}), (std::vector<unsigned char>{0x38, 0xc0}));
  EXPECT_EQ(run::encode(DType::e5m2, {1.0}), (std::vector<unsigned char>{0x3c}));
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f32}) {
    std::vector<unsigned char> poison(size_bytes(t), 0xff);
    EXPECT_TRUE(std::isnan(run::decode(t, poison)[0])) << to_string(t);
  }
}

TEST(Tensors, ToleranceFollowsDtypes) {
  auto bf = parse_problem("gemm rcr m8 n8 k8 bf16");
  auto h = parse_problem("gemm rcr m8 n8 k8 f16");
  auto f = parse_problem("gemm rcr m8 n8 k8 f32");
  EXPECT_GT(run::tolerance(bf), run::tolerance(h));
  EXPECT_GT(run::tolerance(f), run::tolerance(h));  // tf32 inputs
  // fp8 inputs with f32 outputs: the tensor cores' fp8 accumulation (about 14 bits) sets the bound,
  // above bf16 inputs with f32 outputs and below bf16 outputs.
  auto fp8 = parse_problem("gemm rcr m8 n8 k16 e4m3:e4m3:f32");
  auto bf_f32 = parse_problem("gemm rcr m8 n8 k16 bf16:bf16:f32");
  EXPECT_GT(run::tolerance(fp8), 10 * run::tolerance(bf_f32));
  EXPECT_LT(run::tolerance(fp8), run::tolerance(bf));
  // The result tensor's dtype decides: y (f32) for fwd, dx (f16, the x dtype) for bwd_data.
  auto y = parse_problem("fwd g1 mb1 ic8 ih5 iw5 oc8 kh3 kw3 f16:f16:f32");
  auto dx = parse_problem("bwd_data g1 mb1 ic8 ih5 iw5 oc8 kh3 kw3 f16:f16:f32");
  EXPECT_LT(run::tolerance(y), run::tolerance(dx));
  EXPECT_EQ(run::tolerance(dx), run::tolerance(h));
}
