// Counter-based random streams: a draw is a pure function of
// (seed, stream, counter), so the same numbers come out on any thread count,
// MPI rank or device. Built on Random123's Philox4x32-10 (Salmon et al.,
// SC'11): the 64-bit seed is the key, the 128-bit counter holds the 64-bit
// stream id (high words) and the 64-bit block counter (low words). One block
// yields four 32-bit words.
#pragma once

#include <cstddef>
#include <cstdint>

// philox_block, u01_open and the scalar draws of Stream (next_u32, uniform,
// below, normal) also run on the GPU (lib/cuda/philox.cu, lib/cuda/walks.cu),
// so a device kernel draws the CPU's streams from the same code.
#include <cmath>

#include "base/host_device.h"
#ifdef __CUDACC__
#define R123_CUDA_DEVICE __host__ __device__
#endif
#include <Random123/philox.h>

namespace routelab {

// The raw block function, exposed for known-answer tests and batch kernels.
ROUTELAB_HOST_DEVICE inline r123::Philox4x32::ctr_type philox_block(uint64_t seed, uint64_t stream, uint64_t block) {
  r123::Philox4x32 gen;
  r123::Philox4x32::ctr_type ctr = {{uint32_t(block), uint32_t(block >> 32), uint32_t(stream),
                                     uint32_t(stream >> 32)}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  return gen(ctr, key);
}

// What the vector kernels (rng/philox.cpp, rng/philox_lanes.h) need of
// Philox4x32-10 beyond the block function: its multipliers and the two key
// words of round r (the key bumped r times by the Weyl constants), taken
// from Random123's philox.h, which the block function runs.
constexpr uint32_t kPhiloxMul0 = PHILOX_M4x32_0, kPhiloxMul1 = PHILOX_M4x32_1;
inline uint32_t philox_round_key0(uint64_t seed, int r) { return uint32_t(seed) + uint32_t(r) * PHILOX_W32_0; }
inline uint32_t philox_round_key1(uint64_t seed, int r) { return uint32_t(seed >> 32) + uint32_t(r) * PHILOX_W32_1; }

// Batch kernels (lib/rng/philox.cpp, lib/rng/normals_vec.cpp).
// philox_blocks: out[4 i + j] = word j of philox_block(seed, stream, block0 + i),
// i < nblocks; the same words as the scalar block function, vectorized with
// the widest kernel the build targets (philox_build_path).
void philox_blocks(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out);
// philox_uniforms: out[2 i] and out[2 i + 1] = u01_open of words 0 | 1 << 32
// and 2 | 3 << 32 of philox_block(seed, stream, block0 + i), i < nblocks: the
// uniforms Stream::uniform makes from those blocks (the AVX-512 kernel makes
// them without storing the words).
void philox_uniforms(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, double* out);
// The kernels one by one, for the tests and benchmarks: every kernel is in
// every x86 build, and philox_path_runs_here says whether this CPU has its
// instructions (avx512: AVX-512F and DQ). All give the same words.
enum class PhiloxPath { scalar, avx2, avx512 };
const char* philox_path_name(PhiloxPath path);
PhiloxPath philox_build_path();
bool philox_path_runs_here(PhiloxPath path);
void philox_blocks_on(PhiloxPath path, uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks,
                      uint32_t* out);
void philox_uniforms_on(PhiloxPath path, uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks,
                        double* out);
// Box-Muller on whole chunks: chunk c reads words w[32 c .. 32 c + 32) and
// writes normals out[16 c .. 16 c + 16). Pair p of a chunk uses words 4p..4p+3:
// u1 from (w0, w1) as uniform() forms it, r = sqrt(-2 log u1), and the 53
// bits m of (w2, w3) (as uniform() takes them) for the angle
// theta = (m >> 51) pi/2 + 2 pi ((m mod 2^51) + 1/2 - 2^50) 2^-53, a uniform
// angle; the pair is (r cos theta, r sin theta).
// Every normal is computed by the same fixed-width code, so a value does not
// depend on where in a batch it falls (the scalar normal() relies on this).
constexpr int kNormalChunk = 16;
// sin x and cos x for |x| <= pi/4, Taylor polynomials to x^17 and x^16
// (truncation below 2e-18); T is double or a vector of doubles (the AVX2
// normals kernel runs four pairs at once through the same expressions).
template <class T>
ROUTELAB_HOST_DEVICE inline void box_muller_sincos(T x, T& sx, T& cx) {
  const T x2 = x * x;
  sx = x * (1.0 + x2 * (-1.0 / 6 + x2 * (1.0 / 120 + x2 * (-1.0 / 5040 + x2 * (1.0 / 362880 +
       x2 * (-1.0 / 39916800 + x2 * (1.0 / 6227020800.0 + x2 * (-1.0 / 1307674368000.0 +
       x2 * (1.0 / 355687428096000.0)))))))));
  cx = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24 + x2 * (-1.0 / 720 + x2 * (1.0 / 40320 +
       x2 * (-1.0 / 3628800 + x2 * (1.0 / 479001600.0 + x2 * (-1.0 / 87178291200.0 +
       x2 * (1.0 / 20922789888000.0))))))));
}
// One Box-Muller pair from its radius variate u1, in (0, 1), and its angle
// theta = q pi/2 + 2 pi y (the formula above); `log` is the natural logarithm
// (in normal_chunks libmvec's vector log or glibc's scalar one, see
// normal_log_path; CUDA's on the device), the only part whose last bits may
// differ between them.
template <class Log>
ROUTELAB_HOST_DEVICE inline void box_muller_from(double u1, uint64_t q, double y, Log log, double& c, double& s) {
  const double r = sqrt(-2.0 * log(u1));
  double sx, cx;
  box_muller_sincos(2.0 * M_PI * y, sx, cx);
  // Rotate (cos x, sin x) by q quarter turns.
  const double cq = (q & 1) ? -sx : cx;
  const double sq = (q & 1) ? cx : sx;
  const double sign = (q & 2) ? -r : r;
  c = sign * cq;
  s = sign * sq;
}
// One Box-Muller pair from its four words w[0..4), the formula above.
template <class Log>
ROUTELAB_HOST_DEVICE inline void box_muller_pair(const uint32_t* w, Log log, double& c, double& s) {
  const uint64_t b1 = uint64_t(w[0]) | (uint64_t(w[1]) << 32);
  const uint64_t b2 = uint64_t(w[2]) | (uint64_t(w[3]) << 32);
  const double u1 = (double(b1 >> 11) + 0.5) * 0x1.0p-53;  // (0, 1), as uniform()
  const uint64_t m = b2 >> 11;                               // 53 bits, as uniform()
  const uint64_t q = m >> 51;                                // quarter turn 0..3
  const double y = (double(m & ((uint64_t(1) << 51) - 1)) + 0.5 - 0x1.0p50) * 0x1.0p-53;  // exact
  box_muller_from(u1, q, y, log, c, s);
}
void normal_chunks(const uint32_t* w, std::size_t nchunks, double* out);
// out[i] = u01_open(w[2 i] | w[2 i + 1] << 32), i < n.
void u01_from_words(const uint32_t* w, std::size_t n, double* out);

// Map 53 random bits to a double in the open interval (0, 1): the half-ulp
// offset keeps log(u) finite.
ROUTELAB_HOST_DEVICE inline double u01_open(uint64_t bits) {
  return (double(bits >> 11) + 0.5) * 0x1.0p-53;
}

// The scalar members (everything but the batch fills u32s, uniforms, normals)
// are host-device: a GPU thread holding a Stream draws the same words, in the
// same order, as the CPU does on the same (seed, stream).
class Stream {
 public:
  ROUTELAB_HOST_DEVICE Stream(uint64_t seed, uint64_t stream, uint64_t block = 0)
      : seed_(seed), stream_(stream), block_(block) {}

  ROUTELAB_HOST_DEVICE uint32_t next_u32() {
    if (have_ == 0) refill();
    return words_[4 - have_--];
  }
  ROUTELAB_HOST_DEVICE uint64_t next_u64() {
    uint64_t lo = next_u32();
    return lo | (uint64_t(next_u32()) << 32);
  }
  ROUTELAB_HOST_DEVICE double uniform() { return u01_open(next_u64()); }
  ROUTELAB_HOST_DEVICE double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), n >= 1, by Lemire's multiply-shift with rejection
  // so every value is exactly equally likely.
  ROUTELAB_HOST_DEVICE uint64_t below(uint64_t n) {
    // Lemire (2019), 32-bit version when n fits, which every caller here does.
    if (n <= 0xffffffffull) {
      const uint32_t n32 = uint32_t(n);
      uint64_t m = uint64_t(next_u32()) * n32;
      uint32_t low = uint32_t(m);
      if (low < n32) {
        const uint32_t threshold = uint32_t(-n32) % n32;
        while (low < threshold) {
          m = uint64_t(next_u32()) * n32;
          low = uint32_t(m);
        }
      }
      return m >> 32;
    }
    // Large n: rejection on 64-bit words.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next_u64(); while (x >= limit);
    return x % n;
  }
  // Fill out[0..n) with the next n words: the same as n calls of next_u32().
  void u32s(uint32_t* out, std::size_t n);
  // Fill out[0..n) with the same values as n calls of uniform().
  void uniforms(double* out, std::size_t n);
  // Standard normal, Box-Muller. Normals are made kNormalChunk at a time from
  // 2 * kNormalChunk words (see normal_chunks) and served from a small buffer,
  // so normal() and normals() give the same sequence and consume the same
  // words, however the calls are split.
  ROUTELAB_HOST_DEVICE double normal() {
    if (nhave_ == 0) refill_normals();
    return nbuf_[kNormalChunk - nhave_--];
  }
  // Fill out[0..n) with the same values as n calls of normal().
  void normals(double* out, std::size_t n);

  ROUTELAB_HOST_DEVICE uint64_t seed() const { return seed_; }
  ROUTELAB_HOST_DEVICE uint64_t stream() const { return stream_; }
  ROUTELAB_HOST_DEVICE uint64_t blocks_used() const { return block_; }

 private:
  ROUTELAB_HOST_DEVICE void refill() {
    auto r = philox_block(seed_, stream_, block_++);
    for (int i = 0; i < 4; ++i) words_[i] = r.v[i];
    have_ = 4;
  }

  // The next 2 kNormalChunk words make the next kNormalChunk normals: on the
  // host through the batch kernels, on the device one pair at a time.
  ROUTELAB_HOST_DEVICE void refill_normals() {
    uint32_t w[2 * kNormalChunk];
#ifdef __CUDA_ARCH__
    for (int i = 0; i < 2 * kNormalChunk; ++i) w[i] = next_u32();
    for (int p = 0; p < kNormalChunk / 2; ++p)
      box_muller_pair(w + 4 * p, [](double u) { return ::log(u); }, nbuf_[2 * p], nbuf_[2 * p + 1]);
#else
    u32s(w, 2 * kNormalChunk);
    normal_chunks(w, 1, nbuf_);
#endif
    nhave_ = kNormalChunk;
  }

  uint64_t seed_, stream_, block_;
  uint32_t words_[4] = {0, 0, 0, 0};
  int have_ = 0;
  double nbuf_[kNormalChunk];  // normals made but not yet served: the last nhave_
  int nhave_ = 0;
};

}  // namespace routelab
