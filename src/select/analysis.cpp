// The physical model behind the features and the analytic fallback: padded tiles, occupancy,
// waves, split-K, bytes moved with L2 reuse, and a roofline time.
#include "select/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "jit/families.hpp"
#include "tilepick/error.hpp"

namespace tilepick::select {
namespace {

using i64 = std::int64_t;

double cdiv(double a, double b) { return std::ceil(a / b); }

constexpr double kLaunchSeconds = 3e-6;       // one kernel launch, as seen from the stream
constexpr double kMmaSyncOnWgmmaArch = 0.6;   // mma.sync reaches about 60% of Hopper's tensor peak
constexpr double kWarpsToSaturateMma = 8;   // two warps per SM sub-partition keep the tensor cores busy
constexpr double kWarpsToSaturateSimt = 16; // latency-bound FMA loops need more
constexpr int kSmemReservedPerBlock = 1024;   // the driver's per-block shared-memory reservation (sm_80+)

int occupancy_limit(const Resources& r, const ArchSpec& d) {
  if (r.threads <= 0 || r.smem_bytes < 0 || r.smem_bytes > d.smem_per_block_optin) return 0;
  const int warps = (r.threads + 31) / 32;
  const int regs_per_warp = (r.regs_per_thread * 32 + 255) / 256 * 256;  // allocation unit: 256 per warp
  const int by_regs = regs_per_warp > 0 ? d.regs_per_sm / regs_per_warp / warps : d.max_blocks_per_sm;
  const int by_smem = r.smem_bytes > 0 ? d.smem_per_sm / (r.smem_bytes + kSmemReservedPerBlock) : d.max_blocks_per_sm;
  const int by_threads = d.max_threads_per_sm / r.threads;
  return std::max(0, std::min({by_regs, by_smem, by_threads, d.max_blocks_per_sm}));
}

// Waves, occupancy and the roofline time, once tiles, bytes and peak are known.
void finish(Analysis& a, const ProblemTerms& t, const ArchSpec& d, double peak_flops, double warps_to_saturate,
            double extra_launches) {
  a.ctas_per_sm = occupancy_limit(a.res, d);
  a.occupancy = d.max_threads_per_sm > 0 ? double(a.ctas_per_sm) * a.res.threads / d.max_threads_per_sm : 0;
  const double slots = double(a.ctas_per_sm) * d.sm_count;
  a.sm_fill = d.sm_count > 0 ? std::min(1.0, a.ctas / d.sm_count) : 0;
  if (slots > 0 && a.ctas > 0) {
    // The busiest SM runs ceil(ctas / SMs) blocks, ctas_per_sm at a time, in `rounds`; j resident
    // blocks of w warps reach min(1, j w / warps_to_saturate) of the SM's peak.
    a.waves = a.ctas / slots;
    const double per_sm = std::ceil(a.ctas / d.sm_count);
    a.resident = std::min<double>(per_sm, a.ctas_per_sm), a.rounds = std::ceil(per_sm / a.ctas_per_sm);
    a.busy = std::min(1.0, a.resident * std::ceil(a.res.threads / 32.0) / warps_to_saturate);
    a.wave_eff = a.ctas * a.busy / (d.sm_count * a.rounds * a.resident);
  } else {
    a.waves = std::numeric_limits<double>::quiet_NaN();
    a.wave_eff = 0;
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double useful = a.pad_eff > 0 ? t.flops / a.pad_eff : inf;
  a.t_compute_s = peak_flops > 0 && a.wave_eff > 0 ? useful / (peak_flops * a.wave_eff) : inf;
  a.t_memory_s = d.mem_bw_gbps > 0 ? a.dram_bytes / (d.mem_bw_gbps * 1e9) : inf;
  a.peak_flops = peak_flops;
  a.t_est_s = std::max(a.t_compute_s, a.t_memory_s) + kLaunchSeconds * (1 + extra_launches);
}

// Re-reads beyond the unique bytes come from DRAM in the proportion the footprint exceeds L2.
double dram_estimate(double unique, double moved, double footprint, const ArchSpec& d) {
  const double spill = footprint > 0 ? std::clamp(1.0 - double(d.l2_bytes) / footprint, 0.0, 1.0) : 0.0;
  return unique + std::max(0.0, moved - unique) * spill;
}

Analysis analyze_igemm(const ProblemTerms& t, const KernelConfig& c, const Problem& p, const ArchSpec& d) {
  Analysis a;
  const GemmView& v = t.view;
  const double tm = c.tile_m, tn = c.tile_n, tk = c.tile_k;
  a.tiles_m = cdiv(v.m, tm), a.tiles_n = cdiv(v.n, tn), a.tiles_k = cdiv(v.k, tk);
  a.eff_m = v.m / (a.tiles_m * tm), a.eff_n = v.n / (a.tiles_n * tn), a.eff_k = v.k / (a.tiles_k * tk);
  a.pad_eff = a.eff_m * a.eff_n * a.eff_k;
  const double sk = std::max(1, c.splitk);
  a.ctas = a.tiles_m * a.tiles_n * v.batch * sk;
  a.k_tiles_per_split = cdiv(a.tiles_k, std::min(sk, a.tiles_k));
  a.splits = cdiv(a.tiles_k, a.k_tiles_per_split);
  a.split_balance = a.tiles_k / (a.splits * a.k_tiles_per_split);
  const bool parallel = sk > 1 && c.splitk_mode == static_cast<int>(SplitKMode::parallel);
  if (sk > 1) {
    const double out_elems = parallel ? double(v.m) * v.n : a.tiles_m * tm * a.tiles_n * tn;
    a.reduce_bytes = 2.0 * out_elems * v.batch * sk * 4;  // fp32 partials written, then read back
  }
  a.res = estimate_resources(c, p);
  a.smem_per_stage = (tm + tn) * tk * t.in_bytes;
  const double loads = a.tiles_m * a.tiles_n * v.batch * sk * a.smem_per_stage * a.k_tiles_per_split;
  const double out_bytes = double(v.m) * v.n * v.batch * t.out_bytes;
  a.bytes_moved = loads + out_bytes + a.reduce_bytes;
  a.dram_bytes = dram_estimate(t.min_bytes, a.bytes_moved - a.reduce_bytes, t.min_bytes, d) + a.reduce_bytes;
  a.tile_intensity = 2 * tm * tn / ((tm + tn) * t.in_bytes);
  double peak = t.peak_tflops * 1e12;
  if (c.fam() == Family::sm80 && d.wgmma) peak *= kMmaSyncOnWgmmaArch;
  finish(a, t, d, peak, kWarpsToSaturateMma, parallel ? 1 : 0);
  return a;
}

Analysis analyze_dw(const ProblemTerms& t, const KernelConfig& c, const ConvProblem& p, const ArchSpec& d) {
  Analysis a;
  const auto out = p.out();
  const auto& dst = p.dir == ConvDir::bwd_data ? p.in : out;
  const double TH = c.dw_tile_h, TW = c.dw_tile_w, TC = c.dw_tile_c;
  const double th = cdiv(dst[1], TH), tw = cdiv(dst[2], TW);
  const double taps = double(p.filter[0]) * p.filter[1] * p.filter[2];
  a.tiles_m = th * tw * dst[0] * p.n, a.tiles_n = cdiv(p.c, TC), a.tiles_k = taps;
  a.eff_m = double(dst[1]) * dst[2] / (th * TH * tw * TW);
  a.eff_n = p.c / (a.tiles_n * TC);
  a.pad_eff = a.eff_m * a.eff_n;
  try {
    a.ctas = static_cast<double>(family::dw_grid_blocks(p, c));
  } catch (const Error&) {
    a.ctas = 0;  // no kernel for this pair
  }
  if (p.dir == ConvDir::bwd_weight) {
    const double slices = double(p.n) * out[0];
    a.k_tiles_per_split = cdiv(slices, std::min<double>(c.splitk, slices));
    a.splits = cdiv(slices, a.k_tiles_per_split);
    a.split_balance = slices / (a.splits * a.k_tiles_per_split);
    a.reduce_bytes = 2.0 * a.splits * th * tw * p.c * taps * 4;  // partials per (split, tile), then summed
  }
  // The input box a tile reads (halo included) against the input it owns.
  const bool flip = p.dir == ConvDir::bwd_data;
  const double sh = flip ? 1 : p.stride[1], sw = flip ? 1 : p.stride[2];
  const double box_h = (TH - 1) * sh + (p.filter[1] - 1) * p.dilation[1] + 1;
  const double box_w = (TW - 1) * sw + (p.filter[2] - 1) * p.dilation[2] + 1;
  const double box = double(p.filter[0]) * box_h * box_w;
  a.smem_per_stage = box * TC * t.in_bytes;
  const double src_elems = p.dir == ConvDir::bwd_data ? p.y_elems() : p.x_elems();
  const double src_bytes = src_elems * t.in_bytes;
  const double halo_ratio = std::max(1.0, box / (TH * sh * TW * sw));
  a.res = estimate_resources(c, Problem{p});
  a.bytes_moved = t.min_bytes + src_bytes * (halo_ratio - 1) + a.reduce_bytes;
  a.dram_bytes = dram_estimate(t.min_bytes, a.bytes_moved - a.reduce_bytes, src_bytes, d) + a.reduce_bytes;
  a.tile_intensity = 2 * taps * TH * TW / (box * t.in_bytes);
  finish(a, t, d, d.peak_f32_simt * 1e12, kWarpsToSaturateSimt, p.dir == ConvDir::bwd_weight ? 1 : 0);
  return a;
}

}  // namespace

ProblemTerms problem_terms(const Problem& p, const ArchSpec& dev) {
  ProblemTerms t;
  if (const auto* g = std::get_if<GemmProblem>(&p)) {
    t.view = {g->m, g->n, g->k, g->batch};
    t.in = g->a, t.out = g->c;
    t.flops = g->flops(), t.min_bytes = g->min_bytes();
  } else {
    const auto& c = std::get<ConvProblem>(p);
    t.view = c.gemm();
    t.in = c.dir == ConvDir::fwd ? c.x : c.y;
    t.out = c.dir == ConvDir::fwd ? c.y : c.dir == ConvDir::bwd_data ? c.x : c.w;
    t.flops = c.flops(), t.min_bytes = c.min_bytes();
  }
  t.in_bytes = size_bytes(t.in), t.out_bytes = size_bytes(t.out);
  t.max_align = max_alignment(p);
  t.peak_tflops = dev.peak_tflops(t.in);
  t.ridge = dev.ridge_flops_per_byte(t.in);
  return t;
}

Analysis analyze(const Problem& p, const ProblemTerms& t, const KernelConfig& c, const ArchSpec& dev) {
  if (c.direct()) {
    const auto* conv = std::get_if<ConvProblem>(&p);
    // fam=grp has no analytic model yet (a trial family): no estimate, as for a pair that cannot run.
    if (!conv || !conv->depthwise() || c.fam() == Family::grp) {
      Analysis a;  // fam=dw on a non-depthwise problem: nothing runs
      a.pad_eff = 0, a.t_compute_s = a.t_memory_s = a.t_est_s = std::numeric_limits<double>::infinity();
      a.waves = std::numeric_limits<double>::quiet_NaN();
      return a;
    }
    return analyze_dw(t, c, *conv, dev);
  }
  return analyze_igemm(t, c, p, dev);
}

Launches igemm_launches(const Problem& p, const ProblemTerms& t) {
  Launches l;
  l.view = t.view;
  const auto* c = std::get_if<ConvProblem>(&p);
  if (!c || c->dir != ConvDir::bwd_data) return l;
  // Per dimension: phases with dx pixels, and the largest phase's pixels and taps.
  double phases = 1, pix = 1, taps = 1;
  for (int d = 0; d < 3; ++d) {
    const i64 s = c->stride[d];
    i64 n = 0, q_max = 0, taps_max = 0;
    for (i64 ph = 0; ph < s && ph < c->in[d]; ++ph) {
      i64 nt = 0;
      for (i64 z = 0; z < c->filter[d]; ++z) nt += ((ph + c->pad[d] - z * c->dilation[d]) % s + s) % s == 0;
      ++n, q_max = std::max(q_max, (c->in[d] - ph + s - 1) / s), taps_max = std::max(taps_max, nt);
    }
    phases *= double(n), pix *= double(q_max), taps *= double(taps_max);
  }
  if (phases <= 1) return l;
  l.count = phases;
  l.view.m = static_cast<i64>(double(c->n) * pix);
  l.view.k = static_cast<i64>(std::max(1.0, taps) * double(c->k_per_group()));
  return l;
}

Analysis analyze_launch(const Problem& p, const ProblemTerms& t, const Launches& l, const KernelConfig& c,
                        const ArchSpec& dev) {
  ProblemTerms one = t;
  one.view = l.view;
  one.flops = 2.0 * double(l.view.m) * double(l.view.n) * double(l.view.k) * double(l.view.batch);
  one.min_bytes = t.min_bytes / l.count;
  return analyze(p, one, c, dev);
}

}  // namespace tilepick::select
