// Philox4x32-10 (Salmon et al. 2011; constants and round as Random123's
// philox.h) on many counters at once: the kernel behind philox_blocks, one
// per instruction set.
//
// The AVX2 kernel holds each of the four words of 8 blocks in one register;
// the 32x32 -> 64-bit products come from the unsigned even-lane multiply
// (vpmuludq) on the even and the shifted odd lanes. The AVX-512 kernel holds
// one block per 64-bit lane (rng/philox_lanes.h), which needs no blends, and
// can make uniforms without storing the words (philox_uniforms): 0.70 ns
// for two words and 0.78 for a uniform on a Zen 4, against 1.08 and 1.36 ns
// with sixteen blocks in 32-bit lanes and uniforms from the stored words.
// GCC's own vectorization of the plain loop uses vpmullq and many permutes
// and runs about 4x slower. All are exact integer code, so every kernel gives
// the scalar block function's words.
//
// Each kernel is compiled for its own instruction set (a target attribute),
// whatever the flags of this file, so the tests can run every kernel the CPU
// has; philox_blocks itself uses the widest one the build targets (chosen at
// build time, like the rest of the code under -march).
#include "rng/philox_lanes.h"
#include "rng/stream.h"

#include <algorithm>
#include <type_traits>

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
// The groups' rounds are independent and interleave: on a Zen 4, a word took
// 0.80 ns with G = 1, 0.55 with 2 and 0.48 with 4 (some state then lives
// in memory, which costs less than the idle multipliers did). (vpmulld for
// the low words was faster still there, 0.44 ns, but costs two multiplies
// on Intel's AVX2 cores, where the multiplies already limit.)
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
  for (; i + 32 <= nblocks; i += 32) philox8_groups<4>(k, block0 + i, out + 4 * i);
  for (; i + 8 <= nblocks; i += 8) philox8_groups<1>(k, block0 + i, out + 4 * i);
  return i;
}

// Counters b + 8 g + lane, g < G, one per 64-bit lane, through the ten
// rounds: a[g] holds the eight blocks' words 0 | 1 << 32, c[g] words 2 | 3 << 32.
template <int G>
ROUTELAB_AVX512F inline void philox_lane_blocks(const PhiloxLaneKeys& k, uint64_t stream, uint64_t b, __m512i* a,
                                                __m512i* c) {
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  __m512i x0[G], x1[G], x2[G], x3[G];
  for (int g = 0; g < G; ++g) {
    x0[g] = _mm512_add_epi64(_mm512_set1_epi64((long long)(b + 8 * g)), lane);  // 64-bit: carries into x1
    x1[g] = _mm512_srli_epi64(x0[g], 32);
    x2[g] = _mm512_set1_epi64((long long)uint32_t(stream));
    x3[g] = _mm512_set1_epi64((long long)(stream >> 32));
  }
  philox_lane_rounds<G>(k, x0, x1, x2, x3);
  for (int g = 0; g < G; ++g) a[g] = philox_lane_u64(x0[g], x1[g]), c[g] = philox_lane_u64(x2[g], x3[g]);
}

// Group g's eight blocks in counter order: lanes 0..3 of a and c
// alternately, then lanes 4..7 (each block's two halves in turn), as words
// or as uniforms.
ROUTELAB_AVX512DQ inline __m512i lanes_low_half() { return _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11); }
ROUTELAB_AVX512DQ inline __m512i lanes_high_half() { return _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15); }
ROUTELAB_AVX512DQ inline void store_lane_blocks(__m512i a, __m512i c, uint32_t* out) {
  _mm512_storeu_si512(out, _mm512_permutex2var_epi64(a, lanes_low_half(), c));
  _mm512_storeu_si512(out + 16, _mm512_permutex2var_epi64(a, lanes_high_half(), c));
}
ROUTELAB_AVX512DQ inline void store_lane_blocks(__m512i a, __m512i c, double* out) {
  const __m512d scale = _mm512_set1_pd(0x1.0p-53);
  const __m512d ua = _mm512_mul_pd(philox_lane_u01_scaled(a), scale), uc = _mm512_mul_pd(philox_lane_u01_scaled(c), scale);
  _mm512_storeu_pd(out, _mm512_permutex2var_pd(ua, lanes_low_half(), uc));
  _mm512_storeu_pd(out + 8, _mm512_permutex2var_pd(ua, lanes_high_half(), uc));
}

// Blocks four registers at a time (the rounds of four interleave; eight ran
// slower, out of registers), then eight at a time.
constexpr int kLaneGroups = 4;

// What a block makes: four words, or two uniforms.
template <class T>
constexpr int kPerBlock = std::is_same_v<T, double> ? 2 : 4;

template <int G, class T>
ROUTELAB_AVX512DQ inline void philox_lane_groups(const PhiloxLaneKeys& k, uint64_t stream, uint64_t b, T* out) {
  __m512i a[G], c[G];
  philox_lane_blocks<G>(k, stream, b, a, c);
  for (int g = 0; g < G; ++g) store_lane_blocks(a[g], c[g], out + kPerBlock<T> * 8 * g);
}

// Whole groups of 8 blocks, as words (four a block) or as uniforms
// (u01_open of words 0 | 1 << 32, then of 2 | 3 << 32: the uniforms are
// never stored as words); returns how many blocks it used.
template <class T>
ROUTELAB_AVX512DQ std::size_t philox_blocks_avx512(uint64_t seed, uint64_t stream, uint64_t block0,
                                                   std::size_t nblocks, T* out) {
  PhiloxLaneKeys k;
  philox_lane_keys(seed, k);
  std::size_t i = 0;
  for (; i + 8 * kLaneGroups <= nblocks; i += 8 * kLaneGroups)
    philox_lane_groups<kLaneGroups>(k, stream, block0 + i, out + kPerBlock<T> * i);
  for (; i + 8 <= nblocks; i += 8) philox_lane_groups<1>(k, stream, block0 + i, out + kPerBlock<T> * i);
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
#if defined(__AVX512F__) && defined(__AVX512DQ__)
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
    case PhiloxPath::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
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

void philox_uniforms_on(PhiloxPath path, uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks,
                        double* out) {
  std::size_t done = 0;
#if ROUTELAB_X86
  if (path == PhiloxPath::avx512) done = philox_blocks_avx512(seed, stream, block0, nblocks, out);
#endif
  // The rest (all of it without AVX-512) through the words, staged in a
  // buffer that stays in L1.
  constexpr std::size_t kStage = 256;
  uint32_t w[4 * kStage];
  while (done < nblocks) {
    const std::size_t nb = std::min(kStage, nblocks - done);
    philox_blocks_on(path, seed, stream, block0 + done, nb, w);
    u01_from_words(w, 2 * nb, out + 2 * done);
    done += nb;
  }
}

void philox_uniforms(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, double* out) {
  philox_uniforms_on(philox_build_path(), seed, stream, block0, nblocks, out);
}

}  // namespace routelab
