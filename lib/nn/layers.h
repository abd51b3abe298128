// The transformer's layers, llm.c style: a forward and a backward function
// over flat row-major buffers. N = rows (batch x time), C = channels.
// Backward functions ADD into their gradient outputs (the model zeroes them
// once per step), so a tensor used twice gets both contributions.
// Work is split into fixed chunks that do not depend on the thread count, so
// every result is the same bytes at any number of threads.
// Instantiated for float (training) and double (gradient checks).
#pragma once

#include <cstdint>

namespace routelab::nn {

// Token embedding: out[n] = wte[tokens[n]].
template <class R>
void encoder_forward(R* out, const int* tokens, const R* wte, int64_t N, int C);
template <class R>
void encoder_backward(R* dwte, const R* dout, const int* tokens, int64_t N, int C);

// out = (inp - mean) * rstd * w + b per row; mean and rstd are kept.
template <class R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* w, const R* b, int64_t N, int C);
template <class R>
void layernorm_backward(R* dinp, R* dw, R* db, const R* dout, const R* inp, const R* w, const R* mean,
                        const R* rstd, int64_t N, int C);

// out[N, OC] = inp[N, C] w[OC, C]^T + bias (bias may be null).
template <class R>
void matmul_forward(R* out, const R* inp, const R* w, const R* bias, int64_t N, int C, int OC);
template <class R>
void matmul_backward(R* dinp, R* dw, R* dbias, const R* dout, const R* inp, const R* w, int64_t N, int C, int OC);

// GELU, tanh approximation (GPT-2).
template <class R>
void gelu_forward(R* out, const R* inp, int64_t n);
template <class R>
void gelu_backward(R* dinp, const R* inp, const R* dout, int64_t n);

// out = a + b.
template <class R>
void residual_forward(R* out, const R* a, const R* b, int64_t n);
template <class R>
void residual_backward(R* da, R* db, const R* dout, int64_t n);

// Softmax cross-entropy: losses[n] = -log softmax(logits[n])[targets[n]], in
// nats. Backward writes (not adds) dlogits = (p - onehot) * dloss, where
// dloss is the weight of every position in the total loss.
template <class R>
void crossentropy_forward(R* losses, const R* logits, const int* targets, int64_t N, int V);
template <class R>
void crossentropy_backward(R* dlogits, const R* logits, const int* targets, R dloss, int64_t N, int V);

}  // namespace routelab::nn
