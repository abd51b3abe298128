// Pieces every kernel file shares: launch shapes, grid-stride indices, warp
// reductions. Internal to lib/cuda/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/buffer.h"

namespace routelab::cuda {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;  // threads per block of the elementwise kernels

// Blocks for a grid-stride loop over n items; capped, since each thread walks
// as many items as it needs.
inline unsigned grid_blocks(int64_t n, int threads = kThreads) {
  return unsigned(std::clamp<int64_t>((n + threads - 1) / threads, 1, 1 << 16));
}

// This thread's first item and the stride of a grid-stride loop (64-bit: N x C
// passes 2^31 at long lengths).
__device__ inline int64_t grid_first() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

// Every launch is checked right after it (a bad configuration fails there,
// not at the next synchronising call).
inline void check_launch() { CUDA_CHECK(cudaGetLastError()); }

// Butterfly reductions over a full warp: every lane ends with the same value
// (each step adds the same two numbers, in either order).
__device__ inline float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Kernels that give one warp to each row: blocks of kRowsPerBlock warps.
constexpr int kRowsPerBlock = 8;
inline dim3 row_warps_block() { return dim3(kWarpSize, kRowsPerBlock); }
// At least one block (the kernels return for rows past the end); a grid past
// CUDA's 2^31 - 1 blocks is refused rather than silently truncated.
inline unsigned row_warps_grid(int64_t rows) {
  const int64_t blocks = std::max<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1);
  if (blocks > INT32_MAX)
    throw std::invalid_argument("cuda: " + std::to_string(rows) + " rows exceed one launch's grid");
  return unsigned(blocks);
}
// The row of this warp (the same in all its lanes, so a warp leaves together).
__device__ inline int64_t warp_row() { return int64_t(blockIdx.x) * blockDim.y + threadIdx.y; }

}  // namespace routelab::cuda
