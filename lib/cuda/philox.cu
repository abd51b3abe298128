// Philox on the device: one thread per block of four words.
// Random123 marks its generators __device__ under nvcc; here they are called
// from host and device code alike.
#define R123_CUDA_DEVICE __host__ __device__
#include <Random123/philox.h>

#include "cuda/philox.h"

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

// rng/stream.h's philox_block and u01_open, for the device. They are copies
// because stream.h's are host-only and marking them __host__ __device__
// rebuilds the whole tree; tests/test_gpu_philox.cpp holds the two equal bit
// for bit. Next step: mark stream.h's versions (R123_CUDA_DEVICE) and delete
// these.
__device__ inline r123::Philox4x32::ctr_type philox_block(uint64_t seed, uint64_t stream, uint64_t block) {
  r123::Philox4x32 gen;
  r123::Philox4x32::ctr_type ctr = {{uint32_t(block), uint32_t(block >> 32), uint32_t(stream),
                                     uint32_t(stream >> 32)}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  return gen(ctr, key);
}
__device__ inline double u01_open(uint64_t bits) { return (double(bits >> 11) + 0.5) * 0x1.0p-53; }

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
