// Batch kernels behind Stream::u32s, uniforms and normals: Philox4x32-10 on
// many counters at once, and Box-Muller with glibc's vector log (libmvec).
//
// This file is a *_vec.cpp: CMake compiles it with -ffast-math
// -fno-finite-math-only -fopenmp-simd so the `omp simd` loop below calls
// libmvec's log. Fast-math is confined here; the integer Philox code
// is exact whatever the flags.
//
// Reproducibility: a normal is a pure function of its four words, computed by
// one fixed-width loop (kNormalChunk / 2 pairs, no remainder), so the same
// words give the same bits whether they arrive through normal() or normals().
// The bits may differ in the last place between builds for different CPUs
// (libmvec has one variant per vector ISA), as they already may under
// -march=native.
#include <immintrin.h>

#include <cmath>

#include "rng/stream.h"

// glibc declares the libmvec variants only when __FAST_MATH__ is defined, and
// -fno-finite-math-only leaves it undefined; so declare them here, for this
// file alone (the same declaration glibc's bits/math-vector.h would make).
extern "C" {
__attribute__((__simd__("notinbranch"))) double log(double) noexcept;
}

namespace routelab {

// ---------------------------------------------------------------------------
// Philox4x32-10 (Salmon et al. 2011; constants and round as Random123's
// philox.h), sixteen counters at a time.
//
// With AVX-512 the round is written with intrinsics: each of the four words
// of sixteen blocks sits in one register, and the 32x32 -> 64-bit products
// come from vpmuludq on the even and (shifted) odd lanes. GCC's own
// vectorization of the plain loop uses vpmullq and many permutes and runs
// about 4x slower. Elsewhere, and for the last < 16 blocks, the scalar block
// function. Both are exact integer code: the words are the same either way.

#if defined(__AVX512F__)
namespace {

// hi and lo words of m * x for sixteen 32-bit lanes.
inline void mulhilo16(__m512i x, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i pe = _mm512_mul_epu32(x, m);                         // even lanes, 64-bit
  const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);  // odd lanes, 64-bit
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
  lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

}  // namespace
#endif

void philox_blocks(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out) {
  std::size_t i = 0;
#if defined(__AVX512F__)
  const __m512i m0 = _mm512_set1_epi32(int(0xD2511F53u)), m1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  const __m512i c2 = _mm512_set1_epi32(int(uint32_t(stream))), c3 = _mm512_set1_epi32(int(uint32_t(stream >> 32)));
  __m512i ka[10], kb[10];
  for (int r = 0; r < 10; ++r) {
    ka[r] = _mm512_set1_epi32(int(uint32_t(seed) + uint32_t(r) * 0x9E3779B9u));
    kb[r] = _mm512_set1_epi32(int(uint32_t(seed >> 32) + uint32_t(r) * 0xBB67AE85u));
  }
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (; i + 16 <= nblocks; i += 16) {
    // Counters block0 + i + lane, 64-bit: low words, and high words with the
    // carry out of the low words.
    const uint64_t b = block0 + i;
    const __m512i blo = _mm512_set1_epi32(int(uint32_t(b)));
    __m512i x0 = _mm512_add_epi32(blo, lane);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(x0, blo);
    __m512i x1 = _mm512_mask_add_epi32(_mm512_set1_epi32(int(uint32_t(b >> 32))), carry,
                                       _mm512_set1_epi32(int(uint32_t(b >> 32))), _mm512_set1_epi32(1));
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
#endif
  for (; i < nblocks; ++i) {
    const auto r = philox_block(seed, stream, block0 + i);
    for (int j = 0; j < 4; ++j) out[4 * i + j] = r.v[j];
  }
}

// ---------------------------------------------------------------------------
// Uniforms: 53 bits of two words, +0.5 ulp so 0 never comes out (exact
// integer-to-double arithmetic, the same as u01_open).

void u01_from_words(const uint32_t* w, std::size_t n, double* out) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t bits = uint64_t(w[2 * i]) | (uint64_t(w[2 * i + 1]) << 32);
    out[i] = (double(bits >> 11) + 0.5) * 0x1.0p-53;
  }
}

// ---------------------------------------------------------------------------
// Box-Muller, one chunk of kPairs pairs at a time. The chunk function is not
// inlined so that every caller runs exactly the same instructions. The pair
// itself is rng/stream.h's box_muller_pair, which the GPU's Stream also runs
// (with CUDA's log).
//
// The radius uses libmvec's log and the hardware sqrt. (A Newton-refined
// vrsqrt14pd and splitting this loop in two were both slower here: the
// small arrays between the loops stall on store forwarding.) The angle needs no
// library sine or cosine: it is uniform, so any measure-preserving map of its
// 53 bits will do. The top two bits pick a quarter turn q and the other 51 a
// point x = 2 pi y, y in (-1/8, 1/8) exactly, so theta = q pi/2 + x is
// uniform on the circle; cos x and sin x on |x| < pi/4 are Taylor polynomials
// to x^16 and x^17 (truncation below 2e-18), and the quarter turn swaps and
// negates them. That is about 20 FMAs for both, against two libmvec calls
// (cos + sin cost about 2.2 ns an element here; libmvec's vector sincos,
// reached only through vectors of pointers, is slower still).

constexpr int kPairs = kNormalChunk / 2;

__attribute__((noinline)) static void box_muller_chunk(const uint32_t* w, double* out) {
  alignas(64) double c[kPairs], s[kPairs];
#pragma omp simd
  for (int p = 0; p < kPairs; ++p) box_muller_pair(w + 4 * p, [](double u) { return ::log(u); }, c[p], s[p]);
  for (int p = 0; p < kPairs; ++p) {
    out[2 * p] = c[p];
    out[2 * p + 1] = s[p];
  }
}

void normal_chunks(const uint32_t* w, std::size_t nchunks, double* out) {
  for (std::size_t k = 0; k < nchunks; ++k) box_muller_chunk(w + 2 * kNormalChunk * k, out + kNormalChunk * k);
}

}  // namespace routelab
