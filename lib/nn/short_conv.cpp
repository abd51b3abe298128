#include "nn/short_conv.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace routelab::nn {

namespace {

// Channels per task of backward: a group owns its columns of dinp and its
// kernel rows, so no two tasks write one number.
constexpr int kChannelGroup = 16;

template <class R>
inline R sigmoid(R x) {
  return R(1) / (R(1) + std::exp(-x));
}

}  // namespace

template <class R>
void short_conv_forward(R* out, R* pre, const R* inp, const R* kernel, int B, int T, int C, int K) {
  const int64_t N = int64_t(B) * T;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = n % T;
    for (int c = 0; c < C; ++c) {
      R acc = 0;
      for (int k = 0; k < K; ++k) {
        const int64_t back = K - 1 - k;  // x_{t - back}
        if (t >= back) acc += kernel[c * K + k] * inp[(n - back) * C + c];
      }
      pre[n * C + c] = acc;
      out[n * C + c] = acc * sigmoid(acc);
    }
  }
}

template <class R>
void short_conv_backward(R* dinp, R* dkernel, const R* dout, const R* pre, const R* inp, const R* kernel, int B,
                         int T, int C, int K) {
  const int groups = (C + kChannelGroup - 1) / kChannelGroup;
#pragma omp parallel for schedule(static)
  for (int g = 0; g < groups; ++g) {
    const int c0 = g * kChannelGroup, c1 = std::min(C, c0 + kChannelGroup);
    std::vector<R> dk(std::size_t(c1 - c0) * K, R(0));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = b * T + t;
        for (int c = c0; c < c1; ++c) {
          // silu'(x) = s (1 + x (1 - s)), s = sigmoid(x).
          const R x = pre[n * C + c], s = sigmoid(x);
          const R dpre = dout[n * C + c] * s * (R(1) + x * (R(1) - s));
          for (int k = 0; k < K; ++k) {
            const int64_t back = K - 1 - k;
            if (t < back) continue;
            dk[std::size_t(c - c0) * K + k] += dpre * inp[(n - back) * C + c];
            dinp[(n - back) * C + c] += kernel[c * K + k] * dpre;
          }
        }
      }
    for (int c = c0; c < c1; ++c)
      for (int k = 0; k < K; ++k) dkernel[c * K + k] += dk[std::size_t(c - c0) * K + k];
  }
}

template void short_conv_forward<float>(float*, float*, const float*, const float*, int, int, int, int);
template void short_conv_forward<double>(double*, double*, const double*, const double*, int, int, int, int);
template void short_conv_backward<float>(float*, float*, const float*, const float*, const float*, const float*, int,
                                         int, int, int);
template void short_conv_backward<double>(double*, double*, const double*, const double*, const double*,
                                          const double*, int, int, int, int);

}  // namespace routelab::nn
