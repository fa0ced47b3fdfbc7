// Problem strings: tokenizer, parsers and canonical printers (see the grammar in problem.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tilepick/error.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {
namespace {

std::string str(std::string_view s) { return std::string(s); }

// "ih56" -> ("ih", "56"): leading letters, then the rest.
std::pair<std::string_view, std::string_view> split_key(std::string_view tok) {
  std::size_t i = 0;
  while (i < tok.size() && std::isalpha(static_cast<unsigned char>(tok[i]))) ++i;
  return {tok.substr(0, i), tok.substr(i)};
}

std::int64_t parse_int(std::string_view tok, std::string_view key, std::string_view digits) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec == std::errc::result_out_of_range)
    throw ParseError(str(tok), "token '" + str(tok) + "': value does not fit in 64 bits");
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty())
    throw ParseError(str(tok), "token '" + str(tok) + "': '" + str(key) + "' needs an integer value");
  return v;
}

double parse_double(std::string_view tok, std::string_view value) {
  double v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || value.empty())
    throw ParseError(str(tok), "token '" + str(tok) + "': expected a number after '='");
  if (!std::isfinite(v)) throw ParseError(str(tok), "token '" + str(tok) + "': the value must be a finite number");
  return v;
}

DType parse_dtype_token(std::string_view tok, std::string_view value) {
  auto t = parse_dtype(value);
  if (!t)
    throw ParseError(str(tok), "token '" + str(tok) + "': unknown dtype '" + str(value) +
                                   "' (f16, bf16, e4m3, e5m2, f32)");
  return *t;
}

// "bf16" -> {bf16, bf16, bf16}; "e4m3:e4m3:bf16" -> three dtypes. nullopt when not a dtype token.
std::optional<std::array<DType, 3>> parse_dtypes_text(std::string_view tok) {
  if (tok.find(':') == std::string_view::npos) {
    auto t = parse_dtype(tok);
    if (!t) return std::nullopt;
    return std::array<DType, 3>{*t, *t, *t};
  }
  std::array<DType, 3> r{};
  std::string_view rest = tok;
  for (int i = 0; i < 3; ++i) {
    auto colon = rest.find(':');
    std::string_view part = i < 2 ? rest.substr(0, colon) : rest;
    if ((i < 2 && colon == std::string_view::npos) || (i == 2 && rest.find(':') != std::string_view::npos))
      throw ParseError(str(tok), "token '" + str(tok) + "': a dtype list needs exactly three names a:b:c");
    r[i] = parse_dtype_token(tok, part);
    if (i < 2) rest.remove_prefix(colon + 1);
  }
  return r;
}

std::string fmt_double(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

// Handles the key=value tokens shared by both grammars; returns false when `tok` is not one. `seen`
// collects the keys given so far: a key given twice is an error (no silent last-one-wins).
bool parse_common_kv(std::string_view tok, DType& acc, Epilogue& ep, double* alpha, double* beta,
                     std::vector<std::string_view>& seen) {
  auto eq = tok.find('=');
  if (eq == std::string_view::npos) return false;
  std::string_view key = tok.substr(0, eq), value = tok.substr(eq + 1);
  if (std::find(seen.begin(), seen.end(), key) != seen.end())
    throw ParseError(str(tok), "token '" + str(tok) + "': '" + str(key) + "=' given twice");
  seen.push_back(key);
  if (key == "acc") {
    acc = parse_dtype_token(tok, value);
  } else if (key == "ep") {
    ep = parse_epilogue(value);
  } else if (key == "alpha" && alpha) {
    *alpha = parse_double(tok, value);
  } else if (key == "beta" && beta) {
    *beta = parse_double(tok, value);
  } else {
    throw ParseError(str(tok), "token '" + str(tok) + "': unknown key '" + str(key) + "' (" +
                                   (alpha ? "acc=, alpha=, beta=, ep=" : "acc=, ep=") + ")");
  }
  return true;
}

}  // namespace

GemmProblem parse_gemm(std::string_view text) {
  auto toks = split_tokens(text);
  if (toks.empty() || toks[0] != "gemm")
    throw ParseError(toks.empty() ? "" : str(toks[0]), "a GEMM problem starts with 'gemm'");
  GemmProblem p;
  bool have_m = false, have_n = false, have_k = false, have_layout = false, have_dt = false,
       have_batch = false;
  std::vector<std::string_view> keys;
  for (std::size_t i = 1; i < toks.size(); ++i) {
    std::string_view tok = toks[i];
    if (tok.starts_with("scale=")) {
      if (std::find(keys.begin(), keys.end(), "scale") != keys.end())
        throw ParseError(str(tok), "token '" + str(tok) + "': 'scale=' given twice");
      keys.push_back("scale");
      const std::string_view v = tok.substr(6);
      if (v != "tensor" && v != "block")
        throw ParseError(str(tok), "token '" + str(tok) + "': scale= takes tensor or block");
      p.scale = v == "block" ? GemmScale::block : GemmScale::tensor;
      continue;
    }
    if (parse_common_kv(tok, p.acc, p.epilogue, &p.alpha, &p.beta, keys)) continue;
    if (tok.size() == 3 && tok.find_first_not_of("rc") == std::string_view::npos) {
      if (have_layout) throw ParseError(str(tok), "token '" + str(tok) + "': layout given twice");
      auto l = [](char ch) { return ch == 'r' ? MatLayout::row : MatLayout::col; };
      p.layout_a = l(tok[0]), p.layout_b = l(tok[1]), p.layout_c = l(tok[2]);
      have_layout = true;
      continue;
    }
    if (auto dt = parse_dtypes_text(tok)) {
      if (have_dt) throw ParseError(str(tok), "token '" + str(tok) + "': dtype given twice");
      p.a = (*dt)[0], p.b = (*dt)[1], p.c = (*dt)[2];
      have_dt = true;
      continue;
    }
    auto [key, digits] = split_key(tok);
    struct Slot { std::string_view key; std::int64_t* v; bool* seen; };
    const Slot slots[] = {{"m", &p.m, &have_m}, {"n", &p.n, &have_n}, {"k", &p.k, &have_k},
                          {"batch", &p.batch, &have_batch}};
    bool matched = false;
    for (const auto& s : slots) {
      if (key != s.key) continue;
      if (*s.seen) throw ParseError(str(tok), "token '" + str(tok) + "': '" + str(key) + "' given twice");
      *s.v = parse_int(tok, key, digits);
      *s.seen = matched = true;
    }
    if (!matched)
      throw ParseError(str(tok), "unknown token '" + str(tok) +
                                     "' in GEMM problem: expected a layout (rcr, rrr, crr, ccr, ...), m<int>, "
                                     "n<int>, k<int>, batch<int>, a dtype (f16, bf16, e4m3, e5m2, f32 or a:b:c), "
                                     "acc=, alpha=, beta=, ep=, scale=");
  }
  if (!have_layout) throw ParseError("", "GEMM problem '" + str(text) + "': missing the layout (e.g. rcr)");
  if (!have_m || !have_n || !have_k)
    throw ParseError("", "GEMM problem '" + str(text) + "': missing " + (!have_m ? "m" : !have_n ? "n" : "k"));
  if (!have_dt) throw ParseError("", "GEMM problem '" + str(text) + "': missing the dtype (e.g. bf16)");
  validate(p);
  return p;
}

ConvProblem parse_conv(std::string_view text) {
  auto toks = split_tokens(text);
  ConvProblem p;
  if (toks.empty()) throw ParseError("", "empty problem string");
  if (toks[0] == "fwd") p.dir = ConvDir::fwd;
  else if (toks[0] == "bwd_data" || toks[0] == "bwd_d") p.dir = ConvDir::bwd_data;
  else if (toks[0] == "bwd_weight" || toks[0] == "bwd_w") p.dir = ConvDir::bwd_weight;
  else
    throw ParseError(str(toks[0]), "unknown direction '" + str(toks[0]) +
                                       "': a conv problem starts with fwd, bwd_data or bwd_weight");
  std::array<std::int64_t, 3> outs{0, 0, 0};
  struct Slot { std::string_view key; std::int64_t* v; bool depth; bool required; };
  const Slot slots[] = {
      {"g", &p.g, false, false},          {"mb", &p.n, false, false},        {"ic", &p.c, false, true},
      {"oc", &p.k, false, true},          {"id", &p.in[0], true, false},     {"ih", &p.in[1], false, true},
      {"iw", &p.in[2], false, true},      {"kd", &p.filter[0], true, false}, {"kh", &p.filter[1], false, true},
      {"kw", &p.filter[2], false, true},  {"sd", &p.stride[0], true, false}, {"sh", &p.stride[1], false, false},
      {"sw", &p.stride[2], false, false}, {"pd", &p.pad[0], true, false},    {"ph", &p.pad[1], false, false},
      {"pw", &p.pad[2], false, false},    {"dd", &p.dilation[0], true, false}, {"dh", &p.dilation[1], false, false},
      {"dw", &p.dilation[2], false, false}, {"od", &outs[0], true, false},   {"oh", &outs[1], false, false},
      {"ow", &outs[2], false, false},
  };
  constexpr std::size_t kSlots = sizeof(slots) / sizeof(slots[0]);
  bool seen[kSlots] = {};
  bool have_dt = false, depth = false;
  std::optional<std::string> layout;
  std::vector<std::string_view> keys;
  for (std::size_t i = 1; i < toks.size(); ++i) {
    std::string_view tok = toks[i];
    if (parse_common_kv(tok, p.acc, p.epilogue, nullptr, nullptr, keys)) continue;
    if (auto dt = parse_dtypes_text(tok)) {
      if (have_dt) throw ParseError(str(tok), "token '" + str(tok) + "': dtype given twice");
      p.x = (*dt)[0], p.w = (*dt)[1], p.y = (*dt)[2];
      have_dt = true;
      continue;
    }
    auto [key, digits] = split_key(tok);
    if (digits.empty() || !(std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '-')) {
      if (tok == "nhwgc" || tok == "ndhwgc") {
        layout = str(tok);
        continue;
      }
      if (tok == "nchw" || tok == "nhwc" || tok == "ncdhw" || tok == "ndhwc" || tok == "ngchw")
        throw Unsupported("layout '" + str(tok) +
                          "' is not supported: tensors are channels-last grouped (x nhwgc, w gkyxc, y nhwgk)");
    }
    std::size_t s = 0;
    while (s < kSlots && slots[s].key != key) ++s;
    if (s == kSlots)
      throw ParseError(str(tok), "unknown token '" + str(tok) +
                                     "' in conv problem: expected g mb ic ih iw oc kh kw sh sw ph pw dh dw "
                                     "(id kd sd pd dd for 3-D, oh ow od to check), a dtype "
                                     "(f16, bf16, f32 or x:w:y), nhwgc, acc=, ep=");
    if (seen[s]) throw ParseError(str(tok), "token '" + str(tok) + "': '" + str(key) + "' given twice");
    seen[s] = true;
    *slots[s].v = parse_int(tok, key, digits);
    depth = depth || slots[s].depth;
  }
  p.ndim = depth ? 3 : 2;
  for (std::size_t s = 0; s < kSlots; ++s) {
    bool required = slots[s].required || (depth && (slots[s].key == "id" || slots[s].key == "kd"));
    if (required && !seen[s])
      throw ParseError("", "conv problem '" + str(text) + "': missing " + str(slots[s].key));
  }
  if (!have_dt) throw ParseError("", "conv problem '" + str(text) + "': missing the dtype (e.g. bf16)");
  if (layout && (*layout == "ndhwgc") != depth)
    throw ParseError(*layout, "layout '" + *layout + "' does not match a " + std::to_string(p.ndim) + "-D problem");
  validate(p);
  auto o = p.out();
  static const char* axes = "dhw";
  auto given = [&](std::string_view key) {
    for (std::size_t s = 0; s < kSlots; ++s)
      if (slots[s].key == key) return seen[s];
    return false;
  };
  const std::string_view out_keys[3] = {"od", "oh", "ow"};
  for (int a = 0; a < 3; ++a)
    if (given(out_keys[a]) && outs[a] != o[a])
      throw InvalidProblem(std::string("o") + axes[a] + std::to_string(outs[a]) + ": the output size is " +
                           std::to_string(o[a]) + " for these input, filter, stride, padding and dilation");
  return p;
}

Problem parse_problem(std::string_view text) {
  auto toks = split_tokens(text);
  if (toks.empty()) throw ParseError("", "empty problem string");
  if (toks[0] == "gemm") return parse_gemm(text);
  return parse_conv(text);
}

std::string to_string(const GemmProblem& p) {
  std::string s = "gemm " + p.layout_string();
  if (p.batch != 1) s += " batch" + std::to_string(p.batch);
  s += " m" + std::to_string(p.m) + " n" + std::to_string(p.n) + " k" + std::to_string(p.k);
  s += " " + dtypes_text(p.a, p.b, p.c);
  if (p.acc != DType::f32) s += " acc=" + str(to_string(p.acc));
  if (p.alpha != 1.0) s += " alpha=" + fmt_double(p.alpha);
  if (p.beta != 0.0) s += " beta=" + fmt_double(p.beta);
  if (!p.epilogue.is_none()) s += " ep=" + to_string(p.epilogue);
  if (p.scale == GemmScale::block) s += " scale=block";
  return s;
}

std::string to_string(const ConvProblem& p) {
  const bool d3 = p.ndim == 3;
  auto sp = [&](const char* pre, const std::array<std::int64_t, 3>& v) {
    std::string r;
    static const char* axes[3] = {"d", "h", "w"};
    for (int a = d3 ? 0 : 1; a < 3; ++a) r += " " + std::string(pre) + axes[a] + std::to_string(v[a]);
    return r;
  };
  std::string s = str(to_string(p.dir));
  s += " g" + std::to_string(p.g) + " mb" + std::to_string(p.n) + " ic" + std::to_string(p.c);
  s += sp("i", p.in);
  s += " oc" + std::to_string(p.k);
  s += sp("k", p.filter) + sp("s", p.stride) + sp("p", p.pad);
  if (p.dilation != std::array<std::int64_t, 3>{1, 1, 1}) s += sp("d", p.dilation);
  s += " " + dtypes_text(p.x, p.w, p.y);
  if (p.acc != DType::f32) s += " acc=" + str(to_string(p.acc));
  if (!p.epilogue.is_none()) s += " ep=" + to_string(p.epilogue);
  return s;
}

std::string to_string(const Problem& p) {
  return std::visit([](const auto& q) { return to_string(q); }, p);
}

}  // namespace tilepick
