// Philox words and uniforms on the device: the same (seed, stream, block) ->
// words map as rng/stream.h, so a GPU Monte Carlo kernel draws exactly the
// CPU's streams. The first piece of GPU simulations; tested against the CPU
// batch kernels in tests/test_gpu_philox.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace routelab::cuda {

// out[4 i + j] = word j of philox_block(seed, stream, block0 + i), i < nblocks;
// out is device memory. As rng's philox_blocks.
void philox_blocks(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks, uint32_t* out);
// out[i] = u01_open(w[2 i] | w[2 i + 1] << 32), i < n; device memory. As
// rng's u01_from_words: the same doubles, bit for bit.
void u01_from_words(const uint32_t* w, std::size_t n, double* out);

}  // namespace routelab::cuda
