// Analytic fallback: rank candidates by the estimated useful TFLOP/s of the analysis model
// (waves x padded-work efficiency against a roofline), for when no learned model can be used.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "select/analysis.hpp"
#include "tilepick/features.hpp"

namespace tilepick {
namespace {

double score(const Problem& p, const select::ProblemTerms& t, const KernelConfig& c, const ArchSpec& d) {
  const KernelConfig r = c.fam() != Family::dw && c.align_a == 0 ? resolve(c, p) : c;
  const select::Analysis a = select::analyze(p, t, r, d);
  if (!(a.t_est_s > 0) || !std::isfinite(a.t_est_s)) return 0;
  return t.flops / a.t_est_s * 1e-12;
}

}  // namespace

double heuristic_score(const Problem& problem, const KernelConfig& config, const ArchSpec& device) {
  return score(problem, select::problem_terms(problem, device), config, device);
}

std::vector<std::size_t> heuristic_rank(const Problem& problem, std::span<const KernelConfig> configs,
                                        const ArchSpec& device) {
  const select::ProblemTerms t = select::problem_terms(problem, device);
  std::vector<double> scores(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) scores[i] = score(problem, t, configs[i], device);
  std::vector<std::size_t> order(configs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return scores[x] > scores[y]; });
  return order;
}

}  // namespace tilepick
