#include "rng/stream.h"

#include <cmath>

namespace routelab {

uint64_t Stream::below(uint64_t n) {
  // Lemire (2019), 32-bit version when n fits, which every caller here does.
  if (n <= 0xffffffffull) {
    uint32_t n32 = uint32_t(n);
    uint64_t m = uint64_t(next_u32()) * n32;
    uint32_t low = uint32_t(m);
    if (low < n32) {
      uint32_t threshold = uint32_t(-n32) % n32;
      while (low < threshold) {
        m = uint64_t(next_u32()) * n32;
        low = uint32_t(m);
      }
    }
    return m >> 32;
  }
  // Large n: rejection on 64-bit words.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return x % n;
}

double Stream::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  const double u1 = uniform(), u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * M_PI * u2;
  spare_ = r * std::sin(t);
  have_spare_ = true;
  return r * std::cos(t);
}

void Stream::normals(double* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = normal();
}

}  // namespace routelab
