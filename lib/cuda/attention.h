// Causal multi-head attention with positional transport on a CUDA device: the
// same functions, layouts and semantics as nn/attention.h (the CPU reference
// they are tested against in tests/test_gpu_attention.cpp), for float, over
// device pointers. Layouts, as on the CPU: qkv (B, T, 3C); q, k, v, o
// (B, H, T, hd); cs (B, T, hd/2, 2) = (cos, sin); y (B, T, C); lse and cum
// (B, H, T); dtheta (B, T, hd/2) in double. ScoreBias's slopes (H doubles)
// and cum are device pointers here.
// The attention kernels stream key tiles with an online softmax (memory
// linear in T) and backward recomputes the probabilities from q, k and lse,
// as on the CPU. One thread owns one query row (forward, dq) or one key row
// (dk, dv), so no output is written by two threads and there are no atomics.
// Head dimension: at most kMaxHeadDim in attention (a head row per thread in
// registers), any in split and merge; even when rotated.
// Expected agreement with the CPU (RMS difference over RMS reference): split
// and merge ~1e-7 (the same operations up to FMA contraction); attention
// ~1e-6..1e-5 (fp32 dot products and exponentials summed in another order).
#pragma once

#include <cstdint>

#include "nn/attention.h"

namespace routelab::cuda {

using nn::AttentionShape;
using nn::ScoreBias;

constexpr int kMaxHeadDim = 128;

// q, k (and v when rotate_v) = R(theta_t) times the head slices of qkv; cs
// null means no rotation.
void split_heads_forward(float* q, float* k, float* v, const float* qkv, const float* cs, bool rotate_v,
                         AttentionShape s);
// Adds d qkv, and d loss / d theta into dtheta (when not null).
void split_heads_backward(float* dqkv, double* dtheta, const float* dq, const float* dk, const float* dv,
                          const float* q, const float* k, const float* v, const float* cs, bool rotate_v,
                          AttentionShape s);

// y_t = R(-theta_t) o_t per head when cs is given, else the heads side by side.
void merge_heads_forward(float* y, const float* o, const float* cs, AttentionShape s);
void merge_heads_backward(float* d_o, double* dtheta, const float* dy, const float* y, const float* cs,
                          AttentionShape s);

// o = softmax(q k^T / sqrt(hd) - slope_h (i - j) + cum_i - cum_j, causal) v;
// lse keeps each row's log-sum-exp.
void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v, ScoreBias<float> bias,
                       AttentionShape s);
// Adds dq, dk, dv, and dcum when bias.cum is given.
void attention_backward(float* dq, float* dk, float* dv, float* dcum, const float* d_o, const float* o,
                        const float* lse, const float* q, const float* k, const float* v, ScoreBias<float> bias,
                        AttentionShape s);

}  // namespace routelab::cuda
