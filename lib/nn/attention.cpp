#include "nn/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

namespace routelab::nn {

namespace {

template <class R>
using MatR = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class R>
using VecR = Eigen::Matrix<R, Eigen::Dynamic, 1>;
template <class R>
using CMap = Eigen::Map<const MatR<R>>;
template <class R>
using Map = Eigen::Map<MatR<R>>;

constexpr int kTile = 64;  // query and key rows per tile

int64_t tiles(int64_t n) { return (n + kTile - 1) / kTile; }

// One pair (a, b) -> R(s theta) (a, b), given cos and sin.
template <class R>
inline void rotate(R& a, R& b, R c, R s) {
  const R x = a, y = b;
  a = x * c - y * s;
  b = x * s + y * c;
}

// The scores of one tile: S = scale Q_i K_j^T, ALiBi bias, causal mask on the
// diagonal tile (-inf above it).
// cum is this head's running sum of log forget gates (or null).
template <class R>
void tile_scores(MatR<R>& S, const CMap<R>& Q, const CMap<R>& K, R scale, int64_t i0, int64_t j0, double slope,
                 const R* cum) {
  S.noalias() = Q * K.transpose();
  S *= scale;
  const int64_t rows = S.rows(), cols = S.cols();
  if (slope != 0)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) S(r, c) -= R(slope * double(i0 + r - (j0 + c)));
  if (cum)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) S(r, c) += cum[i0 + r] - cum[j0 + c];
  if (j0 + cols - 1 > i0)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r - j0 + 1); c < cols; ++c)
        S(r, c) = -std::numeric_limits<R>::infinity();
}

// exp leaves tiny values, not zeros, at -inf on some vector paths: the mask
// must be exact.
template <class R>
void zero_above_diagonal(MatR<R>& P, int64_t i0, int64_t j0) {
  if (j0 + P.cols() - 1 <= i0) return;
  for (int64_t r = 0; r < P.rows(); ++r)
    for (int64_t c = std::max<int64_t>(0, i0 + r - j0 + 1); c < P.cols(); ++c) P(r, c) = 0;
}

}  // namespace

template <class R>
void split_heads_forward(R* q, R* k, R* v, const R* qkv, const R* cs, bool rotate_v, AttentionShape s) {
  const int64_t C = s.C(), nb = s.hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    const R* src = qkv + bt * 3 * C;
    const R* rot = cs ? cs + bt * nb * 2 : nullptr;
    for (int h = 0; h < s.H; ++h) {
      const int64_t dst = ((b * s.H + h) * s.T + t) * s.hd;
      R* outs[3] = {q + dst, k + dst, v + dst};
      for (int w = 0; w < 3; ++w) {
        R* o = outs[w];
        std::copy(src + w * C + h * s.hd, src + w * C + (h + 1) * s.hd, o);
        if (rot && (w < 2 || rotate_v))
          for (int64_t j = 0; j < nb; ++j) rotate(o[2 * j], o[2 * j + 1], rot[2 * j], rot[2 * j + 1]);
      }
    }
  }
}

template <class R>
void split_heads_backward(R* dqkv, double* dtheta, const R* dq, const R* dk, const R* dv, const R* q, const R* k,
                          const R* v, const R* cs, bool rotate_v, AttentionShape s) {
  const int64_t C = s.C(), nb = s.hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    R* dst = dqkv + bt * 3 * C;
    const R* rot = cs ? cs + bt * nb * 2 : nullptr;
    double* dth = dtheta ? dtheta + bt * nb : nullptr;
    for (int h = 0; h < s.H; ++h) {
      const int64_t at = ((b * s.H + h) * s.T + t) * s.hd;
      const R* grads[3] = {dq + at, dk + at, dv + at};
      const R* outs[3] = {q + at, k + at, v + at};
      for (int w = 0; w < 3; ++w) {
        const R* g = grads[w];
        R* d = dst + w * C + h * s.hd;
        if (!rot || (w == 2 && !rotate_v)) {
          for (int i = 0; i < s.hd; ++i) d[i] += g[i];
          continue;
        }
        for (int64_t j = 0; j < nb; ++j) {
          const R c = rot[2 * j], sn = rot[2 * j + 1];
          const R ga = g[2 * j], gb = g[2 * j + 1];
          d[2 * j] += ga * c + gb * sn;  // R(-theta) g
          d[2 * j + 1] += -ga * sn + gb * c;
          // y = R(theta) x: dy/dtheta = (-y_b, y_a).
          if (dth) dth[j] += double(-ga * outs[w][2 * j + 1] + gb * outs[w][2 * j]);
        }
      }
    }
  }
}

template <class R>
void merge_heads_forward(R* y, const R* o, const R* cs, AttentionShape s) {
  const int64_t C = s.C(), nb = s.hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    const R* rot = cs ? cs + bt * nb * 2 : nullptr;
    for (int h = 0; h < s.H; ++h) {
      const R* src = o + ((b * s.H + h) * s.T + t) * s.hd;
      R* dst = y + bt * C + h * s.hd;
      std::copy(src, src + s.hd, dst);
      if (rot)
        for (int64_t j = 0; j < nb; ++j) rotate(dst[2 * j], dst[2 * j + 1], rot[2 * j], -rot[2 * j + 1]);
    }
  }
}

template <class R>
void merge_heads_backward(R* d_o, double* dtheta, const R* dy, const R* y, const R* cs, AttentionShape s) {
  const int64_t C = s.C(), nb = s.hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < int64_t(s.B) * s.T; ++bt) {
    const int64_t b = bt / s.T, t = bt % s.T;
    const R* rot = cs ? cs + bt * nb * 2 : nullptr;
    double* dth = dtheta ? dtheta + bt * nb : nullptr;
    for (int h = 0; h < s.H; ++h) {
      const R* g = dy + bt * C + h * s.hd;
      const R* out = y + bt * C + h * s.hd;
      R* d = d_o + ((b * s.H + h) * s.T + t) * s.hd;
      if (!rot) {
        for (int i = 0; i < s.hd; ++i) d[i] += g[i];
        continue;
      }
      for (int64_t j = 0; j < nb; ++j) {
        const R c = rot[2 * j], sn = rot[2 * j + 1];
        const R ga = g[2 * j], gb = g[2 * j + 1];
        d[2 * j] += ga * c - gb * sn;  // R(theta) g
        d[2 * j + 1] += ga * sn + gb * c;
        // y = R(-theta) o: dy/dtheta = (y_b, -y_a).
        if (dth) dth[j] += double(ga * out[2 * j + 1] - gb * out[2 * j]);
      }
    }
  }
}

template <class R>
void attention_forward(R* o, R* lse, const R* q, const R* k, const R* v, ScoreBias<R> bias, AttentionShape s) {
  const R scale = R(1) / std::sqrt(R(s.hd));
  const int64_t nt = tiles(s.T);
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < int64_t(s.B) * s.H * nt; ++task) {
    const int64_t bh = task / nt, i0 = (task % nt) * kTile, rows = std::min<int64_t>(kTile, s.T - i0);
    const double slope = bias.slopes ? bias.slopes[bh % s.H] : 0.0;
    const R* cum = bias.cum ? bias.cum + bh * s.T : nullptr;
    const int64_t base = bh * s.T * s.hd;
    CMap<R> Q(q + base + i0 * s.hd, rows, s.hd);
    MatR<R> acc = MatR<R>::Zero(rows, s.hd), S, P;
    VecR<R> m = VecR<R>::Constant(rows, -std::numeric_limits<R>::infinity()), l = VecR<R>::Zero(rows);
    for (int64_t j0 = 0; j0 < i0 + rows; j0 += kTile) {
      const int64_t cols = std::min<int64_t>(kTile, i0 + rows - j0);
      CMap<R> K(k + base + j0 * s.hd, cols, s.hd), V(v + base + j0 * s.hd, cols, s.hd);
      S.resize(rows, cols);
      tile_scores(S, Q, K, scale, i0, j0, slope, cum);
      const VecR<R> m_new = m.cwiseMax(S.rowwise().maxCoeff());
      // Subtract in place first: exp of the broadcast expression itself falls
      // back to scalar expf, half the time of a long evaluation.
      S.colwise() -= m_new;
      P = S.array().exp().matrix();
      zero_above_diagonal(P, i0, j0);
      const VecR<R> corr = (m - m_new).array().exp().matrix();
      l = l.cwiseProduct(corr) + P.rowwise().sum();
      acc = corr.asDiagonal() * acc;
      acc.noalias() += P * V;
      m = m_new;
    }
    Map<R>(o + base + i0 * s.hd, rows, s.hd) = l.cwiseInverse().asDiagonal() * acc;
    for (int64_t r = 0; r < rows; ++r) lse[bh * s.T + i0 + r] = m(r) + std::log(l(r));
  }
}

template <class R>
void attention_backward(R* dq, R* dk, R* dv, R* dcum, const R* d_o, const R* o, const R* lse, const R* q,
                        const R* k, const R* v, ScoreBias<R> bias, AttentionShape s) {
  const R scale = R(1) / std::sqrt(R(s.hd));
  const int64_t nt = tiles(s.T);
#pragma omp parallel for schedule(dynamic)
  for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
    const double slope = bias.slopes ? bias.slopes[bh % s.H] : 0.0;
    const R* cum = bias.cum ? bias.cum + bh * s.T : nullptr;
    const int64_t base = bh * s.T * s.hd;
    // D_i = dO_i . O_i, the softmax's row correction.
    VecR<R> D(s.T);
    for (int64_t i = 0; i < s.T; ++i) {
      R acc = 0;
      for (int c = 0; c < s.hd; ++c) acc += d_o[base + i * s.hd + c] * o[base + i * s.hd + c];
      D(i) = acc;
    }
    MatR<R> S, P, dP;
    for (int64_t jt = 0; jt < nt; ++jt) {
      const int64_t j0 = jt * kTile, cols = std::min<int64_t>(kTile, s.T - j0);
      CMap<R> K(k + base + j0 * s.hd, cols, s.hd), V(v + base + j0 * s.hd, cols, s.hd);
      Map<R> dK(dk + base + j0 * s.hd, cols, s.hd), dV(dv + base + j0 * s.hd, cols, s.hd);
      for (int64_t it = jt; it < nt; ++it) {
        const int64_t i0 = it * kTile, rows = std::min<int64_t>(kTile, s.T - i0);
        CMap<R> Q(q + base + i0 * s.hd, rows, s.hd), dO(d_o + base + i0 * s.hd, rows, s.hd);
        Eigen::Map<const VecR<R>> L(lse + bh * s.T + i0, rows);
        S.resize(rows, cols);
        tile_scores(S, Q, K, scale, i0, j0, slope, cum);
        S.colwise() -= L;
        P = S.array().exp().matrix();
        zero_above_diagonal(P, i0, j0);
        dV.noalias() += P.transpose() * dO;
        dP.noalias() = dO * V.transpose();
        // dS = P o (dP - D_i), then both products carry the score scale.
        P = P.cwiseProduct(dP.colwise() - D.segment(i0, rows));
        // The bias cum_i - cum_j enters unscaled: row sums to i, column sums from j.
        if (cum) {
          Eigen::Map<VecR<R>>(dcum + bh * s.T + i0, rows) += P.rowwise().sum();
          Eigen::Map<VecR<R>>(dcum + bh * s.T + j0, cols) -= P.colwise().sum().transpose();
        }
        Map<R>(dq + base + i0 * s.hd, rows, s.hd).noalias() += scale * (P * K);
        dK.noalias() += scale * (P.transpose() * Q);
      }
    }
  }
}

#define ROUTELAB_ATTENTION(R)                                                                                   \
  template void split_heads_forward<R>(R*, R*, R*, const R*, const R*, bool, AttentionShape);                   \
  template void split_heads_backward<R>(R*, double*, const R*, const R*, const R*, const R*, const R*, const R*, \
                                        const R*, bool, AttentionShape);                                        \
  template void merge_heads_forward<R>(R*, const R*, const R*, AttentionShape);                                 \
  template void merge_heads_backward<R>(R*, double*, const R*, const R*, const R*, AttentionShape);             \
  template void attention_forward<R>(R*, R*, const R*, const R*, const R*, ScoreBias<R>, AttentionShape);      \
  template void attention_backward<R>(R*, R*, R*, R*, const R*, const R*, const R*, const R*, const R*,         \
                                      const R*, ScoreBias<R>, AttentionShape);
ROUTELAB_ATTENTION(float)
ROUTELAB_ATTENTION(double)
#undef ROUTELAB_ATTENTION

}  // namespace routelab::nn
