#include "nn/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

#include "nn/gemm.h"

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
static_assert(kTile % gemm::kPanel<float> == 0 && kTile % gemm::kPanel<double> == 0);

int64_t tiles(int64_t n) { return (n + kTile - 1) / kTile; }

// One pair (a, b) -> R(s theta) (a, b), given cos and sin.
template <class R>
inline void rotate(R& a, R& b, R c, R s) {
  const R x = a, y = b;
  a = x * c - y * s;
  b = x * s + y * c;
}

// A head's keys (or values) x (T x hd) as the panels of x^T (hd x T) that
// tile_scores reads: a key tile's columns start a panel (kTile is a whole
// number of panels).
template <class R>
gemm::Panels<R> transposed(R* panels, const R* x, int64_t T, int hd) {
  gemm::pack(panels, x, 1, hd, hd, int(T));
  return {panels, gemm::kPanel<R>, int64_t(hd) * gemm::kPanel<R>};
}

// Rows i0.. of a head's panels (x^T's columns i0..).
template <class R>
gemm::Panels<R> from_column(const gemm::Panels<R>& x, int64_t i0) {
  return {x.b + i0 / gemm::kPanel<R> * x.panel, x.row, x.panel};
}

// Rows i0.. of a head's x (T x hd) read as a product's B.
template <class R>
gemm::Panels<R> from_row(const gemm::Panels<R>& x, int64_t i0) {
  return {x.b + i0 * x.row, x.row, x.panel};
}

// exp leaves tiny values, not zeros, at -inf on some vector paths: the mask
// must be exact.
template <class R>
void zero_above_diagonal(MatR<R>& P, int64_t i0, int64_t j0) {
  if (j0 + P.cols() - 1 <= i0) return;
  for (int64_t r = 0; r < P.rows(); ++r)
    for (int64_t c = std::max<int64_t>(0, i0 + r - j0 + 1); c < P.cols(); ++c) P(r, c) = 0;
}

// The scores of one tile: S = scale Q_i K_j^T, ALiBi bias, causal mask on the
// diagonal tile (-inf above it). Q is the tile's rows of q (hd apart), Kt
// the head's K^T in panels (transposed_keys), its columns j0.. the tile's.
// cum is this head's running sum of log forget gates (or null).
template <class R>
void tile_scores(MatR<R>& S, const R* Q, const gemm::Panels<R>& Kt, int hd, R scale, int64_t i0, int64_t j0,
                 double slope, const R* cum) {
  const int64_t rows = S.rows(), cols = S.cols();
  gemm::multiply(S.data(), cols, Q, hd, 1, from_column(Kt, j0), int(rows), hd, int(cols),
                 static_cast<const R*>(nullptr), false);
  S *= scale;
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
  const int64_t nt = tiles(s.T), BH = int64_t(s.B) * s.H, head = s.T * s.hd;
  // Every head's K^T in panels, and its values where a row is not whole
  // vectors (else read in place).
  const int64_t kt_size = gemm::panels_size<R>(s.hd, int(s.T)), v_size = gemm::panels_size<R>(int(s.T), s.hd);
  const bool pack_v = s.hd % gemm::kLanes<R> != 0;
  std::vector<R> kt(std::size_t(BH * kt_size)), vp(pack_v ? std::size_t(BH * v_size) : 0);
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < BH; ++bh) {
    transposed(kt.data() + bh * kt_size, k + bh * head, s.T, s.hd);
    if (pack_v) gemm::pack(vp.data() + bh * v_size, v + bh * head, s.hd, 1, int(s.T), s.hd);
  }
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < BH * nt; ++task) {
    const int64_t bh = task / nt, i0 = (task % nt) * kTile, rows = std::min<int64_t>(kTile, s.T - i0);
    const double slope = bias.slopes ? bias.slopes[bh % s.H] : 0.0;
    const R* cum = bias.cum ? bias.cum + bh * s.T : nullptr;
    const int64_t base = bh * head;
    const gemm::Panels<R> Kt{kt.data() + bh * kt_size, gemm::kPanel<R>, int64_t(s.hd) * gemm::kPanel<R>};
    const gemm::Panels<R> V = pack_v ? gemm::Panels<R>{vp.data() + bh * v_size, gemm::kPanel<R>, s.T * gemm::kPanel<R>}
                                     : gemm::Panels<R>{v + base, s.hd, gemm::kPanel<R>};
    MatR<R> acc = MatR<R>::Zero(rows, s.hd), S, P;
    VecR<R> m = VecR<R>::Constant(rows, -std::numeric_limits<R>::infinity()), l = VecR<R>::Zero(rows);
    for (int64_t j0 = 0; j0 < i0 + rows; j0 += kTile) {
      const int64_t cols = std::min<int64_t>(kTile, i0 + rows - j0);
      S.resize(rows, cols);
      tile_scores(S, q + base + i0 * s.hd, Kt, s.hd, scale, i0, j0, slope, cum);
      const VecR<R> m_new = m.cwiseMax(S.rowwise().maxCoeff());
      // Subtract in place first: exp of the broadcast expression itself falls
      // back to scalar expf, half the time of a long evaluation.
      S.colwise() -= m_new;
      P = S.array().exp().matrix();
      zero_above_diagonal(P, i0, j0);
      const VecR<R> corr = (m - m_new).array().exp().matrix();
      l = l.cwiseProduct(corr) + P.rowwise().sum();
      acc = corr.asDiagonal() * acc;
      gemm::multiply(acc.data(), s.hd, P.data(), cols, 1, from_row(V, j0), int(rows), int(cols), s.hd,
                     static_cast<const R*>(nullptr), true);
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
  const int64_t nt = tiles(s.T), head = s.T * s.hd;
  const int hd = s.hd;
#pragma omp parallel
  {
    std::vector<R> kt(std::size_t(gemm::panels_size<R>(hd, int(s.T)))), vt(kt.size()), qp, kp, dop;
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const double slope = bias.slopes ? bias.slopes[bh % s.H] : 0.0;
      const R* cum = bias.cum ? bias.cum + bh * s.T : nullptr;
      const int64_t base = bh * head;
      const gemm::Panels<R> Kt = transposed(kt.data(), k + base, s.T, hd);
      const gemm::Panels<R> Vt = transposed(vt.data(), v + base, s.T, hd);
      // q, k and dO as a product's B (hd columns).
      const gemm::Panels<R> Qb = gemm::panels_of(q + base, hd, 1, int(s.T), hd, qp);
      const gemm::Panels<R> Kb = gemm::panels_of(k + base, hd, 1, int(s.T), hd, kp);
      const gemm::Panels<R> dOb = gemm::panels_of(d_o + base, hd, 1, int(s.T), hd, dop);
      // D_i = dO_i . O_i, the softmax's row correction.
      VecR<R> D(s.T);
      for (int64_t i = 0; i < s.T; ++i) {
        const R* g = d_o + base + i * hd;
        const R* y = o + base + i * hd;
        D(i) = gemm::sum_of<R>(hd, [&](int c) { return g[c] * y[c]; });
      }
      MatR<R> S, P, dP;
      for (int64_t jt = 0; jt < nt; ++jt) {
        const int64_t j0 = jt * kTile, cols = std::min<int64_t>(kTile, s.T - j0);
        R* dK = dk + base + j0 * hd;
        R* dV = dv + base + j0 * hd;
        for (int64_t it = jt; it < nt; ++it) {
          const int64_t i0 = it * kTile, rows = std::min<int64_t>(kTile, s.T - i0);
          Eigen::Map<const VecR<R>> L(lse + bh * s.T + i0, rows);
          S.resize(rows, cols);
          tile_scores(S, q + base + i0 * hd, Kt, hd, scale, i0, j0, slope, cum);
          S.colwise() -= L;
          P = S.array().exp().matrix();
          zero_above_diagonal(P, i0, j0);
          // dV_j += P^T dO_i; dP = dO_i V_j^T.
          gemm::multiply(dV, hd, P.data(), 1, cols, from_row(dOb, i0), int(cols), int(rows), hd,
                         static_cast<const R*>(nullptr), true);
          dP.resize(rows, cols);
          gemm::multiply(dP.data(), cols, d_o + base + i0 * hd, hd, 1, from_column(Vt, j0), int(rows), hd, int(cols),
                         static_cast<const R*>(nullptr), false);
          // dS = P o (dP - D_i).
          P = P.cwiseProduct(dP.colwise() - D.segment(i0, rows));
          // The bias cum_i - cum_j enters unscaled: row sums to i, column sums from j.
          if (cum) {
            Eigen::Map<VecR<R>>(dcum + bh * s.T + i0, rows) += P.rowwise().sum();
            Eigen::Map<VecR<R>>(dcum + bh * s.T + j0, cols) -= P.colwise().sum().transpose();
          }
          // The scores carry the scale: dQ_i += scale dS K_j, dK_j += scale dS^T Q_i.
          P *= scale;
          gemm::multiply(dq + base + i0 * hd, hd, P.data(), cols, 1, from_row(Kb, j0), int(rows), int(cols), hd,
                         static_cast<const R*>(nullptr), true);
          gemm::multiply(dK, hd, P.data(), 1, cols, from_row(Qb, i0), int(cols), int(rows), hd,
                         static_cast<const R*>(nullptr), true);
        }
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
