#include "nn/householder.h"

#include <algorithm>
#include <cmath>
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

template <class R>
inline void axpy(R* y, R a, const R* x, int n) {
  for (int c = 0; c < n; ++c) y[c] += a * x[c];
}

// out = H in = in - beta (w . in) w; out may be in.
template <class R>
inline void step_forward(R* out, const R* in, const R* w, R beta, int n) {
  const R a = beta * dot(w, in, n);
  for (int c = 0; c < n; ++c) out[c] = in[c] - a * w[c];
}

// y holds d loss / d out of out = H in; on return d loss / d in (H is
// symmetric). Adds d loss / d w and d loss / d beta.
template <class R>
inline void step_backward(R* y, const R* in, const R* w, R beta, R* dw, R* dbeta, int n) {
  const R alpha = dot(w, in, n), gamma = dot(w, y, n);
  *dbeta -= alpha * gamma;
  for (int c = 0; c < n; ++c) dw[c] -= beta * (alpha * y[c] + gamma * in[c]);
  axpy(y, -beta * gamma, w, n);
}

template <class R>
void softmax_in_place(R* p, int64_t n) {
  const R mx = *std::max_element(p, p + n);
  R sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - mx));
  for (int64_t j = 0; j < n; ++j) p[j] /= sum;
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

// logits[j] = s_ij, j <= i. The carried vector u_j = H_{j+1} ... H_i q_i
// lives in `u` (hd), or row j of `keep` (T x hd) when backward needs it.
template <class R>
void row_scores(R* logits, R* keep, R* u, const Head<R>& h, int64_t i) {
  const int d = h.d;
  R* cur = keep ? keep + i * d : u;
  std::copy(h.q + i * d, h.q + (i + 1) * d, cur);
  for (int64_t j = i; j >= 0; --j) {
    logits[j] = h.scale * dot(h.k + j * d, cur, d);
    if (j == 0) break;
    R* next = keep ? keep + (j - 1) * d : u;
    step_forward(next, cur, h.w + j * d, h.beta[j], d);
    cur = next;
  }
}

// o = acc_i, acc_j = H_j acc_{j-1} + p_j v_j (no H without value transport);
// row j of `keep` gets acc_{j-1} when given.
template <class R>
void row_values(R* o, R* keep, const R* p, const Head<R>& h, int64_t i, bool values) {
  const int d = h.d;
  std::fill(o, o + d, R(0));
  for (int64_t j = 0; j <= i; ++j) {
    if (values && j > 0) {
      if (keep) std::copy(o, o + d, keep + j * d);
      step_forward(o, o, h.w + j * d, h.beta[j], d);
    }
    axpy(o, p[j], h.v + j * d, d);
  }
}

}  // namespace

template <class R>
void householder_steps_forward(R* w, R* beta, const R* z, const R* beta_logit, AttentionShape s) {
  const int64_t C = s.C();
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    for (int h = 0; h < s.H; ++h) {
      const R* src = z + bt * C + h * s.hd;
      const int64_t bht = (b * s.H + h) * s.T + t;
      // A zero z would have no direction: its norm is floored.
      const R inv = R(1) / std::max(std::sqrt(dot(src, src, s.hd)), R(1e-12));
      for (int c = 0; c < s.hd; ++c) w[bht * s.hd + c] = src[c] * inv;
      beta[bht] = beta_logit ? R(2) / (R(1) + std::exp(-beta_logit[bt * s.H + h])) : R(2);
    }
  }
}

template <class R>
void householder_steps_backward(R* dz, R* dbeta_logit, const R* dw, const R* dbeta, const R* z, const R* beta,
                                AttentionShape s) {
  const int64_t C = s.C();
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    for (int h = 0; h < s.H; ++h) {
      const R* src = z + bt * C + h * s.hd;
      const int64_t bht = (b * s.H + h) * s.T + t;
      const R* g = dw + bht * s.hd;
      R* d = dz + bt * C + h * s.hd;
      const R norm = std::sqrt(dot(src, src, s.hd));
      if (norm < R(1e-12)) {
        for (int c = 0; c < s.hd; ++c) d[c] = g[c] / R(1e-12);
      } else {
        // w = z / |z|: dz = (dw - w (w . dw)) / |z|.
        const R inv = R(1) / norm, wg = dot(src, g, s.hd) * inv;
        for (int c = 0; c < s.hd; ++c) d[c] = (g[c] - src[c] * inv * wg) * inv;
      }
      // beta = 2 sigmoid(x): d beta / dx = beta (1 - beta / 2).
      if (dbeta_logit) dbeta_logit[bt * s.H + h] = dbeta[bht] * beta[bht] * (R(1) - beta[bht] / R(2));
    }
  }
}

template <class R>
void householder_attention_forward(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta,
                                   bool values, AttentionShape s) {
#pragma omp parallel
  {
    std::vector<R> logits(s.T), u(s.hd);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const Head<R> h = head(q, k, v, w, beta, bh, s);
      for (int64_t i = 0; i < s.T; ++i) {
        row_scores(logits.data(), (R*)nullptr, u.data(), h, i);
        softmax_in_place(logits.data(), i + 1);
        row_values(o + (bh * s.T + i) * s.hd, (R*)nullptr, logits.data(), h, i, values);
      }
    }
  }
}

template <class R>
void householder_attention_backward(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q, const R* k,
                                    const R* v, const R* w, const R* beta, bool values, AttentionShape s) {
  const int d = s.hd;
#pragma omp parallel
  {
    // One row's recomputed forward: u_j and acc_{j-1} by key, p and dS.
    std::vector<R> us(std::size_t(s.T) * d), accs(std::size_t(s.T) * d), p(s.T), ds(s.T), o(d), y(d);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const Head<R> h = head(q, k, v, w, beta, bh, s);
      const int64_t at = bh * s.T * d;
      R *dK = dk + at, *dV = dv + at, *dW = dw + at, *dB = dbeta + bh * s.T;
      for (int64_t i = 0; i < s.T; ++i) {
        row_scores(p.data(), us.data(), (R*)nullptr, h, i);
        softmax_in_place(p.data(), i + 1);
        row_values(o.data(), accs.data(), p.data(), h, i, values);
        const R* g = d_o + at + i * d;
        const R D = dot(g, o.data(), d);  // sum_j p_j dp_j, the softmax's row correction
        // Values, top down: y = d loss / d acc_j.
        std::copy(g, g + d, y.data());
        for (int64_t j = i; j >= 0; --j) {
          ds[j] = p[j] * (dot(y.data(), h.v + j * d, d) - D);
          axpy(dV + j * d, p[j], y.data(), d);
          if (values && j > 0) step_backward(y.data(), accs.data() + j * d, h.w + j * d, h.beta[j], dW + j * d, dB + j, d);
        }
        // Scores, bottom up: y = d loss / d u_j.
        std::fill(y.begin(), y.end(), R(0));
        for (int64_t j = 0; j <= i; ++j) {
          if (j > 0) step_backward(y.data(), us.data() + j * d, h.w + j * d, h.beta[j], dW + j * d, dB + j, d);
          axpy(y.data(), h.scale * ds[j], h.k + j * d, d);
          axpy(dK + j * d, h.scale * ds[j], us.data() + j * d, d);
        }
        axpy(dq + at + i * d, R(1), y.data(), d);
      }
    }
  }
}

template <class R>
void householder_row_logits(R* logits, const R* q, const R* k, const R* w, const R* beta, int64_t bh, int64_t i,
                            AttentionShape s) {
  std::vector<R> u(s.hd);
  row_scores(logits, (R*)nullptr, u.data(), head(q, k, (const R*)nullptr, w, beta, bh, s), i);
}

void householder_attention_reference(double* o, const double* q, const double* k, const double* v, const double* w,
                                     const double* beta, bool values, AttentionShape s, bool key_step_included) {
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
                                                 AttentionShape);                                                  \
  template void householder_attention_backward<R>(R*, R*, R*, R*, R*, const R*, const R*, const R*, const R*,      \
                                                  const R*, const R*, bool, AttentionShape);                       \
  template void householder_row_logits<R>(R*, const R*, const R*, const R*, const R*, int64_t, int64_t,            \
                                          AttentionShape);
ROUTELAB_HOUSEHOLDER(float)
ROUTELAB_HOUSEHOLDER(double)
#undef ROUTELAB_HOUSEHOLDER

}  // namespace routelab::nn
