// Householder transport inside attention (PaTH) on a CUDA device: the same
// functions, layouts and semantics as nn/householder.h (the CPU reference
// they are tested against in tests/test_gpu_attention.cpp), for float, over
// device pointers. The plain O(T^2 hd) form: one warp per query row at a
// time, carrying u = q_i down the keys and the values up (the algorithm of
// cuda/householder_rows.h, which the CPU tests run on the host too). Memory
// stays linear in T: forward keeps one row's T scores per warp, backward a
// row's chains and each warp's partial dk, dv, dw, dbeta (T x (5 hd + 3)
// floats per warp), in `scratch`, grown as needed.
// Head dimension: at most kMaxHeadDim (cuda/attention.h).
// Expected agreement with the CPU (RMS difference over RMS reference): steps
// ~1e-7 (the same code, nn/householder_step.h); attention ~1e-6 forward,
// ~1e-5 backward (fp32 dots reduced across a warp, in another order).
#pragma once

#include "cuda/buffer.h"
#include "nn/attention.h"

namespace routelab::cuda {

using nn::AttentionShape;

// w (B, H, T, hd), beta (B, H, T) from z (B, T, C) and beta_logit (B, T, H),
// or beta = 2 when beta_logit is null.
void householder_steps_forward(float* w, float* beta, const float* z, const float* beta_logit, AttentionShape s);
// dz (and dbeta_logit when not null), written, not added.
void householder_steps_backward(float* dz, float* dbeta_logit, const float* dw, const float* dbeta, const float* z,
                                const float* beta, AttentionShape s);

// o = softmax(s, causal) times the values, transported when `values`.
void householder_attention_forward(float* o, const float* q, const float* k, const float* v, const float* w,
                                   const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch);
// Adds d loss / d q, k, v, w, beta.
void householder_attention_backward(float* dq, float* dk, float* dv, float* dw, float* dbeta, const float* d_o,
                                    const float* q, const float* k, const float* v, const float* w,
                                    const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch);

}  // namespace routelab::cuda
