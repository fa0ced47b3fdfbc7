// sm80 implicit-GEMM grouped convolution: fwd, bwd_data (stride-phase decomposed), bwd_weight;
// 2-D and 3-D; channels-last tensors x[n][d][h][w][g][c], w[g][k][z][y][x][c], y[n][d][h][w][g][k].
// The GEMM mainloop of gemm/sm80_core.cuh, fed by im2col-style tile loaders that gather from the
// tensors with zero fill outside the image. Groups are the batch index of the grid:
// grid (tiles_m * tiles_n * G, splitk, 1).
//
// Cfg adds to sm80_core.cuh: dir (0 fwd, 1 bwd_data, 2 bwd_weight), ndim (2 or 3), pack (packed groups, see
// igemm_params.cuh: then g, c, k of ConvParams count packs and the B loaders zero the other groups' weights),
// overlap (bwd_data stride phases launched to overlap: Launch::overlap_previous).
//   fwd:        A = x gathered   [tile_m pixels][tile_k (tap, c)]   B = w  [tile_n k][tile_k (tap, c)]
//   bwd_data:   A = dy gathered  [tile_m dx pixels][tile_k (tap, k)] B = w [tile_k (tap, k)][tile_n c]
//   bwd_weight: A = dy           [tile_k pixels][tile_m k]          B = x gathered [tile_k pixels][tile_n (tap, c)]
#pragma once
#include "conv/igemm_params.cuh"
#include "gemm/sm80_core.cuh"

namespace tp {

struct Pixel {
  int n, d, h, w;
};

// m -> (n, d, h, w) with w fastest, by the divisors div_pw, div_ph, div_pd.
template <int NDIM> __device__ __forceinline__ Pixel split_pixel(int m, const ConvParams& p) {
  Pixel r;
  const int t = fdiv(m, p.div_pw);
  r.w = m - t * int(p.div_pw.d);
  if (NDIM == 3) {
    const int t2 = fdiv(t, p.div_ph);
    r.h = t - t2 * int(p.div_ph.d);
    r.n = fdiv(t2, p.div_pd);
    r.d = t2 - r.n * int(p.div_pd.d);
  } else {
    r.n = fdiv(t, p.div_ph);
    r.h = t - r.n * int(p.div_ph.d);
    r.d = 0;
  }
  return r;
}

// Filter tap index -> (z, y, x) with x fastest, by div_tx, div_ty.
template <int NDIM> __device__ __forceinline__ void split_tap(int tap, const ConvParams& p, int& z, int& y, int& x) {
  const int t = fdiv(tap, p.div_tx);
  x = tap - t * int(p.div_tx.d);
  if (NDIM == 3) {
    z = fdiv(t, p.div_ty);
    y = t - z * int(p.div_ty.d);
  } else {
    z = 0, y = t;
  }
}

// A of fwd (x) and bwd_data (dy): rows are output pixels (fwd) or dx pixels of the stride phase
// (bwd_data), columns (tap, channel) with the channel fastest. Source coordinate of (row, tap) is
// origin(row) + offset(tap); out-of-image taps are zero-filled.
template <class T, int DIR, int NDIM, int TM, int TK, int VEC, int THREADS> struct ImgRowsLoader {
  typedef TileMap<TM, TK, VEC, sizeof(T), THREADS> Map;
  const ConvParams& p;
  const T* ptr;  // source at group g, channel 0
  int base[Map::ITERS];  // image offset of the row's batch index; -1 = row out of range
  int od[Map::ITERS], oh[Map::ITERS], ow[Map::ITERS];  // origin coordinates

  __device__ ImgRowsLoader(const ConvParams& p_, int g, int m0) : p(p_) {
    const int chan = DIR == 0 ? p.c : p.k;
    const int img = (DIR == 0 ? p.in_d * p.in_h * p.in_w : p.out_d * p.out_h * p.out_w) * p.g * chan;
    ptr = static_cast<const T*>(p.a) + g * chan;
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      const int m = m0 + Map::row(j);
      const Pixel q = split_pixel<NDIM>(m, p);
      base[j] = m < p.gm ? q.n * img : -1;
      if (DIR == 0) od[j] = q.d * p.str_d - p.pad_d, oh[j] = q.h * p.str_h - p.pad_h, ow[j] = q.w * p.str_w - p.pad_w;
      else od[j] = q.d, oh[j] = q.h, ow[j] = q.w;
    }
  }
  __device__ void load(u32 s, int kt) const {
    const int sd = DIR == 0 ? p.in_d : p.out_d, sh = DIR == 0 ? p.in_h : p.out_h, sw = DIR == 0 ? p.in_w : p.out_w;
    const int pix_stride = p.g * int(p.div_ch.d);
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      if (!Map::active(j)) continue;
      const int kk = kt * TK + Map::col(j);  // the same for all j when Map::COL_FIXED
      const int tap = fdiv(kk, p.div_ch), ch = kk - tap * int(p.div_ch.d);
      int tz, ty, tx, dz, dy, dx;
      split_tap<NDIM>(tap, p, tz, ty, tx);
      if (DIR == 0) {
        dz = tz * p.dil_d, dy = ty * p.dil_h, dx = tx * p.dil_w;
      } else {
        dz = NDIM == 3 ? p.doff0_d - tz * p.doffstep_d : 0;  // dy = q + doff0 - j * doffstep
        dy = p.doff0_h - ty * p.doffstep_h;
        dx = p.doff0_w - tx * p.doffstep_w;
      }
      const int id = od[j] + dz, ih = oh[j] + dy, iw = ow[j] + dx;
      const bool ok = base[j] >= 0 && kk < p.gk && unsigned(id) < unsigned(sd) && unsigned(ih) < unsigned(sh) &&
                      unsigned(iw) < unsigned(sw);
      const T* src = ok ? ptr + (base[j] + ((id * sh + ih) * sw + iw) * pix_stride + ch) : ptr;
      cp_async<VEC * int(sizeof(T))>(s + Map::smem(j), src, ok);
    }
  }
};

// Offset of group g's weights in w[G][k][taps][c] (packed: of the pack's first group; c is one group's).
__device__ __forceinline__ long long weights_of(const ConvParams& p, int g) {
  return (long long)g * p.k * p.flt_z * p.flt_y * p.flt_x * (p.c >> p.pack_lp);
}

// B of bwd_data (w): rows (tap of the phase, k) with k fastest, columns c.
template <class T, int NDIM, int TN, int TK, int VEC, int THREADS, bool PACK> struct WeightRowsLoader {
  typedef TileMap<TK, TN, VEC, sizeof(T), THREADS> Map;
  const ConvParams& p;
  const T* ptr;  // w of group g
  int n0;

  __device__ WeightRowsLoader(const ConvParams& p_, int g, int n0_) : p(p_), n0(n0_) {
    ptr = static_cast<const T*>(p.b) + weights_of(p, g);
  }
  __device__ void load(u32 s, int kt) const {
    const int taps = p.flt_z * p.flt_y * p.flt_x;
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      if (!Map::active(j)) continue;
      const int kk = kt * TK + Map::row(j), n = n0 + Map::col(j);
      const int ti = fdiv(kk, p.div_ch), kc = kk - ti * int(p.div_ch.d);
      int tz, ty, tx;
      split_tap<NDIM>(ti, p, tz, ty, tx);
      const int z = NDIM == 3 ? p.tap0_z + tz * p.tapstep_z : 0;
      const int y = p.tap0_y + ty * p.tapstep_y, x = p.tap0_x + tx * p.tapstep_x;
      // Packed groups: rows (tap, kc) and columns n of one group only (block-diagonal, zeros elsewhere).
      const bool ok = kk < p.gk && n < p.gn && (!PACK || (kc >> p.pack_lk) == (n >> p.pack_lc));
      const int cg = PACK ? p.c >> p.pack_lp : p.c, col = PACK ? n & (cg - 1) : n;
      const T* src = ok ? ptr + ((kc * taps + (z * p.flt_y + y) * p.flt_x + x) * cg + col) : ptr;
      cp_async<VEC * int(sizeof(T))>(s + Map::smem(j), src, ok);
    }
  }
};

// B of fwd (w) with packed groups: rows n < P*k of the pack, columns (tap, ch) with ch < P*c fastest;
// block-diagonal: w[group n/k][n%k][tap][ch%c] where ch/c == n/k (the same group), zero elsewhere.
template <class T, int TN, int TK, int VEC, int THREADS> struct PackedWeightColsLoader {
  typedef TileMap<TN, TK, VEC, sizeof(T), THREADS> Map;
  const ConvParams& p;
  const T* ptr;  // w of the pack's first group
  int n0;

  __device__ PackedWeightColsLoader(const ConvParams& p_, int g, int n0_) : p(p_), n0(n0_) {
    ptr = static_cast<const T*>(p.b) + weights_of(p, g);
  }
  __device__ void load(u32 s, int kt) const {
    const int taps = p.flt_z * p.flt_y * p.flt_x, cg = p.c >> p.pack_lp;
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      if (!Map::active(j)) continue;
      const int n = n0 + Map::row(j), kk = kt * TK + Map::col(j);
      const int tap = fdiv(kk, p.div_ch), ch = kk - tap * int(p.div_ch.d);
      const bool ok = n < p.gn && kk < p.gk && (ch >> p.pack_lc) == (n >> p.pack_lk);
      const T* src = ok ? ptr + (((long long)n * taps + tap) * cg + (ch & (cg - 1))) : ptr;
      cp_async<VEC * int(sizeof(T))>(s + Map::smem(j), src, ok);
    }
  }
};

// B of bwd_weight (x): rows output pixels (the GEMM K), columns (tap, c) with c fastest.
template <class T, int NDIM, int TN, int TK, int VEC, int THREADS> struct ImgColsLoader {
  typedef TileMap<TK, TN, VEC, sizeof(T), THREADS> Map;
  const ConvParams& p;
  const T* ptr;  // x at group g, channel 0
  int n0;

  __device__ ImgColsLoader(const ConvParams& p_, int g, int n0_) : p(p_), n0(n0_) {
    ptr = static_cast<const T*>(p.b) + g * p.c;
  }
  __device__ void load(u32 s, int kt) const {
    const int pix_stride = p.g * p.c, img = p.in_d * p.in_h * p.in_w * pix_stride;
#pragma unroll
    for (int j = 0; j < Map::ITERS; ++j) {
      if (!Map::active(j)) continue;
      const int nn = n0 + Map::col(j);  // the same for all j when Map::COL_FIXED
      const int tap = fdiv(nn, p.div_ch), ch = nn - tap * p.c;
      int tz, ty, tx;
      split_tap<NDIM>(tap, p, tz, ty, tx);
      const int kk = kt * TK + Map::row(j);
      const Pixel q = split_pixel<NDIM>(kk, p);
      const int id = q.d * p.str_d - p.pad_d + tz * p.dil_d;
      const int ih = q.h * p.str_h - p.pad_h + ty * p.dil_h, iw = q.w * p.str_w - p.pad_w + tx * p.dil_w;
      const bool ok = nn < p.gn && kk < p.gk && unsigned(id) < unsigned(p.in_d) && unsigned(ih) < unsigned(p.in_h) &&
                      unsigned(iw) < unsigned(p.in_w);
      const T* src = ok ? ptr + (q.n * img + ((id * p.in_h + ih) * p.in_w + iw) * pix_stride + ch) : ptr;
      cp_async<VEC * int(sizeof(T))>(s + Map::smem(j), src, ok);
    }
  }
};

// bwd_data output: row m is dx pixel (n, q * stride + phase) of group g.
template <int NDIM> struct OutDx {
  const ConvParams& p;
  int g;
  static constexpr bool ROW_CONTIG = true, MAPPED = false;
  __device__ long long row(int m) const {
    const Pixel q = split_pixel<NDIM>(m, p);
    const int d = q.d * p.str_d + p.phase_d, h = q.h * p.str_h + p.phase_h, w = q.w * p.str_w + p.phase_w;
    return ((((long long)q.n * p.in_d + d) * p.in_h + h) * p.in_w + w) * p.g * p.c + g * p.c;
  }
  __device__ long long col_stride() const { return 1; }
};

// bwd_weight output with packed groups: row m = (group m / k, k), column n = (tap, ch) with ch < P*c; only the
// blocks on the pack's diagonal (one group in row and column) are outputs: dw[group][m % k][tap][ch % c].
struct OutPackedDw {
  const ConvParams& p;
  long long base;  // dw of the pack's first group
  static constexpr bool ROW_CONTIG = false, MAPPED = true;
  struct Col {
    int off, key;  // (tap, ch % c) offset in a dw row; the column's group
  };
  __device__ long long row(int m) const {
    return base + (long long)m * (p.flt_z * p.flt_y * p.flt_x) * (p.c >> p.pack_lp);
  }
  __device__ int row_key(int m) const { return m >> p.pack_lk; }
  __device__ Col col(int n) const {
    const int tap = fdiv(n, p.div_ch), ch = n - tap * int(p.div_ch.d), cg = p.c >> p.pack_lp;
    return {tap * cg + (ch & (cg - 1)), ch >> p.pack_lc};
  }
};

template <class Cfg> __device__ __forceinline__ void conv_sm80(const ConvParams& p) {
  extern __shared__ __align__(128) unsigned char smem[];
  typedef Sm80Shape<Cfg> S;
  typedef typename Cfg::TA T;
  typedef typename Cfg::TC TC;
  constexpr int TM = Cfg::tile_m, TN = Cfg::tile_n, TK = Cfg::tile_k;

  // Stride phases of bwd_data (Cfg::overlap): the launches write disjoint dx pixels, so the next one may start now;
  // each waits at its end for the one before it, so the last phase's end is the whole plan's. sm_90 and later.
  if constexpr (Cfg::overlap) allow_dependent_launch();
  // Block -> (group, tile_m, tile_n, split-K slice).
  const int tiles = p.tiles_m * p.tiles_n;
  const int g = blockIdx.x / tiles;
  int tm, tn;
  raster_tile<Cfg>(blockIdx.x - g * tiles, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * TM, n0 = tn * TN;
  const int ktiles = (p.gk + TK - 1) / TK, slice = blockIdx.y;
  const int kt0 = int((long long)ktiles * slice / p.splitk), kt1 = int((long long)ktiles * (slice + 1) / p.splitk);

  float acc[S::MI][S::NI][4];
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < S::NI; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;

  EpiArgs e;
  e.d = p.d, e.c = 0, e.workspace = p.workspace, e.slice_stride = p.slice_stride;
  e.bias = p.bias ? static_cast<const TC*>(p.bias) + g * p.k : 0;
  e.alpha = p.alpha, e.beta = 0.f, e.m = p.gm, e.n = p.gn;
  e.splitk = p.splitk, e.slice = slice, e.tile_id = blockIdx.x, e.tiles_total = gridDim.x;

  if (Cfg::dir == 0) {  // y[pixel][g][k] = sum_(tap, c) x[pixel + tap][g][c] w[g][k][tap][c]
    const ImgRowsLoader<T, 0, Cfg::ndim, TM, TK, Cfg::align_a, S::THREADS> la(p, g, m0);
    if constexpr (Cfg::pack) {
      const PackedWeightColsLoader<T, TN, TK, Cfg::align_b, S::THREADS> lb(p, g, n0);
      sm80_mainloop<Cfg>(la, lb, kt0, kt1, acc, smem);
    } else {
      const PlainLoader<T, true, TN, TK, Cfg::align_b, S::THREADS> lb(
          static_cast<const T*>(p.b) + (long long)g * p.k * p.gk, p.gk, p.gn, p.gk, n0);
      sm80_mainloop<Cfg>(la, lb, kt0, kt1, acc, smem);
    }
    sm80_finish<Cfg>(acc, OutRowMajor{(long long)g * p.k, p.g * p.k}, m0, n0, e, smem);
  } else if (Cfg::dir == 1) {  // dx[pixel][g][c] = sum_(tap, k) dy[pixel - tap][g][k] w[g][k][tap][c]
    const ImgRowsLoader<T, 1, Cfg::ndim, TM, TK, Cfg::align_a, S::THREADS> la(p, g, m0);
    const WeightRowsLoader<T, Cfg::ndim, TN, TK, Cfg::align_b, S::THREADS, Cfg::pack> lb(p, g, n0);
    sm80_mainloop<Cfg>(la, lb, kt0, kt1, acc, smem);
    sm80_finish<Cfg>(acc, OutDx<Cfg::ndim>{p, g}, m0, n0, e, smem);
    if constexpr (Cfg::overlap) wait_for_previous_grid();
  } else {  // dw[g][k][tap][c] = sum_pixel dy[pixel][g][k] x[pixel + tap][g][c]
    const PlainLoader<T, false, TM, TK, Cfg::align_a, S::THREADS> la(static_cast<const T*>(p.a) + g * p.k, p.g * p.k,
                                                                    p.gm, p.gk, m0);
    const ImgColsLoader<T, Cfg::ndim, TN, TK, Cfg::align_b, S::THREADS> lb(p, g, n0);
    sm80_mainloop<Cfg>(la, lb, kt0, kt1, acc, smem);
    if constexpr (Cfg::pack)
      sm80_finish<Cfg>(acc, OutPackedDw{p, weights_of(p, g)}, m0, n0, e, smem);
    else
      sm80_finish<Cfg>(acc, OutRowMajor{(long long)g * p.k * p.gn, p.gn}, m0, n0, e, smem);
  }
}

}  // namespace tp
