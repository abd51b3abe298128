// Philox streams side by side: lane w of a register draws from
// Stream(seed, stream0 + w), every lane at the same block counter, for
// kernels that run many short walks at once (their streams are consecutive
// sample ids). The same words as philox_block, so the same uniforms as
// Stream::uniform.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rng/stream.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace routelab {

#if defined(__AVX512F__)
// Eight streams a register. Philox4x32-10 (Salmon et al. 2011) as philox_block
// computes it, but with one block per 64-bit lane instead of sixteen per
// 32-bit lanes: vpmuludq then gives the whole 64-bit product of the low words,
// hi = product >> 32 and lo = the product itself (its upper half is junk that
// only ever meets another vpmuludq or a xor whose upper half is junk too), so
// a round is two multiplies, two shifts and two xors with no blends.
struct PhiloxLanes {
  __m512i m0 = _mm512_set1_epi64(kPhiloxMul0), m1 = _mm512_set1_epi64(kPhiloxMul1);
  __m512i stream, stream_hi, ka[10], kb[10];
  PhiloxLanes(uint64_t seed, uint64_t stream0)
      : stream(_mm512_add_epi64(_mm512_set1_epi64((long long)stream0), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7))),
        stream_hi(_mm512_maskz_srli_epi64(0xFF, stream, 32)) {  // maskz: GCC 12 warns on the plain form here
    for (int r = 0; r < 10; ++r) {
      ka[r] = _mm512_set1_epi32(int(philox_round_key0(seed, r)));
      kb[r] = _mm512_set1_epi32(int(philox_round_key1(seed, r)));
    }
  }
  // Blocks `block` .. `block + kBlocks - 1` of every lane's stream: block
  // j's uniforms 2j (words 0, 1) and 2j + 1 (words 2, 3), as Stream::uniform
  // makes them but times 2^53 (see u01), in u[2 (j - block)] and
  // u[2 (j - block) + 1]. Several blocks at once so their independent rounds
  // interleave.
  template <int kBlocks>
  void uniforms(uint64_t block, __m512d* u) const {
    __m512i x0[kBlocks], x1[kBlocks], x2[kBlocks], x3[kBlocks];
    for (int i = 0; i < kBlocks; ++i) {
      x0[i] = _mm512_set1_epi32(int(uint32_t(block + i)));
      x1[i] = _mm512_set1_epi32(int(uint32_t((block + i) >> 32)));
      x2[i] = stream;
      x3[i] = stream_hi;
    }
    for (int r = 0; r < 10; ++r)
      for (int i = 0; i < kBlocks; ++i) {
        const __m512i p0 = _mm512_mul_epu32(x0[i], m0), p1 = _mm512_mul_epu32(x2[i], m1);
        x0[i] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p1, 32), x1[i], ka[r], 0x96);  // three-way xor
        x2[i] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p0, 32), x3[i], kb[r], 0x96);
        x1[i] = p1;
        x3[i] = p0;
      }
    for (int i = 0; i < kBlocks; ++i) {
      u[2 * i] = u01(x0[i], x1[i]);
      u[2 * i + 1] = u01(x2[i], x3[i]);
    }
  }
  // 2^53 u01_open of (hi << 32 | lo), the low words of two lanes'
  // registers: the 53 bits plus one half, exact; a caller folds the 2^-53
  // into its next product, which is exact too.
  static __m512d u01(__m512i lo, __m512i hi) {
    const __m512i bits = _mm512_mask_shuffle_epi32(lo, 0xAAAA, hi, _MM_PERM_CCAA);  // hi's low word up
    return _mm512_add_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(bits, 11)), _mm512_set1_pd(0.5));
  }
};

#endif

// out[w * n + k] = the k-th uniform() of Stream(seed, stream0 + w), for
// w < streams and k < n.
inline void uniforms_of_streams(uint64_t seed, uint64_t stream0, long long streams, int n, double* out) {
  long long w0 = 0;
#if defined(__AVX512F__)
  for (; w0 + 8 <= streams; w0 += 8) {
    const PhiloxLanes gen(seed, stream0 + uint64_t(w0));
    alignas(64) double lanes[2][8];
    for (int k = 0; k < n; k += 2) {
      __m512d u[2];
      gen.uniforms<1>(uint64_t(k / 2), u);
      for (int i = 0; i < 2; ++i) _mm512_store_pd(lanes[i], _mm512_mul_pd(u[i], _mm512_set1_pd(0x1.0p-53)));
      for (int w = 0; w < 8; ++w) {
        out[std::size_t(w0 + w) * n + k] = lanes[0][w];
        if (k + 1 < n) out[std::size_t(w0 + w) * n + k + 1] = lanes[1][w];
      }
    }
  }
#endif
  for (; w0 < streams; ++w0) {
    Stream s(seed, stream0 + uint64_t(w0));
    s.uniforms(out + std::size_t(w0) * n, std::size_t(n));
  }
}

}  // namespace routelab
