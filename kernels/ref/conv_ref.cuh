// Reference grouped convolution in fp64 (2-D and 3-D), inputs read in their dtypes.
// One thread per output element (grid-stride); each sums its reduction directly, in the order of
// the CPU reference (src/ref/conv_ref.cpp), so results match it bit for bit up to the epilogue;
// bwd_weight splits a long reduction over few outputs into runs (below), which matches it to rounding.
// Along each axis an output position o and filter tap t read input position
//   i = o * stride - pad + t * dilation   (zero outside [0, in)).
// Consecutive threads take consecutive innermost channels, so one operand of each product is a
// warp-wide broadcast and the other is read contiguously (or from cache).
#pragma once
#include "ref/common.cuh"

namespace tp {
namespace refk {

struct ConvGeo {
  const RefConvParams& p;
  __device__ i64 taps() const { return p.filter[0] * p.filter[1] * p.filter[2]; }
  __device__ i64 input_at(int axis, i64 o, i64 t) const {
    const i64 i = o * p.stride[axis] - p.pad[axis] + t * p.dil[axis];
    return (i >= 0 && i < p.in[axis]) ? i : -1;
  }
  __device__ i64 output_at(int axis, i64 i, i64 t) const {
    const i64 s = i + p.pad[axis] - t * p.dil[axis];
    if (s < 0 || s % p.stride[axis] != 0) return -1;
    const i64 o = s / p.stride[axis];
    return o < p.out[axis] ? o : -1;
  }
  __device__ i64 x_pixel(i64 b, i64 d, i64 h, i64 w) const { return ((b * p.in[0] + d) * p.in[1] + h) * p.in[2] + w; }
  __device__ i64 y_pixel(i64 b, i64 d, i64 h, i64 w) const {
    return ((b * p.out[0] + d) * p.out[1] + h) * p.out[2] + w;
  }
  __device__ i64 tap(i64 z, i64 y, i64 x) const { return (z * p.filter[1] + y) * p.filter[2] + x; }
  __device__ i64 x_off(i64 px, i64 gi) const { return (px * p.g + gi) * p.cg; }
  __device__ i64 w_off(i64 gi, i64 ki, i64 t) const { return ((gi * p.kg + ki) * taps() + t) * p.cg; }
  __device__ i64 y_off(i64 py, i64 gi, i64 ki) const { return (py * p.g + gi) * p.kg + ki; }
};

// y[b, od, oh, ow, g, k] = act(sum over taps, c of x * w + bias)
template <class Cfg> __device__ void conv_fwd_ref(const RefConvParams& p) {
  const ConvGeo geo{p};
  for (i64 idx = blockIdx.x * (i64)Cfg::threads + threadIdx.x; idx < p.total; idx += (i64)gridDim.x * Cfg::threads) {
    i64 r = idx;
    const i64 ki = r % p.kg; r /= p.kg;
    const i64 gi = r % p.g; r /= p.g;
    const i64 o2 = r % p.out[2]; r /= p.out[2];
    const i64 o1 = r % p.out[1]; r /= p.out[1];
    const i64 o0 = r % p.out[0];
    const i64 b = r / p.out[0];
    double acc = 0.0;
    for (i64 t0 = 0; t0 < p.filter[0]; ++t0) {
      const i64 i0 = geo.input_at(0, o0, t0);
      if (i0 < 0) continue;
      for (i64 t1 = 0; t1 < p.filter[1]; ++t1) {
        const i64 i1 = geo.input_at(1, o1, t1);
        if (i1 < 0) continue;
        for (i64 t2 = 0; t2 < p.filter[2]; ++t2) {
          const i64 i2 = geo.input_at(2, o2, t2);
          if (i2 < 0) continue;
          const i64 xo = geo.x_off(geo.x_pixel(b, i0, i1, i2), gi), wo = geo.w_off(gi, ki, geo.tap(t0, t1, t2));
          for (i64 c = 0; c < p.cg; ++c) acc = fma(load<Cfg::tx>(p.src0, xo + c), load<Cfg::tw>(p.src1, wo + c), acc);
        }
      }
    }
    if (Cfg::has_bias) acc = __dadd_rn(acc, load<Cfg::ty>(p.bias, gi * p.kg + ki));
    p.dst[idx] = activate<Cfg::act>(acc);
  }
}

// dx[b, id, ih, iw, g, c] = sum over taps (outer), k (inner) of dy * w
template <class Cfg> __device__ void conv_bwd_data_ref(const RefConvParams& p) {
  const ConvGeo geo{p};
  for (i64 idx = blockIdx.x * (i64)Cfg::threads + threadIdx.x; idx < p.total; idx += (i64)gridDim.x * Cfg::threads) {
    i64 r = idx;
    const i64 c = r % p.cg; r /= p.cg;
    const i64 gi = r % p.g; r /= p.g;
    const i64 i2 = r % p.in[2]; r /= p.in[2];
    const i64 i1 = r % p.in[1]; r /= p.in[1];
    const i64 i0 = r % p.in[0];
    const i64 b = r / p.in[0];
    double acc = 0.0;
    for (i64 t0 = 0; t0 < p.filter[0]; ++t0) {
      const i64 o0 = geo.output_at(0, i0, t0);
      if (o0 < 0) continue;
      for (i64 t1 = 0; t1 < p.filter[1]; ++t1) {
        const i64 o1 = geo.output_at(1, i1, t1);
        if (o1 < 0) continue;
        for (i64 t2 = 0; t2 < p.filter[2]; ++t2) {
          const i64 o2 = geo.output_at(2, i2, t2);
          if (o2 < 0) continue;
          const i64 yo = geo.y_off(geo.y_pixel(b, o0, o1, o2), gi, 0), wo = geo.w_off(gi, 0, geo.tap(t0, t1, t2)) + c;
          const i64 w_step = geo.taps() * p.cg;
          for (i64 ki = 0; ki < p.kg; ++ki)
            acc = fma(load<Cfg::ty>(p.src0, yo + ki), load<Cfg::tw>(p.src1, wo + ki * w_step), acc);
        }
      }
    }
    p.dst[idx] = acc;
  }
}

// Output `out` of bwd_weight, dw[g][k][z][y][x][c]: its group, filter, tap (z, y, x) and channel.
struct WeightIndex {
  i64 c, ki, gi, t0, t1, t2;
  __device__ WeightIndex(const RefConvParams& p, const ConvGeo& geo, i64 out) {
    c = out % p.cg, out /= p.cg;
    const i64 tap = out % geo.taps();
    out /= geo.taps();
    ki = out % p.kg, gi = out / p.kg;
    t0 = tap / (p.filter[1] * p.filter[2]), t1 = (tap / p.filter[2]) % p.filter[1], t2 = tap % p.filter[2];
  }
};

// dw[g, k, z, y, x, c] = sum over b, od, oh, ow (in order) of dy * x
template <class Cfg> __device__ void conv_bwd_weight_ref(const RefConvParams& p) {
  const ConvGeo geo{p};
  for (i64 idx = blockIdx.x * (i64)Cfg::threads + threadIdx.x; idx < p.total; idx += (i64)gridDim.x * Cfg::threads) {
    const WeightIndex w(p, geo, idx);
    const i64 c = w.c, ki = w.ki, gi = w.gi, t0 = w.t0, t1 = w.t1, t2 = w.t2;
    double acc = 0.0;
    for (i64 b = 0; b < p.n; ++b)
      for (i64 o0 = 0; o0 < p.out[0]; ++o0) {
        const i64 i0 = geo.input_at(0, o0, t0);
        if (i0 < 0) continue;
        for (i64 o1 = 0; o1 < p.out[1]; ++o1) {
          const i64 i1 = geo.input_at(1, o1, t1);
          if (i1 < 0) continue;
          for (i64 o2 = 0; o2 < p.out[2]; ++o2) {
            const i64 i2 = geo.input_at(2, o2, t2);
            if (i2 < 0) continue;
            const double d = load<Cfg::ty>(p.src1, geo.y_off(geo.y_pixel(b, o0, o1, o2), gi, ki));
            acc = fma(d, load<Cfg::tx>(p.src0, geo.x_off(geo.x_pixel(b, i0, i1, i2), gi) + c), acc);
          }
        }
      }
    p.dst[idx] = acc;
  }
}

// conv_bwd_weight_ref for a long reduction over few outputs: the output pixels go in p.runs runs of
// p.run_pixels (the last one shorter); thread (run, output) sums its run in order into p.partials[run][output],
// then conv_bwd_weight_sum_ref adds the runs in order: the same result for a given problem on every GPU.
template <class Cfg> __device__ void conv_bwd_weight_runs_ref(const RefConvParams& p) {
  const ConvGeo geo{p};
  const i64 pixels = p.n * p.out[0] * p.out[1] * p.out[2];
  for (i64 idx = blockIdx.x * (i64)Cfg::threads + threadIdx.x; idx < p.total * p.runs;
       idx += (i64)gridDim.x * Cfg::threads) {
    const i64 out = idx % p.total, run = idx / p.total;
    const WeightIndex w(p, geo, out);
    const i64 c = w.c, ki = w.ki, gi = w.gi, t0 = w.t0, t1 = w.t1, t2 = w.t2;
    const i64 begin = run * p.run_pixels, end = begin + p.run_pixels < pixels ? begin + p.run_pixels : pixels;
    i64 q = begin;  // the first pixel's (b, o0, o1, first o2); then row by row
    i64 first = q % p.out[2]; q /= p.out[2];
    i64 o1 = q % p.out[1]; q /= p.out[1];
    i64 o0 = q % p.out[0];
    i64 b = q / p.out[0];
    double acc = 0.0;
    for (i64 row = begin; row < end;) {  // the part of output row (b, o0, o1) in [begin, end), pixels in order
      const i64 stop = row - first + p.out[2] < end ? row - first + p.out[2] : end;
      const i64 i0 = geo.input_at(0, o0, t0), i1 = geo.input_at(1, o1, t1);
      if (i0 >= 0 && i1 >= 0)
        for (i64 px = row, o2 = first; px < stop; ++px, ++o2) {
          const i64 i2 = geo.input_at(2, o2, t2);
          if (i2 < 0) continue;
          const double d = load<Cfg::ty>(p.src1, geo.y_off(px, gi, ki));  // px = y_pixel(b, o0, o1, o2)
          acc = fma(d, load<Cfg::tx>(p.src0, geo.x_off(geo.x_pixel(b, i0, i1, i2), gi) + c), acc);
        }
      row = stop, first = 0;
      if (++o1 == p.out[1]) {
        o1 = 0;
        if (++o0 == p.out[0]) o0 = 0, ++b;
      }
    }
    p.partials[idx] = acc;
  }
}

// The runs' sums of conv_bwd_weight_runs_ref, added in run order.
template <class Cfg> __device__ void conv_bwd_weight_sum_ref(const RefConvParams& p) {
  for (i64 out = blockIdx.x * (i64)Cfg::threads + threadIdx.x; out < p.total; out += (i64)gridDim.x * Cfg::threads) {
    double acc = 0.0;
    for (i64 run = 0; run < p.runs; ++run) acc += p.partials[run * p.total + out];
    p.dst[out] = acc;
  }
}

}  // namespace refk
}  // namespace tp
