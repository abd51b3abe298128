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

// Which log (base/normal_log.h; why: docs/rng-kernels.md). With AVX-512DQ
// box_muller_pair vectorizes as it is (its 64-bit integer conversions need
// DQ); AVX2 has no such conversions, so its loop converts the words in
// 31-bit pieces (below); the scalar path keeps glibc's log.
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
// box_muller_pair's words made doubles through pieces of at most 31 bits, as
// AVX2 can convert them: each piece converts exactly and each sum is exact or
// one rounding of an exact two-term sum, so in whatever order fast-math adds
// them the values are box_muller_pair's.
static inline void box_muller_pair_avx2(const uint32_t* w, double& c, double& s) {
  // ((b1 >> 11) + 1/2) 2^-53 = (2 (b1 >> 11) + 1) 2^-54, b1 = w0 | w1 << 32
  const double u1 =
      (double(int32_t(w[1] >> 1)) * 0x1.0p23 + double(int32_t(((w[1] & 1u) << 22) | (w[0] >> 10) | 1u))) * 0x1.0p-54;
  // m = b2 >> 11: m >> 51 = w3 >> 30 and m mod 2^51 = (w3 mod 2^30) 2^21 + (w2 >> 11)
  const double y =
      (double(int32_t(w[3] & 0x3fffffffu)) * 0x1.0p21 + double(int32_t(w[2] >> 11)) + 0.5 - 0x1.0p50) * 0x1.0p-53;
  box_muller_from(u1, w[3] >> 30, y, [](double u) { return ::log(u); }, c, s);
}
#elif ROUTELAB_NORMAL_LOG_WIDTH == 0
// The same symbol declared without the simd attribute: the compiler cannot
// swap in a libmvec variant, so the loop stays scalar.
extern "C" double glibc_scalar_log(double) noexcept __asm__("log");
#endif

const char* normal_log_path() { return ROUTELAB_NORMAL_LOG; }

constexpr int kPairs = kNormalChunk / 2;

__attribute__((noinline)) static void box_muller_chunk(const uint32_t* w, double* out) {
  alignas(64) double c[kPairs], s[kPairs];
#if ROUTELAB_NORMAL_LOG_WIDTH == 512
#pragma omp simd
  for (int p = 0; p < kPairs; ++p) box_muller_pair(w + 4 * p, [](double u) { return ::log(u); }, c[p], s[p]);
#elif ROUTELAB_NORMAL_LOG_WIDTH == 256
#pragma omp simd
  for (int p = 0; p < kPairs; ++p) box_muller_pair_avx2(w + 4 * p, c[p], s[p]);
#else
  for (int p = 0; p < kPairs; ++p) box_muller_pair(w + 4 * p, glibc_scalar_log, c[p], s[p]);
#endif
  for (int p = 0; p < kPairs; ++p) {
    out[2 * p] = c[p];
    out[2 * p + 1] = s[p];
  }
}

void normal_chunks(const uint32_t* w, std::size_t nchunks, double* out) {
  for (std::size_t k = 0; k < nchunks; ++k) box_muller_chunk(w + 2 * kNormalChunk * k, out + kNormalChunk * k);
}

}  // namespace routelab
