// GPU references (src/ref/gpu_ref.hpp): the element encoding and Philox shared with the device
// (checked on the host), the check rule and tolerance, NVRTC compiles of every program kind for
// sm_80 and sm_90a, and, where a driver exists, the kernels against the CPU references.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <cstring>

#include "ref/gpu_ref.hpp"
#include "run/verify.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/ref.hpp"

#define TP_HD inline
#include "../kernels/ref/numeric.cuh"
#include "../kernels/ref/philox.cuh"

namespace fs = std::filesystem;
using namespace tilepick;
namespace gpu = tilepick::ref::gpu;

namespace {

const DType kAllTypes[] = {DType::f16, DType::bf16, DType::e4m3, DType::e5m2, DType::f32};

std::uint32_t bits_of(DType t, double v) { return tp::refnum::encode(static_cast<int>(t), v); }
double value_of(DType t, std::uint32_t bits) { return tp::refnum::decode(static_cast<int>(t), bits); }
bool same(double a, double b) { return std::isnan(a) ? std::isnan(b) : std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Problems covering every reference specialization kind: GEMM layouts, dtypes, beta, epilogues;
// conv directions, 2-D/3-D, groups, stride, pad, dilation, fwd bias + activation.
std::vector<Problem> representative_problems() {
  const char* texts[] = {
      "gemm rcr m64 n64 k64 f16",
      "gemm rrr m65 n33 k17 bf16 alpha=1.5 beta=0.5",
      "gemm crr batch3 m31 n70 k45 f32 ep=bias+relu",
      "gemm ccr m40 n20 k90 f16:f16:f32 beta=1 ep=gelu_tanh",
      "gemm rcc m17 n29 k33 bf16 ep=bias+gelu_erf",
      "gemm crc batch2 m21 n22 k23 f16 ep=silu",
      "gemm rrc m9 n10 k11 f32 ep=bias+sigmoid",
      "gemm rcr m48 n40 k64 bf16:bf16:f16 ep=tanh",
      "gemm rcr m64 n32 k96 e4m3:e4m3:bf16",
      "gemm rcr m64 n32 k96 e4m3:e5m2:f16 ep=bias",
      "gemm rcr m64 n32 k96 e5m2:e5m2:f32 beta=1",
      "gemm rcr m70 n200 k300 e4m3:e4m3:bf16 scale=block",  // K and N past a 128 block
      "gemm rcr batch2 m33 n136 k264 e4m3:e5m2:f32 alpha=0.5 beta=1 ep=bias+relu scale=block",
      "fwd g1 mb2 ic8 ih9 iw9 oc16 kh3 kw3 sh1 sw1 ph1 pw1 f16",
      "fwd g4 mb2 ic16 ih11 iw7 oc8 kh3 kw3 sh2 sw2 ph1 pw1 dh2 dw2 bf16 ep=bias+relu",
      "fwd g2 mb1 ic4 id5 ih6 iw7 oc6 kd3 kh3 kw3 sd1 sh2 sw1 pd1 ph0 pw1 f32 ep=bias+silu",
      "bwd_data g1 mb2 ic8 ih9 iw9 oc16 kh3 kw3 sh2 sw2 ph1 pw1 f16",
      "bwd_data g3 mb1 ic6 id4 ih5 iw6 oc9 kd3 kh3 kw3 sd2 sh1 sw2 pd1 ph1 pw1 bf16",
      "bwd_data g1 mb1 ic5 ih7 iw7 oc3 kh5 kw5 sh1 sw1 ph2 pw2 f32",
      "bwd_weight g1 mb2 ic8 ih9 iw9 oc16 kh3 kw3 sh1 sw1 ph1 pw1 f16",
      "bwd_weight g8 mb2 ic8 ih10 iw10 oc8 kh3 kw3 sh2 sw2 ph1 pw1 bf16",
      "bwd_weight g2 mb1 ic4 id4 ih4 iw4 oc4 kd2 kh2 kw2 sd1 sh1 sw1 pd0 ph0 pw0 dd2 dh2 dw2 f32",
      "bwd_weight g1 mb5 ic3 ih61 iw59 oc5 kh3 kw3 sh2 sw1 ph1 pw0 bf16",  // few outputs, long sum: in runs
  };
  std::vector<Problem> out;
  for (const char* t : texts) out.push_back(parse_problem(t));
  return out;
}

std::vector<KernelSource> all_sources() {
  std::vector<KernelSource> s;
  for (DType t : kAllTypes) {
    s.push_back(gpu::fill_source(t));
    for (auto& k : gpu::compare_sources(t)) s.push_back(k);
  }
  s.push_back(gpu::fill_source(DType::f32, /*scales=*/true));
  for (const auto& p : representative_problems())
    for (auto& k : gpu::reference_sources(p)) s.push_back(std::move(k));
  // One program per name: identical specializations share a program.
  std::sort(s.begin(), s.end(), [](const KernelSource& a, const KernelSource& b) { return a.name < b.name; });
  s.erase(std::unique(s.begin(), s.end(), [](const KernelSource& a, const KernelSource& b) { return a.name == b.name; }),
          s.end());
  return s;
}

// Compiles in a fresh cache directory so that NVRTC really runs.
void compile_everything(const std::string& target) {
  std::string tmpl = (fs::temp_directory_path() / "tilepick_gpuref_XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  setenv("TILEPICK_CACHE_DIR", tmpl.c_str(), 1);
  jit::clear_memory_cache();
  const auto sources = all_sources();
  std::vector<jit::CompiledKernel> compiled;
  ASSERT_NO_THROW(compiled = jit::compile_all(sources, target));
  ASSERT_EQ(compiled.size(), sources.size());
  for (const auto& k : compiled) {
    EXPECT_FALSE(k.cubin.empty()) << k.name;
    EXPECT_FALSE(k.from_cache) << k.name;
    EXPECT_GE(k.registers, 1) << k.name << "\n" << k.log;  // ptxas ran and reported
  }
  unsetenv("TILEPICK_CACHE_DIR");
  jit::clear_memory_cache();
  fs::remove_all(tmpl);
}

}  // namespace

// ---- element encoding (kernels/ref/numeric.cuh on the host) ----

TEST(GpuRefNumeric, DecodeMatchesHostTypesForEvery16BitPattern) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    _Float16 h;
    const auto h16 = static_cast<std::uint16_t>(b);
    std::memcpy(&h, &h16, 2);
    ASSERT_TRUE(same(value_of(DType::f16, b), static_cast<double>(h))) << std::hex << b;
    const double bf = std::bit_cast<float>(b << 16);
    ASSERT_TRUE(same(value_of(DType::bf16, b), bf)) << std::hex << b;
  }
}

TEST(GpuRefNumeric, Fp8DecodeKnownValues) {
  EXPECT_EQ(value_of(DType::e4m3, 0x7e), 448.0);
  EXPECT_EQ(value_of(DType::e4m3, 0x01), 0x1p-9);         // smallest subnormal
  EXPECT_EQ(value_of(DType::e4m3, 0x08), 0x1p-6);         // smallest normal
  EXPECT_EQ(value_of(DType::e4m3, 0x38), 1.0);
  EXPECT_EQ(value_of(DType::e4m3, 0xb8), -1.0);
  EXPECT_TRUE(std::isnan(value_of(DType::e4m3, 0x7f)));
  EXPECT_TRUE(std::isnan(value_of(DType::e4m3, 0xff)));   // the poison byte
  EXPECT_EQ(value_of(DType::e4m3, 0x78), 256.0);          // e4m3 has no inf
  EXPECT_EQ(value_of(DType::e5m2, 0x7b), 57344.0);
  EXPECT_EQ(value_of(DType::e5m2, 0x01), 0x1p-16);
  EXPECT_EQ(value_of(DType::e5m2, 0x3c), 1.0);
  EXPECT_EQ(value_of(DType::e5m2, 0x7c), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(value_of(DType::e5m2, 0xff)));
  // Positive finite values increase strictly with the bits.
  for (DType t : {DType::e4m3, DType::e5m2}) {
    const std::uint32_t last = t == DType::e4m3 ? 0x7e : 0x7b;
    for (std::uint32_t b = 1; b <= last; ++b) ASSERT_LT(value_of(t, b - 1), value_of(t, b)) << std::hex << b;
  }
}

TEST(GpuRefNumeric, EncodeRoundTripsEveryValue) {
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2}) {
    const std::uint32_t n = size_bytes(t) == 1 ? 0x100 : 0x10000;
    for (std::uint32_t b = 0; b < n; ++b) {
      const double v = value_of(t, b);
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(value_of(t, bits_of(t, v))));
        continue;
      }
      if (std::isinf(v) && is_fp8(t)) {  // fp8 conversion saturates: inf -> +-max
        ASSERT_EQ(value_of(t, bits_of(t, v)), std::copysign(57344.0, v));
        continue;
      }
      ASSERT_EQ(bits_of(t, v), b) << to_string(t) << " " << std::hex << b;
      ASSERT_TRUE(same(ref::round_to_dtype(t, v), v));
    }
  }
}

TEST(GpuRefNumeric, EncodeEqualsCpuRounding) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> expo(-30, 20);
  std::vector<double> values{0.0, -0.0, 1e-300, -1e-300, 5e-324, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                             1e300, -1e300, 65504, 65519.99, 65520, 448, 464, 465, 57344, 61440, 61441};
  for (int i = 0; i < 200000; ++i) values.push_back(normal(rng) * std::exp2(expo(rng)));
  // Exact midpoints between neighbours of every format (ties go to even).
  for (DType t : {DType::f16, DType::bf16, DType::e4m3, DType::e5m2}) {
    const std::uint32_t top = size_bytes(t) == 1 ? 0x7f : 0x7fff;
    for (std::uint32_t b = 0; b + 1 < top; b += 7) {
      const double lo = value_of(t, b), hi = value_of(t, b + 1);
      if (std::isfinite(lo) && std::isfinite(hi)) values.push_back((lo + hi) / 2), values.push_back(-(lo + hi) / 2);
    }
  }
  for (DType t : kAllTypes)
    for (double v : values) {
      const double want = ref::round_to_dtype(t, v), got = value_of(t, bits_of(t, v));
      ASSERT_TRUE(same(got, want)) << to_string(t) << " v=" << v << " got " << got << " want " << want;
    }
}

TEST(GpuRefNumeric, HostEncodeDecodeOfTensors) {
  const std::vector<double> v{1.0, -2.5, 0.125, 3.0};
  for (DType t : kAllTypes) {
    auto bytes = gpu::encode(t, v);
    ASSERT_EQ(bytes.size(), v.size() * size_bytes(t));
    EXPECT_EQ(gpu::decode(t, bytes.data(), v.size()), v) << to_string(t);
  }
}

// ---- Philox4x32-10 known-answer vectors (Random123) ----

TEST(GpuRefPhilox, KnownAnswers) {
  using tp::refnum::Philox4;
  auto run = [](Philox4 c, unsigned k0, unsigned k1) { return tp::refnum::philox4x32_10(c, k0, k1); };
  auto expect = [](const Philox4& got, std::array<unsigned, 4> want) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], want[i]) << "word " << i;
  };
  expect(run({{0, 0, 0, 0}}, 0, 0), {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  expect(run({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff),
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  expect(run({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0),
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

// ---- check rule, tolerance, tensors ----

TEST(GpuRefCheck, ResultFromSums) {
  gpu::CompareSums s;
  s.err2 = 4e-6, s.ref2 = 4.0, s.max_abs_err = 0.01, s.max_abs_ref = 2.0, s.count = 100;
  auto r = gpu::check_result(s, 1e-3);
  EXPECT_DOUBLE_EQ(r.rel_l2, 1e-3);
  EXPECT_DOUBLE_EQ(r.max_rel_err, 0.005);
  EXPECT_TRUE(r.ok);  // rel_l2 == tol and max_rel <= 8 tol pass
  EXPECT_FALSE(gpu::check_result(s, 0.99e-3).ok);
  s.max_abs_err = 0.017;  // max_rel 8.5e-3 > 8 tol
  EXPECT_FALSE(gpu::check_result(s, 1e-3).ok);
  s.max_abs_err = 0.01, s.nonfinite = 1;
  r = gpu::check_result(s, 1e-3);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.nonfinite, 1);
  // An all-zero reference: absolute errors.
  gpu::CompareSums z;
  z.err2 = 1e-8, z.max_abs_err = 1e-4, z.count = 10;
  r = gpu::check_result(z, 1e-3);
  EXPECT_DOUBLE_EQ(r.rel_l2, 1e-4);
  EXPECT_DOUBLE_EQ(r.max_rel_err, 1e-4);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(gpu::check_result(gpu::CompareSums{}, 1e-3).ok);
}

TEST(GpuRefCheck, ToleranceAddsTheAccumulationTerm) {
  Problem g = parse_problem("gemm rcr m128 n128 k4096 bf16");
  EXPECT_DOUBLE_EQ(gpu::accumulation_tolerance(g), 2 * 0x1p-24 * 64);
  EXPECT_DOUBLE_EQ(gpu::tolerance(g), run::tolerance(g) + 2 * 0x1p-24 * 64);
  Problem c = parse_problem("bwd_weight g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16");
  EXPECT_DOUBLE_EQ(gpu::accumulation_tolerance(c), 2 * 0x1p-24 * std::sqrt(128.0 * 56 * 56));
  Problem f = parse_problem("fwd g1 mb1 ic64 ih8 iw8 oc64 kh3 kw3 sh1 sw1 ph1 pw1 f16");
  EXPECT_DOUBLE_EQ(gpu::accumulation_tolerance(f), 2 * 0x1p-24 * std::sqrt(64.0 * 9));
  EXPECT_LT(gpu::accumulation_tolerance(f), 1e-5);
}

TEST(GpuRefCheck, InputAndOutputTensors) {
  auto g = parse_problem("gemm rcr batch2 m3 n5 k7 f16:f16:f32 beta=1 ep=bias+relu");
  auto t = gpu::input_tensors(g);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].slot, gpu::Slot::a); EXPECT_EQ(t[0].elems, 42u); EXPECT_EQ(t[0].dtype, DType::f16);
  EXPECT_EQ(t[1].slot, gpu::Slot::b); EXPECT_EQ(t[1].elems, 70u);
  EXPECT_EQ(t[2].slot, gpu::Slot::c); EXPECT_EQ(t[2].elems, 30u); EXPECT_EQ(t[2].dtype, DType::f32);
  EXPECT_EQ(t[3].slot, gpu::Slot::bias); EXPECT_EQ(t[3].elems, 5u); EXPECT_EQ(t[3].dtype, DType::f32);
  EXPECT_EQ(gpu::output_dtype(g), DType::f32);
  EXPECT_EQ(gpu::output_elems(g), 30u);
  EXPECT_EQ(gpu::input_tensors(parse_problem("gemm rcr m3 n5 k7 f16")).size(), 2u);

  auto c = std::get<ConvProblem>(parse_problem("bwd_data g2 mb2 ic4 ih5 iw5 oc6 kh3 kw3 sh1 sw1 ph1 pw1 f16"));
  t = gpu::input_tensors(c);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].elems, static_cast<std::size_t>(c.y_elems()));
  EXPECT_EQ(t[1].elems, static_cast<std::size_t>(c.w_elems()));
  EXPECT_EQ(gpu::output_elems(c), static_cast<std::size_t>(c.x_elems()));
  c.dir = ConvDir::bwd_weight;
  t = gpu::input_tensors(c);
  EXPECT_EQ(t[0].elems, static_cast<std::size_t>(c.x_elems()));
  EXPECT_EQ(t[1].elems, static_cast<std::size_t>(c.y_elems()));
  EXPECT_EQ(gpu::output_elems(c), static_cast<std::size_t>(c.w_elems()));
  auto f = parse_problem("fwd g1 mb1 ic4 ih5 iw5 oc6 kh3 kw3 sh1 sw1 ph1 pw1 f16 ep=bias");
  EXPECT_EQ(gpu::input_tensors(f).back().slot, gpu::Slot::bias);
  EXPECT_EQ(gpu::input_tensors(f).back().elems, 6u);

  std::set<std::uint64_t> seeds;
  for (std::uint64_t s : {1, 2, 3})
    for (int slot = 0; slot < gpu::kSlots; ++slot) seeds.insert(gpu::slot_seed(s, static_cast<gpu::Slot>(slot)));
  EXPECT_EQ(seeds.size(), 18u);
}

// scale=block adds the fp32 block scales SA [batch][ceil(K/128)][M] and SB [batch][ceil(N/128)][ceil(K/128)], last.
TEST(GpuRefCheck, BlockScaledInputTensors) {
  auto g = parse_problem("gemm rcr batch2 m3 n200 k300 e4m3:e4m3:bf16 beta=1 ep=bias scale=block");
  auto t = gpu::input_tensors(g);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].slot, gpu::Slot::a); EXPECT_EQ(t[0].elems, 1800u); EXPECT_EQ(t[0].dtype, DType::e4m3);
  EXPECT_EQ(t[1].slot, gpu::Slot::b); EXPECT_EQ(t[1].elems, 120000u);
  EXPECT_EQ(t[2].slot, gpu::Slot::c);
  EXPECT_EQ(t[3].slot, gpu::Slot::bias);
  EXPECT_EQ(t[4].slot, gpu::Slot::scale_a); EXPECT_EQ(t[4].elems, 2u * 3 * 3); EXPECT_EQ(t[4].dtype, DType::f32);
  EXPECT_EQ(t[5].slot, gpu::Slot::scale_b); EXPECT_EQ(t[5].elems, 2u * 2 * 3); EXPECT_EQ(t[5].dtype, DType::f32);
  EXPECT_TRUE(gpu::is_scale(t[4].slot) && gpu::is_scale(t[5].slot) && !gpu::is_scale(t[0].slot));
  EXPECT_EQ(gpu::input_tensors(parse_problem("gemm rcr m3 n5 k7 e4m3:e4m3:bf16")).size(), 2u);
  // Every slot binds to its own Operands member and reads back from it.
  Operands ops;
  int marks[gpu::kSlots];
  for (int i = 0; i < gpu::kSlots; ++i) gpu::bind(ops, static_cast<gpu::Slot>(i), &marks[i]);
  EXPECT_EQ(ops.scale_a, reinterpret_cast<const float*>(&marks[4]));
  EXPECT_EQ(ops.scale_b, reinterpret_cast<const float*>(&marks[5]));
  for (int i = 0; i < gpu::kSlots; ++i) EXPECT_EQ(gpu::bound(ops, static_cast<gpu::Slot>(i)), &marks[i]) << i;
  EXPECT_STREQ(gpu::slot_name(gpu::Slot::scale_b), "scale_b");
}

// ---- programs ----

TEST(GpuRefPrograms, SpecializationOnlyInTheName) {
  // Sizes and layouts are runtime: these share a program; dtypes and epilogues do not.
  auto name = [](const char* p) { return gpu::reference_source(parse_problem(p)).name; };
  EXPECT_EQ(name("gemm rcr m64 n64 k64 f16"), name("gemm ccc batch4 m7 n9 k1000 f16"));
  EXPECT_NE(name("gemm rcr m64 n64 k64 f16"), name("gemm rcr m64 n64 k64 bf16"));
  EXPECT_NE(name("gemm rcr m64 n64 k64 f16"), name("gemm rcr m64 n64 k64 f16 beta=1"));
  EXPECT_NE(name("gemm rcr m64 n64 k64 f16"), name("gemm rcr m64 n64 k64 f16 ep=relu"));
  EXPECT_EQ(name("fwd g1 mb1 ic4 ih5 iw5 oc6 kh3 kw3 sh1 sw1 ph1 pw1 f16"),
            name("fwd g2 mb3 ic8 id5 ih5 iw5 oc6 kd1 kh3 kw3 sd1 sh2 sw1 pd0 ph1 pw1 f16"));
  EXPECT_NE(name("fwd g1 mb1 ic4 ih5 iw5 oc6 kh3 kw3 sh1 sw1 ph1 pw1 f16"),
            name("bwd_data g1 mb1 ic4 ih5 iw5 oc6 kh3 kw3 sh1 sw1 ph1 pw1 f16"));
  EXPECT_NE(gpu::fill_source(DType::e4m3).name, gpu::fill_source(DType::e5m2).name);
  EXPECT_NE(gpu::fill_source(DType::f32).name, gpu::fill_source(DType::f32, /*scales=*/true).name);
  EXPECT_NE(name("gemm rcr m64 n64 k256 e4m3:e4m3:bf16"), name("gemm rcr m64 n64 k256 e4m3:e4m3:bf16 scale=block"));
  EXPECT_EQ(name("gemm rcr m64 n64 k256 e4m3:e4m3:bf16 scale=block"),
            name("gemm rcr batch3 m7 n300 k100 e4m3:e4m3:bf16 scale=block"));
}

// A bwd_weight with few outputs and a long reduction sums its pixels in runs (a second program adds them); others
// run one program.
TEST(GpuRefPrograms, LongBwdWeightReductionsAreSummedInRuns) {
  const auto runs = gpu::reference_sources(parse_problem("bwd_weight g1 mb5 ic3 ih61 iw59 oc5 kh3 kw3 sh2 sw1 ph1 pw0 bf16"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0].name.find("bwd_weight_runs"), std::string::npos) << runs[0].name;
  EXPECT_NE(runs[1].name.find("bwd_weight_sum"), std::string::npos) << runs[1].name;
  for (const char* p : {"bwd_weight g1 mb1 ic512 ih7 iw7 oc512 kh3 kw3 sh1 sw1 ph1 pw1 bf16",  // 2.4M outputs: one run
                        "fwd g1 mb5 ic3 ih61 iw59 oc5 kh3 kw3 sh2 sw1 ph1 pw0 bf16", "gemm rcr m7 n9 k100000 f16"}) {
    const auto one = gpu::reference_sources(parse_problem(p));
    ASSERT_EQ(one.size(), 1u) << p;
    EXPECT_EQ(one[0].name, gpu::reference_source(parse_problem(p)).name) << p;
  }
}

TEST(GpuRefPrograms, CompileSm80) { compile_everything("sm_80"); }
TEST(GpuRefPrograms, CompileSm90a) { compile_everything("sm_90a"); }

// ---- on a GPU ----

namespace {

bool have_gpu() { return cuda::driver_available(); }

std::vector<double> download_f64(const cuda::DeviceBuffer& b, std::size_t n) {
  std::vector<double> v(n);
  b.download(v.data(), n * sizeof(double));
  return v;
}

}  // namespace

TEST(GpuRefDevice, FillIsDeterministicNormalAndRepresentable) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA driver";
  const std::size_t n = 100003;
  for (DType t : kAllTypes) {
    cuda::DeviceBuffer a(n * size_bytes(t)), b(n * size_bytes(t));
    gpu::fill_random_normal(a.get(), t, n, 42);
    gpu::fill_random_normal(b.get(), t, n, 42);
    cuda::synchronize();
    std::vector<unsigned char> ha(a.size()), hb(b.size());
    a.download(ha.data(), ha.size());
    b.download(hb.data(), hb.size());
    EXPECT_EQ(ha, hb) << to_string(t);
    const auto v = gpu::decode(t, ha.data(), n);
    double sum = 0, sum2 = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_EQ(ref::round_to_dtype(t, x), x);
      sum += x, sum2 += x * x;
    }
    EXPECT_NEAR(sum / n, 0.0, 0.02) << to_string(t);
    EXPECT_NEAR(sum2 / n, 1.0, is_fp8(t) ? 0.1 : 0.03) << to_string(t);
  }
}

TEST(GpuRefDevice, ScaleFillIsDeterministicPositiveLogNormal) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA driver";
  const std::size_t n = 100003;
  cuda::DeviceBuffer a(n * 4), b(n * 4);
  gpu::fill_random_scale(static_cast<float*>(a.get()), n, 42);
  gpu::fill_random_scale(static_cast<float*>(b.get()), n, 42);
  cuda::synchronize();
  std::vector<unsigned char> ha(a.size()), hb(b.size());
  a.download(ha.data(), ha.size());
  b.download(hb.data(), hb.size());
  EXPECT_EQ(ha, hb);
  double sum = 0, sum2 = 0;
  for (double x : gpu::decode(DType::f32, ha.data(), n)) {
    ASSERT_GT(x, 0.0);
    ASSERT_TRUE(std::isfinite(x));
    sum += std::log(x), sum2 += std::log(x) * std::log(x);
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);   // log of a scale ~ N(0, 1/4)
  EXPECT_NEAR(sum2 / n, 0.25, 0.01);
}

TEST(GpuRefDevice, ReferencesMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA driver";
  const std::string target = cuda::target_for_current_device();
  for (const auto& p : representative_problems()) {
    SCOPED_TRACE(to_string(p));
    std::vector<cuda::DeviceBuffer> bufs;
    std::vector<std::vector<double>> host(gpu::kSlots);
    Operands ops;
    for (const auto& t : gpu::input_tensors(p)) {
      bufs.emplace_back(t.elems * size_bytes(t.dtype));
      gpu::fill_input(bufs.back().get(), t, 3);
      std::vector<unsigned char> bytes(bufs.back().size());
      cuda::synchronize();
      bufs.back().download(bytes.data(), bytes.size());
      host[static_cast<int>(t.slot)] = gpu::decode(t.dtype, bytes.data(), t.elems);
      gpu::bind(ops, t.slot, bufs.back().get());
    }
    const std::size_t n = gpu::output_elems(p);
    cuda::DeviceBuffer out(n * sizeof(double));
    gpu::GpuReference(p, target).compute(ops, out.get());
    cuda::synchronize();
    const auto got = download_f64(out, n);
    std::vector<double> want(n);
    auto at = [&](gpu::Slot s) {
      const auto& v = host[static_cast<int>(s)];
      return v.empty() ? nullptr : v.data();
    };
    const double* bias = at(gpu::Slot::bias);
    if (auto* g = std::get_if<GemmProblem>(&p)) {
      ref::gemm(*g, host[0].data(), host[1].data(), at(gpu::Slot::c), bias, want.data(), at(gpu::Slot::scale_a),
                at(gpu::Slot::scale_b));
    } else {
      const auto& c = std::get<ConvProblem>(p);
      if (c.dir == ConvDir::fwd) ref::conv_fwd(c, host[0].data(), host[1].data(), bias, want.data());
      else if (c.dir == ConvDir::bwd_data) ref::conv_bwd_data(c, host[0].data(), host[1].data(), want.data());
      else ref::conv_bwd_weight(c, host[0].data(), host[1].data(), want.data());
    }
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < n; ++i) max_diff = std::max(max_diff, std::abs(got[i] - want[i])), max_ref = std::max(max_ref, std::abs(want[i]));
    EXPECT_LE(max_diff, 1e-12 * max_ref);

    // The compare kernel on the reference rounded to the output dtype, one element poisoned.
    const DType ot = gpu::output_dtype(p);
    auto bytes = gpu::encode(ot, want);
    std::fill(bytes.begin(), bytes.begin() + size_bytes(ot), 0xff);
    cuda::DeviceBuffer o(bytes.size());
    o.upload(bytes.data(), bytes.size());
    const auto s = gpu::compare(ot, n, o.get(), out.get());
    const auto rounded = gpu::decode(ot, bytes.data(), n);
    double err2 = 0, ref2 = 0;
    for (std::size_t i = 1; i < n; ++i) err2 += (rounded[i] - got[i]) * (rounded[i] - got[i]), ref2 += got[i] * got[i];
    EXPECT_EQ(s.nonfinite, 1);
    EXPECT_EQ(s.count, static_cast<std::int64_t>(n));
    EXPECT_NEAR(s.err2, err2, 1e-12 * err2 + 1e-300);
    EXPECT_NEAR(s.ref2, ref2, 1e-12 * ref2);
  }
}
