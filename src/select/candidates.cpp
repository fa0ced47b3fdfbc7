// Pruned candidate pools: a model folder's candidates.txt (python -m tilepick.prune).
#include <algorithm>
#include <fstream>

#include "tilepick/error.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {

KernelConfig pool_form(const KernelConfig& c) {
  KernelConfig out = c;
  if (!out.direct()) out.align_a = out.align_b = out.align_c = 0;
  return out;
}

bool CandidateSet::contains(const KernelConfig& c) const {
  return std::binary_search(sorted.begin(), sorted.end(), pool_form(c));
}

CandidateSet load_candidates(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open candidates file " + path);
  CandidateSet set;
  set.path = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string text = line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
    const std::string where = path + ":" + std::to_string(number);
    KernelConfig c;
    try {
      c = pool_form(parse_config(text));
    } catch (const Error& e) {
      throw ParseError(text, where + ": not a kernel config: '" + text + "' (" + e.what() + ")");
    }
    const auto at = std::lower_bound(set.sorted.begin(), set.sorted.end(), c);
    if (at != set.sorted.end() && *at == c)
      throw ParseError(text, where + ": config listed twice (in align=auto form): '" + text + "'");
    set.sorted.insert(at, c);
    set.configs.push_back(c);
  }
  if (in.bad()) throw NotFound("cannot read candidates file " + path);
  return set;
}

}  // namespace tilepick
