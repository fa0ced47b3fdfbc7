// Config spaces (data/spaces/*.json): value lists or ranges per field plus filter expressions.
//
// {
//   "name": "gemm_sm80", "help": "...",
//   "ops": ["gemm"],                           // gemm, conv_fwd, conv_bwd_data, conv_bwd_weight
//   "archs": ["sm_80", "sm_86", "sm_89", "sm_90"],
//   "fields": {                                // a field ("tile": ["128x128x32"]) or one component
//     "fam": ["sm80"],                         //   ("tile_m": [64, 128]); values are lists or
//     "tile_m": [64, 128, 256],                //   {"range": [lo, hi]} (step 1), {"range": [lo, hi, step]},
//     "stages": {"range": [2, 6]},             //   {"pow2": [lo, hi]} (powers of two)
//     ...                                      // unlisted fields keep their defaults
//   },
//   "filters": ["warp_tile_m >= 32", ...]      // expressions over config variables (expr.hpp)
// }
// Enumeration is the Cartesian product in field-table order, minus invalid configs and configs a
// filter rejects. Problem- and arch-dependent rules belong to legal(), not to spaces.
#pragma once
#include <string>
#include <vector>

#include "tilepick/config.hpp"
#include "tilepick/expr.hpp"

namespace tilepick {

struct ConfigSpace {
  struct Axis {
    const FieldDesc* field;
    int component;                              // -1: the whole field
    std::vector<std::array<int, 3>> values;     // component values (whole field) or [v, 0, 0]
  };
  std::string name, help, path;
  std::vector<std::string> ops, archs;
  std::vector<Axis> axes;
  std::vector<expr::Expr> filters;
  std::string hash;  // FNV-1a 64 of the space's canonical JSON (models record it)

  bool has_op(const std::string& op) const;
  bool has_arch(const std::string& sm) const;
  // All configs of the space that pass its filters and `extra` filters.
  std::vector<KernelConfig> enumerate(const std::vector<expr::Expr>& extra = {}) const;
};

// Throws ParseError naming the file and the offending key / value / filter.
ConfigSpace parse_space(const std::string& json_text, const std::string& path);
ConfigSpace load_space(const std::string& path);
std::vector<ConfigSpace> load_spaces(const std::string& dir);  // every *.json, sorted by name
// A path to a .json file, or the name of a space in env::data_dir()/spaces.
ConfigSpace find_space(const std::string& name_or_path);
// Loaded once from env::data_dir()/spaces.
const std::vector<ConfigSpace>& default_spaces();

// A config filter expression: parsed, and every name in it a config variable or an enum value
// (`skmode == paralel` is an error, not a filter that matches nothing). Throws ParseError naming it.
expr::Expr parse_config_filter(const std::string& text);

// Filter checks a config against expressions (variables from config_var); throws on eval errors. A
// filter naming a field the config's family does not have (config_var_applies) does not match.
bool passes(const KernelConfig& c, const std::vector<expr::Expr>& filters);

}  // namespace tilepick
