// Compact-WY products of Householder reflections (bench/householder_wy.h)
// against the plain product, one reflection at a time.
#include <vector>

#include <gtest/gtest.h>

#include "bench/householder_wy.h"
#include "groups/walk.h"

using namespace routelab;

TEST(HouseholderWY, FactorGivesTheProduct) {
  // I - V T V^T = H_1 ... H_b for unnormalised v_i (tau_i = 2 / |v_i|^2).
  const int d = 7, b = 5;
  Stream s(2, 2);
  Mat V(d, b);
  s.normals(V.data(), V.size());
  Mat T;
  wy_factor(V, T);
  Mat ref = Mat::Identity(d, d);
  for (int i = 0; i < b; ++i) {
    const Vec v = V.col(i);
    ref = ref * (Mat::Identity(d, d) - 2.0 / v.squaredNorm() * v * v.transpose());
  }
  const Mat wy = Mat::Identity(d, d) - V * T * V.transpose();
  EXPECT_LT((wy - ref).cwiseAbs().maxCoeff(), 1e-13);
  // T is upper triangular.
  for (int j = 0; j < b; ++j)
    for (int i = j + 1; i < b; ++i) EXPECT_EQ(T(i, j), 0.0);
}

TEST(HouseholderWY, WalkEqualsPlainProduct) {
  // 13 reflections: the last block is partial for every block size. d = 7,
  // 16 and 40 take panel::gemm through its whole tiles, its one-vector row
  // tiles and its single columns, with AVX-512 and with AVX2.
  const int n = 13;
  for (int d : {7, 16, 40}) {
    Householder law(d, NormalSampler(NormalLaw::sphere, d, 1.0));
    Stream s0(5, 6);
    Mat start(d, d);
    s0.normals(start.data(), start.size());  // a general (non-orthogonal) P_0
    Mat ref = start;
    Stream s1(9, 1);
    std::vector<double> step(d);
    for (int t = 0; t < n; ++t) {
      law.draw(s1, step.data());
      law.apply_matrix(step.data(), ref);
    }
    for (int block : {1, 4, 32}) {
      Mat P = start;
      Stream s2(9, 1);
      WyBuffers buf;
      householder_walk_matrix_wy(law, s2, P, n, block, buf);
      EXPECT_LT((P - ref).cwiseAbs().maxCoeff(), 1e-12) << "d " << d << " block " << block;
      EXPECT_EQ(s1.blocks_used(), s2.blocks_used());
    }
  }
}

TEST(HouseholderWY, LongWalkStaysOrthogonal) {
  const int d = 13, n = 1000;
  Householder law(d, NormalSampler(NormalLaw::sphere, d, 1.0));
  Stream s(3, 3);
  Mat P = Mat::Identity(d, d);
  WyBuffers buf;
  householder_walk_matrix_wy(law, s, P, n, 32, buf);
  EXPECT_LT((P.transpose() * P - Mat::Identity(d, d)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(P.determinant(), 1.0, 1e-10);  // an even number of reflections
}
