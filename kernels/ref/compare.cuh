// compare: the error of a kernel's output (in its dtype) against the fp64 reference, reduced on the
// GPU in a fixed order (deterministic for a given n: the grid depends on n only).
//   compare_partial  block b sums its grid-stride share: sum (o-r)^2, sum r^2, max |o-r|, max |r|,
//                    NaN/Inf outputs (left out of the sums) -> partials[b]
//   compare_final    one block sums partials[0 .. blocks) -> partials[blocks]
#pragma once
#include "ref/common.cuh"

namespace tp {
namespace refk {

// Tree reduction of one RefCompareSums per thread over a block of Threads threads (fixed order).
template <int Threads> __device__ __forceinline__ RefCompareSums block_reduce(RefCompareSums s) {
  __shared__ RefCompareSums smem[Threads];
  smem[threadIdx.x] = s;
  __syncthreads();
  for (int half = Threads / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half) {
      RefCompareSums& a = smem[threadIdx.x];
      const RefCompareSums& b = smem[threadIdx.x + half];
      a.err2 += b.err2;
      a.ref2 += b.ref2;
      a.max_err = fmax(a.max_err, b.max_err);
      a.max_ref = fmax(a.max_ref, b.max_ref);
      a.nonfinite += b.nonfinite;
      a.count += b.count;
    }
    __syncthreads();
  }
  return smem[0];
}

template <class Cfg> __device__ void compare_partial(const RefCompareParams& p) {
  RefCompareSums s = {0, 0, 0, 0, 0, 0};
  for (i64 i = blockIdx.x * (i64)Cfg::threads + threadIdx.x; i < p.n; i += (i64)gridDim.x * Cfg::threads) {
    const double o = load<Cfg::dtype>(p.out, i), r = p.ref[i];
    ++s.count;
    if (!(fabs(o) <= 1.7976931348623157e308)) {  // NaN or Inf
      ++s.nonfinite;
      continue;
    }
    const double e = o - r;
    s.err2 += e * e;
    s.ref2 += r * r;
    s.max_err = fmax(s.max_err, fabs(e));
    s.max_ref = fmax(s.max_ref, fabs(r));
  }
  s = block_reduce<Cfg::threads>(s);
  if (threadIdx.x == 0) p.partials[blockIdx.x] = s;
}

template <class Cfg> __device__ void compare_final(const RefCompareParams& p) {
  RefCompareSums s = {0, 0, 0, 0, 0, 0};
  for (int b = threadIdx.x; b < p.blocks; b += Cfg::threads) {
    const RefCompareSums q = p.partials[b];
    s.err2 += q.err2;
    s.ref2 += q.ref2;
    s.max_err = fmax(s.max_err, q.max_err);
    s.max_ref = fmax(s.max_ref, q.max_ref);
    s.nonfinite += q.nonfinite;
    s.count += q.count;
  }
  s = block_reduce<Cfg::threads>(s);
  if (threadIdx.x == 0) p.partials[p.blocks] = s;
}

}  // namespace refk
}  // namespace tp
