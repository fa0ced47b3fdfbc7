// Kernel configurations. Every field is declared once, in the table returned by config_fields();
// that table drives parsing, printing, JSON, enumeration, expression variables and the help text.
//
// Canonical string: the fields that apply to the family, in table order, e.g.
//   fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=auto epi=direct
//   fam=dw splitk=1 dwtile=4x8x32 ppt=2 cpt=2
// Fields that do not apply to the family are fixed at their defaults (so equality and hashing are exact).
#pragma once
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json_fwd.hpp>

namespace tilepick {

// mma.sync igemm, wgmma igemm, depthwise direct, grouped direct on tensor cores (few channels per group)
enum class Family : std::uint8_t { sm80, sm90, dw, grp };
enum class SplitKMode : std::uint8_t { serial, parallel };
enum class Raster : std::uint8_t { row, col };
enum class EpiVariant : std::uint8_t { direct, smem };  // registers -> global, or staged via smem

inline constexpr Family kFamilies[] = {Family::sm80, Family::sm90, Family::dw, Family::grp};

struct KernelConfig {
  int family = 0;                        // Family
  int tile_m = 128, tile_n = 128, tile_k = 32;  // block tile (GEMM view)
  int warps_m = 2, warps_n = 2;          // warp layout; warp tile = tile / warps
  int stages = 3;                        // shared-memory pipeline depth
  int splitk = 1;                        // slices of the reduction dimension
  int splitk_mode = 0;                   // SplitKMode
  int raster = 0;                        // Raster: block order along M (row) or N (col) first
  int swizzle = 1;                       // blocks per rasterization band (L2 reuse)
  int cluster_m = 1, cluster_n = 1;      // thread-block cluster (sm90)
  int align_a = 0, align_b = 0, align_c = 0;  // vector width in elements; 0 = auto (widest legal)
  int epi = 0;                           // EpiVariant
  int dw_tile_h = 4, dw_tile_w = 8, dw_tile_c = 32;  // depthwise: output pixels x channels per block
  int dw_ppt = 1;                        // depthwise: output pixels per thread along W
  int dw_cpt = 2;                        // depthwise: channels per thread (vector width)

  Family fam() const { return static_cast<Family>(family); }
  // fam=dw and fam=grp: direct convolution kernels with no GEMM view and no alignment fields (align stays 0).
  bool direct() const { return fam() == Family::dw || fam() == Family::grp; }
  auto operator<=>(const KernelConfig&) const = default;
};

enum class FieldKind : std::uint8_t { integer, enumeration };

struct FieldDesc {
  std::string_view name;   // token name: "tile"
  std::string_view help;
  FieldKind kind;
  int arity;                                  // components, written AxBxC
  std::array<int KernelConfig::*, 3> slots;   // component members
  std::array<std::string_view, 3> vars;       // expression variable per component: tile_m ...
  std::span<const std::string_view> enum_names;  // enumeration values, by index
  int min, max;            // integer domain of each component (inclusive)
  bool pow2;               // integer components must be powers of two (0 allowed if min == 0)
  unsigned families;       // bit (1 << Family) for each family that uses the field
  int or_multiple_of = 0;  // with pow2: multiples of this are valid too (tile: 32, for sm90's N = 96, 160, 192, 224)
};
// Whether v is in f's integer domain.
bool in_domain(const FieldDesc& f, int v);

std::span<const FieldDesc> config_fields();
// Parses one field value ("128x128x32", "auto", "parallel") or, with component >= 0, one component
// ("128"); checks the domain, not family applicability. Throws ParseError.
std::array<int, 3> parse_field_value(const FieldDesc& f, int component, std::string_view text);
bool is_enum_value(std::string_view name);  // a value name of any enumeration field
const FieldDesc* find_field(std::string_view name);
std::string_view to_string(Family f);
bool applies(const FieldDesc& f, Family fam);

// Parses "fam=sm80 tile=128x128x32 ..." (missing fields take their defaults).
// Throws ParseError naming the token: unknown field, value outside the domain, field not used by
// the family, a field given twice.
KernelConfig parse_config(std::string_view text);
std::string to_string(const KernelConfig& c);
// FNV-1a 64 of the canonical string, as 16 hex digits.
std::string config_hash(const KernelConfig& c);

// Checks domains and family applicability of a config built in code (parse_config calls it).
void validate(const KernelConfig& c);                          // throws ParseError
std::optional<std::string> config_error(const KernelConfig& c);  // the same check, without throwing

// Value of a component, a derived quantity or an enum (as its name) for filter expressions:
// every component var, plus threads, warps, warp_tile_m, warp_tile_n.
// nullopt for unknown names.
std::optional<std::variant<std::int64_t, std::string>> config_var(const KernelConfig& c, std::string_view name);
// False when `name` is a component of a field that c's family does not have (cluster_m for sm80,
// dw_ppt for sm90, ...): a filter naming it does not match c. True for every other name.
bool config_var_applies(const KernelConfig& c, std::string_view name);
int threads_per_block(const KernelConfig& c);

nlohmann::json to_json(const KernelConfig& c);  // {"fam": "sm80", "tile": [128,128,32], ...}
KernelConfig config_from_json(const nlohmann::json& j);

}  // namespace tilepick
