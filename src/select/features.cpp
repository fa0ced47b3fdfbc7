// THE feature function. Names and values come from one emitter (emit_features), so a name can
// never drift from its value: the schema is built by running the emitter with a name collector.
#include "tilepick/features.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>
#include <unordered_set>

#include "core/hash.hpp"
#include "select/analysis.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/legality.hpp"

namespace tilepick {
namespace {

double log2p(double x) { return x > 0 ? std::log2(x) : std::nan(""); }
double ratio(double a, double b) { return b != 0 ? a / b : std::nan(""); }

// Writes values in schema order; non-finite values become NaN (missing for the trees).
struct ValueSink {
  double* out;
  std::size_t i = 0;
  void operator()(std::string_view, double v) { out[i++] = std::isfinite(v) ? v : std::nan(""); }
  void cfg(std::string_view, double v) { out[i++] = v; }
};

struct NameSink {
  std::vector<std::string> names;
  void operator()(std::string_view name, double) { names.emplace_back(name); }
  void cfg(std::string_view var, double) { names.push_back("cfg_" + std::string(var)); }
};

// The leading features, which depend on the problem alone (one problem's rows share them).
template <class Sink>
void emit_problem_features(const Problem& p, const select::ProblemTerms& t, const ArchSpec& d, Sink& put) {
  const auto* g = std::get_if<GemmProblem>(&p);
  const auto* cv = std::get_if<ConvProblem>(&p);

  // Problem: op, dtypes, sizes of the (implicit) GEMM view, intensity against the ridge point.
  put("op", g ? 0 : 1 + static_cast<int>(cv->dir));
  put("in_dtype", static_cast<int>(t.in));
  put("in_bytes", t.in_bytes);
  put("out_bytes", t.out_bytes);
  put("log2_m", log2p(t.view.m));
  put("log2_n", log2p(t.view.n));
  put("log2_k", log2p(t.view.k));
  put("log2_batch", log2p(t.view.batch));
  put("log2_mn", log2p(double(t.view.m) * t.view.n));
  put("log2_flops", log2p(t.flops));
  put("log2_min_bytes", log2p(t.min_bytes));
  put("arith_intensity", ratio(t.flops, t.min_bytes));
  put("ai_over_ridge", ratio(ratio(t.flops, t.min_bytes), t.ridge));
  put("footprint_over_l2", ratio(t.min_bytes, double(d.l2_bytes)));
  put("a_kmajor", g ? g->layout_a == MatLayout::row : 0);
  put("b_kmajor", g ? g->layout_b == MatLayout::col : 0);
  put("c_rowmajor", g ? g->layout_c == MatLayout::row : 0);
  put("beta_nonzero", g ? g->beta != 0.0 : 0);
  const Epilogue& ep = g ? g->epilogue : cv->epilogue;
  put("epi_bias", ep.bias);
  put("epi_act", static_cast<int>(ep.act));
  put("max_align_a", t.max_align[0]);
  put("max_align_b", t.max_align[1]);
  put("max_align_c", t.max_align[2]);

  // Convolution: direction is in "op"; geometry, groups and depthwise.
  const ConvProblem none{};
  const ConvProblem& q = cv ? *cv : none;
  const auto out = q.out();
  const double on = cv ? 1 : 0;  // zero every conv term of a GEMM
  put("conv_ndim", on * q.ndim);
  put("conv_log2_groups", on * std::log2(double(q.g)));
  put("conv_c_per_group", on * q.c_per_group());
  put("conv_k_per_group", on * q.k_per_group());
  put("conv_depthwise", on * q.depthwise());
  put("conv_mb", on * q.n);
  put("conv_filter_d", on * q.filter[0]);
  put("conv_filter_h", on * q.filter[1]);
  put("conv_filter_w", on * q.filter[2]);
  put("conv_taps", on * q.filter[0] * q.filter[1] * q.filter[2]);
  put("conv_stride_d", on * q.stride[0]);
  put("conv_stride_h", on * q.stride[1]);
  put("conv_stride_w", on * q.stride[2]);
  put("conv_dilation_max", on * std::max({q.dilation[0], q.dilation[1], q.dilation[2]}));
  put("conv_pad_d", on * q.pad[0]);
  put("conv_pad_h", on * q.pad[1]);
  put("conv_pad_w", on * q.pad[2]);
  put("conv_in_d", on * q.in[0]);
  put("conv_in_h", on * q.in[1]);
  put("conv_in_w", on * q.in[2]);
  put("conv_out_d", on * out[0]);
  put("conv_out_h", on * out[1]);
  put("conv_out_w", on * out[2]);
  const bool pointwise = q.filter == std::array<std::int64_t, 3>{1, 1, 1} &&
                         q.stride == std::array<std::int64_t, 3>{1, 1, 1} && q.pad == std::array<std::int64_t, 3>{};
  put("conv_pointwise", on * pointwise);
}

// The rest of the row, after emit_problem_features.
template <class Sink>
void emit_config_features(const Problem& p, const select::ProblemTerms& t, const KernelConfig& c, const ArchSpec& d,
                          Sink& put) {
  const select::Analysis a = select::analyze(p, t, c, d);
  const bool dw = c.fam() == Family::dw;
  const double on = std::holds_alternative<ConvProblem>(p) ? 1 : 0;  // zero every conv term of a GEMM

  // Tiling: padded work per dimension, tiles, split-K.
  put("tiles_m", a.tiles_m);
  put("tiles_n", a.tiles_n);
  put("tiles_k", a.tiles_k);
  put("eff_m", a.eff_m);
  put("eff_n", a.eff_n);
  put("eff_k", a.eff_k);
  put("pad_eff", a.pad_eff);
  put("ctas", a.ctas);
  put("splits", a.splits);
  put("k_tiles_per_split", a.k_tiles_per_split);
  put("k_per_split", dw ? a.k_tiles_per_split : a.k_tiles_per_split * c.tile_k);
  put("split_balance", a.split_balance);
  put("reduce_over_min_bytes", ratio(a.reduce_bytes, t.min_bytes));

  // Resources and occupancy, waves.
  put("threads", a.res.threads);
  put("regs_est", a.res.regs_per_thread);
  put("smem_bytes", a.res.smem_bytes);
  put("smem_per_stage", a.smem_per_stage);
  put("warp_tile_m", dw ? 0 : c.tile_m / c.warps_m);
  put("warp_tile_n", dw ? 0 : c.tile_n / c.warps_n);
  put("ctas_per_sm", a.ctas_per_sm);
  put("occupancy", a.occupancy);
  put("waves", a.waves);
  put("wave_eff", a.wave_eff);
  put("sm_fill", a.sm_fill);

  // Memory traffic and vector widths.
  put("bytes_moved_over_min", ratio(a.bytes_moved, t.min_bytes));
  put("log2_dram_bytes", log2p(a.dram_bytes));
  put("tile_intensity", a.tile_intensity);
  put("tile_intensity_over_ridge", ratio(a.tile_intensity, t.ridge));
  put("dram_intensity_over_ridge", ratio(ratio(t.flops, a.dram_bytes), t.ridge));
  put("vec_bytes_a", dw ? c.dw_cpt * t.in_bytes : c.align_a * t.in_bytes);
  put("vec_bytes_b", dw ? c.dw_cpt * t.in_bytes : c.align_b * t.in_bytes);
  put("vec_bytes_c", dw ? c.dw_cpt * t.out_bytes : c.align_c * t.out_bytes);

  // Roofline estimate (the analytic fallback's own numbers).
  put("est_compute_us", a.t_compute_s * 1e6);
  put("est_memory_us", a.t_memory_s * 1e6);
  put("est_time_us", a.t_est_s * 1e6);
  put("log2_est_tflops", log2p(t.flops / a.t_est_s * 1e-12));
  put("est_compute_over_memory", ratio(a.t_compute_s, a.t_memory_s));

  // Launches (conv only; zero for a GEMM): bwd_data with a stride runs one GEMM per stride phase;
  // the largest one's tiling and waves, and the roofline time of all of them (one launch: as above).
  const select::Launches l = dw ? select::Launches{} : select::igemm_launches(p, t);
  const select::Analysis la = l.count > 1 ? select::analyze_launch(p, t, l, c, d) : a;
  put("launches", on * l.count);
  put("launch_log2_m", on * log2p(dw ? t.view.m : l.view.m));
  put("launch_log2_k", on * log2p(dw ? t.view.k : l.view.k));
  put("launch_tiles_m", on * la.tiles_m);
  put("launch_tiles_k", on * la.tiles_k);
  put("launch_eff_m", on * la.eff_m);
  put("launch_eff_k", on * la.eff_k);
  put("launch_ctas", on * la.ctas);
  put("launch_waves", on * la.waves);
  put("launch_wave_eff", on * la.wave_eff);
  put("launch_k_per_split", on * (dw ? la.k_tiles_per_split : la.k_tiles_per_split * c.tile_k));
  put("launches_est_us", on * l.count * la.t_est_s * 1e6);
  put("log2_launches_est_tflops", on * log2p(t.flops / (l.count * la.t_est_s) * 1e-12));

  // Device.
  put("dev_sm_count", d.sm_count);
  put("dev_cc", d.cc_major * 10 + d.cc_minor);
  put("dev_clock_mhz", d.boost_clock_mhz);
  put("dev_mem_bw_gbps", d.mem_bw_gbps);
  put("dev_l2_mib", double(d.l2_bytes) / (1 << 20));
  put("dev_smem_per_sm_kib", d.smem_per_sm / 1024.0);
  put("dev_peak_tflops", t.peak_tflops);
  put("dev_ridge", t.ridge);

  // Config fields, one per component, in field-table order.
  for (const auto& f : config_fields())
    for (int i = 0; i < f.arity; ++i) put.cfg(f.vars[i], c.*(f.slots[i]));
}

template <class Sink>
void emit_features(const Problem& p, const select::ProblemTerms& t, const KernelConfig& c, const ArchSpec& d,
                   Sink& put) {
  emit_problem_features(p, t, d, put);
  emit_config_features(p, t, c, d, put);
}

FeatureSchema build_schema() {
  NameSink names;
  const Problem p = parse_problem("gemm rcr m128 n128 k128 f16");
  const ArchSpec dev{};
  emit_features(p, select::problem_terms(p, dev), resolve(KernelConfig{}, p), dev, names);
  NameSink leading;
  emit_problem_features(p, select::problem_terms(p, dev), dev, leading);
  FeatureSchema s;
  s.names = std::move(names.names);
  s.problem_columns = leading.names.size();
  std::unordered_set<std::string> seen;
  for (const auto& n : s.names)
    if (!seen.insert(n).second) throw Error(Status::internal, "feature name '" + n + "' appears twice in the schema");
  s.hash = feature_schema_hash(s.names, s.version);
  return s;
}

KernelConfig resolved(const KernelConfig& c, const Problem& p) {
  return !c.direct() && c.align_a == 0 ? resolve(c, p) : c;
}

// Runs body(begin, end) over [0, n) on up to `threads` threads; rethrows the first error.
template <class Body>
void parallel_rows(std::size_t n, int threads, Body body) {
  if (threads <= 0) threads = env::num_threads();
  const std::size_t min_rows_per_thread = 256;
  std::size_t workers = std::min<std::size_t>(std::max(1, threads), (n + min_rows_per_thread - 1) / min_rows_per_thread);
  if (workers <= 1) return body(std::size_t{0}, n);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(workers);
  const std::size_t chunk = (n + workers - 1) / workers;
  for (std::size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      try {
        body(std::min(n, w * chunk), std::min(n, (w + 1) * chunk));
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::string feature_schema_hash(std::span<const std::string> names, int version) {
  std::uint64_t h = fnv1a64("tilepick-features v" + std::to_string(version));
  for (const auto& n : names) h = fnv1a64("\n" + n, h);
  return hex16(h);
}

const FeatureSchema& feature_schema() {
  static const FeatureSchema schema = build_schema();
  return schema;
}

int FeatureSchema::index(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

double FeatureRow::at(std::string_view name) const {
  int i = feature_schema().index(name);
  if (i < 0) throw NotFound("no feature named '" + std::string(name) + "' in schema " + feature_schema().hash);
  return values.at(static_cast<std::size_t>(i));
}

FeatureRow features(const Problem& problem, const KernelConfig& config, const ArchSpec& device) {
  FeatureRow row;
  row.values.resize(feature_schema().size());
  ValueSink sink{row.values.data()};
  emit_features(problem, select::problem_terms(problem, device), resolved(config, problem), device, sink);
  return row;
}

std::vector<double> problem_features(const Problem& problem, const ArchSpec& device) {
  std::vector<double> out(feature_schema().problem_columns);
  ValueSink sink{out.data()};
  emit_problem_features(problem, select::problem_terms(problem, device), device, sink);
  return out;
}

void features_batch(std::span<const Problem> problems, std::span<const KernelConfig> configs, const ArchSpec& device,
                    double* out, int threads) {
  if (problems.size() != configs.size())
    throw Error(Status::internal, "features_batch: " + std::to_string(problems.size()) + " problems but " +
                                      std::to_string(configs.size()) + " configs");
  const std::size_t width = feature_schema().size();
  parallel_rows(problems.size(), threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      ValueSink sink{out + i * width};
      emit_features(problems[i], select::problem_terms(problems[i], device), resolved(configs[i], problems[i]),
                    device, sink);
    }
  });
}

void features_batch(const Problem& problem, std::span<const KernelConfig> configs, const ArchSpec& device,
                    double* out, int threads) {
  const std::size_t width = feature_schema().size();
  const select::ProblemTerms terms = select::problem_terms(problem, device);
  // The problem's leading features once, copied into every row.
  std::vector<double> head(width);
  ValueSink problem_sink{head.data()};
  emit_problem_features(problem, terms, device, problem_sink);
  const std::size_t n_head = problem_sink.i;
  parallel_rows(configs.size(), threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      std::copy_n(head.data(), n_head, out + i * width);
      ValueSink sink{out + i * width, n_head};
      emit_config_features(problem, terms, resolved(configs[i], problem), device, sink);
    }
  });
}

}  // namespace tilepick
