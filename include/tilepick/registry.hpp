// The registry: kernels keyed by functional key and config, built from the config spaces.
//
// Functional key: op.dtypes.layouts.arch, e.g. "gemm.bf16.rcr.sm_90",
// "conv_fwd.bf16.nhwgc-gkyxc-nhwgk.sm_90" (dtypes printed as in problem strings).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/space.hpp"

namespace tilepick {

std::string functional_key(const Problem& p, const ArchSpec& arch);

struct KernelEntry {
  std::string space;  // which space declared it
  std::string op;     // gemm, conv_fwd, ...
  KernelConfig config;
};

class Registry {
 public:
  explicit Registry(std::vector<ConfigSpace> spaces);
  static const Registry& default_registry();  // from default_spaces(), built once

  // Every config of every space that covers the problem's op and the arch's target; unfiltered.
  std::vector<KernelEntry> candidates(const std::string& op, const ArchSpec& arch) const;
  // The legal configs for a problem (align resolved), in space then enumeration order, unique.
  std::vector<KernelEntry> lookup(const Problem& p, const ArchSpec& arch) const;
  // The same configs, without the entries' space and op (selection's hot path).
  std::vector<KernelConfig> lookup_configs(const Problem& p, const ArchSpec& arch) const;
  const std::vector<ConfigSpace>& spaces() const { return spaces_; }
  // {"spaces": [...], "kernels": [{"op", "arch", "space", "config", "hash"}...]}; arch "" = all.
  nlohmann::json export_json(const std::vector<ArchSpec>& archs) const;

 private:
  template <class Emit>
  void each_legal(const Problem& p, const ArchSpec& arch, Emit emit) const;
  std::vector<ConfigSpace> spaces_;
  std::vector<std::vector<KernelConfig>> enumerated_;  // per space
};

}  // namespace tilepick
