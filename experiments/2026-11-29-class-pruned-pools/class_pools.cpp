// Would pruning each problem class's pool to the configs the fast path ever ranks high keep its picks?
// Per (model, problem class): the union of select(k=K)'s configs (the teacher's 16, then the student's order) over
// the training problems (data/problems/sweep/*_train*.txt, half dtypes); then, on the README eval's held-out
// problems, how many keep their whole top 16 in that union, how many keep their first choice when only the union's
// legal configs are scored (rank_configs: the same student then teacher), and the mean pool before and after.
//   g++ -std=c++20 -O2 -Iinclude -Isrc experiments/2026-11-29-class-pruned-pools/class_pools.cpp build/libtilepick.a \
//       -lz -ldl -lpthread -o /tmp/class_pools && /tmp/class_pools 32   (from the repository root)
#include <glob.h>

#include <array>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tilepick/arch.hpp"
#include "tilepick/selector.hpp"

using namespace tilepick;

std::vector<std::string> files(const char* pattern) {
  glob_t g;
  glob(pattern, 0, nullptr, &g);
  std::vector<std::string> out(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  globfree(&g);
  return out;
}

// The problem class a pool is kept for: the model, then for conv the kind of layer, for GEMM decode or not.
std::string problem_class(const Problem& p, const ModelEntry& m) {
  std::string k = m.spec.name;
  if (const auto* c = std::get_if<ConvProblem>(&p)) {
    k += c->depthwise() ? " dw" : c->g > 1 ? " grouped" : " dense";
    k += c->filter == std::array<std::int64_t, 3>{1, 1, 1} ? " 1x1" : " kxk";
    k += " nd" + std::to_string(c->ndim) + (c->stride[1] > 1 ? " strided" : "") + (c->n >= 8 ? " mb8+" : " mb<8");
  } else if (const auto* g = std::get_if<GemmProblem>(&p)) {
    k += g->m <= 64 ? " decode" : " prefill";
  }
  return k;
}

int main(int argc, char** argv) {
  const int k = argc > 1 ? std::atoi(argv[1]) : 32;
  const ArchSpec& arch = find_arch(default_arch_specs(), "h200");
  const Selector s("models", 1, true, ScoreMode::fast);
  std::map<std::string, std::set<KernelConfig>> kept;  // per class
  for (const char* pattern : {"data/problems/sweep/conv_train*.txt", "data/problems/sweep/gemm_train*.txt"})
    for (const auto& file : files(pattern))
      for (const auto& np : load_problem_file(file)) {
        const ModelEntry* m = s.model_for(np.problem, arch);
        if (!m || dtype_family(np.problem) != "half") continue;
        for (const auto& r : s.select(np.problem, arch, k).top) kept[problem_class(np.problem, *m)].insert(pool_form(r.config));
      }
  struct Count {
    double problems = 0, top16_kept = 0, first_same = 0, pool = 0, pruned = 0;
  };
  std::map<std::string, Count> counts;  // per model
  for (const char* file : {"conv_val.txt", "conv_val2.txt", "gemm_val.txt", "gemm_val2.txt"})
    for (const auto& np : load_problem_file(std::string("data/problems/sweep/") + file)) {
      const ModelEntry* m = s.model_for(np.problem, arch);
      if (!m) continue;
      const std::set<KernelConfig>& set = kept[problem_class(np.problem, *m)];
      const Selection now = s.select(np.problem, arch, 16);
      Count& c = counts[m->spec.name];
      bool all = true;
      for (const auto& r : now.top) all = all && set.contains(pool_form(r.config));
      std::vector<KernelConfig> pruned;
      const std::vector<KernelConfig> pool = s.pool(np.problem, arch);
      for (const auto& cfg : pool)
        if (set.contains(pool_form(cfg))) pruned.push_back(cfg);
      const auto first = pruned.empty() ? std::vector<Ranked>{} : s.rank_configs(np.problem, arch, pruned, 1);
      c.problems += 1, c.top16_kept += all, c.pool += pool.size(), c.pruned += pruned.size();
      c.first_same += !first.empty() && first[0].text == now.top[0].text;
    }
  std::cout << "k " << k << "; classes " << kept.size() << "\n";
  for (const auto& [name, c] : counts)
    std::cout << name << ": held-out " << c.problems << ", top 16 kept " << c.top16_kept << ", same first choice "
              << c.first_same << ", mean pool " << c.pool / c.problems << " -> " << c.pruned / c.problems << "\n";
}
