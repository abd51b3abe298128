// Householder transport in attention, blocked (PaTH's algorithm, Yang et al.
// 2025, with value transport and its backward): the contract is
// nn/householder.h's. Per head the steps are cut into chunks of c; chunk n's
// product H_a ... H_{a+c-1} = I - W^T T W (W: c x hd, rows w_t; T upper
// triangular, the UT transform T = (I + diag(beta) striu(W W^T))^{-1}
// diag(beta), Joffrain et al. 2006), and so is every product of a run of
// consecutive steps inside it: the run's T is the matching diagonal block of
// the chunk's. So a route j -> i with j in chunk n < m = chunk(i) factors as
//   R_ji = [H_{j+1} .. H_end(n)] [P_{n+1} .. P_{m-1}] [H_start(m) .. H_i],
// and every piece acting on a whole chunk's rows is a few matrix products:
//   key side    k~_j = (H_{j+1} .. H_end)^T k_j:   K~ = K - striu(K W^T) T W
//   query side  u_i = (H_start .. H_i) q_i:        U = Q - triu(W Q^T)^T T^T W
//   its adjoint (H_start .. H_i)^T y_i:            Y - triu(T^T W Y^T)^T W
//   in chunk    s_ij = q_i.k_j - (striu(K W^T) T triu(W Q^T))_ji, j <= i
// with P_n = I - W^T T W as a dense hd x hd matrix (hd <= 2c, so one product
// with it costs less than the two with W). Scores go down the key chunks
// (U <- U P_n^T), transported values up (acc <- acc P_n + p V~_n), so a query
// chunk keeps its scores (c x T) between the two passes: memory linear in T.
// Backward replays one query chunk's forward, keeping its U and acc at every
// chunk, and runs each product's adjoint; the key chunks' gradients (dK~,
// dV~, dP, dT) collect over query chunks and go back to k, v, w and beta once
// per head. A head is one thread's work, in a fixed order: the same bytes at
// any thread count. A forget gate's bias cum_i - cum_j joins each query
// chunk's scaled scores before its softmax; its gradient (row sums to cum_i,
// column sums from cum_j) collects per head like the key chunks'.
#include "nn/householder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <Eigen/Core>
#include <Eigen/LU>

namespace routelab::nn {

namespace {

template <class R>
using Mat = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic>;
template <class R>
using Vec = Eigen::Matrix<R, Eigen::Dynamic, 1>;
// Scores and their gradients: a query's row contiguous, for the softmax.
template <class R>
using RowMat = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class R>
using RowsMap = Eigen::Map<const Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class R>
using RowsOut = Eigen::Map<Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Masks in place: keep the strict upper triangle, the upper triangle with the
// diagonal, or the lower one with the diagonal.
template <class M>
void strict_upper(M& x) {
  x.template triangularView<Eigen::Lower>().setZero();
}
template <class M>
void upper(M& x) {
  x.template triangularView<Eigen::StrictlyLower>().setZero();
}
template <class M>
void lower(M& x) {
  x.template triangularView<Eigen::StrictlyUpper>().setZero();
}

// One chunk of steps of one head: rows a .. a + c - 1, and the products of
// its steps that every query chunk reuses.
template <class R>
struct Chunk {
  int64_t a = 0;
  int c = 0;
  Mat<R> W;       // c x hd
  Vec<R> beta;    // c
  Mat<R> N, T;    // N = I + diag(beta) striu(W W^T), T = N^{-1} diag(beta)
  Mat<R> TW, TtW; // T W, T^T W
  Mat<R> P;       // hd x hd: H_a ... H_{a+c-1} = I - W^T T W
  Mat<R> Q, K, V; // the chunk's own rows (V empty without value transport)
  Mat<R> KW, VW;  // striu(K W^T), striu(V W^T)
  Mat<R> Kt, Vt;  // the keys and values carried to the chunk's last step

  // q, k, v, w: the head's (T, hd) blocks; v null without value transport.
  void build(const R* q, const R* k, const R* v, const R* w, const R* beta_all, int64_t a_, int c_, int d) {
    a = a_, c = c_;
    Q = RowsMap<R>(q + a * d, c, d);
    K = RowsMap<R>(k + a * d, c, d);
    if (v) V = RowsMap<R>(v + a * d, c, d);
    W = RowsMap<R>(w + a * d, c, d);
    beta = Eigen::Map<const Vec<R>>(beta_all + a, c);
    N.noalias() = W * W.transpose();
    strict_upper(N);
    N = beta.asDiagonal() * N;
    N.diagonal().setOnes();
    // T = N^{-1} diag(beta), column by column by back substitution (N is
    // unit upper triangular; a solver call costs more than these c^3/6 flops).
    T.setZero(c, c);
    for (int i = 0; i < c; ++i) {
      T(i, i) = beta(i);
      for (int r = i - 1; r >= 0; --r) {
        R acc = 0;
        for (int s = r + 1; s <= i; ++s) acc += N(r, s) * T(s, i);
        T(r, i) = -acc;
      }
    }
    TW.noalias() = T.template triangularView<Eigen::Upper>() * W;
    TtW.noalias() = T.transpose().template triangularView<Eigen::Lower>() * W;
    P.noalias() = -W.transpose() * TW;
    P.diagonal().array() += R(1);
    carry_to_end(Kt, KW, K);
    if (v) carry_to_end(Vt, VW, V);
  }
  // Rows x_j -> (H_{j+1} .. H_end)^T x_j = H_end .. H_{j+1} x_j; E gets
  // striu(X W^T).
  void carry_to_end(Mat<R>& out, Mat<R>& E, const Mat<R>& X) const {
    E.noalias() = X * W.transpose();
    strict_upper(E);
    out = X;
    out.noalias() -= E * TW;
  }
  // Rows x_i -> (H_a .. H_i) x_i (a query carried to the chunk's start),
  // given WX = triu(W X^T).
  void carry_to_start(Mat<R>& out, const Mat<R>& X, const Mat<R>& WX) const {
    out.resize(X.rows(), X.cols());
    out = X;
    out.noalias() -= WX.transpose() * TtW;
  }
  // Adds rows (H_a .. H_i)^T y_i to out (values carried from the chunk's
  // start).
  void carry_from_start(Mat<R>& out, const Mat<R>& Y) const {
    out += Y;
    Mat<R> G = TtW * Y.transpose();
    upper(G);
    out.noalias() -= G.transpose() * W;
  }
};

// Gradients into one chunk's W, T (before T's own adjoint).
template <class R>
struct ChunkGrad {
  Mat<R> dW, dT, dP, dKt, dVt;
  void zero(int c, int d, bool values) {
    dW.setZero(c, d), dT.setZero(c, c), dP.setZero(d, d), dKt.setZero(c, d);
    if (values) dVt.setZero(c, d);
  }
};

// Adjoint of carry_to_end: dX += d(X~) through X~ = X - E T W, E =
// striu(X W^T).
template <class R>
void carry_to_end_backward(Mat<R>& dX, ChunkGrad<R>& g, const Chunk<R>& ch, const Mat<R>& X, const Mat<R>& E,
                           const Mat<R>& dXt) {
  Mat<R> dE = -dXt * ch.TW.transpose();
  strict_upper(dE);
  const Mat<R> dTW = -E.transpose() * dXt;
  g.dT.noalias() += dTW * ch.W.transpose();
  g.dW.noalias() += ch.T.transpose() * dTW;
  dX += dXt;
  dX.noalias() += dE * ch.W;
  g.dW.noalias() += dE.transpose() * X;
}

// Adjoint of carry_to_start: dX += through U = X - E^T T^T W, E = triu(W X^T).
template <class R>
void carry_to_start_backward(Mat<R>& dX, ChunkGrad<R>& g, const Chunk<R>& ch, const Mat<R>& X, const Mat<R>& E,
                             const Mat<R>& dU) {
  const Mat<R>& F = ch.TtW;
  Mat<R> dE = -F * dU.transpose();
  upper(dE);
  const Mat<R> dF = -E * dU;
  g.dT.noalias() += ch.W * dF.transpose();
  g.dW.noalias() += ch.T * dF;
  g.dW.noalias() += dE * X;
  dX += dU;
  dX.noalias() += dE.transpose() * ch.W;
}

// Adjoint of carry_from_start: dY += through O = Y - triu(T^T W Y^T)^T W.
template <class R>
void carry_from_start_backward(Mat<R>& dY, ChunkGrad<R>& g, const Chunk<R>& ch, const Mat<R>& Y, const Mat<R>& dO) {
  const Mat<R> H = ch.W * Y.transpose();
  Mat<R> G = ch.TtW * Y.transpose();
  upper(G);
  Mat<R> dG = -ch.W * dO.transpose();
  upper(dG);
  g.dW.noalias() -= G * dO;
  const Mat<R> dH = ch.T * dG;
  g.dT.noalias() += H * dG.transpose();
  g.dW.noalias() += dH * Y;
  dY += dO;
  dY.noalias() += dH.transpose() * ch.W;
}

// In-chunk raw scores (i, j), j <= i: q_i.k_j - (M1 T M2)_ji with
// M1 = striu(K W^T) (the chunk's KW), M2 = triu(W Q^T); entries j > i are 0.
// M1 T is strictly upper: one triangular product of each kind.
template <class R, class Out>
void chunk_scores(Out&& S, const Chunk<R>& ch, const Mat<R>& Q, const Mat<R>& K, const Mat<R>& M2) {
  Mat<R> M1T = ch.KW.template triangularView<Eigen::StrictlyUpper>() * ch.T;
  S.noalias() = Q * K.transpose();
  S.noalias() -= M2.transpose() * M1T.transpose();
  lower(S);
}

template <class R>
void chunk_scores_backward(Mat<R>& dQ, Mat<R>& dK, ChunkGrad<R>& g, const Chunk<R>& ch, const Mat<R>& Q,
                           const Mat<R>& K, const Mat<R>& M2, const Eigen::Ref<const Mat<R>>& dS) {
  const Mat<R>& M1 = ch.KW;
  const Mat<R> D = dS.transpose();  // (j, i)
  dK.noalias() += D * Q;
  dQ.noalias() += D.transpose() * K;
  Mat<R> dM1 = -D * M2.transpose() * ch.T.transpose();
  strict_upper(dM1);
  g.dT.noalias() -= M1.transpose() * D * M2.transpose();
  Mat<R> dM2 = -ch.T.transpose() * M1.transpose() * D;
  upper(dM2);
  dK.noalias() += dM1 * ch.W;
  g.dW.noalias() += dM1.transpose() * K;
  g.dW.noalias() += dM2 * Q;
  dQ.noalias() += dM2.transpose() * ch.W;
}

// In-chunk transported values: o_i = sum_{j <= i} p_ij (H_{j+1} .. H_i)^T v_j
//   = P V - ((P striu(V W^T) T) masked to s <= i) W.
template <class R>
void chunk_values(Mat<R>& O, const Chunk<R>& ch, const Eigen::Ref<const Mat<R>>& P, const Mat<R>& V) {
  const Mat<R> M1T = ch.VW.template triangularView<Eigen::StrictlyUpper>() * ch.T;
  Mat<R> Y = P * M1T;
  lower(Y);
  O.noalias() = P * V;
  O.noalias() -= Y * ch.W;
}

template <class R>
void chunk_values_backward(Mat<R>& dP, Mat<R>& dV, ChunkGrad<R>& g, const Chunk<R>& ch,
                           const Eigen::Ref<const Mat<R>>& P, const Mat<R>& V, const Mat<R>& dO) {
  const Mat<R>& M1 = ch.VW;
  const Mat<R> PM1 = P * M1;
  Mat<R> Y = PM1 * ch.T;
  lower(Y);
  dP.noalias() += dO * V.transpose();
  dV.noalias() += P.transpose() * dO;
  Mat<R> dY = -dO * ch.W.transpose();
  lower(dY);
  g.dW.noalias() -= Y.transpose() * dO;
  dP.noalias() += dY * ch.T.transpose() * M1.transpose();
  Mat<R> dM1 = P.transpose() * dY * ch.T.transpose();
  strict_upper(dM1);
  g.dT.noalias() += PM1.transpose() * dY;
  dV.noalias() += dM1 * ch.W;
  g.dW.noalias() += dM1.transpose() * V;
}

// d loss / d W and d beta of one chunk from its dP, dT (and dW so far):
// through P = I - W^T T W, then T = N^{-1} diag(beta), N = I + diag(beta) S,
// S = striu(W W^T).
template <class R>
void chunk_steps_backward(R* dw, R* dbeta, ChunkGrad<R>& g, const Chunk<R>& ch, int d) {
  const Mat<R>& W = ch.W;
  g.dT.noalias() -= W * g.dP * W.transpose();
  g.dW.noalias() -= ch.T * W * g.dP.transpose() + ch.T.transpose() * W * g.dP;
  upper(g.dT);  // T is upper triangular: only those entries are free
  // f(T) with T = N^{-1} D: df = tr(X^T (dD - dN T)), X = N^{-T} dT.
  // X = N^{-T} dT by forward substitution over rows (N^T is unit lower).
  Mat<R> X = g.dT;
  for (int r = 1; r < ch.c; ++r)
    for (int s = 0; s < r; ++s) X.row(r) -= ch.N(s, r) * X.row(s);
  Mat<R> dN = -X * ch.T.transpose();
  strict_upper(dN);
  Mat<R> S = W * W.transpose();
  strict_upper(S);
  const Vec<R> dbeta_c = X.diagonal() + (dN.cwiseProduct(S)).rowwise().sum();
  Mat<R> dS = ch.beta.asDiagonal() * dN;
  strict_upper(dS);
  g.dW.noalias() += (dS + dS.transpose()) * W;
  RowsOut<R>(dw + ch.a * d, ch.c, d) += g.dW;
  Eigen::Map<Vec<R>>(dbeta + ch.a, ch.c) += dbeta_c;
}

// One head's chunks (and its values, for the path without value transport).
template <class R>
struct HeadChunks {
  int d = 0, c = 0;
  int64_t T = 0;
  R scale = 0;
  const R* cum = nullptr;  // the head's forget gate sums (T), or null
  Mat<R> V;
  std::vector<Chunk<R>> chunks;

  // In place, so a thread's (or a cache's) buffers are reused.
  void build(const R* q, const R* k, const R* v, const R* w, const R* beta, const R* cum_all, int64_t bh,
             AttentionShape s, int chunk, bool values) {
    d = s.hd, c = chunk, T = s.T, scale = R(1) / std::sqrt(R(s.hd));
    cum = cum_all ? cum_all + bh * s.T : nullptr;
    const int64_t at = bh * s.T * s.hd;
    if (!values) V = RowsMap<R>(v + at, T, d);
    chunks.resize((T + c - 1) / c);
    for (std::size_t n = 0; n < chunks.size(); ++n) {
      const int64_t a = int64_t(n) * c;
      chunks[n].build(q + at, k + at, values ? v + at : nullptr, w + at, beta + bh * s.T, a,
                      int(std::min<int64_t>(c, T - a)), d);
    }
  }
};

// One query chunk m's forward: raw scores down the key chunks (U carried
// through each), the chunk's own, softmax; then values up the key chunks.
// With `keep`, what backward replays: U at each key chunk, acc after each.
template <class R>
struct QueryChunk {
  Mat<R> WQ;              // triu(W Q^T) of the chunk's own steps and queries
  RowMat<R> S;            // rows x (a + rows): probabilities after forward
  std::vector<Mat<R>> U;  // U[n]: queries carried to the end of key chunk n
  std::vector<Mat<R>> acc;
  Mat<R> O, X, X2, Z, Z2;

  void forward(const HeadChunks<R>& h, int m, bool values, bool keep) {
    const Chunk<R>& ch = h.chunks[m];
    const int rows = ch.c;
    const int64_t a = ch.a;
    WQ.noalias() = ch.W * ch.Q.transpose();
    upper(WQ);
    S.resize(rows, a + rows);
    if (keep) U.resize(m);
    if (m > 0) {
      ch.carry_to_start(X, ch.Q, WQ);
      for (int n = m - 1; n >= 0; --n) {
        const Chunk<R>& kn = h.chunks[n];
        S.middleCols(kn.a, kn.c).noalias() = X * kn.Kt.transpose();
        if (keep) U[n] = X;
        if (n > 0) {
          X2.noalias() = X * kn.P.transpose();
          X.swap(X2);
        }
      }
    }
    chunk_scores<R>(S.middleCols(a, rows), ch, ch.Q, ch.K, WQ);
    // Each query's row is contiguous: the softmax runs on Eigen's vector exp.
    S *= h.scale;
    for (int l = 0; l < rows; ++l) {
      auto row = S.row(l).head(a + l + 1);
      if (h.cum)  // the forget gate's cum_i - cum_j
        row.array() += h.cum[a + l] - Eigen::Map<const Vec<R>>(h.cum, a + l + 1).transpose().array();
      const R mx = row.maxCoeff();
      row = (row.array() - mx).exp();
      row /= row.sum();
      S.row(l).tail(rows - 1 - l).setZero();
    }
    if (!values) {
      O.noalias() = S * h.V.topRows(a + rows);
      return;
    }
    if (keep) acc.resize(m);
    for (int n = 0; n < m; ++n) {
      const Chunk<R>& kn = h.chunks[n];
      Z2.noalias() = S.middleCols(kn.a, kn.c) * kn.Vt;
      if (n > 0) Z2.noalias() += Z * kn.P;
      Z.swap(Z2);
      if (keep) acc[n] = Z;
    }
    chunk_values<R>(O, ch, S.middleCols(a, rows), ch.V);
    if (m > 0) ch.carry_from_start(O, Z);
  }
};

template <class R>
void head_forward(R* o, const HeadChunks<R>& h, bool values, QueryChunk<R>& qc) {
  for (int m = 0; m < int(h.chunks.size()); ++m) {
    qc.forward(h, m, values, false);
    RowsOut<R>(o + h.chunks[m].a * h.d, h.chunks[m].c, h.d) = qc.O;
  }
}

// Adds one head's d loss / d q, k, v, w, beta (and cum into dcum, the
// head's T, under a forget gate); dO is its (T, hd) block.
template <class R>
void head_backward(R* dq, R* dk, R* dv, R* dw, R* dbeta, R* dcum, const R* d_o, const HeadChunks<R>& h, bool values,
                   QueryChunk<R>& qc) {
  const int d = h.d;
  const int M = int(h.chunks.size());
  std::vector<ChunkGrad<R>> g(M);
  for (int n = 0; n < M; ++n) g[n].zero(h.chunks[n].c, d, values);
  Mat<R> dQ = Mat<R>::Zero(h.T, d), dK = Mat<R>::Zero(h.T, d), dV = Mat<R>::Zero(h.T, d);
  Vec<R> dCum = Vec<R>::Zero(h.cum ? h.T : 0);
  const RowsMap<R> dO_all(d_o, h.T, d);
  Mat<R> dO, dPc, dC, dX, dX2;
  RowMat<R> dP, dS;
  for (int m = 0; m < M; ++m) {
    const Chunk<R>& ch = h.chunks[m];
    const int rows = ch.c;
    const int64_t a = ch.a;
    qc.forward(h, m, values, true);
    dO = dO_all.middleRows(a, rows);
    // D_i = dO_i . o_i: the softmax's row correction (sum_j p_ij dp_ij).
    const Vec<R> Drow = (dO.cwiseProduct(qc.O)).rowwise().sum();
    dP.resize(rows, a + rows);
    if (values) {
      dPc.setZero(rows, rows);
      dC.setZero(rows, d);
      chunk_values_backward<R>(dPc, dC, g[m], ch, qc.S.middleCols(a, rows), ch.V, dO);
      dP.middleCols(a, rows) = dPc;
      dV.middleRows(a, rows) += dC;
      if (m > 0) {
        dX.setZero(rows, d);  // d loss / d acc
        carry_from_start_backward(dX, g[m], ch, qc.acc[m - 1], dO);
        for (int n = m - 1; n >= 0; --n) {
          const Chunk<R>& kn = h.chunks[n];
          dP.middleCols(kn.a, kn.c).noalias() = dX * kn.Vt.transpose();
          g[n].dVt.noalias() += qc.S.middleCols(kn.a, kn.c).transpose() * dX;
          if (n > 0) {
            g[n].dP.noalias() += qc.acc[n - 1].transpose() * dX;
            dX2.noalias() = dX * kn.P.transpose();
            dX.swap(dX2);
          }
        }
      }
    } else {
      dP.noalias() = dO * h.V.topRows(a + rows).transpose();
      dV.topRows(a + rows).noalias() += qc.S.transpose() * dO;
    }
    // d loss / d logit = p (dp - D); the raw scores' dS is scale times it,
    // the bias cum_i - cum_j's row sums go to cum_i and column sums from cum_j.
    dS = qc.S.cwiseProduct(dP - Drow.replicate(1, a + rows));
    if (h.cum) {
      dCum.segment(a, rows) += dS.rowwise().sum();
      dCum.head(a + rows) -= dS.colwise().sum().transpose();
    }
    dS *= h.scale;
    dPc.setZero(rows, d);  // d loss / d Q of the chunk
    dC.setZero(rows, d);   // d loss / d K of the chunk
    chunk_scores_backward<R>(dPc, dC, g[m], ch, ch.Q, ch.K, qc.WQ, dS.middleCols(a, rows));
    dK.middleRows(a, rows) += dC;
    if (m > 0) {
      dX.setZero(rows, d);  // d loss / d (queries at the end of key chunk n - 1)
      for (int n = 0; n < m; ++n) {
        const Chunk<R>& kn = h.chunks[n];
        const auto dSn = dS.middleCols(kn.a, kn.c);
        g[n].dKt.noalias() += dSn.transpose() * qc.U[n];
        dX2.noalias() = dSn * kn.Kt;
        if (n > 0) {
          g[n].dP.noalias() += dX.transpose() * qc.U[n];
          dX2.noalias() += dX * kn.P;
        }
        dX.swap(dX2);
      }
      carry_to_start_backward(dPc, g[m], ch, ch.Q, qc.WQ, dX);
    }
    dQ.middleRows(a, rows) += dPc;
  }
  for (int n = 0; n < M; ++n) {
    const Chunk<R>& kn = h.chunks[n];
    dC = dK.middleRows(kn.a, kn.c);
    carry_to_end_backward(dC, g[n], kn, kn.K, kn.KW, g[n].dKt);
    dK.middleRows(kn.a, kn.c) = dC;
    if (values) {
      dC = dV.middleRows(kn.a, kn.c);
      carry_to_end_backward(dC, g[n], kn, kn.V, kn.VW, g[n].dVt);
      dV.middleRows(kn.a, kn.c) = dC;
    }
    chunk_steps_backward(dw, dbeta, g[n], kn, d);
  }
  RowsOut<R>(dq, h.T, d) += dQ;
  RowsOut<R>(dk, h.T, d) += dK;
  RowsOut<R>(dv, h.T, d) += dV;
  if (h.cum) Eigen::Map<Vec<R>>(dcum, h.T) += dCum;
}

}  // namespace

template <class R>
struct HouseholderCache {
  // The inputs the heads were built from; backward rebuilds on any change.
  const R *q = nullptr, *k = nullptr, *v = nullptr, *w = nullptr, *beta = nullptr, *cum = nullptr;
  int64_t B = 0, T = 0, H = 0, hd = 0;
  bool values = false;
  int chunk = 0;
  std::vector<HeadChunks<R>> heads;

  bool holds(const R* q_, const R* k_, const R* v_, const R* w_, const R* beta_, const R* cum_, AttentionShape s,
             bool values_, int chunk_) const {
    return q == q_ && k == k_ && v == v_ && w == w_ && beta == beta_ && cum == cum_ && B == s.B && T == s.T &&
           H == s.H && hd == s.hd && values == values_ && chunk == chunk_ && !heads.empty();
  }
};

template <class R>
std::shared_ptr<HouseholderCache<R>> make_householder_cache() {
  return std::make_shared<HouseholderCache<R>>();
}

template <class R>
void householder_attention_forward_blocked(R* o, const R* q, const R* k, const R* v, const R* w, const R* beta,
                                           bool values, AttentionShape s, int chunk, HouseholderCache<R>* cache,
                                           const R* cum) {
  const int64_t BH = int64_t(s.B) * s.H;
  if (cache) {  // the heads' buffers stay allocated from step to step
    cache->q = q, cache->k = k, cache->v = v, cache->w = w, cache->beta = beta, cache->cum = cum;
    cache->B = s.B, cache->T = s.T, cache->H = s.H, cache->hd = s.hd, cache->values = values, cache->chunk = chunk;
    cache->heads.resize(BH);
  }
#pragma omp parallel
  {
    HeadChunks<R> own;
    QueryChunk<R> qc;
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < BH; ++bh) {
      HeadChunks<R>& h = cache ? cache->heads[bh] : own;
      h.build(q, k, v, w, beta, cum, bh, s, chunk, values);
      head_forward(o + bh * s.T * s.hd, h, values, qc);
    }
  }
}

template <class R>
void householder_attention_backward_blocked(R* dq, R* dk, R* dv, R* dw, R* dbeta, const R* d_o, const R* q,
                                            const R* k, const R* v, const R* w, const R* beta, bool values,
                                            AttentionShape s, int chunk, HouseholderCache<R>* cache, const R* cum,
                                            R* dcum) {
  const bool cached = cache && cache->holds(q, k, v, w, beta, cum, s, values, chunk);
#pragma omp parallel
  {
    HeadChunks<R> own;
    QueryChunk<R> qc;
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
      const int64_t at = bh * s.T * s.hd;
      if (!cached) own.build(q, k, v, w, beta, cum, bh, s, chunk, values);
      const HeadChunks<R>& h = cached ? cache->heads[bh] : own;
      head_backward(dq + at, dk + at, dv + at, dw + at, dbeta + bh * s.T, cum ? dcum + bh * s.T : nullptr, d_o + at,
                    h, values, qc);
    }
  }
}

#define ROUTELAB_HOUSEHOLDER_BLOCKED(R)                                                                          \
  template std::shared_ptr<HouseholderCache<R>> make_householder_cache<R>();                                     \
  template void householder_attention_forward_blocked<R>(R*, const R*, const R*, const R*, const R*, const R*,   \
                                                         bool, AttentionShape, int, HouseholderCache<R>*,        \
                                                         const R*);                                              \
  template void householder_attention_backward_blocked<R>(R*, R*, R*, R*, R*, const R*, const R*, const R*,      \
                                                          const R*, const R*, const R*, bool, AttentionShape, int, \
                                                          HouseholderCache<R>*, const R*, R*);
ROUTELAB_HOUSEHOLDER_BLOCKED(float)
ROUTELAB_HOUSEHOLDER_BLOCKED(double)
#undef ROUTELAB_HOUSEHOLDER_BLOCKED

}  // namespace routelab::nn
