// The transformer's layers on a CUDA device: the same functions, signatures
// and semantics as nn/layers.h (the CPU reference they are tested against in
// tests/test_gpu_layers.cpp), for float, over device pointers.
//   - Row-major activations (N, C), weights (OC, C) as in llm.c.
//   - Backward functions ADD into their gradient outputs, except
//     crossentropy_backward, which writes, exactly as on the CPU.
//   - Work runs on the default stream; every launch is checked, and a failure
//     throws std::runtime_error (cuda/buffer.h).
//   - Sums over rows (weight and bias gradients, the embedding gradient) run
//     in row order in one thread per output, so results do not depend on the
//     launch shape and there are no atomics; matmuls go through cuBLAS.
// Expected agreement with the CPU (RMS of the difference over RMS of the
// reference): elementwise layers and reductions ~1e-7..1e-6 (fp32 rounding
// and FMA contraction); matmul 1e-6..1e-5 in fp32, ~1e-3 with TF32 tensor
// cores (10-bit mantissa inputs, fp32 accumulation).
#pragma once

#include <cstdint>

#include <cublas_v2.h>

namespace routelab::cuda {

// Encoder: out[n] = wte[tokens[n]]. tokens on the device.
void encoder_forward(float* out, const int* tokens, const float* wte, int64_t N, int C);
void encoder_backward(float* dwte, const float* dout, const int* tokens, int64_t N, int C);

// out = (inp - mean) * rstd * w + b per row, eps 1e-5; mean and rstd (N) kept.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int64_t N, int C);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int64_t N, int C);

// How cuBLAS multiplies float matrices: plain fp32, or TF32 tensor cores
// (inputs rounded to a 10-bit mantissa, accumulation in fp32: ~8x the
// throughput, ~1e-3 relative error).
enum class MatmulMath { fp32, tf32 };

// out[N, OC] = inp[N, C] w[OC, C]^T + bias (bias may be null).
void matmul_forward(cublasHandle_t handle, float* out, const float* inp, const float* w, const float* bias,
                    int64_t N, int C, int OC, MatmulMath math = MatmulMath::fp32);
// dinp += dout w, dw += dout^T inp, dbias += column sums of dout (if not null).
void matmul_backward(cublasHandle_t handle, float* dinp, float* dw, float* dbias, const float* dout,
                     const float* inp, const float* w, int64_t N, int C, int OC,
                     MatmulMath math = MatmulMath::fp32);

// GELU, tanh approximation (GPT-2).
void gelu_forward(float* out, const float* inp, int64_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);

// out = a + b.
void residual_forward(float* out, const float* a, const float* b, int64_t n);
void residual_backward(float* da, float* db, const float* dout, int64_t n);

// losses[n] = -log softmax(logits[n])[targets[n]] (nats); backward writes
// dlogits = (softmax - onehot) * dloss.
void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V);
void crossentropy_backward(float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V);

}  // namespace routelab::cuda
