// A short causal convolution over time, one kernel per channel (depthwise),
// followed by SiLU: flash-linear-attention's ShortConvolution (no bias,
// activation "silu"), which PaTH's layer runs over its step directions
// (nn/scheme.h, path_qk and path_qkv). With x (B, T, C) row-major and a
// kernel (C, K) laid out as PyTorch's Conv1d weight (C, 1, K) holds it,
//   pre[b, t, c] = sum_{k < K} kernel[c, k] x[b, t - (K - 1) + k, c]
// (x = 0 before the sequence starts: each batch element is its own
// sequence), out = silu(pre) = pre sigmoid(pre). So out at t reads
// x_{t-K+1} .. x_t and nothing later.
// Channels are split into fixed groups, each group's sums taken in one
// order: the same bytes at any thread count.
#pragma once

#include <cstdint>

namespace routelab::nn {

// out and pre (the convolution before SiLU, kept for backward) (B, T, C).
template <class R>
void short_conv_forward(R* out, R* pre, const R* inp, const R* kernel, int B, int T, int C, int K);
// Adds d loss / d inp (B, T, C) and d loss / d kernel (C, K), given
// d loss / d out and the forward's pre and inp.
template <class R>
void short_conv_backward(R* dinp, R* dkernel, const R* dout, const R* pre, const R* inp, const R* kernel, int B,
                         int T, int C, int K);

}  // namespace routelab::nn
