// Short convolution kernels; the contract is in cuda/short_conv.h, the
// reference in nn/short_conv.cpp: a thread per element for the convolution
// and the input's gradient, a thread per kernel entry for its gradient.
#include "cuda/short_conv.h"

#include <cstdint>

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// d silu(x) / dx times d: s (1 + x (1 - s)) d, s = sigmoid(x).
__device__ inline float silu_grad(float x, float d) {
  const float s = sigmoid(x);
  return d * s * (1.0f + x * (1.0f - s));
}

__global__ void short_conv_forward_kernel(float* out, float* pre, const float* inp, const float* kernel, int T,
                                          int C, int K, int64_t n_elems) {
  for (int64_t i = grid_first(); i < n_elems; i += grid_stride()) {
    const int64_t n = i / C, t = n % T;
    const int c = int(i % C);
    float acc = 0;
    for (int k = 0; k < K; ++k) {
      const int64_t back = K - 1 - k;
      if (t >= back) acc += kernel[c * K + k] * inp[(n - back) * C + c];
    }
    pre[i] = acc;
    out[i] = acc * sigmoid(acc);
  }
}

// dinp[b, s, c] += sum_k kernel[c, k] dpre[b, s + K - 1 - k, c] over the
// outputs inside the sequence, later outputs last (the CPU's order).
__global__ void short_conv_backward_input_kernel(float* dinp, const float* dout, const float* pre,
                                                 const float* kernel, int T, int C, int K, int64_t n_elems) {
  for (int64_t i = grid_first(); i < n_elems; i += grid_stride()) {
    const int64_t n = i / C, s = n % T;
    const int c = int(i % C);
    float acc = 0;
    for (int k = K - 1; k >= 0; --k) {
      const int64_t ahead = K - 1 - k;  // the output at s + ahead reads x_s through tap k
      if (s + ahead >= T) continue;
      const int64_t at = (n + ahead) * C + c;
      acc += kernel[c * K + k] * silu_grad(pre[at], dout[at]);
    }
    dinp[i] += acc;
  }
}

// dkernel[c, k] += sum over rows of dpre[n, c] x[n - (K - 1 - k), c], rows in order.
__global__ void short_conv_backward_kernel_kernel(float* dkernel, const float* dout, const float* pre,
                                                  const float* inp, int64_t N, int T, int C, int K) {
  for (int64_t e = grid_first(); e < int64_t(C) * K; e += grid_stride()) {
    const int c = int(e / K), k = int(e % K);
    const int64_t back = K - 1 - k;
    float acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (n % T < back) continue;
      acc += silu_grad(pre[n * C + c], dout[n * C + c]) * inp[(n - back) * C + c];
    }
    dkernel[e] += acc;
  }
}

}  // namespace

void short_conv_forward(float* out, float* pre, const float* inp, const float* kernel, int B, int T, int C, int K) {
  const int64_t n = int64_t(B) * T * C;
  if (n == 0) return;
  short_conv_forward_kernel<<<grid_blocks(n), kThreads>>>(out, pre, inp, kernel, T, C, K, n);
  check_launch();
}

void short_conv_backward(float* dinp, float* dkernel, const float* dout, const float* pre, const float* inp,
                         const float* kernel, int B, int T, int C, int K) {
  const int64_t N = int64_t(B) * T, n = N * C;
  if (n == 0) return;
  short_conv_backward_input_kernel<<<grid_blocks(n), kThreads>>>(dinp, dout, pre, kernel, T, C, K, n);
  check_launch();
  short_conv_backward_kernel_kernel<<<grid_blocks(int64_t(C) * K), kThreads>>>(dkernel, dout, pre, inp, N, T, C, K);
  check_launch();
}

}  // namespace routelab::cuda
