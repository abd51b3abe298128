// Householder transport inside attention (PaTH) on a CUDA device: the same
// functions, layouts and semantics as nn/householder.h (the CPU reference
// they are tested against in tests/test_gpu_householder.cpp), for float, over
// device pointers. Two paths (nn::HouseholderPath; the CPU's tiles is
// refused):
//   blocked  (the model's) PaTH's chunked algorithm, cuda/householder_chunks.h,
//            which the CPU tests run on the host too: one block builds each
//            chunk's UT products; forward spreads a head's query chunks over
//            several blocks; backward is one block a head, its query chunks in
//            order (the key chunks' gradients collect over them without
//            atomics). Scratch per head: the chunks (about T (4 c + 4 hd +
//            hd^2 / c) floats) and per block c T scores; backward also c T
//            score gradients, the queries and values kept at every chunk
//            (2 T hd) and the chunks' gradients (about T (3 hd + c +
//            hd^2 / c)). Heads go a group at a time, so scratch stays under
//            about 1 GiB (or one head's, if more).
//   rows     the plain form: one warp per query row at a time, carrying
//            u = q_i down the keys and the values up (cuda/householder_rows.h,
//            also run on the host by the CPU tests); forward keeps one row's T
//            scores per warp, backward a row's chains and each warp's partial
//            dk, dv, dw, dbeta (T x (5 hd + 3) floats per warp).
// Both keep memory linear in T, in `scratch`, grown as needed.
// Head dimension: at most kMaxHeadDim (cuda/attention.h).
// Expected agreement with the CPU (RMS difference over RMS reference): steps
// ~1e-7 (the same code, nn/householder_step.h); attention ~1e-6 forward,
// ~1e-5 backward (fp32 dots reduced across a warp, in another order).
#pragma once

#include "cuda/buffer.h"
#include "nn/attention.h"
#include "nn/householder.h"

namespace routelab::cuda {

using nn::AttentionShape;

// w (B, H, T, hd), beta (B, H, T) from z (B, T, C) and beta_logit (B, T, H),
// or beta = 2 when beta_logit is null.
void householder_steps_forward(float* w, float* beta, const float* z, const float* beta_logit, AttentionShape s);
// dz (and dbeta_logit when not null), written, not added.
void householder_steps_backward(float* dz, float* dbeta_logit, const float* dw, const float* dbeta, const float* z,
                                const float* beta, AttentionShape s);

// o = softmax(s, causal) times the values, transported when `values`; cum
// (B, H, T), a forget gate's running log sums, adds cum_i - cum_j to the
// scaled scores (the blocked path only, as on the CPU).
void householder_attention_forward(float* o, const float* q, const float* k, const float* v, const float* w,
                                   const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch,
                                   nn::HouseholderPath path = nn::HouseholderPath::blocked,
                                   const float* cum = nullptr);
// Adds d loss / d q, k, v, w, beta (and d loss / d cum into dcum under a gate).
void householder_attention_backward(float* dq, float* dk, float* dv, float* dw, float* dbeta, const float* d_o,
                                    const float* q, const float* k, const float* v, const float* w,
                                    const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch,
                                    nn::HouseholderPath path = nn::HouseholderPath::blocked,
                                    const float* cum = nullptr, float* dcum = nullptr);

// The blocked path's scratch limit (bytes, default 1 GiB): heads go a group
// at a time so that a launch's scratch stays under it (one head at least).
// Returns the previous limit. For tests, which lower it to run many groups.
std::size_t set_householder_scratch_limit(std::size_t bytes);

}  // namespace routelab::cuda
