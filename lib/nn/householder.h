// Householder transport inside attention (PaTH, Yang et al. 2025): per head
// and position a step H_t = I - beta_t w_t w_t^T, w_t a unit vector made from
// the layer's input, and the score of query i and key j <= i
//   s_ij = k_j^T (H_{j+1} ... H_i) q_i / sqrt(hd)
// (the query's own step included, the key's excluded; j = i is the identity).
// With values transported too (householder_qkv)
//   o_i = sum_j p_ij (H_{j+1} ... H_i)^T v_j = sum_j p_ij H_i ... H_{j+1} v_j.
// beta_t = 2 sigmoid(.) is PaTH's own step: orthogonal only at 0 and 2, a
// contraction along w_t in between. beta = 2 makes every step a reflection,
// the case the paper's theorems cover.
//
// Layouts as in attention.h: q, k, v, o, w (B, H, T, hd); beta (B, H, T).
// Three algorithms compute the same function (up to rounding), each O(T^2 hd)
// per head with memory linear in T:
//   blocked  PaTH's chunked algorithm (householder_blocked.cpp): the steps in
//            chunks of kHouseholderChunk, each chunk's product in UT form, so
//            a query chunk meets a key chunk in a few matrix products; the
//            model's path. The GPU runs the same algorithm, written over a
//            thread team (cuda/householder_chunks.h).
//   tiles    the reference: for query i it carries u = q_i down the keys
//            (score k_j, then u <- H_j u) and the values up (acc <- H_j acc +
//            p_ij v_j), one rank-1 step at a time, kHouseholderTileRows query
//            rows side by side (hd FMAs across rows per step rather than a
//            dot product's reduction per row). Forward keeps a tile's scores
//            (T x 16 per thread); backward recomputes a tile, keeping its u's
//            and acc's and the head's dk, dv, dw lane by lane.
//   rows     the same one row at a time (tile of 1).
// Each head is one thread's work in a fixed order: the same bytes at any
// thread count.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/attention.h"

namespace routelab::nn {

constexpr int kHouseholderTileRows = 16;  // one 512-bit register of floats per coordinate
// Steps per chunk of the blocked path at length T, tuned with bench_attention
// --chunks (bench/README.md): 16 up to T = 256, where the in-chunk work (about
// c hd + c^2 per position) dominates, 32 up to 512, 48 beyond, where the
// chunk pairs' products do and 48 rows fill Eigen's AVX-512 float
// micro-kernel (3 x 16).
int householder_chunk(int64_t T);

enum class HouseholderPath { blocked, tiles, rows };

// The steps from the projections: z (B, T, C) -> w (B, H, T, hd), each head's
// slice normalised; beta_logit (B, T, H) -> beta (B, H, T) = 2 sigmoid(.),
// or beta = 2 everywhere when beta_logit is null (reflections).
template <class R>
void householder_steps_forward(R* w, R* beta, const R* z, const R* beta_logit, AttentionShape s);
// dz (and dbeta_logit when not null) from dw, dbeta: written, not added.
template <class R>
void householder_steps_backward(R* dz, R* dbeta_logit, const R* dw, const R* dbeta, const R* z, const R* beta,
                                AttentionShape s);

// o = softmax(s, causal) times the values, transported when `values`.
// The blocked forward's chunk products, kept for the backward of the same
// inputs (training: one per layer), so backward does not build them again;
// about ten times q's memory. Backward given a cache that holds other inputs
// builds them itself. Opaque.
template <class R>
struct HouseholderCache;
template <class R>
std::shared_ptr<HouseholderCache<R>> make_householder_cache();

// `chunk` (blocked only): steps per chunk; 0 is householder_chunk(T).
// `cum` (B, H, T), a forget gate's running sums of log f_t
// (nn/forget_gate.h), adds cum_i - cum_j to each logit s_ij (after its
// 1/sqrt(hd)), as ScoreBias does in attention_forward (path_qk_forget: PaTH
// with the forget gate); null for none. The blocked path only: tiles and
// rows refuse it (std::invalid_argument).
template <class R>
void householder_attention_forward(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta,
                                   bool values, AttentionShape s, HouseholderPath path = HouseholderPath::blocked,
                                   int chunk = 0, HouseholderCache<R>* cache = nullptr, const R* cum = nullptr);
// Adds d loss / d q, k, v, w, beta, and d loss / d cum into dcum when cum is
// given.
template <class R>
void householder_attention_backward(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q, const R* k,
                                    const R* v, const R* w, const R* beta, bool values, AttentionShape s,
                                    HouseholderPath path = HouseholderPath::blocked, int chunk = 0,
                                    HouseholderCache<R>* cache = nullptr, const R* cum = nullptr,
                                    R* dcum = nullptr);

// The blocked path itself (householder_blocked.cpp).
template <class R>
void householder_attention_forward_blocked(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta,
                                           bool values, AttentionShape s, int chunk, HouseholderCache<R>* cache,
                                           const R* cum);
template <class R>
void householder_attention_backward_blocked(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q,
                                            const R* k, const R* v, const R* w, const R* beta, bool values,
                                            AttentionShape s, int chunk, HouseholderCache<R>* cache, const R* cum,
                                            R* dcum);

// One query row's raw logits s_i0 .. s_ii (i + 1 values) for head bh = b H + h,
// before any softmax: what an attention probe reads.
template <class R>
void householder_row_logits(R* logits, const R* q, const R* k, const R* w, const R* beta, int64_t bh, int64_t i,
                            AttentionShape s);

// The plain reference, for tests only: every transport H_{j+1} ... H_i built
// as an explicit hd x hd product, O(T^3 hd^3), and cum's bias when given.
// key_step_included plants the off-by-one (H_j ... H_i) that the tests must
// catch.
void householder_attention_reference(double* o, const double* q, const double* k, const double* v, const double* w,
                                     const double* beta, bool values, AttentionShape s,
                                     bool key_step_included = false, const double* cum = nullptr);

}  // namespace routelab::nn
