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

// Where the update Q -= Y V^T reads its broadcasts. AVX-512's tiles take 8
// columns of Q, whose 8 entries of a row of V^T sit in one line of V. AVX2's
// take 4, and with rows outside they sweep all of V^T for every row tile:
// through V that is 32 lines 1 KB apart at once (at d = 128), four L1 sets;
// through Vt it is one contiguous run. (W6, Zen 4, rdtsc around the update:
// AVX2 0.80 of its time through V, AVX-512 1.25 of it through Vt.)
constexpr bool kUpdateReadsVt = panel::kLanes == 4;

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
  // Y's columns are lq apart too: the update keeps a tile's rows of Y in L1
  // while it passes every column of Q.
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
    buf.Y.resize(lq, b);
    panel::gemm<Op::set, Shape::upper_b>(buf.Y.data(), lq, buf.Z.data(), dp, buf.T.data(), 1, bp, dp, b, b);
    // Q -= Y V^T, its B(p, j) = V^T(p, j) read as Vt[p + j bp] or as
    // V[p d + j] (kUpdateReadsVt).
    const double* B = kUpdateReadsVt ? buf.Vt.data() : V;
    const std::ptrdiff_t bk = kUpdateReadsVt ? 1 : d, bj = kUpdateReadsVt ? bp : 1;
    panel::gemm<Op::sub, Shape::full, panel::kShortOrder>(Q, lq, buf.Y.data(), lq, B, bk, bj, dp, d, b);
  }
  P = buf.Q.topRows(d).transpose();
}

}  // namespace routelab
