#include "bench/householder_wy.h"

#include <algorithm>

#include "bench/panel_gemm.h"

namespace routelab {

// T from the Gram matrix G = V^T V (its diagonal and strict upper triangle):
// T_ii = 2 / G_ii, T(0:i, i) = -T_ii T(0:i, 0:i) G(0:i, i). T has ldt rows, a
// whole number of vectors, zero below its diagonal, so each column's product
// is one panel::gemm over T's first i columns.
static void wy_factor_from_gram(const double* G, int ldg, int b, double* T, int ldt) {
  for (int i = 0; i < b; ++i) {
    double* ti = T + std::ptrdiff_t(i) * ldt;
    const double* gi = G + std::ptrdiff_t(i) * ldg;
    const double tau = 2.0 / gi[i];
    panel::gemm<panel::Op::set>(ti, ldt, T, ldt, gi, 1, 0, ldt, 1, i);  // T(:, 0:i) G(0:i, i)
    for (int r = 0; r < i; ++r) ti[r] *= -tau;
    ti[i] = tau;
  }
}

void wy_factor(const Mat& V, Mat& T) {
  const int b = int(V.cols()), bp = panel::padded_rows(b);
  const Mat G = V.transpose() * V;
  Mat Tp = Mat::Zero(bp, b);
  wy_factor_from_gram(G.data(), b, b, Tp.data(), bp);
  T = Tp.topRows(b);
}

// The walk keeps Q = P^T, so that P <- (I - V T^T V^T) P reads
// Q <- Q - (Q V) T V^T: three products whose result columns are sums of
// columns of a panel (Q, Q V, then Q V T), which is what panel::gemm's
// tiles vectorise, with no transposed operand to copy.
void householder_walk_matrix_wy(const Householder& law, Stream& s, Mat& P, int n, int block, WyBuffers& buf) {
  using panel::Op;
  using panel::Shape;
  // Q's columns are lq apart, a vector more than its dp rows: at d = 128 a
  // stride of 1 KB would put all of a tile's columns of Q in an eighth of
  // L1's sets, and Z = Q V re-read them from L2 for every column tile.
  const int d = law.dim(), dp = panel::padded_rows(d), lq = dp + panel::kLanes;
  buf.Q.setZero(lq, d);  // rows d.. stay zero: Q V, Q V T and the update keep them so
  buf.Q.topRows(d) = P.transpose();
  double* Q = buf.Q.data();
  for (int t0 = 0; t0 < n; t0 += block) {
    const int b = std::min(block, n - t0), bp = panel::padded_rows(b);
    buf.V.resize(d, b);
    // Column i is step t0 + i, the unit normal v (tau = 2): the block's
    // steps drawn at once (draw_steps), as walk_scores draws them.
    law.draw_steps(s, buf.V.data(), b);
    const double* V = buf.V.data();
    buf.Vt.resize(bp, d);
    buf.Vt.topRows(b) = buf.V.transpose();
    buf.Vt.bottomRows(bp - b).setZero();
    buf.G.resize(bp, b);
    panel::gemm<Op::set, Shape::upper_c>(buf.G.data(), bp, buf.Vt.data(), bp, V, 1, d, bp, b, d);
    buf.T.resize(bp, b);
    wy_factor_from_gram(buf.G.data(), bp, b, buf.T.data(), bp);
    buf.Z.resize(dp, b);
    panel::gemm<Op::set>(buf.Z.data(), dp, Q, lq, V, 1, d, dp, b, d);  // Z = Q V
    buf.Y.resize(dp, b);
    panel::gemm<Op::set, Shape::upper_b>(buf.Y.data(), dp, buf.Z.data(), dp, buf.T.data(), 1, bp, dp, b, b);
    panel::gemm<Op::sub, Shape::full, panel::kShortOrder>(Q, lq, buf.Y.data(), dp, V, d, 1, dp, d, b);  // Q -= Y V^T
  }
  P = buf.Q.topRows(d).transpose();
}

}  // namespace routelab
