// Problems: what the user asks to compute. Each has one canonical string that round-trips.
//
// GEMM:  gemm rcr [batch8] m4096 n4096 k4096 bf16 [acc=f32] [alpha=1.5] [beta=1] [ep=bias+relu] [scale=block]
//   layouts: three letters for A, B, C/D, r = row-major, c = column-major (rcr, rrr, crr, ccr)
//   dtypes:  one name for A, B and C/D, or a:b:c (e.g. e4m3:e4m3:bf16); accumulator defaults to f32
//   D = act(alpha * op(A) x op(B) + beta * C + bias), A is M x K, B is K x N, C/D are M x N.
//   scale=block (fp8 A and B, DeepSeek-V3 style): A's 1 x 128 and B's 128 x 128 blocks carry fp32 scales,
//   D = act(alpha * sum_kb (SA[kb][m] SB[n / 128][kb] sum_{k in kb} A[m][k] B[k][n]) + beta * C + bias),
//   kb = k / 128; SA is [batch][ceil(K/128)][M] (M contiguous), SB [batch][ceil(N/128)][ceil(K/128)].
// Conv:  fwd g32 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16
//   direction fwd | bwd_data | bwd_weight; ic/oc count channels across all groups (C, K);
//   3-D adds id kd sd pd (dd); dilation dh/dw (dd) is 1 for dense and printed only when != 1;
//   oh/ow/od may be given and are checked against the derived output size;
//   layouts are channels-last grouped: x NHWGC, w GKYXC, y NHWGK (3-D: NDHWGC, GKZYXC, NDHWGK);
//   dtypes: one name for x, w, y or x:w:y; ep= (bias/activation) only for fwd.
// Problem files: one problem per line, '#' starts a comment, an optional leading `name:` tags it.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tilepick/dtype.hpp"

namespace tilepick {

enum class MatLayout : std::uint8_t { row, col };

// How fp8 GEMM inputs are scaled: tensor = one scale each, folded into alpha; block = fp32 scales per
// 1 x 128 block of A and 128 x 128 block of B (Operands::scale_a / scale_b; the grammar above).
enum class GemmScale : std::uint8_t { tensor, block };
inline constexpr std::int64_t kScaleBlock = 128;

// Largest value accepted for any single size; kernels index one dimension with 32-bit ints.
inline constexpr std::int64_t kMaxDim = 2147483647;

struct GemmProblem {
  std::int64_t m = 1, n = 1, k = 1, batch = 1;
  MatLayout layout_a = MatLayout::row, layout_b = MatLayout::col, layout_c = MatLayout::row;
  DType a = DType::f16, b = DType::f16, c = DType::f16, acc = DType::f32;
  double alpha = 1.0, beta = 0.0;
  Epilogue epilogue;
  GemmScale scale = GemmScale::tensor;

  std::string layout_string() const;  // "rcr"
  double flops() const;               // 2 M N K batch
  double min_bytes() const;           // each operand read once, D written once (C read if beta != 0)
  std::int64_t k_blocks() const { return (k + kScaleBlock - 1) / kScaleBlock; }  // 128-blocks of K (and of N)
  std::int64_t n_blocks() const { return (n + kScaleBlock - 1) / kScaleBlock; }
  std::int64_t scale_a_elems() const { return scale == GemmScale::block ? k_blocks() * m * batch : 0; }
  std::int64_t scale_b_elems() const { return scale == GemmScale::block ? n_blocks() * k_blocks() * batch : 0; }
  bool operator==(const GemmProblem&) const = default;
};

enum class ConvDir : std::uint8_t { fwd, bwd_data, bwd_weight };
std::string_view to_string(ConvDir d);

// The implicit-GEMM view of one group: batch = G independent (M x K) x (K x N) products.
//   fwd:        M = N*Do*Ho*Wo   N = K/G            K = C/G*Z*Y*X
//   bwd_data:   M = N*Di*Hi*Wi   N = C/G            K = K/G*Z*Y*X
//   bwd_weight: M = K/G          N = C/G*Z*Y*X      K = N*Do*Ho*Wo
struct GemmView {
  std::int64_t m, n, k, batch;
};

struct ConvProblem {
  ConvDir dir = ConvDir::fwd;
  int ndim = 2;                     // 2 or 3 spatial dimensions
  std::int64_t n = 1, g = 1, c = 1, k = 1;  // batch, groups, channels in / out (all groups)
  // Spatial arrays are ordered (d, h, w); for 2-D problems index 0 is 1 (pad 0).
  std::array<std::int64_t, 3> in{1, 1, 1};
  std::array<std::int64_t, 3> filter{1, 1, 1};
  std::array<std::int64_t, 3> stride{1, 1, 1};
  std::array<std::int64_t, 3> pad{0, 0, 0};
  std::array<std::int64_t, 3> dilation{1, 1, 1};
  DType x = DType::f16, w = DType::f16, y = DType::f16, acc = DType::f32;
  Epilogue epilogue;  // fwd only

  std::array<std::int64_t, 3> out() const;  // derived output spatial sizes
  std::int64_t c_per_group() const { return c / g; }
  std::int64_t k_per_group() const { return k / g; }
  bool depthwise() const { return g > 1 && c == g && k == g; }
  GemmView gemm() const;
  // The plain GEMM this convolution is when it is one (1x1 filter, stride 1, no padding, one group):
  // fwd y = x w^T (rcr: x NHWC as M x C, w as K x C), bwd_data dx = dy w (rrr), bwd_weight
  // dw = dy^T x (crr, A = dy); operand order as Operands documents (bwd_weight swaps x and dy).
  std::optional<GemmProblem> pointwise_gemm() const;
  double flops() const;      // useful multiply-adds x 2 (same for all directions)
  double min_bytes() const;  // x, w, y each touched once
  // Element counts of the three tensors.
  std::int64_t x_elems() const;
  std::int64_t w_elems() const;
  std::int64_t y_elems() const;
  bool operator==(const ConvProblem&) const = default;
};

// bwd_data's stride phases along one spatial axis (0 d, 1 h, 2 w): the dx coordinates phase, phase + stride, ...
// (q of them) meet only the filter taps tap0 + j x step (j < ntap), tap j reading dy at coordinate
// i + doff0 - j x doffstep for dx coordinate phase + stride x i. Each phase is a dense stride-1 problem without the
// structural zeros (the fam=sm80 and fam=sm90 bwd_data plans); a phase no tap reaches has ntap 0 (its dx is zeros).
// Phases with no dx coordinate (stride > size) are left out; stride 1 is the single phase of every tap.
struct ConvStridePhase {
  int phase, q;
  int tap0, step, ntap;
  int doff0, doffstep;
};
std::vector<ConvStridePhase> conv_stride_phases(const ConvProblem& p, int axis);

using Problem = std::variant<GemmProblem, ConvProblem>;

// Op names used by functional keys and config spaces: gemm, conv_fwd, conv_bwd_data, conv_bwd_weight.
std::string op_name(const Problem& p);

// Parsing throws ParseError (names the token and the grammar rule) or InvalidProblem (names the
// violated rule); the result is always validated.
Problem parse_problem(std::string_view text);
GemmProblem parse_gemm(std::string_view text);
ConvProblem parse_conv(std::string_view text);

std::string to_string(const GemmProblem& p);
std::string to_string(const ConvProblem& p);
std::string to_string(const Problem& p);

// Throws InvalidProblem / Unsupported naming the rule. Called by the parsers; call it after
// building a problem by hand.
void validate(const GemmProblem& p);
void validate(const ConvProblem& p);
void validate(const Problem& p);

// All fields plus derived sizes (out, gemm view, flops), for scripts that must not re-parse strings.
std::string to_json_text(const Problem& p);

struct NamedProblem {
  std::string name;  // may be empty
  Problem problem;
  int line = 0;      // 1-based line in the source file (0 when not from a file)
};

// Parses problem-file text; errors carry "<source>:<line>: ...".
std::vector<NamedProblem> parse_problem_list(std::string_view text, const std::string& source = "<input>");
std::vector<NamedProblem> load_problem_file(const std::string& path);

}  // namespace tilepick
