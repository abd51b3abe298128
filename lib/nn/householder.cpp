#include "nn/householder.h"
#include "nn/host_vector.h"
#include "nn/householder_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

namespace routelab::nn {

namespace {

template <class R>
inline R dot(const R* a, const R* b, int n) {
  R acc = 0;
  for (int c = 0; c < n; ++c) acc += a[c] * b[c];
  return acc;
}

// A tile of up to L query rows side by side: lane l of a block X (hd x L,
// X[c L + l]) carries row i0 + l, so a step is hd FMAs across the lanes and
// no dot product's reduction per row. L = 1 is the row-by-row algorithm.

// out[l] = w . X(:, l), four partial sums so the FMAs do not wait in a chain.
// `omp simd` keeps GCC vectorising across lanes: left alone it vectorises
// the outer loop over coordinates, with strided loads and shuffles.
template <class R, int L>
inline void dot_lanes(R* out, const R* w, const R* X, int d) {
  R acc[4][L] = {};
  int c = 0;
  for (; c + 4 <= d; c += 4)
    for (int u = 0; u < 4; ++u)
#pragma omp simd
      for (int l = 0; l < L; ++l) acc[u][l] += w[c + u] * X[(c + u) * L + l];
  for (; c < d; ++c)
#pragma omp simd
    for (int l = 0; l < L; ++l) acc[0][l] += w[c] * X[c * L + l];
#pragma omp simd
  for (int l = 0; l < L; ++l) out[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
}

// X <- H X = X - beta w (w^T X), lane by lane.
template <class R, int L>
inline void step_forward(R* X, const R* w, R beta, int d) {
  R alpha[L];
  dot_lanes<R, L>(alpha, w, X, d);
  for (int c = 0; c < d; ++c)
#pragma omp simd
    for (int l = 0; l < L; ++l) X[c * L + l] -= beta * w[c] * alpha[l];
}

// Y holds d loss / d out of out = H in, lane by lane; on return d loss / d in
// (H is symmetric). Adds d loss / d w (hd x L) and d loss / d beta (L) lane
// by lane: the caller sums the lanes once per head.
template <class R, int L>
inline void step_backward(R* Y, const R* in, const R* w, R beta, R* dw_lanes, R* dbeta_lanes, int d) {
  R alpha[L], gamma[L];
  dot_lanes<R, L>(alpha, w, in, d);
  dot_lanes<R, L>(gamma, w, Y, d);
#pragma omp simd
  for (int l = 0; l < L; ++l) dbeta_lanes[l] -= alpha[l] * gamma[l];
  for (int c = 0; c < d; ++c)
#pragma omp simd
    for (int l = 0; l < L; ++l) dw_lanes[c * L + l] -= beta * (alpha[l] * Y[c * L + l] + gamma[l] * in[c * L + l]);
  for (int c = 0; c < d; ++c)
#pragma omp simd
    for (int l = 0; l < L; ++l) Y[c * L + l] -= beta * w[c] * gamma[l];
}

// One head's buffers (offsets of head bh already applied).
template <class R>
struct Head {
  const R *q, *k, *v, *w, *beta;
  int d;
  R scale;
};

template <class R>
Head<R> head(const R* q, const R* k, const R* v, const R* w, const R* beta, int64_t bh, AttentionShape s) {
  const int64_t at = bh * s.T * s.hd;
  return {q + at, k + at, v ? v + at : nullptr, w + at, beta + bh * s.T, s.hd, R(1) / std::sqrt(R(s.hd))};
}

// S[j L + l] = s_ij for row i = i0 + l, keys j <= i0 + rows - 1 (0 where j > i:
// the lane's vector is injected at j = i and is zero before). The carried
// u_j = H_{j+1} ... H_i q_i lives in U (hd x L), or in block j of `keep`
// (T x hd x L) when backward needs it.
template <class R, int L>
void tile_scores(R* S, R* keep, R* U, const Head<R>& h, int64_t i0, int rows) {
  const int d = h.d;
  const int64_t top = i0 + rows - 1;
  R* cur = keep ? keep + top * d * L : U;
  std::fill(cur, cur + d * L, R(0));
  R alpha[L];
  for (int64_t j = top; j >= 0; --j) {
    if (j >= i0)
      for (int c = 0; c < d; ++c) cur[c * L + (j - i0)] = h.q[j * d + c];
    dot_lanes<R, L>(alpha, h.k + j * d, cur, d);
#pragma omp simd
    for (int l = 0; l < L; ++l) S[j * L + l] = h.scale * alpha[l];
    if (j == 0) break;
    R* next = keep ? keep + (j - 1) * d * L : U;
    if (next != cur) std::copy(cur, cur + d * L, next);
    step_forward<R, L>(next, h.w + j * d, h.beta[j], d);
    cur = next;
  }
}

// Each lane's causal softmax over its column of S; p = 0 past the lane's row
// and in lanes past `rows`.
template <class R, int L>
void tile_softmax(R* S, int64_t i0, int rows) {
  const int64_t top = i0 + rows - 1;
  for (int l = 0; l < L; ++l) {
    const int64_t n = l < rows ? i0 + l + 1 : 0;
    R mx = -std::numeric_limits<R>::infinity(), sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, S[j * L + l]);
    for (int64_t j = 0; j < n; ++j) sum += (S[j * L + l] = std::exp(S[j * L + l] - mx));
    for (int64_t j = 0; j < n; ++j) S[j * L + l] /= sum;
    for (int64_t j = n; j <= top; ++j) S[j * L + l] = 0;
  }
}

// out row l = o_{i0 + l}: acc_j = H_j acc_{j-1} + p_j v_j (no H without value
// transport), read off at j = i and then cleared. Block j of `keep` gets
// acc_{j-1} when given; A (hd x L) is the accumulator.
template <class R, int L>
void tile_values(R* out, R* keep, R* A, const R* P, const Head<R>& h, int64_t i0, int rows, bool values) {
  const int d = h.d;
  std::fill(A, A + d * L, R(0));
  for (int64_t j = 0; j < i0 + rows; ++j) {
    if (values && j > 0) {
      if (keep) std::copy(A, A + d * L, keep + j * d * L);
      step_forward<R, L>(A, h.w + j * d, h.beta[j], d);
    }
    for (int c = 0; c < d; ++c)
#pragma omp simd
      for (int l = 0; l < L; ++l) A[c * L + l] += P[j * L + l] * h.v[j * d + c];
    if (j >= i0)
      for (int c = 0; c < d; ++c) out[(j - i0) * d + c] = A[c * L + (j - i0)], A[c * L + (j - i0)] = 0;
  }
}

template <class R, int L>
void attention_forward_tiled(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta, bool values,
                             AttentionShape s) {
#pragma omp parallel
  {
    HostVector<R> S(std::size_t(s.T) * L), U(std::size_t(s.hd) * L), A(U.size());
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const Head<R> h = head(q, k, v, w, beta, bh, s);
      for (int64_t i0 = 0; i0 < s.T; i0 += L) {
        const int rows = int(std::min<int64_t>(L, s.T - i0));
        tile_scores<R, L>(S.data(), (R*)nullptr, U.data(), h, i0, rows);
        tile_softmax<R, L>(S.data(), i0, rows);
        tile_values<R, L>(o + (bh * s.T + i0) * s.hd, (R*)nullptr, A.data(), S.data(), h, i0, rows, values);
      }
    }
  }
}

template <class R, int L>
void attention_backward_tiled(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q, const R* k,
                              const R* v, const R* w, const R* beta, bool values, AttentionShape s) {
  const int d = s.hd;
#pragma omp parallel
  {
    // A tile's recomputed forward: u_j and acc_{j-1} by key, P (then dS);
    // the head's dk, dv, dw, dbeta lane by lane (a sum over lanes per key and
    // tile would cost as much as the tile's FMAs).
    const std::size_t block = std::size_t(s.T) * d * L;
    HostVector<R> us(block), accs(block), dk_lanes(block), dv_lanes(block), dw_lanes(block),
        dbeta_lanes(std::size_t(s.T) * L), S(std::size_t(s.T) * L), O(std::size_t(d) * L), A(O.size()), Y(O.size());
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const Head<R> h = head(q, k, v, w, beta, bh, s);
      const int64_t at = bh * s.T * d;
      const R* G = d_o + at;
      R* dQ = dq + at;
      R *dKl = dk_lanes.data(), *dVl = dv_lanes.data(), *dWl = dw_lanes.data(), *dBl = dbeta_lanes.data();
      for (auto* x : {&dk_lanes, &dv_lanes, &dw_lanes, &dbeta_lanes}) std::fill(x->begin(), x->end(), R(0));
      for (int64_t i0 = 0; i0 < s.T; i0 += L) {
        const int rows = int(std::min<int64_t>(L, s.T - i0));
        const int64_t top = i0 + rows - 1;
        tile_scores<R, L>(S.data(), us.data(), (R*)nullptr, h, i0, rows);
        tile_softmax<R, L>(S.data(), i0, rows);
        tile_values<R, L>(O.data(), accs.data(), A.data(), S.data(), h, i0, rows, values);
        R D[L] = {}, dp[L];  // D_i = dO_i . O_i, the softmax's row correction
        for (int l = 0; l < rows; ++l) D[l] = dot(G + (i0 + l) * d, O.data() + l * d, d);
        // Values, top down: Y = d loss / d acc_j, lane i0 + l injected at j = i.
        std::fill(Y.begin(), Y.end(), R(0));
        for (int64_t j = top; j >= 0; --j) {
          if (j >= i0)
            for (int c = 0; c < d; ++c) Y[c * L + (j - i0)] = G[j * d + c];
          dot_lanes<R, L>(dp, h.v + j * d, Y.data(), d);
          for (int c = 0; c < d; ++c)
#pragma omp simd
            for (int l = 0; l < L; ++l) dVl[(j * d + c) * L + l] += S[j * L + l] * Y[c * L + l];
#pragma omp simd
          for (int l = 0; l < L; ++l) S[j * L + l] *= dp[l] - D[l];  // P becomes dS
          if (values && j > 0)
            step_backward<R, L>(Y.data(), accs.data() + j * d * L, h.w + j * d, h.beta[j], dWl + j * d * L,
                                dBl + j * L, d);
        }
        // Scores, bottom up: Y = d loss / d u_j, read off into dq at j = i.
        std::fill(Y.begin(), Y.end(), R(0));
        for (int64_t j = 0; j <= top; ++j) {
          const R* Uj = us.data() + j * d * L;
          if (j > 0) step_backward<R, L>(Y.data(), Uj, h.w + j * d, h.beta[j], dWl + j * d * L, dBl + j * L, d);
          for (int c = 0; c < d; ++c)
#pragma omp simd
            for (int l = 0; l < L; ++l) {
              Y[c * L + l] += h.scale * S[j * L + l] * h.k[j * d + c];
              dKl[(j * d + c) * L + l] += h.scale * S[j * L + l] * Uj[c * L + l];
            }
          if (j >= i0)
            for (int c = 0; c < d; ++c) dQ[j * d + c] += Y[c * L + (j - i0)], Y[c * L + (j - i0)] = 0;
        }
      }
      // Sum the lanes; a fixed SIMD tree, the same bytes at any thread count.
      const struct {
        const R* lanes;
        R* out;
        int64_t n;
      } sums[] = {{dKl, dk + at, s.T * d}, {dVl, dv + at, s.T * d}, {dWl, dw + at, s.T * d}, {dBl, dbeta + bh * s.T, s.T}};
      for (const auto& [lanes, out, n] : sums)
        for (int64_t r = 0; r < n; ++r) {
          R g = 0;
#pragma omp simd reduction(+ : g)
          for (int l = 0; l < L; ++l) g += lanes[r * L + l];
          out[r] += g;
        }
    }
  }
}

}  // namespace

namespace {

// f(bth, bht) for every step: bth = (b T + t) H + h indexes (B, T, H) as the
// projections write it (z's head slice starts at bth hd), bht = (b H + h) T + t
// indexes (B, H, T).
template <class F>
void for_each_step(AttentionShape s, F&& f) {
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    for (int h = 0; h < s.H; ++h) f(bt * s.H + h, (b * s.H + h) * s.T + t);
  }
}

}  // namespace

template <class R>
void householder_steps_forward(R* w, R* beta, const R* z, const R* beta_logit, AttentionShape s) {
  for_each_step(s, [&](int64_t bth, int64_t bht) {
    householder_step_forward(w + bht * s.hd, beta + bht, z + bth * s.hd, beta_logit ? beta_logit + bth : nullptr,
                             s.hd);
  });
}

template <class R>
void householder_steps_backward(R* dz, R* dbeta_logit, const R* dw, const R* dbeta, const R* z, const R* beta,
                                AttentionShape s) {
  for_each_step(s, [&](int64_t bth, int64_t bht) {
    householder_step_backward(dz + bth * s.hd, dbeta_logit ? dbeta_logit + bth : nullptr, dw + bht * s.hd,
                              dbeta ? dbeta[bht] : R(0), z + bth * s.hd, beta[bht], s.hd);
  });
}

int householder_chunk(int64_t T) { return T <= 256 ? 16 : T <= 512 ? 32 : 48; }

namespace {

void require_no_bias(HouseholderPath path, const void* cum) {
  if (cum && path != HouseholderPath::blocked)
    throw std::invalid_argument("householder attention: a forget gate's bias needs the blocked path");
}

}  // namespace

template <class R>
void householder_attention_forward(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta,
                                   bool values, AttentionShape s, HouseholderPath path, int chunk,
                                   HouseholderCache<R>* cache, const R* cum) {
  require_no_bias(path, cum);
  switch (path) {
    case HouseholderPath::blocked:
      return householder_attention_forward_blocked(o, q, k, v, w, beta, values, s,
                                                   chunk > 0 ? chunk : householder_chunk(s.T), cache, cum);
    case HouseholderPath::tiles:
      return attention_forward_tiled<R, kHouseholderTileRows>(o, q, k, v, w, beta, values, s);
    case HouseholderPath::rows:
      return attention_forward_tiled<R, 1>(o, q, k, v, w, beta, values, s);
  }
}

template <class R>
void householder_attention_backward(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q, const R* k,
                                    const R* v, const R* w, const R* beta, bool values, AttentionShape s,
                                    HouseholderPath path, int chunk, HouseholderCache<R>* cache, const R* cum,
                                    R* dcum) {
  require_no_bias(path, cum);
  if (cum && !dcum) throw std::invalid_argument("householder_attention_backward: a forget gate's bias needs dcum");
  switch (path) {
    case HouseholderPath::blocked:
      return householder_attention_backward_blocked(dq, dk, dv, dw, dbeta, d_o, q, k, v, w, beta, values, s,
                                                    chunk > 0 ? chunk : householder_chunk(s.T), cache, cum, dcum);
    case HouseholderPath::tiles:
      return attention_backward_tiled<R, kHouseholderTileRows>(dq, dk, dv, dw, dbeta, d_o, q, k, v, w, beta, values,
                                                               s);
    case HouseholderPath::rows:
      return attention_backward_tiled<R, 1>(dq, dk, dv, dw, dbeta, d_o, q, k, v, w, beta, values, s);
  }
}

template <class R>
void householder_row_logits(R* logits, const R* q, const R* k, const R* w, const R* beta, int64_t bh, int64_t i,
                            AttentionShape s) {
  HostVector<R> U(s.hd);
  tile_scores<R, 1>(logits, (R*)nullptr, U.data(), head(q, k, (const R*)nullptr, w, beta, bh, s), i, 1);
}

void householder_attention_reference(double* o, const double* q, const double* k, const double* v, const double* w,
                                     const double* beta, bool values, AttentionShape s, bool key_step_included,
                                     const double* cum) {
  using Mat = Eigen::MatrixXd;
  using Vec = Eigen::VectorXd;
  const int d = s.hd;
  auto vec = [&](const double* x, int64_t bh, int64_t t) { return Eigen::Map<const Vec>(x + (bh * s.T + t) * d, d); };
  for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh)
    for (int64_t i = 0; i < s.T; ++i) {
      std::vector<Mat> route(i + 1);
      Vec logits(i + 1);
      for (int64_t j = 0; j <= i; ++j) {
        Mat M = Mat::Identity(d, d);
        for (int64_t t = key_step_included ? j : j + 1; t <= i; ++t) {
          const Vec wt = vec(w, bh, t);
          M = M * (Mat::Identity(d, d) - beta[bh * s.T + t] * wt * wt.transpose());
        }
        logits(j) = vec(k, bh, j).dot(M * vec(q, bh, i)) / std::sqrt(double(d));
        if (cum) logits(j) += cum[bh * s.T + i] - cum[bh * s.T + j];
        route[j] = M;
      }
      const Vec p = (logits.array() - logits.maxCoeff()).exp().matrix();
      Vec out = Vec::Zero(d);
      for (int64_t j = 0; j <= i; ++j)
        out += p(j) / p.sum() * (values ? Vec(route[j].transpose() * vec(v, bh, j)) : Vec(vec(v, bh, j)));
      Eigen::Map<Vec>(o + (bh * s.T + i) * d, d) = out;
    }
}

#define ROUTELAB_HOUSEHOLDER(R)                                                                                     \
  template void householder_steps_forward<R>(R*, R*, const R*, const R*, AttentionShape);                          \
  template void householder_steps_backward<R>(R*, R*, const R*, const R*, const R*, const R*, AttentionShape);     \
  template void householder_attention_forward<R>(R*, const R*, const R*, const R*, const R*, const R*, bool,       \
                                                 AttentionShape, HouseholderPath, int, HouseholderCache<R>*,       \
                                                 const R*);                                                        \
  template void householder_attention_backward<R>(R*, R*, R*, R*, R*, const R*, const R*, const R*, const R*,      \
                                                  const R*, const R*, bool, AttentionShape, HouseholderPath, int,  \
                                                  HouseholderCache<R>*, const R*, R*);                             \
  template void householder_row_logits<R>(R*, const R*, const R*, const R*, const R*, int64_t, int64_t,            \
                                          AttentionShape);
ROUTELAB_HOUSEHOLDER(float)
ROUTELAB_HOUSEHOLDER(double)
#undef ROUTELAB_HOUSEHOLDER

}  // namespace routelab::nn
