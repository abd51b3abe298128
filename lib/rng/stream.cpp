#include "rng/stream.h"

#include <cmath>

namespace routelab {

void Stream::u32s(uint32_t* out, std::size_t n) {
  std::size_t i = 0;
  while (i < n && have_ > 0) out[i++] = next_u32();
  // Whole blocks straight from the vectorized block function.
  const std::size_t nb = (n - i) / 4;
  if (nb > 0) {
    philox_blocks(seed_, stream_, block_, nb, out + i);
    block_ += nb;
    i += 4 * nb;
  }
  while (i < n) out[i++] = next_u32();
}

void Stream::uniforms(double* out, std::size_t n) {
  std::size_t i = 0;
  // From a block boundary, whole blocks go straight to uniforms; after an
  // odd number of words a uniform straddles two blocks, and the rest is
  // staged through a small word buffer (that stays in L1).
  if (have_ == 2 && n > 0) out[i++] = uniform();
  if (have_ == 0) {
    const std::size_t nb = (n - i) / 2;
    philox_uniforms(seed_, stream_, block_, nb, out + i);
    block_ += nb;
    i += 2 * nb;
  }
  constexpr std::size_t kStage = 512;
  uint32_t w[2 * kStage];
  while (i < n) {
    const std::size_t m = n - i < kStage ? n - i : kStage;
    u32s(w, 2 * m);
    u01_from_words(w, m, out + i);
    i += m;
  }
}

void Stream::normals(double* out, std::size_t n) {
  std::size_t i = 0;
  while (i < n && nhave_ > 0) out[i++] = nbuf_[kNormalChunk - nhave_--];
  // Whole chunks go straight to out, staged through a word buffer of up to
  // kStage chunks; the words consumed are exactly those normal() would use.
  constexpr std::size_t kStage = 32;
  uint32_t w[2 * kNormalChunk * kStage];
  while (n - i >= std::size_t(kNormalChunk)) {
    std::size_t c = (n - i) / kNormalChunk;
    if (c > kStage) c = kStage;
    u32s(w, 2 * kNormalChunk * c);
    normal_chunks(w, c, out + i);
    i += kNormalChunk * c;
  }
  while (i < n) out[i++] = normal();
}

}  // namespace routelab
