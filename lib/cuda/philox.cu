// Philox on the device: one thread per block of four words, from
// rng/stream.h's own block function and uniform map.
#include "cuda/philox.h"

#include "cuda/buffer.h"
#include "cuda/common.cuh"
#include "rng/stream.h"

namespace routelab::cuda {

namespace {

__global__ void philox_blocks_kernel(uint64_t seed, uint64_t stream, uint64_t block0, int64_t nblocks,
                                     uint32_t* out) {
  for (int64_t i = grid_first(); i < nblocks; i += grid_stride()) {
    const auto r = philox_block(seed, stream, block0 + uint64_t(i));
    for (int j = 0; j < 4; ++j) out[4 * i + j] = r.v[j];
  }
}

__global__ void u01_from_words_kernel(const uint32_t* w, int64_t n, double* out) {
  for (int64_t i = grid_first(); i < n; i += grid_stride())
    out[i] = u01_open(uint64_t(w[2 * i]) | uint64_t(w[2 * i + 1]) << 32);
}

}  // namespace

void philox_blocks(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out) {
  if (nblocks == 0) return;
  philox_blocks_kernel<<<grid_blocks(int64_t(nblocks)), kThreads>>>(seed, stream, block0, int64_t(nblocks), out);
  CUDA_CHECK(cudaGetLastError());
}

void u01_from_words(const uint32_t* w, std::size_t n, double* out) {
  if (n == 0) return;
  u01_from_words_kernel<<<grid_blocks(int64_t(n)), kThreads>>>(w, int64_t(n), out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace routelab::cuda
