// Config spaces: JSON loading, enumeration and filtering.
#include "tilepick/space.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/hash.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"

namespace tilepick {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& key, const std::string& msg) {
  throw ParseError(key, path + ": " + msg);
}

const std::vector<std::string> kOps = {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"};
const std::vector<std::string> kArchs = {"sm_80", "sm_86", "sm_89", "sm_90"};

std::vector<std::string> string_list(const json& j, const std::string& key, const std::string& path,
                                     const std::vector<std::string>& allowed) {
  if (!j.contains(key) || !j[key].is_array() || j[key].empty())
    fail(path, key, "'" + key + "' must be a non-empty list of strings");
  std::vector<std::string> out;
  for (const auto& v : j[key]) {
    if (!v.is_string()) fail(path, key, "'" + key + "' must be a list of strings");
    std::string s = v.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      fail(path, s, "'" + key + "': unknown value '" + s + "' (" + names + ")");
    }
    out.push_back(s);
  }
  return out;
}

// A value list for one axis: literal list, {"range": [lo, hi(, step)]} or {"pow2": [lo, hi]}.
std::vector<std::string> axis_values(const json& v, const std::string& key, const std::string& path) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& x : v) {
      if (x.is_string()) out.push_back(x.get<std::string>());
      else if (x.is_number_integer()) out.push_back(std::to_string(x.get<long long>()));
      else fail(path, key, "field '" + key + "': values must be integers or strings");
    }
  } else if (v.is_object() && v.size() == 1 && (v.contains("range") || v.contains("pow2"))) {
    bool pow2 = v.contains("pow2");
    const json& r = pow2 ? v["pow2"] : v["range"];
    if (!r.is_array() || r.size() < 2 || r.size() > (pow2 ? 2u : 3u) ||
        !std::all_of(r.begin(), r.end(), [](const json& x) { return x.is_number_integer(); }))
      fail(path, key, "field '" + key + "': " + (pow2 ? "pow2 needs [lo, hi]" : "range needs [lo, hi] or [lo, hi, step]"));
    long long lo = r[0], hi = r[1], step = r.size() == 3 ? r[2].get<long long>() : 1;
    if (lo > hi || step < 1 || lo < 0 || hi > (1 << 20) || (pow2 && lo < 1))
      fail(path, key, "field '" + key + "': empty or unreasonable range");
    for (long long x = lo; x <= hi; x = pow2 ? x * 2 : x + step) out.push_back(std::to_string(x));
  } else {
    fail(path, key, "field '" + key + "': expected a list, {\"range\": [lo, hi]} or {\"pow2\": [lo, hi]}");
  }
  if (out.empty()) fail(path, key, "field '" + key + "': no values");
  return out;
}

// Applies one axis value to a config.
void apply(KernelConfig& c, const ConfigSpace::Axis& a, const std::array<int, 3>& v) {
  if (a.component >= 0) {
    c.*a.field->slots[a.component] = v[0];
    return;
  }
  for (int i = 0; i < a.field->arity; ++i) c.*a.field->slots[i] = v[i];
}

}  // namespace

bool ConfigSpace::has_op(const std::string& op) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}
bool ConfigSpace::has_arch(const std::string& sm) const {
  return std::find(archs.begin(), archs.end(), sm) != archs.end();
}

bool passes(const KernelConfig& c, const std::vector<expr::Expr>& filters) {
  auto lookup = [&](std::string_view name) -> std::optional<expr::Value> {
    auto v = config_var(c, name);
    if (!v) return std::nullopt;
    return std::visit([](auto&& x) -> expr::Value { return x; }, *v);
  };
  for (const auto& f : filters) {
    // A filter on a field this family does not have does not match it (no hidden default is read).
    for (const auto& v : f.variables())
      if (!config_var_applies(c, v)) return false;
    if (!f.test(lookup)) return false;
  }
  return true;
}

ConfigSpace parse_space(const std::string& json_text, const std::string& path) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(path, "", "a space must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "help" && it.key() != "ops" && it.key() != "archs" &&
        it.key() != "fields" && it.key() != "filters")
      fail(path, it.key(), "unknown key '" + it.key() + "' (name, help, ops, archs, fields, filters)");
  ConfigSpace s;
  s.path = path;
  if (!j.contains("name") || !j["name"].is_string()) fail(path, "name", "'name' must be a string");
  s.name = j["name"];
  s.help = j.value("help", "");
  s.ops = string_list(j, "ops", path, kOps);
  s.archs = string_list(j, "archs", path, kArchs);
  if (!j.contains("fields") || !j["fields"].is_object()) fail(path, "fields", "'fields' must be an object");
  // Axes follow the field table order so that enumeration order does not depend on JSON order.
  std::vector<std::string> used;
  for (const auto& f : config_fields()) {
    for (int comp = -1; comp < f.arity; ++comp) {
      std::string key = comp < 0 ? std::string(f.name) : std::string(f.vars[comp]);
      if (comp >= 0 && f.arity == 1) continue;  // single-component fields are listed by name
      if (!j["fields"].contains(key)) continue;
      if (comp >= 0 && j["fields"].contains(std::string(f.name)))
        fail(path, key, "fields '" + std::string(f.name) + "' and '" + key + "' overlap: list the whole field or its components");
      used.push_back(key);
      ConfigSpace::Axis axis{&f, comp, {}};
      for (const auto& text : axis_values(j["fields"][key], key, path)) {
        try {
          axis.values.push_back(parse_field_value(f, comp, text));
        } catch (const ParseError& e) {
          fail(path, key, "field '" + key + "': " + e.what());
        }
      }
      s.axes.push_back(std::move(axis));
    }
  }
  for (auto it = j["fields"].begin(); it != j["fields"].end(); ++it)
    if (std::find(used.begin(), used.end(), it.key()) == used.end())
      fail(path, it.key(), "unknown field '" + it.key() + "' in 'fields'");
  if (j.contains("filters")) {
    if (!j["filters"].is_array()) fail(path, "filters", "'filters' must be a list of expressions");
    for (const auto& f : j["filters"]) {
      if (!f.is_string()) fail(path, "filters", "'filters' must be a list of strings");
      try {
        s.filters.push_back(parse_config_filter(f.get<std::string>()));
      } catch (const ParseError& e) {
        fail(path, e.token(), e.what());
      }
    }
  }
  std::vector<Family> families{Family::sm80};
  for (const auto& a : s.axes)
    if (a.field->name == "fam") {
      families.clear();
      for (const auto& v : a.values) families.push_back(static_cast<Family>(v[0]));
    }
  for (const auto& a : s.axes)
    for (Family fam : families)
      if (!applies(*a.field, fam))
        fail(path, std::string(a.field->name), "field '" + std::string(a.field->name) + "' does not apply to family " +
                                                   std::string(to_string(fam)) + " listed in 'fam'");
  s.hash = hex16(fnv1a64(j.dump()));
  // A listed field that does not apply to the space's families would silently enumerate nothing.
  std::size_t count = 0;
  try {
    count = s.enumerate().size();
  } catch (const Error& e) {
    fail(path, "filters", e.what());
  }
  if (count == 0) fail(path, "fields", "space '" + s.name + "' enumerates no valid config");
  return s;
}

std::vector<KernelConfig> ConfigSpace::enumerate(const std::vector<expr::Expr>& extra) const {
  std::vector<KernelConfig> out;
  std::vector<std::size_t> idx(axes.size(), 0);
  while (true) {
    KernelConfig c;
    for (std::size_t a = 0; a < axes.size(); ++a) apply(c, axes[a], axes[a].values[idx[a]]);
    if (!config_error(c)) {
      try {
        if (passes(c, filters) && passes(c, extra)) out.push_back(c);
      } catch (const Error& e) {
        throw Error(e.status(), "space " + name + ", config '" + to_string(c) + "': " + e.what());
      }
    }
    std::size_t a = 0;
    for (; a < axes.size(); ++a) {
      if (++idx[a] < axes[a].values.size()) break;
      idx[a] = 0;
    }
    if (a == axes.size()) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

expr::Expr parse_config_filter(const std::string& text) {
  expr::Expr e = expr::Expr::parse(text);
  for (const auto& v : e.variables())
    if (!config_var(KernelConfig{}, v) && !is_enum_value(v))
      throw ParseError(v, "filter '" + text + "': unknown variable '" + v +
                              "' (not a config variable or value; tilepick configs fields lists them)");
  return e;
}

ConfigSpace load_space(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open config space '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_space(ss.str(), path);
}

std::vector<ConfigSpace> load_spaces(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw NotFound("config space directory '" + dir + "' does not exist");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<ConfigSpace> out;
  for (const auto& f : files) out.push_back(load_space(f));
  return out;
}

const std::vector<ConfigSpace>& default_spaces() {
  static const std::vector<ConfigSpace> spaces = load_spaces(env::data_dir() + "/spaces");
  return spaces;
}

ConfigSpace find_space(const std::string& name_or_path) {
  if (name_or_path.ends_with(".json")) return load_space(name_or_path);
  std::string names;
  for (const auto& s : default_spaces()) {
    if (s.name == name_or_path) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw NotFound("no config space named '" + name_or_path + "' (available: " + names + ")");
}

}  // namespace tilepick
