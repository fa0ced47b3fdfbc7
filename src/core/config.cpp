// The kernel-config field table and everything it drives: parse, print, hash, JSON, variables.
#include "tilepick/config.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/hash.hpp"
#include "tilepick/dtype.hpp"
#include "tilepick/error.hpp"

namespace tilepick {
namespace {

using KC = KernelConfig;
constexpr unsigned kSm80 = 1u << 0, kSm90 = 1u << 1, kDw = 1u << 2, kGrp = 1u << 3, kIgemm = kSm80 | kSm90,
                   kDirect = kDw | kGrp, kAll = kIgemm | kDirect;

constexpr std::string_view kFamilyNames[] = {"sm80", "sm90", "dw", "grp"};
static_assert(std::size(kFamilyNames) == std::size(kFamilies), "one name for each family of kFamilies");
constexpr std::string_view kSplitKModes[] = {"serial", "parallel"};
constexpr std::string_view kRasters[] = {"row", "col"};
constexpr std::string_view kEpis[] = {"direct", "smem"};

constexpr int KC::*kNone = nullptr;

const FieldDesc kFields[] = {
    {"fam", "kernel family: sm80 (mma.sync implicit GEMM), sm90 (wgmma), dw (depthwise direct), grp (grouped direct on "
     "tensor cores, 8-64 channels per group)",
     FieldKind::enumeration, 1, {&KC::family, kNone, kNone}, {"fam"}, kFamilyNames, 0, 3, false, kAll},
    {"tile", "block tile M x N x K of the GEMM view", FieldKind::integer, 3,
     {&KC::tile_m, &KC::tile_n, &KC::tile_k}, {"tile_m", "tile_n", "tile_k"}, {}, 16, 256, true, kIgemm, 32},
    {"warps", "warp layout M x N (warp tile = tile / warps); sm90: consumer warpgroups, M (sharing each tile) x N (tiles in turn: 2 = ping-pong)", FieldKind::integer, 2,
     {&KC::warps_m, &KC::warps_n, kNone}, {"warps_m", "warps_n"}, {}, 1, 8, true, kIgemm},
    {"stages", "shared-memory pipeline stages; grp: staged input boxes (2 = the next work item's box loads during "
     "this one's MMAs)", FieldKind::integer, 1, {&KC::stages, kNone, kNone}, {"stages"}, {}, 1, 16, false,
     kIgemm | kGrp},
    {"splitk", "slices of the reduction dimension", FieldKind::integer, 1, {&KC::splitk, kNone, kNone},
     {"splitk"}, {}, 1, 64, false, kAll},
    {"skmode", "split-K reduction: serial (in-kernel, ordered) or parallel (workspace + reduce kernel)",
     FieldKind::enumeration, 1, {&KC::splitk_mode, kNone, kNone}, {"skmode"}, kSplitKModes, 0, 1, false, kIgemm},
    {"raster", "block rasterization order: row (M-major) or col (N-major)", FieldKind::enumeration, 1,
     {&KC::raster, kNone, kNone}, {"raster"}, kRasters, 0, 1, false, kIgemm},
    {"swz", "blocks per rasterization band (L2 reuse), 1 = plain order", FieldKind::integer, 1,
     {&KC::swizzle, kNone, kNone}, {"swz"}, {}, 1, 16, true, kIgemm},
    {"cluster", "thread-block cluster M x N (sm90)", FieldKind::integer, 2, {&KC::cluster_m, &KC::cluster_n, kNone},
     {"cluster_m", "cluster_n"}, {}, 1, 8, true, kSm90},
    {"align", "vector width in elements of A x B x C accesses; auto = widest the problem allows",
     FieldKind::integer, 3, {&KC::align_a, &KC::align_b, &KC::align_c}, {"align_a", "align_b", "align_c"}, {}, 0,
     16, true, kIgemm},
    {"epi", "epilogue: direct (registers to global) or smem (staged for coalesced stores)",
     FieldKind::enumeration, 1, {&KC::epi, kNone, kNone}, {"epi"}, kEpis, 0, 1, false, kIgemm},
    {"dwtile", "direct block tile (dw, grp): output rows x output cols x channels", FieldKind::integer, 3,
     {&KC::dw_tile_h, &KC::dw_tile_w, &KC::dw_tile_c}, {"dw_tile_h", "dw_tile_w", "dw_tile_c"}, {}, 1, 256, true,
     kDirect},
    {"ppt", "dw: output pixels per thread along W; grp: outputs per thread are ppt x cpt", FieldKind::integer, 1,
     {&KC::dw_ppt, kNone, kNone}, {"dw_ppt"}, {}, 1, 16, true, kDirect},
    {"cpt", "dw: channels per thread (vector width); grp: see ppt", FieldKind::integer, 1, {&KC::dw_cpt, kNone, kNone},
     {"dw_cpt"}, {}, 1, 16, true, kDirect},
};

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

bool in_domain(const FieldDesc& f, int v) {
  if (v < f.min || v > f.max) return false;
  return !f.pow2 || is_pow2(v) || (v == 0 && f.min == 0) || (f.or_multiple_of > 0 && v % f.or_multiple_of == 0);
}

namespace {

std::string component_text(const FieldDesc& f, int v) {
  bool named = f.kind == FieldKind::enumeration && v >= 0 && v < static_cast<int>(f.enum_names.size());
  return named ? std::string(f.enum_names[v]) : std::to_string(v);
}

std::string field_value_text(const FieldDesc& f, const KernelConfig& c) {
  if (f.name == "align" && c.align_a == 0) return "auto";
  std::string s;
  for (int i = 0; i < f.arity; ++i) s += (i ? "x" : "") + component_text(f, c.*f.slots[i]);
  return s;
}

std::string domain_text(const FieldDesc& f) {
  if (f.kind == FieldKind::enumeration) {
    std::string s;
    for (auto n : f.enum_names) s += (s.empty() ? "" : "|") + std::string(n);
    return s;
  }
  std::string s = "integers in [" + std::to_string(f.min) + ", " + std::to_string(f.max) + "]";
  if (f.pow2) s += ", powers of two";
  if (f.pow2 && f.or_multiple_of > 0) s += " or multiples of " + std::to_string(f.or_multiple_of);
  if (f.arity > 1) s = std::to_string(f.arity) + " " + s + " written AxB" + (f.arity == 3 ? "xC" : "");
  return s;
}

// Sets one component from text; throws ParseError naming token/field on a bad value.
void set_component(KernelConfig& c, const FieldDesc& f, int i, std::string_view v, std::string_view token) {
  int value = -1;
  if (f.kind == FieldKind::enumeration) {
    for (std::size_t e = 0; e < f.enum_names.size(); ++e)
      if (f.enum_names[e] == v) value = static_cast<int>(e);
  } else {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (ec != std::errc() || p != v.data() + v.size()) value = -1;
  }
  if (!in_domain(f, value))
    throw ParseError(std::string(token), "config token '" + std::string(token) + "': '" + std::string(v) +
                                             "' is not a valid " + std::string(f.name) + " (" + domain_text(f) + ")");
  c.*f.slots[i] = value;
}

void set_field_text(KernelConfig& c, const FieldDesc& f, std::string_view v, std::string_view token) {
  if (f.name == "align" && v == "auto") {
    c.align_a = c.align_b = c.align_c = 0;
    return;
  }
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (true) {
    auto x = v.find('x', pos);
    parts.push_back(v.substr(pos, x == std::string_view::npos ? std::string_view::npos : x - pos));
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  if (static_cast<int>(parts.size()) != f.arity)
    throw ParseError(std::string(token), "config token '" + std::string(token) + "': " + std::string(f.name) +
                                             " needs " + std::to_string(f.arity) + " value(s) (" + domain_text(f) + ")");
  for (int i = 0; i < f.arity; ++i) set_component(c, f, i, parts[i], token);
}

}  // namespace

std::array<int, 3> parse_field_value(const FieldDesc& f, int component, std::string_view text) {
  KernelConfig c;
  std::string token = std::string(component < 0 ? f.name : f.vars[component]) + "=" + std::string(text);
  if (component < 0) {
    set_field_text(c, f, text, token);
    return {c.*f.slots[0], f.arity > 1 ? c.*f.slots[1] : 0, f.arity > 2 ? c.*f.slots[2] : 0};
  }
  set_component(c, f, component, text, token);
  return {c.*f.slots[component], 0, 0};
}

bool is_enum_value(std::string_view name) {
  for (const auto& f : kFields)
    for (auto n : f.enum_names)
      if (n == name) return true;
  return false;
}

std::span<const FieldDesc> config_fields() { return kFields; }

const FieldDesc* find_field(std::string_view name) {
  for (const auto& f : kFields)
    if (f.name == name) return &f;
  return nullptr;
}

std::string_view to_string(Family f) { return kFamilyNames[static_cast<int>(f)]; }

bool applies(const FieldDesc& f, Family fam) { return (f.families >> static_cast<int>(fam)) & 1u; }

std::optional<std::string> config_error(const KernelConfig& c) {
  static const KernelConfig defaults{};
  if (c.family < 0 || c.family >= static_cast<int>(std::size(kFamilies))) return "config: family index " + std::to_string(c.family) + " out of range";
  for (const auto& f : kFields) {
    for (int i = 0; i < f.arity; ++i) {
      int v = c.*f.slots[i];
      if (!in_domain(f, v))
        return "config field " + std::string(f.vars[i]) + "=" + std::to_string(v) + " is outside its domain (" +
               domain_text(f) + ")";
      if (!applies(f, c.fam()) && v != defaults.*f.slots[i])
        return "config field '" + std::string(f.name) + "' does not apply to family " + std::string(to_string(c.fam()));
    }
  }
  bool any_auto = !c.align_a || !c.align_b || !c.align_c, all_auto = !c.align_a && !c.align_b && !c.align_c;
  if (any_auto && !all_auto) return "config field 'align': auto applies to all three or none";
  if (c.splitk == 1 && c.splitk_mode != 0) return "config: skmode=parallel needs splitk > 1 (splitk=1 is always serial)";
  return std::nullopt;
}

void validate(const KernelConfig& c) {
  if (auto err = config_error(c)) {
    // Name the offending field's token (the message starts with it or quotes it).
    std::string token;
    for (const auto& f : kFields)
      if (err->find("'" + std::string(f.name) + "'") != std::string::npos ||
          err->find(" " + std::string(f.vars[0]) + "=") != std::string::npos ||
          err->find(std::string(f.name) + "=") != std::string::npos) {
        token = std::string(f.name) + "=" + field_value_text(f, c);
        break;
      }
    throw ParseError(token, *err);
  }
}

KernelConfig parse_config(std::string_view text) {
  KernelConfig c;
  const std::vector<std::string_view> tokens = split_tokens(text);
  if (tokens.empty()) throw ParseError("", "empty config string");
  std::vector<const FieldDesc*> seen;
  const FieldDesc* fam = find_field("fam");
  // The family is read first so that applicability can be checked per token.
  for (auto tok : tokens)
    if (tok.starts_with("fam=")) set_field_text(c, *fam, tok.substr(4), tok);
  for (auto tok : tokens) {
    auto eq = tok.find('=');
    if (eq == std::string_view::npos)
      throw ParseError(std::string(tok), "config token '" + std::string(tok) + "': expected name=value");
    const FieldDesc* f = find_field(tok.substr(0, eq));
    if (!f) {
      std::string names;
      for (const auto& d : kFields) names += (names.empty() ? "" : ", ") + std::string(d.name);
      throw ParseError(std::string(tok), "config token '" + std::string(tok) + "': unknown field '" +
                                             std::string(tok.substr(0, eq)) + "' (fields: " + names + ")");
    }
    for (auto* s : seen)
      if (s == f) throw ParseError(std::string(tok), "config token '" + std::string(tok) + "': field given twice");
    seen.push_back(f);
    if (!applies(*f, c.fam()))
      throw ParseError(std::string(tok), "config token '" + std::string(tok) + "': field '" + std::string(f->name) +
                                             "' does not apply to family " + std::string(to_string(c.fam())));
    set_field_text(c, *f, tok.substr(eq + 1), tok);
  }
  validate(c);
  return c;
}

std::string to_string(const KernelConfig& c) {
  std::string s;
  for (const auto& f : kFields) {
    if (!applies(f, c.fam())) continue;
    s += (s.empty() ? "" : " ") + std::string(f.name) + "=" + field_value_text(f, c);
  }
  return s;
}

std::string config_hash(const KernelConfig& c) {
  return hex16(fnv1a64(to_string(c)));
}

int threads_per_block(const KernelConfig& c) {
  if (c.direct()) return (c.dw_tile_h * c.dw_tile_w / c.dw_ppt) * (c.dw_tile_c / c.dw_cpt);
  if (c.fam() == Family::sm90) return 128 * (c.warps_m * c.warps_n + 1);  // + the producer warpgroup
  return 32 * c.warps_m * c.warps_n;
}

bool config_var_applies(const KernelConfig& c, std::string_view name) {
  for (const auto& f : kFields)
    for (int i = 0; i < f.arity; ++i)
      if (f.vars[i] == name) return applies(f, c.fam());
  return true;
}

std::optional<std::variant<std::int64_t, std::string>> config_var(const KernelConfig& c, std::string_view name) {
  for (const auto& f : kFields)
    for (int i = 0; i < f.arity; ++i)
      if (f.vars[i] == name) {
        int v = c.*f.slots[i];
        if (f.kind == FieldKind::enumeration) return std::string(f.enum_names[v]);
        return std::int64_t{v};
      }
  if (name == "threads") return std::int64_t{threads_per_block(c)};
  if (name == "warps") return std::int64_t{threads_per_block(c) / 32};
  if (name == "warp_tile_m") return std::int64_t{c.tile_m / c.warps_m};
  if (name == "warp_tile_n") return std::int64_t{c.tile_n / c.warps_n};
  return std::nullopt;
}

nlohmann::json to_json(const KernelConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : kFields) {
    if (!applies(f, c.fam())) continue;
    if (f.arity == 1)
      j[std::string(f.name)] = f.kind == FieldKind::enumeration ? nlohmann::json(component_text(f, c.*f.slots[0]))
                                                                 : nlohmann::json(c.*f.slots[0]);
    else if (f.name == "align" && c.align_a == 0)
      j[std::string(f.name)] = "auto";
    else {
      auto arr = nlohmann::json::array();
      for (int i = 0; i < f.arity; ++i) arr.push_back(c.*f.slots[i]);
      j[std::string(f.name)] = arr;
    }
  }
  return j;
}

KernelConfig config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ParseError("", "a config in JSON must be an object of field: value");
  KernelConfig c;
  auto text_of = [](const std::string& key, const nlohmann::json& v) {
    std::string t;
    if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer()) throw ParseError(key, "config JSON '" + key + "': tuple values must be integers");
        t += (i ? "x" : "") + std::to_string(v[i].get<long long>());
      }
    } else if (v.is_string()) {
      t = v.get<std::string>();
    } else if (v.is_number_integer()) {
      t = std::to_string(v.get<long long>());
    } else {
      throw ParseError(key, "config JSON '" + key + "': expected a string, an integer or a list of integers");
    }
    return t;
  };
  if (j.contains("fam")) set_field_text(c, *find_field("fam"), text_of("fam", j["fam"]), "fam");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const FieldDesc* f = find_field(it.key());
    if (!f) throw ParseError(it.key(), "config JSON: unknown field '" + it.key() + "'");
    if (!applies(*f, c.fam()))
      throw ParseError(it.key(), "config JSON: field '" + it.key() + "' does not apply to family " +
                                     std::string(to_string(c.fam())));
    std::string text = text_of(it.key(), it.value());
    set_field_text(c, *f, text, it.key() + "=" + text);
  }
  validate(c);
  return c;
}

}  // namespace tilepick
