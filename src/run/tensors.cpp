#include "tensors.hpp"

#include <bit>
#include <cstring>

#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::run {

std::vector<double> random_values(DType t, std::size_t count, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v) x = ref::round_to_dtype(t, normal(rng));
  return v;
}

std::vector<unsigned char> encode(DType t, const std::vector<double>& values) {
  const int bytes = size_bytes(t);
  std::vector<unsigned char> out(values.size() * bytes);
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned char* dst = out.data() + i * bytes;
    switch (t) {
      case DType::f32: {
        float f = static_cast<float>(values[i]);
        std::memcpy(dst, &f, 4);
        break;
      }
      case DType::f16: {
        _Float16 h = static_cast<_Float16>(values[i]);
        std::memcpy(dst, &h, 2);
        break;
      }
      case DType::bf16: {
        auto bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(values[i])) >> 16);
        std::memcpy(dst, &bits, 2);
        break;
      }
      default: throw Unsupported("encode: no host encoding for " + std::string(to_string(t)));
    }
  }
  return out;
}

std::vector<double> decode(DType t, const std::vector<unsigned char>& bytes) {
  const int size = size_bytes(t);
  std::vector<double> out(bytes.size() / size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const unsigned char* src = bytes.data() + i * size;
    switch (t) {
      case DType::f32: {
        float f;
        std::memcpy(&f, src, 4);
        out[i] = f;
        break;
      }
      case DType::f16: {
        _Float16 h;
        std::memcpy(&h, src, 2);
        out[i] = static_cast<double>(h);
        break;
      }
      case DType::bf16: {
        std::uint16_t b;
        std::memcpy(&b, src, 2);
        out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
        break;
      }
      default: throw Unsupported("decode: no host decoding for " + std::string(to_string(t)));
    }
  }
  return out;
}

}  // namespace tilepick::run
