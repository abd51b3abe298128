// Counter-based random streams: a draw is a pure function of
// (seed, stream, counter), so the same numbers come out on any thread count,
// MPI rank or device. Built on Random123's Philox4x32-10 (Salmon et al.,
// SC'11): the 64-bit seed is the key, the 128-bit counter holds the 64-bit
// stream id (high words) and the 64-bit block counter (low words). One block
// yields four 32-bit words.
#pragma once

#include <cstddef>
#include <cstdint>

#include <Random123/philox.h>

namespace routelab {

// The raw block function, exposed for known-answer tests and batch kernels.
inline r123::Philox4x32::ctr_type philox_block(uint64_t seed, uint64_t stream, uint64_t block) {
  r123::Philox4x32 gen;
  r123::Philox4x32::ctr_type ctr = {{uint32_t(block), uint32_t(block >> 32), uint32_t(stream),
                                     uint32_t(stream >> 32)}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  return gen(ctr, key);
}

// Map 53 random bits to a double in the open interval (0, 1): the half-ulp
// offset keeps log(u) finite.
inline double u01_open(uint64_t bits) {
  return (double(bits >> 11) + 0.5) * 0x1.0p-53;
}

class Stream {
 public:
  Stream(uint64_t seed, uint64_t stream, uint64_t block = 0) : seed_(seed), stream_(stream), block_(block) {}

  uint32_t next_u32() {
    if (have_ == 0) refill();
    return words_[4 - have_--];
  }
  uint64_t next_u64() {
    uint64_t lo = next_u32();
    return lo | (uint64_t(next_u32()) << 32);
  }
  double uniform() { return u01_open(next_u64()); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), n >= 1, by Lemire's multiply-shift with rejection
  // so every value is exactly equally likely.
  uint64_t below(uint64_t n);
  // Standard normal, Box-Muller; both values of a pair are used.
  double normal();
  // Fill out[0..n) with independent standard normals (same values as n calls
  // of normal() would give).
  void normals(double* out, std::size_t n);

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }
  uint64_t blocks_used() const { return block_; }

 private:
  void refill() {
    auto r = philox_block(seed_, stream_, block_++);
    for (int i = 0; i < 4; ++i) words_[i] = r.v[i];
    have_ = 4;
  }

  uint64_t seed_, stream_, block_;
  uint32_t words_[4] = {0, 0, 0, 0};
  int have_ = 0;
  double spare_ = 0.0;
  bool have_spare_ = false;
};

}  // namespace routelab
