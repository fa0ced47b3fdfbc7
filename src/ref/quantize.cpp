// Rounding doubles to the values of narrow floating-point formats (round to nearest, ties to even).
//
// A binary format is described by its explicit mantissa bits, the exponent of its smallest normal
// number and its largest finite value. Below the smallest normal the spacing stays fixed
// (subnormals), so one rule covers both ranges:
//   quantum = 2^(max(exponent(v), min_normal_exp) - mantissa_bits),  r = rint(v / quantum) * quantum
// where rint rounds half to even. Scaling by a power of two is exact, so r is correctly rounded.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tilepick/ref.hpp"

namespace tilepick::ref {
namespace {

struct Format {
  int mantissa_bits;   // explicit fraction bits
  int min_normal_exp;  // exponent of the smallest normal value (2^min_normal_exp)
  double max_finite;
  bool saturate;       // overflow -> +-max_finite (OCP fp8 "satfinite") instead of +-inf
};

// {mantissa bits, smallest normal exponent, largest finite value, saturate}
constexpr Format kF16{10, -14, (2.0 - 0x1p-10) * 0x1p15, false};   // 65504
constexpr Format kBF16{7, -126, (2.0 - 0x1p-7) * 0x1p127, false};  // f32 range, 8-bit significand
constexpr Format kTF32{10, -126, (2.0 - 0x1p-10) * 0x1p127, false};
constexpr Format kE4M3{3, -6, (2.0 - 0x1p-2) * 0x1p8, true};      // 448; E4M3FN: no inf, S.1111.111 is NaN
constexpr Format kE5M2{2, -14, (2.0 - 0x1p-2) * 0x1p15, true};    // 57344; IEEE-like, saturating conversion

// Round to the nearest integer, ties to even (independent of the floating-point rounding mode).
double round_half_even(double q) {  // q >= 0
  const double lo = std::floor(q), frac = q - lo;  // exact: q < 2^53
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) != 0.0)) return lo + 1.0;
  return lo;
}

double round_to(const Format& f, double v) {
  if (std::isnan(v)) return v;  // NaN stays NaN (every format here has one)
  const double inf = std::numeric_limits<double>::infinity();
  if (std::isinf(v)) return f.saturate ? std::copysign(f.max_finite, v) : v;
  if (v == 0.0) return v;  // keeps the sign of zero

  // Work on |v| and put the sign back at the end (so tiny negatives round to -0).
  const double a = std::fabs(v);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with 0.5 <= m < 1, so the binary exponent of a is e - 1
  const int exp = std::max(e - 1, f.min_normal_exp);
  const int shift = exp - f.mantissa_bits;  // the spacing of representable values around a is 2^shift
  double r = std::ldexp(round_half_even(std::ldexp(a, -shift)), shift);

  // Rounding up past the largest finite value lands on the next power of two.
  if (r > f.max_finite) r = f.saturate ? f.max_finite : inf;
  return std::copysign(r, v);
}

}  // namespace

double round_to_dtype(DType t, double v) {
  switch (t) {
    case DType::f16: return round_to(kF16, v);
    case DType::bf16: return round_to(kBF16, v);
    case DType::e4m3: return round_to(kE4M3, v);
    case DType::e5m2: return round_to(kE5M2, v);
    case DType::f32: return static_cast<double>(static_cast<float>(v));
  }
  return v;
}

double round_to_tf32(double v) { return round_to(kTF32, v); }

}  // namespace tilepick::ref
