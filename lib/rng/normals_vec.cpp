// Batch kernels behind Stream::uniforms and normals: uniforms from words,
// and Box-Muller with glibc's vector log (libmvec). (The words themselves,
// Philox on many counters at once, are lib/rng/philox.cpp's.)
//
// This file is a *_vec.cpp: CMake compiles it with -ffast-math
// -fno-finite-math-only -fopenmp-simd so the `omp simd` loop below calls
// libmvec's log. Fast-math is confined here.
//
// Reproducibility: a normal is a pure function of its four words, computed by
// one fixed-width loop (kNormalChunk / 2 pairs, no remainder), so the same
// words give the same bits whether they arrive through normal() or normals().
// The bits may differ in the last place between builds for different CPUs
// (libmvec has one variant per vector ISA), as they already may under
// -march=native.
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "base/normal_log.h"
#include "rng/stream.h"

// glibc declares the libmvec variants only when __FAST_MATH__ is defined, and
// -fno-finite-math-only leaves it undefined; so declare them here, for this
// file alone (the same declaration glibc's bits/math-vector.h would make).
extern "C" {
__attribute__((__simd__("notinbranch"))) double log(double) noexcept;
}

namespace routelab {

// ---------------------------------------------------------------------------
// Uniforms: 53 bits of two words, +0.5 ulp so 0 never comes out (exact
// integer-to-double arithmetic, the same as u01_open).

#if defined(__AVX2__) && !defined(__AVX512DQ__)
// u01_open of four 64-bit words as AVX2 can make it, with no 64-bit integer
// to double conversion (GCC's loop converted one value at a time, about
// 1 ns a uniform): (b >> 11) 2^-53 + 2^-54 = f + k 2^-54, f = (b >> 12) 2^-52
// the mantissa of 1 + f less 1 (exact) and k = 2 (bit 11) + 1 the mantissa
// of 2^52 + k; the FMA rounds the exact sum once, as u01_open's + 1/2 does.
static inline __m256d u01_open4(__m256i b) {
  const auto bits = [](int64_t v) { return _mm256_set1_epi64x(v); };
  const __m256d f = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(b, 12), bits(0x3FF0000000000000))),
                                  _mm256_set1_pd(1.0));
  const __m256d k = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi64(b, 10), bits(2)), bits(0x4330000000000001))),
      _mm256_set1_pd(0x1.0p52));
  return _mm256_fmadd_pd(k, _mm256_set1_pd(0x1.0p-54), f);
}
#endif

void u01_from_words(const uint32_t* w, std::size_t n, double* out) {
  std::size_t start = 0;
#if defined(__AVX2__) && !defined(__AVX512DQ__)
  for (; start + 4 <= n; start += 4)  // words 2 i and 2 i + 1 are the little-endian 64-bit word at w + 2 i
    _mm256_storeu_pd(out + start, u01_open4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * start))));
#endif
#pragma omp simd
  for (std::size_t i = start; i < n; ++i) {
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

// Which log (base/normal_log.h; why: docs/rng-kernels.md). With AVX-512DQ
// box_muller_pair vectorizes as it is (its 64-bit integer conversions need
// DQ); AVX2 has no such conversions, so it runs the pairs written out in
// intrinsics (box_muller_pairs4, below); the scalar path keeps glibc's log.
#if defined(__AVX512DQ__)
#define ROUTELAB_NORMAL_LOG_WIDTH 512
#define ROUTELAB_NORMAL_LOG "libmvec-avx512"
#elif defined(__AVX2__) && defined(ROUTELAB_AVX2_VECTOR_LOG)
#define ROUTELAB_NORMAL_LOG_WIDTH 256
#define ROUTELAB_NORMAL_LOG "libmvec-avx2"
#else
#define ROUTELAB_NORMAL_LOG_WIDTH 0
#define ROUTELAB_NORMAL_LOG "scalar"
#endif

#if ROUTELAB_NORMAL_LOG_WIDTH == 256
// libmvec's 4-wide AVX2 log, called directly (the vector-function ABI's name
// for log's `simd` variant on ymm registers).
extern "C" __m256d _ZGVdN4v_log(__m256d);

// Four of box_muller_pair's pairs, written out in AVX2: words w[0..16), the
// normals out[0..8). AVX2 has no 64-bit integer to double conversion, and
// the compiler's loop over box_muller_pair (through 31-bit pieces) spent as
// long rearranging the words as on the log; here a pair's two 64-bit words
// each fill one lane, and their bits become doubles by exponent tricks (u1 as
// u01_open4 makes it), each exact or one rounding of box_muller_pair's exact
// value, so the normals are bit for bit the loop's.
static inline void box_muller_pairs4(const uint32_t* w, double* out) {
  const auto bits = [](int64_t v) { return _mm256_set1_epi64x(v); };
  const auto dbl = [](__m256i v) { return _mm256_castsi256_pd(v); };
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8));
  const __m256i b1 = _mm256_unpacklo_epi64(lo, hi), b2 = _mm256_unpackhi_epi64(lo, hi);  // pairs 0, 2, 1, 3
  const __m256d u1 = u01_open4(b1);
  // y = ((m mod 2^51) + 1/2 - 2^50) 2^-53, m = b2 >> 11: exact.
  const __m256d m51 = _mm256_sub_pd(
      dbl(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi64(b2, 11), bits((int64_t(1) << 51) - 1)),
                          bits(0x4330000000000000))),
      _mm256_set1_pd(0x1.0p52));
  const __m256d y = _mm256_fmadd_pd(m51, _mm256_set1_pd(0x1.0p-53), _mm256_set1_pd((0.5 - 0x1.0p50) * 0x1.0p-53));
  const __m256d r = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), _ZGVdN4v_log(u1)));
  __m256d sx, cx;
  box_muller_sincos(_mm256_mul_pd(_mm256_set1_pd(2.0 * M_PI), y), sx, cx);
  // The quarter turn q = b2 >> 62: q & 2 is b2's sign bit and negates r;
  // q & 1, moved to the sign bit, swaps (cos, sin) to (-sin, cos).
  const __m256d sign = _mm256_set1_pd(-0.0), odd = dbl(_mm256_slli_epi64(b2, 1));
  const __m256d rq = _mm256_xor_pd(r, _mm256_and_pd(dbl(b2), sign));
  const __m256d c = _mm256_xor_pd(_mm256_mul_pd(rq, _mm256_blendv_pd(cx, sx, odd)), _mm256_and_pd(odd, sign));
  const __m256d s = _mm256_mul_pd(rq, _mm256_blendv_pd(sx, cx, odd));
  _mm256_storeu_pd(out, _mm256_unpacklo_pd(c, s));  // pairs 0 and 1
  _mm256_storeu_pd(out + 4, _mm256_unpackhi_pd(c, s));  // 2 and 3
}
#elif ROUTELAB_NORMAL_LOG_WIDTH == 0
// The same symbol declared without the simd attribute: the compiler cannot
// swap in a libmvec variant, so the loop stays scalar.
extern "C" double glibc_scalar_log(double) noexcept __asm__("log");
#endif

const char* normal_log_path() { return ROUTELAB_NORMAL_LOG; }

constexpr int kPairs = kNormalChunk / 2;

__attribute__((noinline)) static void box_muller_chunk(const uint32_t* w, double* out) {
#if ROUTELAB_NORMAL_LOG_WIDTH == 256
  for (int p = 0; p < kPairs; p += 4) box_muller_pairs4(w + 4 * p, out + 2 * p);
#else
  alignas(64) double c[kPairs], s[kPairs];
#if ROUTELAB_NORMAL_LOG_WIDTH == 512
#pragma omp simd
  for (int p = 0; p < kPairs; ++p) box_muller_pair(w + 4 * p, [](double u) { return ::log(u); }, c[p], s[p]);
#else
  for (int p = 0; p < kPairs; ++p) box_muller_pair(w + 4 * p, glibc_scalar_log, c[p], s[p]);
#endif
  for (int p = 0; p < kPairs; ++p) {
    out[2 * p] = c[p];
    out[2 * p + 1] = s[p];
  }
#endif
}

void normal_chunks(const uint32_t* w, std::size_t nchunks, double* out) {
  for (std::size_t k = 0; k < nchunks; ++k) box_muller_chunk(w + 2 * kNormalChunk * k, out + kNormalChunk * k);
}

}  // namespace routelab
