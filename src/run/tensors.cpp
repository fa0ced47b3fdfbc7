#include "tensors.hpp"

#include <cmath>

#include "../../kernels/ref/params.cuh"
#include "tilepick/error.hpp"
#include "ref/gpu_ref.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::run {

std::vector<double> random_values(DType t, std::size_t count, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v) x = ref::round_to_dtype(t, normal(rng));
  return v;
}

std::vector<double> random_scales(std::size_t count, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v) x = ref::round_to_dtype(DType::f32, std::exp(tp::kScaleLogSigma * normal(rng)));
  return v;
}

// Host bytes of every dtype (fp8 included) through the reference's one encoder (src/ref/gpu_ref_host.cpp).
std::vector<unsigned char> encode(DType t, const std::vector<double>& values) { return ref::gpu::encode(t, values); }

std::vector<double> decode(DType t, const std::vector<unsigned char>& bytes) {
  return ref::gpu::decode(t, bytes.data(), bytes.size() / size_bytes(t));
}

}  // namespace tilepick::run
