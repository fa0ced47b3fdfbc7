// Search spaces over full field domains, and the model scorer (search_run.cpp runs the searches).
#include "tilepick/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"

namespace tilepick::search {
namespace {

bool is_align(const FieldDesc& f) { return f.name == "align"; }

// The domain of one component, in ascending order.
std::vector<std::array<int, 3>> component_domain(const FieldDesc& f) {
  std::vector<std::array<int, 3>> out;
  if (f.kind == FieldKind::enumeration) {
    for (int v = 0; v < static_cast<int>(f.enum_names.size()); ++v) out.push_back({v, 0, 0});
  } else if (f.pow2) {
    for (int v = std::max(f.min, 1); v <= f.max; v *= 2)
      if ((v & (v - 1)) == 0) out.push_back({v, 0, 0});
  } else {
    for (int v = f.min; v <= f.max; ++v) out.push_back({v, 0, 0});
  }
  return out;
}

// align: auto, then every explicit width tuple (auto cannot mix with explicit widths).
Axis align_axis(const FieldDesc& f) {
  Axis a{&f, -1, {{0, 0, 0}}};
  const auto widths = component_domain(f);
  for (const auto& x : widths)
    for (const auto& y : widths)
      for (const auto& z : widths) a.values.push_back({x[0], y[0], z[0]});
  return a;
}

void apply(KernelConfig& c, const Axis& a, const std::array<int, 3>& v) {
  if (a.component >= 0) {
    c.*a.field->slots[a.component] = v[0];
    return;
  }
  for (int i = 0; i < a.field->arity; ++i) c.*a.field->slots[i] = v[i];
}

std::array<int, 3> read(const KernelConfig& c, const Axis& a) { return a.value_of(c); }

}  // namespace

std::array<int, 3> Axis::value_of(const KernelConfig& c) const {
  const Axis& a = *this;
  if (a.component >= 0) return {c.*a.field->slots[a.component], 0, 0};
  std::array<int, 3> v{0, 0, 0};
  for (int i = 0; i < a.field->arity; ++i) v[i] = c.*a.field->slots[i];
  return v;
}

std::string Axis::name() const { return std::string(component < 0 ? field->name : field->vars[component]); }

double Space::raw_size() const {
  double n = 1;
  for (const auto& a : axes) n *= static_cast<double>(a.values.size());
  return n;
}

KernelConfig Space::decode(std::span<const int> index) const {
  if (index.size() != axes.size())
    throw InvalidArgument("search: index vector of " + std::to_string(index.size()) + " entries for a space of " +
                          std::to_string(axes.size()) + " axes");
  KernelConfig c;
  c.family = static_cast<int>(family);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (index[i] < 0 || index[i] >= static_cast<int>(axes[i].values.size()))
      throw InvalidArgument("search: index " + std::to_string(index[i]) + " of axis " + axes[i].name() +
                            " is outside [0, " + std::to_string(axes[i].values.size()) + ")");
    apply(c, axes[i], axes[i].values[index[i]]);
  }
  return c;
}

std::optional<std::vector<int>> Space::encode(const KernelConfig& c) const {
  if (c.fam() != family) return std::nullopt;
  std::vector<int> index;
  for (const auto& a : axes) {
    auto it = std::find(a.values.begin(), a.values.end(), read(c, a));
    if (it == a.values.end()) return std::nullopt;
    index.push_back(static_cast<int>(it - a.values.begin()));
  }
  return index;
}

Space full_space(Family family) {
  Space s;
  s.family = family;
  s.source = "full field domains";
  for (const auto& f : config_fields()) {
    if (f.name == "fam" || !applies(f, family)) continue;
    if (is_align(f)) {
      s.axes.push_back(align_axis(f));
      continue;
    }
    for (int i = 0; i < f.arity; ++i) s.axes.push_back(Axis{&f, i, component_domain(f)});
  }
  return s;
}

Space narrowed_space(const ConfigSpace& file, Family family) {
  std::vector<Family> listed{Family::sm80};  // a space without 'fam' is sm80 (space.cpp)
  for (const auto& a : file.axes)
    if (a.field->name == "fam") {
      listed.clear();
      for (const auto& v : a.values) listed.push_back(static_cast<Family>(v[0]));
    }
  if (std::find(listed.begin(), listed.end(), family) == listed.end())
    throw InvalidArgument("search: space " + file.path + " does not list family " + std::string(to_string(family)));
  Space s = full_space(family);
  s.source = file.path.empty() ? file.name : file.path;
  s.filters = file.filters;
  for (const auto& fa : file.axes) {
    if (fa.field->name == "fam") continue;
    const bool whole = fa.component < 0;
    if (whole && fa.field->arity > 1) {
      // The file lists the whole field ("warps": ["2x2", ...]): one axis replaces its components.
      auto first = std::find_if(s.axes.begin(), s.axes.end(), [&](const Axis& a) { return a.field == fa.field; });
      const auto pos = first - s.axes.begin();
      std::erase_if(s.axes, [&](const Axis& a) { return a.field == fa.field; });
      s.axes.insert(s.axes.begin() + pos, Axis{fa.field, -1, fa.values});
      continue;
    }
    const int component = whole ? 0 : fa.component;
    for (auto& a : s.axes)
      if (a.field == fa.field) {
        if (a.component < 0) {  // align listed by component: not representable next to auto
          throw InvalidArgument("search: space " + s.source + " lists " + std::string(fa.field->vars[component]) +
                                " by component; list the whole '" + std::string(fa.field->name) + "' field");
        }
        if (a.component == component) a.values = fa.values;
      }
  }
  return s;
}

std::string format_count(double n) {
  char buf[32];
  if (n < 1e6) std::snprintf(buf, sizeof buf, "%.0f", n);
  else std::snprintf(buf, sizeof buf, "%.1e", n);
  std::string s = buf;
  if (auto e = s.find("e+"); e != std::string::npos) {
    std::string exp = s.substr(e + 2);
    exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
    s = s.substr(0, e) + "e" + exp;
  }
  return s;
}

Scorer selector_scorer(const Selector& selector, const Problem& p, const ArchSpec& arch, std::string* source) {
  if (source) {
    const ModelEntry* m = selector.model_for(p, arch);
    *source = m ? "model:" + m->spec.name : "fallback";
  }
  return [&selector, p, arch](std::span<const KernelConfig> configs) {
    // rank_configs scores the whole batch in one features_batch + predict call, best first.
    std::unordered_map<std::string, double> by_text;
    for (const auto& r : selector.rank_configs(p, arch, configs)) by_text.emplace(r.text, r.score);
    std::vector<double> out;
    out.reserve(configs.size());
    for (const auto& c : configs) out.push_back(by_text.at(to_string(resolve(c, p))));
    return out;
  };
}

}  // namespace tilepick::search
