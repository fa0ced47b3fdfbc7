// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, so every element's random bits depend only on (seed, index) and any
// thread can produce any element. Integer-only; compiles on the host too (define TP_HD first).
#pragma once

#ifndef TP_HD
#define TP_HD __device__ __forceinline__
#endif

namespace tp {
namespace refnum {

struct Philox4 {
  unsigned int v[4];
};

// Ten rounds of Philox4x32 on `counter` under `key` (k0, k1).
TP_HD Philox4 philox4x32_10(Philox4 ctr, unsigned int k0, unsigned int k1) {
  const unsigned int m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // round multipliers
  const unsigned int w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = (unsigned long long)m0 * ctr.v[0];
    const unsigned long long p1 = (unsigned long long)m1 * ctr.v[2];
    Philox4 next;
    next.v[0] = (unsigned int)(p1 >> 32) ^ ctr.v[1] ^ k0;
    next.v[1] = (unsigned int)p1;
    next.v[2] = (unsigned int)(p0 >> 32) ^ ctr.v[3] ^ k1;
    next.v[3] = (unsigned int)p0;
    ctr = next;
    k0 += w0;
    k1 += w1;
  }
  return ctr;
}

}  // namespace refnum
}  // namespace tp
