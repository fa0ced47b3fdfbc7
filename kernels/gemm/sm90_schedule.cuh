// The sm90 stream-K schedule (gemm/sm90.cuh, Sm90StreamK): which k-tiles of which tiles each CTA runs.
// Plain arithmetic, compiled for the device by NVRTC and for the host by the tests (tests/test_family_sm90.cpp
// checks every k-tile is run once and every partial sum is gathered by its tile's owner).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TP_SCHEDULE_FN __host__ __device__ __forceinline__
#else
#define TP_SCHEDULE_FN inline
#endif

namespace tp {

// Whole waves of tiles run data-parallel (tile = c, c + G, ...); the tiles of the last partial wave
// (all tiles when there are fewer than G) are split by K: the first min(G, tiles x splitk, their
// k-tiles) CTAs take even shares [begin(c), begin(c + 1)) of those tiles' k-tiles, in tile order.
struct Sm90SkSchedule {
  int first;               // first split tile: the tiles before it run data-parallel
  int ctas, share, extra;  // CTAs splitting; the first `extra` take share + 1 k-tiles, the others share

  // tiles, ktiles and splitk of the problem (tiles x ktiles < 2^31: the plan checks), G CTAs.
  TP_SCHEDULE_FN Sm90SkSchedule(int tiles, int ktiles, int splitk, int g) {
    first = ktiles == 0 ? tiles : tiles - tiles % g;  // no k-tiles (a stride phase no tap reaches): epilogues only
    const int split = tiles - first, total = split * ktiles;
    ctas = g < split * splitk ? g : split * splitk;
    ctas = ctas < total ? ctas : total;
    share = ctas > 0 ? total / ctas : 0, extra = ctas > 0 ? total % ctas : 0;
  }
  // Position (k-tiles from the first split tile's start) where CTA c's share begins; c <= ctas.
  TP_SCHEDULE_FN int begin(int c) const { return c * share + (c < extra ? c : extra); }

  // Calls f(tile, kt0, kt1) for each piece of CTA c's work, in order: its data-parallel tiles, then
  // its share of the split tiles. A share starts inside a tile (kt0 > 0) at most once, in its first piece.
  template <class F> TP_SCHEDULE_FN void for_each_piece(int c, int g, int ktiles, F&& f) const {
    for (int tile = c; tile < first; tile += g) f(tile, 0, ktiles);
    if (c >= ctas) return;
    for (int pos = begin(c), end = begin(c + 1); pos < end;) {
      const int t = pos / ktiles, kt0 = pos - t * ktiles;
      const int kt1 = ktiles < kt0 + (end - pos) ? ktiles : kt0 + (end - pos);
      f(first + t, kt0, kt1);
      pos += kt1 - kt0;
    }
  }
  // The owner of a split tile (the CTA whose piece has kt0 == 0 and ends before ktiles) adds the
  // partial sums of CTAs c + 1, c + 2, ... while this holds for them (in K order).
  TP_SCHEDULE_FN bool contributes(int c2, int tile, int ktiles) const {
    return c2 < ctas && begin(c2) < (tile - first + 1) * ktiles;
  }
};

}  // namespace tp

#undef TP_SCHEDULE_FN
