// The registry: spaces enumerated once, looked up by op and arch, filtered by legality.
#include "tilepick/registry.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "tilepick/legality.hpp"

namespace tilepick {
std::string functional_key(const Problem& p, const ArchSpec& arch) {
  std::string key = op_name(p) + ".";
  if (auto* g = std::get_if<GemmProblem>(&p)) {
    key += dtypes_text(g->a, g->b, g->c) + "." + g->layout_string();
  } else {
    const auto& c = std::get<ConvProblem>(p);
    key += dtypes_text(c.x, c.w, c.y) + (c.ndim == 3 ? ".ndhwgc-gkzyxc-ndhwgk" : ".nhwgc-gkyxc-nhwgk");
  }
  return key + "." + arch.sm;
}

Registry::Registry(std::vector<ConfigSpace> spaces) : spaces_(std::move(spaces)) {
  for (const auto& s : spaces_) enumerated_.push_back(s.enumerate());
}

const Registry& Registry::default_registry() {
  static const Registry r(default_spaces());
  return r;
}

std::vector<KernelEntry> Registry::candidates(const std::string& op, const ArchSpec& arch) const {
  std::vector<KernelEntry> out;
  for (std::size_t i = 0; i < spaces_.size(); ++i) {
    if (!spaces_[i].has_op(op) || !spaces_[i].has_arch(arch.sm)) continue;
    for (const auto& c : enumerated_[i]) out.push_back({spaces_[i].name, op, c});
  }
  return out;
}

// Calls emit(space index, resolved config) for each legal config, in space then enumeration order,
// once per resolved config (a space may list explicit alignments next to auto). Families that
// cannot run the problem are skipped whole (legal() would reject each of their configs).
template <class Emit>
void Registry::each_legal(const Problem& p, const ArchSpec& arch, Emit emit) const {
  const std::string op = op_name(p);
  std::set<KernelConfig> seen;
  const ProblemLegality legality(p, arch);  // legal() = legal_on_arch + the problem's rules
  const DType input = input_dtype(p);
  for (std::size_t i = 0; i < spaces_.size(); ++i) {
    if (!spaces_[i].has_op(op) || !spaces_[i].has_arch(arch.sm)) continue;
    for (const auto& c : enumerated_[i]) {
      if (!family_runs(c.fam(), p) || !legal_on_arch(c, arch, input)) continue;
      KernelConfig r = legality.resolve(c);
      if (!legality.check<false>(r).ok) continue;
      if (seen.insert(r).second) emit(i, std::move(r));
    }
  }
}

std::vector<KernelEntry> Registry::lookup(const Problem& p, const ArchSpec& arch) const {
  std::vector<KernelEntry> out;
  const std::string op = op_name(p);
  each_legal(p, arch, [&](std::size_t space, KernelConfig c) { out.push_back({spaces_[space].name, op, std::move(c)}); });
  return out;
}

std::vector<KernelConfig> Registry::lookup_configs(const Problem& p, const ArchSpec& arch) const {
  std::vector<KernelConfig> out;
  each_legal(p, arch, [&](std::size_t, KernelConfig c) { out.push_back(std::move(c)); });
  return out;
}

nlohmann::json Registry::export_json(const std::vector<ArchSpec>& archs) const {
  nlohmann::json j;
  j["spaces"] = nlohmann::json::array();
  for (const auto& s : spaces_)
    j["spaces"].push_back({{"name", s.name}, {"path", s.path}, {"hash", s.hash}, {"ops", s.ops}, {"archs", s.archs}});
  j["kernels"] = nlohmann::json::array();
  std::vector<std::string> seen_sm;
  for (const auto& arch : archs) {
    if (std::find(seen_sm.begin(), seen_sm.end(), arch.sm) != seen_sm.end()) continue;
    seen_sm.push_back(arch.sm);
    for (const std::string op : {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"})
      for (const auto& e : candidates(op, arch))
        j["kernels"].push_back({{"op", op}, {"arch", arch.sm}, {"space", e.space}, {"config", to_string(e.config)},
                                {"hash", config_hash(e.config)}});
  }
  return j;
}

}  // namespace tilepick
