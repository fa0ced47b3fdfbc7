// Element types and fused epilogues shared by all problems.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilepick {

enum class DType : std::uint8_t { f16, bf16, e4m3, e5m2, f32 };

// Canonical names: f16 bf16 e4m3 e5m2 f32. Parsing also accepts fp16, fp8e4m3/fp8_e4m3,
// fp8e5m2/fp8_e5m2, fp32 and tf32 (fp32 storage, tf32 tensor-core math).
std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);
// "bf16" when all three are equal, else "a:b:c" (the dtype token of problem strings and keys).
std::string dtypes_text(DType a, DType b, DType c);

// Whitespace-separated tokens of a problem or config string.
std::vector<std::string_view> split_tokens(std::string_view s);
int size_bytes(DType t);
bool is_fp8(DType t);

enum class Activation : std::uint8_t { none, relu, gelu_tanh, gelu_erf, silu, sigmoid, tanh };

std::string_view to_string(Activation a);
std::optional<Activation> parse_activation(std::string_view s);

// Fused epilogue applied to acc = alpha * (A x B) + beta * C:  D = act(acc + bias).
// Bias is one value per output column of the GEMM (per output channel K for conv fwd).
struct Epilogue {
  bool bias = false;
  Activation act = Activation::none;

  bool is_none() const { return !bias && act == Activation::none; }
  bool operator==(const Epilogue&) const = default;
};

// Canonical text: "none", "bias", "relu", "bias+gelu_tanh", ...
std::string to_string(const Epilogue& e);
// Throws ParseError naming `s` when it is not an epilogue.
Epilogue parse_epilogue(std::string_view s);

// Apply an activation in double precision (used by the CPU references and the GPU kernels' spec).
double apply_activation(Activation a, double x);

}  // namespace tilepick
