// Householder attention one query row at a time: nn/householder.h's
// algorithm with tile_rows = 1 (carry u = q_i down the keys, the values up
// in Horner form; backward recomputes the row and walks both chains back),
// written once over a row-vector policy `Ops`:
//   - on the GPU one warp holds the row's hd coordinates across its lanes
//     (cuda/householder.cu, WarpRowOps);
//   - on the host a plain loop (HostRowOps, below), which
//     tests/test_householder_rows.cpp runs against nn::householder_attention_*,
//     so the kernels' order, indices, scratch layout and partial sums are
//     checked on a machine without a GPU.
// Ops provides Vec, zero(), load(p), store(p, x), add_to(p, a, x) (p += a x),
// dot(p, x) and dot(x, y) (the same value in every lane), axpy(x, a, p)
// (x += a p), set(p, v) and add(p, v) for one scalar in memory (one lane
// writes), softmax(S, n) in place, and sync() (memory written through
// set/add becomes visible to every lane).
//
// Work split: the rows of head bh go to `workers` workers, row i to worker
// i mod workers (the rows' costs grow with i, so every worker gets a like
// share). Backward gives each worker its own partial dk, dv, dw, dbeta (no
// two workers write one address, so no atomics); householder_partials_sum
// adds them in worker order: the same bytes on every run.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "base/host_device.h"
#include "nn/attention.h"

namespace routelab::cuda {

// One head's inputs (offsets of head bh applied): q, k, v, w (T x d), beta (T),
// and a forget gate's running log sums cum (T) or null (the blocked path's
// score bias cum_i - cum_j; the row path has none).
struct HouseholderHead {
  const float *q, *k, *v, *w, *beta;
  int64_t T;
  int d;
  float scale;  // 1 / sqrt(d)
  const float* cum;
};

// Head bh = b H + h of (B, H, T, hd) tensors; v and cum (B, H, T) may be null.
ROUTELAB_HOST_DEVICE inline HouseholderHead householder_head(const float* q, const float* k, const float* v,
                                                             const float* w, const float* beta, int64_t bh,
                                                             const nn::AttentionShape& s,
                                                             const float* cum = nullptr) {
  const int64_t at = bh * s.T * s.hd;
  return {q + at, k + at, v ? v + at : nullptr, w + at, beta + bh * s.T, s.T, s.hd, 1.0f / ::sqrtf(float(s.hd)),
          cum ? cum + bh * s.T : nullptr};
}

// One worker's scratch: S (T) the row's scores, then probabilities; dS (T);
// us, accs (T x d) the recomputed chains; dk, dv, dw (T x d) and dbeta (T) the
// worker's partial gradients. Forward uses S only. (dS apart from S: a lane
// may still read p_j while another writes dS_j.)
struct HouseholderWork {
  float *S, *dS, *us, *accs, *dk, *dv, *dw, *dbeta;
};

// Floats of one worker's scratch, and its parts, for a head of length T.
ROUTELAB_HOST_DEVICE inline std::size_t householder_work_floats(int64_t T, int d, bool backward) {
  return backward ? std::size_t(T) * (5 * std::size_t(d) + 3) : std::size_t(T);
}
ROUTELAB_HOST_DEVICE inline HouseholderWork householder_work(float* base, int64_t T, int d, bool backward) {
  const std::size_t block = std::size_t(T) * d;
  if (!backward) return {base, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  float* us = base + 3 * T;
  return {base, base + T, us, us + block, us + 2 * block, us + 3 * block, us + 4 * block, base + 2 * T};
}

// x <- H x = x - beta w (w . x).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline void householder_apply(const Ops& ops, typename Ops::Vec& x, const float* w, float beta) {
  ops.axpy(x, -beta * ops.dot(w, x), w);
}

// y holds d loss / d out of out = H in (in given); on return d loss / d in
// (H is symmetric). Adds d loss / d w into dw and d loss / d beta into *dbeta.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline void householder_apply_backward(const Ops& ops, typename Ops::Vec& y, const float* in,
                                                            const float* w, float beta, float* dw, float* dbeta) {
  const typename Ops::Vec x = ops.load(in);
  const float alpha = ops.dot(w, x), gamma = ops.dot(w, y);
  ops.add(dbeta, -alpha * gamma);
  ops.add_to(dw, -beta * alpha, y);
  ops.add_to(dw, -beta * gamma, x);
  ops.axpy(y, -beta * gamma, w);
}

// Scores s_ij = k_j . u_j / sqrt(d), u_j = H_{j+1} ... H_i q_i, into S[0..i],
// top down; u_j into us (T x d) when given.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline void householder_row_scores(const Ops& ops, const HouseholderHead& h, int64_t i, float* S,
                                                        float* us) {
  const int d = h.d;
  ops.sync();  // the worker's previous row has read S
  typename Ops::Vec u = ops.load(h.q + i * d);
  for (int64_t j = i; j >= 0; --j) {
    if (us) ops.store(us + j * d, u);
    ops.set(S + j, h.scale * ops.dot(h.k + j * d, u));
    if (j > 0) householder_apply(ops, u, h.w + j * d, h.beta[j]);
  }
  ops.sync();
}

// o_i = acc_i, acc_j = H_j acc_{j-1} + p_j v_j (no H without value
// transport), from S = p; acc_{j-1} into accs (T x d) when given.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline typename Ops::Vec householder_row_values(const Ops& ops, const HouseholderHead& h,
                                                                     int64_t i, const float* S, bool values,
                                                                     float* accs) {
  const int d = h.d;
  typename Ops::Vec acc = ops.zero();
  for (int64_t j = 0; j <= i; ++j) {
    if (values && j > 0) {
      if (accs) ops.store(accs + j * d, acc);
      householder_apply(ops, acc, h.w + j * d, h.beta[j]);
    }
    ops.axpy(acc, S[j], h.v + j * d);
  }
  return acc;
}

// o_i (d values).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline void householder_row_forward(const Ops& ops, const HouseholderHead& h, int64_t i,
                                                         bool values, float* S, float* o_row) {
  householder_row_scores(ops, h, i, S, nullptr);
  ops.softmax(S, i + 1);
  ops.store(o_row, householder_row_values(ops, h, i, S, values, nullptr));
}

// Row i's share of the gradients: adds d loss / d q_i into dq_row (the row's
// own), and d loss / d k, v, w, beta into the worker's partials.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Ops>
ROUTELAB_HOST_DEVICE inline void householder_row_backward(const Ops& ops, const HouseholderHead& h, int64_t i,
                                                          bool values, const float* do_row, float* dq_row,
                                                          const HouseholderWork& wk) {
  using Vec = typename Ops::Vec;
  const int d = h.d;
  float* S = wk.S;
  householder_row_scores(ops, h, i, S, wk.us);
  ops.softmax(S, i + 1);
  const Vec o = householder_row_values(ops, h, i, S, values, wk.accs);
  // Values, top down: y = d loss / d acc_j; dS = p (dp - D), with
  // D = dO_i . O_i the softmax's row correction.
  Vec y = ops.load(do_row);
  const float D = ops.dot(y, o);
  for (int64_t j = i; j >= 0; --j) {
    const float p = S[j], dp = ops.dot(h.v + j * d, y);
    ops.add_to(wk.dv + j * d, p, y);
    ops.set(wk.dS + j, p * (dp - D));
    if (values && j > 0)
      householder_apply_backward(ops, y, wk.accs + j * d, h.w + j * d, h.beta[j], wk.dw + j * d, wk.dbeta + j);
  }
  ops.sync();
  // Scores, bottom up: y = d loss / d u_j, which is d loss / d q_i at j = i.
  y = ops.zero();
  for (int64_t j = 0; j <= i; ++j) {
    if (j > 0) householder_apply_backward(ops, y, wk.us + j * d, h.w + j * d, h.beta[j], wk.dw + j * d, wk.dbeta + j);
    const float ds = h.scale * wk.dS[j];
    ops.axpy(y, ds, h.k + j * d);
    ops.add_to(wk.dk + j * d, ds, ops.load(wk.us + j * d));
  }
  ops.add_to(dq_row, 1.0f, y);
}

// out[r] += sum over workers w = 0 .. workers - 1 of partials[w stride + r],
// in that order.
ROUTELAB_HOST_DEVICE inline void householder_partials_sum(float* out, const float* partials, int workers,
                                                          std::size_t stride, std::size_t r) {
  float g = 0;
  for (int w = 0; w < workers; ++w) g += partials[w * stride + r];
  out[r] += g;
}

#ifndef __CUDA_ARCH__
// The host policy: a row vector is d floats in a plain array (d <= kMax).
struct HostRowOps {
  static constexpr int kMax = 256;
  struct Vec {
    float x[kMax];
  };
  int d;
  Vec zero() const {
    Vec v;
    for (int c = 0; c < d; ++c) v.x[c] = 0;
    return v;
  }
  Vec load(const float* p) const {
    Vec v;
    for (int c = 0; c < d; ++c) v.x[c] = p[c];
    return v;
  }
  void store(float* p, const Vec& v) const {
    for (int c = 0; c < d; ++c) p[c] = v.x[c];
  }
  void add_to(float* p, float a, const Vec& v) const {
    for (int c = 0; c < d; ++c) p[c] += a * v.x[c];
  }
  float dot(const float* p, const Vec& v) const {
    float s = 0;
    for (int c = 0; c < d; ++c) s += p[c] * v.x[c];
    return s;
  }
  float dot(const Vec& a, const Vec& b) const { return dot(a.x, b); }
  void axpy(Vec& v, float a, const float* p) const {
    for (int c = 0; c < d; ++c) v.x[c] += a * p[c];
  }
  void set(float* p, float v) const { *p = v; }
  void add(float* p, float v) const { *p += v; }
  // nn/householder.cpp's tile_softmax for one row.
  void softmax(float* S, int64_t n) const {
    float mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = S[j] > mx ? S[j] : mx;
    for (int64_t j = 0; j < n; ++j) sum += (S[j] = ::expf(S[j] - mx));
    for (int64_t j = 0; j < n; ++j) S[j] /= sum;
  }
  void sync() const {}
};
#endif

}  // namespace routelab::cuda
