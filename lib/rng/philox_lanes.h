// Philox with one block per 64-bit lane of a zmm register, for two kinds of
// kernel: consecutive blocks of one stream (philox.cpp's AVX-512 words and
// uniforms) and streams side by side (PhiloxLanes: lane w of a register
// draws from Stream(seed, stream0 + w), every lane at the same block counter,
// for kernels that run many short walks at once, their streams consecutive
// sample ids). The same words as philox_block, so the same uniforms as
// Stream::uniform.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rng/stream.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace routelab {

#if defined(__x86_64__) || defined(__i386__)
// Compiled for AVX-512F whatever the build's flags (a target attribute), so
// philox.cpp's kernel exists in every x86 build and the tests can run it on
// any CPU that has the instructions.
#define ROUTELAB_AVX512F __attribute__((target("avx512f")))
#define ROUTELAB_AVX512DQ __attribute__((target("avx512f,avx512dq")))

// The round keys of a seed, each broadcast to every 32-bit lane.
struct PhiloxLaneKeys {
  __m512i ka[10], kb[10];
};
ROUTELAB_AVX512F inline void philox_lane_keys(uint64_t seed, PhiloxLaneKeys& k) {
  for (int r = 0; r < 10; ++r) {
    k.ka[r] = _mm512_set1_epi32(int(philox_round_key0(seed, r)));
    k.kb[r] = _mm512_set1_epi32(int(philox_round_key1(seed, r)));
  }
}

// Philox4x32-10's ten rounds (Salmon et al. 2011) as philox_block computes
// them, on G registers of eight blocks, word j of each block in the low half
// of its lane of x_j. vpmuludq gives the whole 64-bit product of the low
// words, hi = product >> 32 and lo = the product itself (its upper half is
// junk that only ever meets another vpmuludq or a xor whose upper half is junk
// too), so a round is two multiplies, two shifts and two three-way xors with
// no blends: 25% fewer instructions than sixteen blocks in 32-bit lanes,
// whose products need the odd lanes shifted and both halves blended back.
// G registers at once so that their independent rounds interleave.
template <int G>
ROUTELAB_AVX512F inline void philox_lane_rounds(const PhiloxLaneKeys& k, __m512i* x0, __m512i* x1, __m512i* x2,
                                                __m512i* x3) {
  const __m512i m0 = _mm512_set1_epi64(kPhiloxMul0), m1 = _mm512_set1_epi64(kPhiloxMul1);
  for (int r = 0; r < 10; ++r)
    for (int g = 0; g < G; ++g) {
      const __m512i p0 = _mm512_mul_epu32(x0[g], m0), p1 = _mm512_mul_epu32(x2[g], m1);
      x0[g] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p1, 32), x1[g], k.ka[r], 0x96);  // three-way xor
      x2[g] = _mm512_ternarylogic_epi32(_mm512_srli_epi64(p0, 32), x3[g], k.kb[r], 0x96);
      x1[g] = p1;
      x3[g] = p0;
    }
}

// lo | hi << 32 from the low words of two lanes' registers: a block's words
// 0 and 1 (or 2 and 3) as one 64-bit number, as Stream::next_u64 forms it.
ROUTELAB_AVX512F inline __m512i philox_lane_u64(__m512i lo, __m512i hi) {
  return _mm512_mask_shuffle_epi32(lo, 0xAAAA, hi, _MM_PERM_CCAA);  // hi's low word up
}

// 2^53 u01_open(bits): the 53 bits plus one half, rounded as u01_open rounds
// it; a caller folds the 2^-53 into its next product, which is exact.
ROUTELAB_AVX512DQ inline __m512d philox_lane_u01_scaled(__m512i bits) {
  return _mm512_add_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(bits, 11)), _mm512_set1_pd(0.5));
}
#endif

#if defined(__AVX512F__)
// Eight streams a register, every lane at the same block counter.
struct PhiloxLanes {
  __m512i stream, stream_hi;
  PhiloxLaneKeys keys;
  PhiloxLanes(uint64_t seed, uint64_t stream0)
      : stream(_mm512_add_epi64(_mm512_set1_epi64((long long)stream0), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7))),
        stream_hi(_mm512_maskz_srli_epi64(0xFF, stream, 32)) {  // maskz: GCC 12 warns on the plain form here
    philox_lane_keys(seed, keys);
  }
  // Blocks `block` .. `block + kBlocks - 1` of every lane's stream: block
  // j's uniforms 2j (words 0, 1) and 2j + 1 (words 2, 3), as Stream::uniform
  // makes them but times 2^53 (see philox_lane_u01_scaled), in
  // u[2 (j - block)] and u[2 (j - block) + 1].
  template <int kBlocks>
  void uniforms(uint64_t block, __m512d* u) const {
    __m512i x0[kBlocks], x1[kBlocks], x2[kBlocks], x3[kBlocks];
    for (int i = 0; i < kBlocks; ++i) {
      x0[i] = _mm512_set1_epi32(int(uint32_t(block + i)));
      x1[i] = _mm512_set1_epi32(int(uint32_t((block + i) >> 32)));
      x2[i] = stream;
      x3[i] = stream_hi;
    }
    philox_lane_rounds<kBlocks>(keys, x0, x1, x2, x3);
    for (int i = 0; i < kBlocks; ++i) {
      u[2 * i] = philox_lane_u01_scaled(philox_lane_u64(x0[i], x1[i]));
      u[2 * i + 1] = philox_lane_u01_scaled(philox_lane_u64(x2[i], x3[i]));
    }
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
