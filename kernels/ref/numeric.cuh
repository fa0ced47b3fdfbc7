// Element formats as bits, for the GPU reference kernels: exact decoding to double and
// round-to-nearest-even encoding from double, for f16, bf16, e4m3, e5m2 and f32.
//
// Plain integer arithmetic only, so that the same code also compiles on the host (define TP_HD
// before including; src/ref/gpu_ref_host.cpp and tests/test_gpu_ref.cpp do) and can be checked
// there bit for bit against ref::round_to_dtype. Rounding follows src/ref/quantize.cpp: subnormals
// kept, overflow to +-inf for f16/bf16 and saturation to +-max for fp8 (inf saturates too), NaN
// stays NaN.
#pragma once

#ifndef TP_HD
#define TP_HD __device__ __forceinline__
#endif

namespace tp {
namespace refnum {

typedef unsigned long long u64;
typedef unsigned int u32;

// Ids match tilepick::DType (include/tilepick/dtype.hpp).
enum DT { dt_f16 = 0, dt_bf16 = 1, dt_e4m3 = 2, dt_e5m2 = 3, dt_f32 = 4 };

TP_HD int dt_bytes(int dt) { return dt == dt_f32 ? 4 : (dt == dt_e4m3 || dt == dt_e5m2) ? 1 : 2; }

#if defined(__CUDA_ARCH__)
TP_HD double f64_from_bits(u64 b) { return __longlong_as_double((long long)b); }
TP_HD u64 f64_bits(double d) { return (u64)__double_as_longlong(d); }
TP_HD float f32_from_bits(u32 b) { return __uint_as_float(b); }
TP_HD u32 f32_bits(float f) { return __float_as_uint(f); }
#else
TP_HD double f64_from_bits(u64 b) { double d; __builtin_memcpy(&d, &b, 8); return d; }
TP_HD u64 f64_bits(double d) { u64 b; __builtin_memcpy(&b, &d, 8); return b; }
TP_HD float f32_from_bits(u32 b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
TP_HD u32 f32_bits(float f) { u32 b; __builtin_memcpy(&b, &f, 4); return b; }
#endif

// A narrow binary format: sign, exponent field, explicit mantissa.
struct Fmt {
  int bits, man, ebits, bias;
  u32 max_field, max_mant;  // the largest finite value: exponent field and mantissa
  bool ieee;                // all-ones exponent = inf (mantissa 0) or NaN; else (e4m3) only S.1111.111 is NaN
  bool saturate;            // overflow and inf give +-max instead of +-inf
  u32 inf_bits, nan_bits;
};

TP_HD Fmt fmt_of(int dt) {
  switch (dt) {
    case dt_bf16: return Fmt{16, 7, 8, 127, 254, 127, true, false, 0x7f80u, 0x7fc0u};
    case dt_e4m3: return Fmt{8, 3, 4, 7, 15, 6, false, true, 0x7eu, 0x7fu};
    case dt_e5m2: return Fmt{8, 2, 5, 15, 30, 3, true, true, 0x7cu, 0x7eu};
    default: return Fmt{16, 10, 5, 15, 30, 1023, true, false, 0x7c00u, 0x7e00u};  // f16
  }
}

// Round-to-nearest-even of v into a narrow format, as bits.
TP_HD u32 encode_narrow(const Fmt f, double v) {
  const u64 b = f64_bits(v);
  const u32 sign = (u32)(b >> 63) << (f.bits - 1);
  const u32 max_bits = (f.max_field << f.man) | f.max_mant;
  const int e_field = (int)((b >> 52) & 0x7ff);
  const u64 frac = b & ((1ull << 52) - 1);
  if (e_field == 0x7ff) {
    if (frac != 0) return f.nan_bits;
    return sign | (f.saturate ? max_bits : f.inf_bits);
  }
  if (e_field == 0) return sign;  // zero, or a double subnormal: far below every format's half-ulp
  const int e = e_field - 1023;
  const u64 significand = frac | (1ull << 52);  // v = significand * 2^(e - 52)
  const int min_normal = 1 - f.bias;
  int exp = e > min_normal ? e : min_normal;    // the spacing around v is 2^(exp - man)
  const int rshift = 52 - f.man + (exp - e);
  u64 q = 0;  // |v| / 2^(exp - man), rounded half to even
  if (rshift < 64) {
    q = significand >> rshift;
    const u64 rem = significand & ((1ull << rshift) - 1), half = 1ull << (rshift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q >= (1ull << (f.man + 1))) {  // rounded up into the next binade
    q >>= 1;
    ++exp;
  }
  u32 field, mant;
  if (q < (1ull << f.man)) {  // subnormal (exp is min_normal) or zero
    field = 0;
    mant = (u32)q;
  } else {
    field = (u32)(exp + f.bias);
    mant = (u32)(q - (1ull << f.man));
  }
  if (field > f.max_field || (field == f.max_field && mant > f.max_mant))
    return sign | (f.saturate ? max_bits : f.inf_bits);
  return sign | (field << f.man) | mant;
}

// The exact value of narrow-format bits.
TP_HD double decode_narrow(const Fmt f, u32 bits) {
  const u64 sign = (u64)((bits >> (f.bits - 1)) & 1u) << 63;
  const u32 all_ones = (1u << f.ebits) - 1;
  const u32 field = (bits >> f.man) & all_ones;
  u32 mant = bits & ((1u << f.man) - 1);
  if (f.ieee ? field == all_ones : (field == all_ones && mant == (1u << f.man) - 1)) {
    if (f.ieee && mant == 0) return f64_from_bits(sign | 0x7ff0000000000000ull);
    return f64_from_bits(0x7ff8000000000000ull);
  }
  int e = (int)field - f.bias;
  if (field == 0) {
    if (mant == 0) return f64_from_bits(sign);
    e = 1 - f.bias;  // subnormal: normalize
    while (!(mant & (1u << f.man))) {
      mant <<= 1;
      --e;
    }
    mant &= (1u << f.man) - 1;
  }
  return f64_from_bits(sign | ((u64)(e + 1023) << 52) | ((u64)mant << (52 - f.man)));
}

// Bits of v rounded to dtype dt (f32: IEEE round to nearest even).
TP_HD u32 encode(int dt, double v) {
  if (dt == dt_f32) return f32_bits((float)v);
  return encode_narrow(fmt_of(dt), v);
}

TP_HD double decode(int dt, u32 bits) {
  if (dt == dt_f32) return (double)f32_from_bits(bits);
  return decode_narrow(fmt_of(dt), bits);
}

}  // namespace refnum
}  // namespace tp
