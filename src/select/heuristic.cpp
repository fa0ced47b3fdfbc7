// Analytic fallback: rank candidates by the estimated useful TFLOP/s of the analysis model, for when no
// learned model can be used. Implicit-GEMM configs add what the roofline leaves out: the busiest SM's
// rounds of blocks, each block's main loop bound by its share of the tensor peak or by the load latency
// its pipeline stages hide, a fixed cost per iteration, and the chain of serial split-K fix-ups.
// Depthwise configs blend the roofline with their blocks' serial chain (dw_seconds).
// The implicit-GEMM constants were calibrated on data/sweeps/h200/gemm_train_full.csv.gz (every legal
// config of 100 GEMMs measured): the fallback's first choice went from 59% to 91% of the best on average
// there (docs/selection.md, "The analytic fallback"). They only rank configs: the features do not use
// them, so the models' inputs are unchanged.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "select/analysis.hpp"
#include "tilepick/features.hpp"

namespace tilepick {
namespace {

constexpr double kLoadLatencyS = 1.0e-6;     // a K tile's global -> shared round trip, as a block sees it
constexpr double kIterationS = 0.2e-6;       // fixed cost of one main-loop iteration (barriers, issue)
constexpr double kSerialFixupS = 4.0e-6;     // each further serial split-K slice of a tile waits for the last
constexpr double kDwRoundS = 1.0e-6;         // a round of resident depthwise blocks on one SM

// Seconds of one implicit-GEMM launch on the busiest SM, against DRAM, plus the launches.
double igemm_seconds(const KernelConfig& c, const select::Analysis& a, const ArchSpec& d) {
  if (!(a.rounds > 0)) return std::numeric_limits<double>::infinity();  // no block fits
  const double peak_sm = a.peak_flops / d.sm_count;
  const double tile_s = 2.0 * c.tile_m * c.tile_n * c.tile_k * a.resident / (peak_sm * a.busy);
  const double iteration_s = std::max(tile_s, kLoadLatencyS / std::max(1, c.stages - 1)) + kIterationS;
  double sm_s = a.rounds * (a.k_tiles_per_split * iteration_s + kLoadLatencyS);
  if (a.splits > 1 && c.splitk_mode == static_cast<int>(SplitKMode::serial)) sm_s += (a.splits - 1) * kSerialFixupS;
  const double launches_s = a.t_est_s - std::max(a.t_compute_s, a.t_memory_s);  // as the roofline adds them
  return std::max(sm_s, a.t_memory_s) + launches_s;
}

// Seconds of a depthwise config: the geometric blend t_est^0.4 x chain^0.6 of the roofline and the blocks'
// serial chain on the busiest SM (its rounds of resident blocks, times the (n, od) slices each bwd_weight
// block sums, to the power 0.6, at kDwRoundS a round). The roofline alone ranks every config of a
// memory-bound depthwise problem alike; the exponents were fitted on the H200 depthwise training records
// (data/sweeps/h200/conv_train*.csv.gz, 40 sampled configs a problem).
double dw_seconds(const select::Analysis& a) {
  if (!(a.rounds > 0)) return std::numeric_limits<double>::infinity();
  const double chain_s = kDwRoundS * a.rounds * std::pow(std::max(1.0, a.k_tiles_per_split), 0.6);
  return std::pow(a.t_est_s, 0.4) * std::pow(chain_s, 0.6);
}

// Estimated seconds of the pair; 0 or not finite where the model has no estimate (no block fits).
double seconds(const Problem& p, const select::ProblemTerms& t, const KernelConfig& c, const ArchSpec& d) {
  const KernelConfig r = !c.direct() && c.align_a == 0 ? resolve(c, p) : c;
  const select::Analysis a = select::analyze(p, t, r, d);
  if (!(a.t_est_s > 0) || !std::isfinite(a.t_est_s)) return 0;
  return r.fam() == Family::dw ? dw_seconds(a) : igemm_seconds(r, a, d);
}

double score(const Problem& p, const select::ProblemTerms& t, const KernelConfig& c, const ArchSpec& d) {
  const double s = seconds(p, t, c, d);
  return std::isfinite(s) && s > 0 ? t.flops / s * 1e-12 : 0;
}

}  // namespace

double heuristic_score(const Problem& problem, const KernelConfig& config, const ArchSpec& device) {
  return score(problem, select::problem_terms(problem, device), config, device);
}

double estimated_time_us(const Problem& problem, const KernelConfig& config, const ArchSpec& device) {
  const double s = seconds(problem, select::problem_terms(problem, device), config, device);
  return std::isfinite(s) && s > 0 ? s * 1e6 : std::numeric_limits<double>::quiet_NaN();
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
