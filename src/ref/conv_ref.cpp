// CPU reference grouped convolution (2-D and 3-D), fp64 accumulation.
//
// One implementation over three spatial axes (d, h, w) serves both ranks: a 2-D problem has depth
// size 1, filter 1, stride 1, pad 0, dilation 1. Along each axis an output position o and filter
// tap t read the input position  i = o*stride - pad + t*dilation  (zero outside [0, in)).
//
// Layouts (channels-last grouped, see ref.hpp):
//   x [N][D][H][W][G][Cg]   w [G][Kg][Z][Y][X][Cg]   y [N][Do][Ho][Wo][G][Kg]   bias [G*Kg]
//
// Every direction is a gather: each output element is summed by one thread in a fixed order, so
// results do not depend on the thread count and there are no write races.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ref/parallel.hpp"
#include "tilepick/error.hpp"
#include "tilepick/ref.hpp"

namespace tilepick::ref {
namespace {

using Idx = std::int64_t;
using Vec3 = std::array<Idx, 3>;

struct Geometry {
  Idx n, g, cg, kg, C, K;
  Vec3 in, out, filter, stride, pad, dil;
  Idx taps;  // Z*Y*X

  explicit Geometry(const ConvProblem& p)
      : n(p.n), g(p.g), cg(p.c_per_group()), kg(p.k_per_group()), C(p.c), K(p.k), in(p.in), out(p.out()),
        filter(p.filter), stride(p.stride), pad(p.pad), dil(p.dilation),
        taps(p.filter[0] * p.filter[1] * p.filter[2]) {}

  // Input position read by output position o and tap t along `axis`; -1 when it is padding.
  Idx input_at(int axis, Idx o, Idx t) const {
    Idx i = o * stride[axis] - pad[axis] + t * dil[axis];
    return (i >= 0 && i < in[axis]) ? i : -1;
  }
  // Output position that reads input position i through tap t along `axis`; -1 when none does.
  Idx output_at(int axis, Idx i, Idx t) const {
    Idx s = i + pad[axis] - t * dil[axis];
    if (s < 0 || s % stride[axis] != 0) return -1;
    Idx o = s / stride[axis];
    return o < out[axis] ? o : -1;
  }
  // Linear pixel indices of x (over N, D, H, W) and y (over N, Do, Ho, Wo).
  Idx x_pixel(Idx b, const Vec3& i) const { return ((b * in[0] + i[0]) * in[1] + i[1]) * in[2] + i[2]; }
  Idx y_pixel(Idx b, const Vec3& o) const { return ((b * out[0] + o[0]) * out[1] + o[1]) * out[2] + o[2]; }
  Idx tap(const Vec3& t) const { return (t[0] * filter[1] + t[1]) * filter[2] + t[2]; }
  // Offsets of the Cg-vector of x at a pixel, of the Cg-vector of w at a tap, and of one y value.
  Idx x_off(Idx px, Idx gi) const { return (px * g + gi) * cg; }
  Idx w_off(Idx gi, Idx ki, Idx t) const { return ((gi * kg + ki) * taps + t) * cg; }
  Idx y_off(Idx py, Idx gi, Idx ki) const { return (py * g + gi) * kg + ki; }
};

}  // namespace

void conv_fwd(const ConvProblem& p, const double* x, const double* w, const double* bias, double* y) {
  if (p.epilogue.bias && bias == nullptr)
    throw Error(Status::internal, "ref::conv_fwd: the epilogue has a bias but the bias pointer is null");
  const Geometry geo(p);
  const Idx rows = geo.n * geo.out[0] * geo.out[1];  // one item = one output row (b, od, oh)

  parallel_for(0, rows, [&](Idx row) {
    const Idx b = row / (geo.out[0] * geo.out[1]);
    Vec3 o{(row / geo.out[1]) % geo.out[0], row % geo.out[1], 0};
    for (o[2] = 0; o[2] < geo.out[2]; ++o[2]) {
      const Idx py = geo.y_pixel(b, o);
      for (Idx gi = 0; gi < geo.g; ++gi)
        for (Idx ki = 0; ki < geo.kg; ++ki) {
          double acc = 0.0;
          Vec3 t, i;
          for (t[0] = 0; t[0] < geo.filter[0]; ++t[0]) {
            if ((i[0] = geo.input_at(0, o[0], t[0])) < 0) continue;
            for (t[1] = 0; t[1] < geo.filter[1]; ++t[1]) {
              if ((i[1] = geo.input_at(1, o[1], t[1])) < 0) continue;
              for (t[2] = 0; t[2] < geo.filter[2]; ++t[2]) {
                if ((i[2] = geo.input_at(2, o[2], t[2])) < 0) continue;
                const double* xv = x + geo.x_off(geo.x_pixel(b, i), gi);
                const double* wv = w + geo.w_off(gi, ki, geo.tap(t));
                for (Idx c = 0; c < geo.cg; ++c) acc += xv[c] * wv[c];
              }
            }
          }
          if (p.epilogue.bias) acc += bias[gi * geo.kg + ki];
          y[geo.y_off(py, gi, ki)] = apply_activation(p.epilogue.act, acc);
        }
    }
  }, grain_for(geo.out[2] * geo.K * geo.cg * geo.taps));
}

void conv_bwd_data(const ConvProblem& p, const double* dy, const double* w, double* dx) {
  const Geometry geo(p);
  const Idx rows = geo.n * geo.in[0] * geo.in[1];  // one item = one input row (b, id, ih)

  parallel_for(0, rows, [&](Idx row) {
    const Idx b = row / (geo.in[0] * geo.in[1]);
    Vec3 i{(row / geo.in[1]) % geo.in[0], row % geo.in[1], 0};
    std::vector<double> acc(static_cast<std::size_t>(geo.cg));
    for (i[2] = 0; i[2] < geo.in[2]; ++i[2]) {
      const Idx px = geo.x_pixel(b, i);
      for (Idx gi = 0; gi < geo.g; ++gi) {
        std::fill(acc.begin(), acc.end(), 0.0);
        Vec3 t, o;
        for (t[0] = 0; t[0] < geo.filter[0]; ++t[0]) {
          if ((o[0] = geo.output_at(0, i[0], t[0])) < 0) continue;
          for (t[1] = 0; t[1] < geo.filter[1]; ++t[1]) {
            if ((o[1] = geo.output_at(1, i[1], t[1])) < 0) continue;
            for (t[2] = 0; t[2] < geo.filter[2]; ++t[2]) {
              if ((o[2] = geo.output_at(2, i[2], t[2])) < 0) continue;
              const Idx py = geo.y_pixel(b, o), tap = geo.tap(t);
              for (Idx ki = 0; ki < geo.kg; ++ki) {
                const double d = dy[geo.y_off(py, gi, ki)];
                const double* wv = w + geo.w_off(gi, ki, tap);
                for (Idx c = 0; c < geo.cg; ++c) acc[c] += d * wv[c];
              }
            }
          }
        }
        double* out = dx + geo.x_off(px, gi);
        for (Idx c = 0; c < geo.cg; ++c) out[c] = acc[c];
      }
    }
  }, grain_for(geo.in[2] * geo.C * geo.kg * geo.taps));
}

void conv_bwd_weight(const ConvProblem& p, const double* x, const double* dy, double* dw) {
  const Geometry geo(p);
  const Idx out_pixels = geo.n * geo.out[0] * geo.out[1] * geo.out[2];

  // One item = one filter tap of one (g, kg): Cg outputs summed over every output pixel.
  parallel_for(0, geo.g * geo.kg * geo.taps, [&](Idx item) {
    const Idx gi = item / (geo.kg * geo.taps), ki = (item / geo.taps) % geo.kg, tap = item % geo.taps;
    const Idx fy = geo.filter[1], fx = geo.filter[2];
    const Vec3 t{tap / (fy * fx), (tap / fx) % fy, tap % fx};
    std::vector<double> acc(static_cast<std::size_t>(geo.cg), 0.0);
    for (Idx b = 0; b < geo.n; ++b) {
      Vec3 o, i;
      for (o[0] = 0; o[0] < geo.out[0]; ++o[0]) {
        if ((i[0] = geo.input_at(0, o[0], t[0])) < 0) continue;
        for (o[1] = 0; o[1] < geo.out[1]; ++o[1]) {
          if ((i[1] = geo.input_at(1, o[1], t[1])) < 0) continue;
          for (o[2] = 0; o[2] < geo.out[2]; ++o[2]) {
            if ((i[2] = geo.input_at(2, o[2], t[2])) < 0) continue;
            const double d = dy[geo.y_off(geo.y_pixel(b, o), gi, ki)];
            const double* xv = x + geo.x_off(geo.x_pixel(b, i), gi);
            for (Idx c = 0; c < geo.cg; ++c) acc[c] += d * xv[c];
          }
        }
      }
    }
    double* out = dw + geo.w_off(gi, ki, tap);
    for (Idx c = 0; c < geo.cg; ++c) out[c] = acc[c];
  }, grain_for(geo.cg * out_pixels));
}

}  // namespace tilepick::ref
