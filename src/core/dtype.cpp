#include "tilepick/dtype.hpp"

#include <array>
#include <cctype>
#include <cmath>

#include "tilepick/error.hpp"

namespace tilepick {
namespace {

struct DTypeName {
  std::string_view name;
  DType type;
};
// First entry per type is canonical.
constexpr std::array<DTypeName, 12> kDTypeNames{{
    {"f16", DType::f16}, {"bf16", DType::bf16}, {"e4m3", DType::e4m3}, {"e5m2", DType::e5m2},
    {"f32", DType::f32}, {"fp16", DType::f16}, {"fp8e4m3", DType::e4m3}, {"fp8_e4m3", DType::e4m3},
    {"fp8e5m2", DType::e5m2}, {"fp8_e5m2", DType::e5m2}, {"fp32", DType::f32}, {"tf32", DType::f32},
}};

constexpr std::array<std::string_view, 7> kActNames{"none", "relu", "gelu_tanh", "gelu_erf",
                                                    "silu", "sigmoid", "tanh"};

}  // namespace

std::string_view to_string(DType t) {
  for (const auto& e : kDTypeNames)
    if (e.type == t) return e.name;
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& e : kDTypeNames)
    if (e.name == s) return e.type;
  return std::nullopt;
}

std::string dtypes_text(DType a, DType b, DType c) {
  if (a == b && b == c) return std::string(to_string(a));
  return std::string(to_string(a)) + ":" + std::string(to_string(b)) + ":" + std::string(to_string(c));
}

std::vector<std::string_view> split_tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

int size_bytes(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16: return 2;
    case DType::e4m3:
    case DType::e5m2: return 1;
    case DType::f32: return 4;
  }
  return 0;
}

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

std::string_view to_string(Activation a) { return kActNames[static_cast<int>(a)]; }

std::optional<Activation> parse_activation(std::string_view s) {
  for (std::size_t i = 0; i < kActNames.size(); ++i)
    if (kActNames[i] == s) return static_cast<Activation>(i);
  if (s == "gelu") return Activation::gelu_erf;
  return std::nullopt;
}

std::string to_string(const Epilogue& e) {
  if (e.is_none()) return "none";
  if (!e.bias) return std::string(to_string(e.act));
  if (e.act == Activation::none) return "bias";
  return "bias+" + std::string(to_string(e.act));
}

Epilogue parse_epilogue(std::string_view s) {
  Epilogue e;
  if (s == "none") return e;
  std::string_view rest = s;
  if (rest.starts_with("bias")) {
    e.bias = true;
    rest.remove_prefix(4);
    if (rest.empty()) return e;
    if (rest.front() != '+')
      throw ParseError(std::string(s), "epilogue '" + std::string(s) +
                                           "': expected none, bias, <act> or bias+<act>");
    rest.remove_prefix(1);
  }
  auto act = parse_activation(rest);
  if (!act || *act == Activation::none)
    throw ParseError(std::string(s), "epilogue '" + std::string(s) + "': unknown activation '" +
                                         std::string(rest) +
                                         "' (relu, gelu_tanh, gelu_erf, silu, sigmoid, tanh)");
  e.act = *act;
  return e;
}

double apply_activation(Activation a, double x) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x > 0 ? x : 0;
    case Activation::gelu_tanh: {
      constexpr double k = 0.7978845608028654;  // sqrt(2/pi)
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case Activation::gelu_erf: return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476));
    case Activation::silu: return x / (1.0 + std::exp(-x));
    case Activation::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Activation::tanh: return std::tanh(x);
  }
  return x;
}

}  // namespace tilepick
