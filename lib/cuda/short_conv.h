// The short causal convolution with SiLU on a CUDA device: the same
// functions, layouts and semantics as nn/short_conv.h (x, pre, out (B, T, C);
// kernel (C, K); backward adds into dinp and dkernel), for float, over device
// pointers. The kernel's gradient is one thread per (channel, tap) summing the
// rows in order, as cuda/layers.h's reductions: no atomics, and the result
// does not depend on the launch shape.
#pragma once

namespace routelab::cuda {

void short_conv_forward(float* out, float* pre, const float* inp, const float* kernel, int B, int T, int C, int K);
void short_conv_backward(float* dinp, float* dkernel, const float* dout, const float* pre, const float* inp,
                         const float* kernel, int B, int T, int C, int K);

}  // namespace routelab::cuda
