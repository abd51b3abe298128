#include "bench/householder_wy.h"

#include <algorithm>

namespace routelab {

void wy_factor(const Mat& V, Mat& T) {
  const int b = int(V.cols());
  T.setZero(b, b);
  // One Gram matrix product gives every V(:, 1:i-1)^T v_i at matrix-multiply
  // speed; only its strict upper triangle and diagonal are read.
  Mat G(b, b);
  G.noalias() = V.transpose() * V;
  Vec z(b);
  for (int i = 0; i < b; ++i) {
    const double tau = 2.0 / G(i, i);
    T(i, i) = tau;
    if (i == 0) continue;
    // T(0:i, i) = -tau T(0:i, 0:i) G(0:i, i), T upper triangular.
    z.head(i).noalias() = T.topLeftCorner(i, i).triangularView<Eigen::Upper>() * G.col(i).head(i);
    T.col(i).head(i) = -tau * z.head(i);
  }
}

void wy_apply_left(const Mat& V, const Mat& T, Mat& P, Mat& W) {
  // W = V^T P; W <- T^T W; P <- P - V W.
  W.noalias() = V.transpose() * P;
  W = T.transpose().triangularView<Eigen::Lower>() * W;
  P.noalias() -= V * W;
}

void householder_walk_matrix_wy(const Householder& law, Stream& s, Mat& P, int n, int block, WyBuffers& buf) {
  const int d = law.dim();
  for (int t0 = 0; t0 < n; t0 += block) {
    const int b = std::min(block, n - t0);
    buf.V.resize(d, b);
    // Column i is step t0 + i; draw writes the unit normal v (tau = 2).
    for (int i = 0; i < b; ++i) law.draw(s, buf.V.col(i).data());
    wy_factor(buf.V, buf.T);
    wy_apply_left(buf.V, buf.T, P, buf.W);
  }
}

}  // namespace routelab
