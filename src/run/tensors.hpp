// Host-side test tensors: random values exactly representable in a dtype, and their device bytes.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "tilepick/dtype.hpp"

namespace tilepick::run {

// `count` values drawn from N(0, 1) and rounded to `t` (so the CPU reference sees exactly what the
// GPU reads).
std::vector<double> random_values(DType t, std::size_t count, std::mt19937_64& rng);
// `count` fp8 block scales exp(z / 2), z ~ N(0, 1), rounded to f32: positive, never 0 (the distribution
// of ref::gpu::fill_random_scale).
std::vector<double> random_scales(std::size_t count, std::mt19937_64& rng);
// Element bytes of `t` for each value (values must be representable; f32 stores as float).
std::vector<unsigned char> encode(DType t, const std::vector<double>& values);
std::vector<double> decode(DType t, const std::vector<unsigned char>& bytes);

}  // namespace tilepick::run
