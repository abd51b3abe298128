// AdamW and the gradient norm on the device; the contract is in cuda/adamw.h,
// the reference in nn/adamw.cpp.
#include "cuda/adamw.h"

#include <cmath>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

__global__ void adamw_update_kernel(float* params, float* m, float* v, const float* grads, int64_t n,
                                    AdamWStep s) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const float g = grads[i] * s.grad_scale;
    m[i] = s.beta1 * m[i] + (1 - s.beta1) * g;
    v[i] = s.beta2 * v[i] + (1 - s.beta2) * g * g;
    const float mhat = m[i] / s.corr1, vhat = v[i] / s.corr2;
    params[i] -= s.lr * (mhat / (sqrtf(vhat) + s.eps) + s.decay * params[i]);
  }
}

// Block c sums the squares of chunk c into partial[c] (see cuda/adamw.h).
__global__ void __launch_bounds__(kNormThreads) sum_squares_kernel(double* partial, const float* g, int64_t n) {
  __shared__ double sums[kNormThreads];
  const int64_t first = int64_t(blockIdx.x) * kNormChunk, end = min(n, first + kNormChunk);
  double acc = 0;
  for (int64_t i = first + threadIdx.x; i < end; i += kNormThreads) acc += double(g[i]) * double(g[i]);
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kNormThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

}  // namespace

void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s) {
  if (n == 0) return;
  adamw_update_kernel<<<grid_blocks(n), kThreads>>>(params, m, v, grads, n, s);
  CUDA_CHECK(cudaGetLastError());
}

double global_norm(const float* g, int64_t n) {
  if (n == 0) return 0.0;
  const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
  DeviceBuffer<double> partial(static_cast<std::size_t>(chunks));
  sum_squares_kernel<<<unsigned(chunks), kNormThreads>>>(partial.data(), g, n);
  CUDA_CHECK(cudaGetLastError());
  double sum = 0;
  for (double x : partial.download()) sum += x;
  return std::sqrt(sum);
}

}  // namespace routelab::cuda
