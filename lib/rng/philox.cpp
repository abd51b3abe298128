// Philox4x32-10 (Salmon et al. 2011; constants and round as Random123's
// philox.h) on many counters at once: the kernel behind philox_blocks, one
// per instruction set.
//
// The vector kernels hold each of the four words of 8 (AVX2) or 16 (AVX-512)
// blocks in one register; the 32x32 -> 64-bit products come from the
// unsigned even-lane multiply (vpmuludq) on the even and the shifted odd
// lanes. GCC's own vectorization of the plain loop uses vpmullq and many
// permutes and runs about 4x slower. All are exact integer code, so every
// kernel gives the scalar block function's words.
//
// Each kernel is compiled for its own instruction set (a target attribute),
// whatever the flags of this file, so the tests can run every kernel the CPU
// has; philox_blocks itself uses the widest one the build targets (chosen at
// build time, like the rest of the code under -march).
#include "rng/stream.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ROUTELAB_X86 1
#else
#define ROUTELAB_X86 0
#endif

namespace routelab {

namespace {

void philox_blocks_scalar(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out) {
  for (std::size_t i = 0; i < nblocks; ++i) {
    const auto r = philox_block(seed, stream, block0 + i);
    for (int j = 0; j < 4; ++j) out[4 * i + j] = r.v[j];
  }
}

#if ROUTELAB_X86

// hi and lo words of m * x for eight 32-bit lanes.
__attribute__((target("avx2"))) inline void mulhilo8(__m256i x, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i pe = _mm256_mul_epu32(x, m);                         // even lanes, 64-bit
  const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);  // odd lanes, 64-bit
  hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
  lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

// The stream's words and the round keys, broadcast to eight lanes.
struct PhiloxKeys8 {
  __m256i c2, c3, ka[10], kb[10];
};

// G groups of 8 blocks, blocks b .. b + 8 G, into out (four words a block).
// The groups' rounds are independent, so G = 2 keeps twice the multiplies in
// flight: about 20% faster than one group at a time on a Zen 5.
template <int G>
__attribute__((target("avx2"))) inline void philox8_groups(const PhiloxKeys8& k, uint64_t b, uint32_t* out) {
  const __m256i m0 = _mm256_set1_epi32(int(kPhiloxMul0)), m1 = _mm256_set1_epi32(int(kPhiloxMul1));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i sign = _mm256_set1_epi32(int(0x80000000u));
  __m256i x0[G], x1[G], x2[G], x3[G];
  for (int g = 0; g < G; ++g) {
    // Counters b + 8 g + lane, 64-bit: the low words, and the high words
    // plus the carry out of the low words (an unsigned x0 < blo, compared
    // signed with the sign bits flipped; true is -1, so subtract it).
    const uint64_t bg = b + 8 * g;
    const __m256i blo = _mm256_set1_epi32(int(uint32_t(bg)));
    x0[g] = _mm256_add_epi32(blo, lane);
    const __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(blo, sign), _mm256_xor_si256(x0[g], sign));
    x1[g] = _mm256_sub_epi32(_mm256_set1_epi32(int(uint32_t(bg >> 32))), carry);
    x2[g] = k.c2;
    x3[g] = k.c3;
  }
  for (int r = 0; r < 10; ++r) {
    for (int g = 0; g < G; ++g) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo8(x0[g], m0, hi0, lo0);
      mulhilo8(x2[g], m1, hi1, lo1);
      x0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, x1[g]), k.ka[r]);
      x2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, x3[g]), k.kb[r]);
      x1[g] = lo1;
      x3[g] = lo0;
    }
  }
  for (int g = 0; g < G; ++g) {
    // Transpose four registers of eight words into eight blocks of four.
    const __m256i t0 = _mm256_unpacklo_epi32(x0[g], x1[g]), t1 = _mm256_unpackhi_epi32(x0[g], x1[g]);
    const __m256i t2 = _mm256_unpacklo_epi32(x2[g], x3[g]), t3 = _mm256_unpackhi_epi32(x2[g], x3[g]);
    // q0 holds blocks 0 and 4 (one per 128-bit lane), q1 1 and 5, q2 2 and 6,
    // q3 3 and 7.
    const __m256i q0 = _mm256_unpacklo_epi64(t0, t2), q1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i q2 = _mm256_unpacklo_epi64(t1, t3), q3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i* o = reinterpret_cast<__m256i*>(out + 32 * g);
    _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(q0, q1, 0x20));  // blocks 0, 1
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(q2, q3, 0x20));  // 2, 3
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(q0, q1, 0x31));  // 4, 5
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(q2, q3, 0x31));  // 6, 7
  }
}

// Whole groups of 8 blocks; returns how many blocks it wrote.
__attribute__((target("avx2"))) std::size_t philox_blocks_avx2(uint64_t seed, uint64_t stream, uint64_t block0,
                                                              std::size_t nblocks, uint32_t* out) {
  PhiloxKeys8 k;
  k.c2 = _mm256_set1_epi32(int(uint32_t(stream)));
  k.c3 = _mm256_set1_epi32(int(uint32_t(stream >> 32)));
  for (int r = 0; r < 10; ++r) {
    k.ka[r] = _mm256_set1_epi32(int(philox_round_key0(seed, r)));
    k.kb[r] = _mm256_set1_epi32(int(philox_round_key1(seed, r)));
  }
  std::size_t i = 0;
  for (; i + 16 <= nblocks; i += 16) philox8_groups<2>(k, block0 + i, out + 4 * i);
  if (i + 8 <= nblocks) {
    philox8_groups<1>(k, block0 + i, out + 4 * i);
    i += 8;
  }
  return i;
}

// hi and lo words of m * x for sixteen 32-bit lanes.
__attribute__((target("avx512f"))) inline void mulhilo16(__m512i x, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i pe = _mm512_mul_epu32(x, m);                         // even lanes, 64-bit
  const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);  // odd lanes, 64-bit
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
  lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

// Whole groups of 16 blocks; returns how many blocks it wrote.
__attribute__((target("avx512f"))) std::size_t philox_blocks_avx512(uint64_t seed, uint64_t stream, uint64_t block0,
                                                                   std::size_t nblocks, uint32_t* out) {
  const __m512i m0 = _mm512_set1_epi32(int(kPhiloxMul0)), m1 = _mm512_set1_epi32(int(kPhiloxMul1));
  const __m512i c2 = _mm512_set1_epi32(int(uint32_t(stream))), c3 = _mm512_set1_epi32(int(uint32_t(stream >> 32)));
  __m512i ka[10], kb[10];
  for (int r = 0; r < 10; ++r) {
    ka[r] = _mm512_set1_epi32(int(philox_round_key0(seed, r)));
    kb[r] = _mm512_set1_epi32(int(philox_round_key1(seed, r)));
  }
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  std::size_t i = 0;
  for (; i + 16 <= nblocks; i += 16) {
    // Counters block0 + i + lane, 64-bit: low words, and high words with the
    // carry out of the low words.
    const uint64_t b = block0 + i;
    const __m512i blo = _mm512_set1_epi32(int(uint32_t(b)));
    __m512i x0 = _mm512_add_epi32(blo, lane);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(x0, blo);
    const __m512i bhi = _mm512_set1_epi32(int(uint32_t(b >> 32)));
    __m512i x1 = _mm512_mask_add_epi32(bhi, carry, bhi, _mm512_set1_epi32(1));
    __m512i x2 = c2, x3 = c3;
    for (int r = 0; r < 10; ++r) {
      __m512i hi0, lo0, hi1, lo1;
      mulhilo16(x0, m0, hi0, lo0);
      mulhilo16(x2, m1, hi1, lo1);
      x0 = _mm512_ternarylogic_epi32(hi1, x1, ka[r], 0x96);  // three-way xor
      x2 = _mm512_ternarylogic_epi32(hi0, x3, kb[r], 0x96);
      x1 = lo1;
      x3 = lo0;
    }
    // Transpose four registers of sixteen words into sixteen blocks of four.
    const __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
    const __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
    const __m512i q0 = _mm512_unpacklo_epi64(t0, t2), q1 = _mm512_unpackhi_epi64(t0, t2);
    const __m512i q2 = _mm512_unpacklo_epi64(t1, t3), q3 = _mm512_unpackhi_epi64(t1, t3);
    // q0 holds blocks 0,4,8,12 (one per 128-bit lane), q1 blocks 1,5,9,13,
    // q2 blocks 2,6,10,14, q3 blocks 3,7,11,15.
    const __m512i a0 = _mm512_shuffle_i32x4(q0, q1, 0x44), a1 = _mm512_shuffle_i32x4(q2, q3, 0x44);
    const __m512i a2 = _mm512_shuffle_i32x4(q0, q1, 0xEE), a3 = _mm512_shuffle_i32x4(q2, q3, 0xEE);
    // a0 = blocks 0,4,1,5; a1 = 2,6,3,7; a2 = 8,12,9,13; a3 = 10,14,11,15.
    uint32_t* o = out + 4 * i;
    _mm512_storeu_si512(o + 0, _mm512_shuffle_i32x4(a0, a1, 0x88));   // blocks 0,1,2,3
    _mm512_storeu_si512(o + 16, _mm512_shuffle_i32x4(a0, a1, 0xDD));  // 4,5,6,7
    _mm512_storeu_si512(o + 32, _mm512_shuffle_i32x4(a2, a3, 0x88));  // 8,9,10,11
    _mm512_storeu_si512(o + 48, _mm512_shuffle_i32x4(a2, a3, 0xDD));  // 12,13,14,15
  }
  return i;
}

#endif  // ROUTELAB_X86

}  // namespace

const char* philox_path_name(PhiloxPath path) {
  switch (path) {
    case PhiloxPath::scalar: return "scalar";
    case PhiloxPath::avx2: return "avx2";
    case PhiloxPath::avx512: return "avx512";
  }
  return "?";
}

PhiloxPath philox_build_path() {
#if defined(__AVX512F__)
  return PhiloxPath::avx512;
#elif defined(__AVX2__)
  return PhiloxPath::avx2;
#else
  return PhiloxPath::scalar;
#endif
}

bool philox_path_runs_here(PhiloxPath path) {
  switch (path) {
    case PhiloxPath::scalar: return true;
#if ROUTELAB_X86
    case PhiloxPath::avx2: return __builtin_cpu_supports("avx2");
    case PhiloxPath::avx512: return __builtin_cpu_supports("avx512f");
#else
    default: return false;
#endif
  }
  return false;
}

void philox_blocks_on(PhiloxPath path, uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks,
                      uint32_t* out) {
  // The vector kernels take whole groups; the blocks left over (fewer than
  // one group) go through the narrower kernels, down to the scalar one.
  std::size_t done = 0;
#if ROUTELAB_X86
  if (path == PhiloxPath::avx512) done += philox_blocks_avx512(seed, stream, block0, nblocks, out);
  if (path == PhiloxPath::avx512 || path == PhiloxPath::avx2)
    done += philox_blocks_avx2(seed, stream, block0 + done, nblocks - done, out + 4 * done);
#endif
  philox_blocks_scalar(seed, stream, block0 + done, nblocks - done, out + 4 * done);
}

void philox_blocks(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out) {
  philox_blocks_on(philox_build_path(), seed, stream, block0, nblocks, out);
}

}  // namespace routelab
