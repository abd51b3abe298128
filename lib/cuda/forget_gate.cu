// Forget gate kernels; the contract is in cuda/forget_gate.h, the reference
// in nn/forget_gate.cpp, whose arithmetic each thread repeats in order.
#include "cuda/forget_gate.h"

#include <cstdint>

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

// log sigmoid(z), stable for either sign (as the CPU's).
__device__ inline double log_sigmoid(double z) { return z >= 0 ? -log1p(exp(-z)) : z - log1p(exp(z)); }

__global__ void forget_gate_forward_kernel(float* cum, const float* z, int B, int T, int H) {
  for (int64_t bh = grid_first(); bh < int64_t(B) * H; bh += grid_stride()) {
    const int64_t b = bh / H, h = bh % H;
    double sum = 0;
    for (int64_t t = 0; t < T; ++t) {
      sum += log_sigmoid(double(z[(b * T + t) * H + h]));
      cum[bh * T + t] = float(sum);
    }
  }
}

// cum_t sums log f_l for l <= t, so log f_l collects dcum_t for t >= l;
// d log sigmoid(z) / dz = 1 - sigmoid(z) = 1 / (1 + e^z).
__global__ void forget_gate_backward_kernel(float* dz, const float* dcum, const float* z, int B, int T, int H) {
  for (int64_t bh = grid_first(); bh < int64_t(B) * H; bh += grid_stride()) {
    const int64_t b = bh / H, h = bh % H;
    double suffix = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      suffix += double(dcum[bh * T + t]);
      const double zt = double(z[(b * T + t) * H + h]);
      dz[(b * T + t) * H + h] = float(suffix / (1.0 + exp(zt)));
    }
  }
}

}  // namespace

void forget_gate_forward(float* cum, const float* z, int B, int T, int H) {
  if (int64_t(B) * T * H == 0) return;
  forget_gate_forward_kernel<<<grid_blocks(int64_t(B) * H), kThreads>>>(cum, z, B, T, H);
  CUDA_CHECK(cudaGetLastError());
}

void forget_gate_backward(float* dz, const float* dcum, const float* z, int B, int T, int H) {
  if (int64_t(B) * T * H == 0) return;
  forget_gate_backward_kernel<<<grid_blocks(int64_t(B) * H), kThreads>>>(dz, dcum, z, B, T, H);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace routelab::cuda
