// Samplers against their exact marginal laws, by chi-squared on equiprobable
// bins (fail below p = 1e-6) with a planted wrong law that must be rejected.
#include <gtest/gtest.h>

#include <cmath>

#include "groups/family.h"
#include "groups/givens.h"
#include "groups/haar.h"
#include "groups/householder.h"
#include "groups/so2.h"
#include "groups/step_kernels.h"
#include "planted_law.h"
#include "stats/chi2.h"
#include "stats/ks.h"
#include "theory/haar_score_law.h"

using namespace routelab;
using routelab::testing::params_for;

namespace {

constexpr double kReject = 1e-6;

// Sampler S1: q^T U k with q = k = e_1 is U_00; (x+1)/2 ~ Beta((d-1)/2, (d-1)/2).
TEST(Samplers, HaarPushforwardIsBeta) {
  for (int d : {2, 3, 8}) {
    for (bool special : {false, true}) {
      std::vector<double> x;
      for (int i = 0; i < 20000; ++i) {
        Stream s(21, i);
        x.push_back(haar_sample(s, d, special)(0, 1));
      }
      const auto fit = chi2_equiprobable(x, [d](double v) { return theory::haar_score_cdf(d, v); }, 40);
      EXPECT_GT(fit.pvalue, kReject) << "d=" << d << " special=" << special;
      // Planted: the law one dimension up must be rejected.
      const auto wrong = chi2_equiprobable(x, [d](double v) { return theory::haar_score_cdf(d + 2, v); }, 40);
      EXPECT_LT(wrong.pvalue, kReject) << "d=" << d;
    }
  }
}

// Without the sign fix, QR's Q is not Haar: E Q_00 is far from 0 (docs/theory.md#sampler-haar).
TEST(Samplers, HaarSignFixMatters) {
  double with_fix = 0, without = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    Stream s(5, i);
    Mat Z(3, 3);
    s.normals(Z.data(), 9);
    Eigen::HouseholderQR<Mat> qr(Z);
    Mat Q = qr.householderQ();
    without += Q(0, 0) / n;
    Stream s2(5, i);
    with_fix += haar_sample(s2, 3, false)(0, 0) / n;
  }
  EXPECT_LT(std::abs(with_fix), 5 * std::sqrt(1.0 / 3 / n));
  EXPECT_GT(std::abs(without), 0.3);
}

// Stewart's product of reflections, from scratch: x_k is the k-th run of d - k
// normals, H_k the d x d reflection along v = x_k + sign(x_k0)|x_k| e_k on
// coordinates k.., D_kk = -sign(x_k0), and D_{d-1,d-1} the last normal's sign.
// drop_sign leaves D out, which must fail the comparison below.
Mat stewart_reference(const std::vector<double>& x, int d, bool drop_sign) {
  Mat Q = Mat::Identity(d, d), D = Mat::Identity(d, d);
  std::size_t at = 0;
  for (int k = 0; k < d; ++k) {
    const int n = d - k;
    Vec v = Eigen::Map<const Vec>(x.data() + at, n);
    at += n;
    const double sign = v[0] < 0 ? -1.0 : 1.0;
    if (k == d - 1) {
      D(k, k) = sign;
      break;
    }
    D(k, k) = -sign;
    v[0] += sign * v.norm();
    Mat H = Mat::Identity(d, d);
    H.bottomRightCorner(n, n) -= 2.0 * v * v.transpose() / v.squaredNorm();
    Q = Q * H;
  }
  return drop_sign ? Q : Mat(Q * D);
}

// haar_sample is the transpose of Stewart's product of reflections of its
// own d(d+1)/2 normals, D H_{d-2} ... H_0, to rounding, at sizes on and off
// its vector width (8) and its row chunks, and the draw leaves the stream
// where those normals leave it. On SO(d) it is the O(d) draw with column 0
// negated when that has det -1, and has det +1 itself.
TEST(Samplers, HaarSampleIsStewartsProductOfReflections) {
  for (int d : {1, 2, 3, 5, 8, 9, 23, 24, 37, 64, 65}) {
    const int packed = d * (d + 1) / 2;
    double worst_q = 0, worst_orth = 0, planted = 0;
    for (int i = 0; i < 40; ++i) {
      Stream s(8, i), ref(8, i), so(8, i);
      const Mat Q = haar_sample(s, d, false);
      std::vector<double> x(packed);
      ref.normals(x.data(), x.size());
      worst_q = std::max(worst_q, (Q - stewart_reference(x, d, false).transpose()).cwiseAbs().maxCoeff());
      planted = std::max(planted, (Q - stewart_reference(x, d, true).transpose()).cwiseAbs().maxCoeff());
      worst_orth = std::max(worst_orth, (Q.transpose() * Q - Mat::Identity(d, d)).cwiseAbs().maxCoeff());
      EXPECT_EQ(s.next_u32(), ref.next_u32()) << "d " << d << ": other words drawn";
      const Mat P = haar_sample(so, d, true);
      const double det = Q.determinant();
      EXPECT_NEAR(std::abs(det), 1.0, 1e-12) << "d " << d;
      Mat expect = Q;
      if (det < 0) expect.col(0) = -expect.col(0);
      EXPECT_EQ(P, expect) << "d " << d << " sample " << i;
      EXPECT_GT(P.determinant(), 0) << "d " << d;
    }
    EXPECT_LT(worst_q, 1e-13) << "d " << d;
    EXPECT_LT(worst_orth, 1e-14) << "d " << d;
    // Planted: without D the product differs, in some draw, by a row's sign.
    EXPECT_GT(planted, 1e-3) << "d " << d;
  }
}

// haar_sample's vector passes are haar_draw's scalar loops (what the GPU
// runs) operation for operation, so on the host the two give the same bytes,
// whatever the vector width it was built for: the bytes of a Haar draw do
// not depend on the ISA. Only where every multiply-add is fused on both
// sides: a build without FMA adds its products apart in the vector code.
TEST(Samplers, HaarSampleHasHaarDrawsBytes) {
#if !defined(__FMA__)
  GTEST_SKIP() << "built without FMA: haar_sample's products are not fused, haar_draw's ::fma are";
#endif
  for (int d : {1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 40, 64, 65, 100}) {
    std::vector<double> step(StepKernel{.family = KernelFamily::haar, .d = d}.step_size());
    for (bool special : {false, true})
      for (int i = 0; i < 10; ++i) {
        Stream s(31, i), t(31, i);
        const Mat Q = haar_sample(s, d, special);
        haar_draw(t, d, special, step.data(), step.data() + std::size_t(d) * d);
        ASSERT_EQ(Q, Eigen::Map<const Mat>(step.data(), d, d)) << "d " << d << " sample " << i;
        EXPECT_EQ(s.next_u32(), t.next_u32()) << "d " << d;
      }
  }
  // Planted: the same draw through Stewart's product, not its transpose, is
  // not these bytes.
  Stream s(31, 0), t(31, 0);
  std::vector<double> x(15), step(StepKernel{.family = KernelFamily::haar, .d = 5}.step_size());
  haar_draw(t, 5, false, step.data(), step.data() + 25);
  s.normals(x.data(), x.size());
  EXPECT_NE(stewart_reference(x, 5, false), Eigen::Map<const Mat>(step.data(), 5, 5));
}

// Sampler S2: one coordinate of a uniform unit vector has the same Beta law.
TEST(Samplers, SphereCoordinateIsBeta) {
  for (int d : {3, 7}) {
    NormalSampler normals(NormalLaw::sphere, d, 1.0);
    std::vector<double> v(d), x;
    for (int i = 0; i < 20000; ++i) {
      Stream s(3, i);
      normals.draw(s, v.data(), d);
      x.push_back(v[d - 1]);
    }
    EXPECT_GT(chi2_equiprobable(x, [d](double t) { return theory::haar_score_cdf(d, t); }, 40).pvalue, kReject);
    EXPECT_LT(chi2_equiprobable(x, [d](double t) { return theory::haar_score_cdf(d + 3, t); }, 40).pvalue, kReject);
  }
}

// Sampler S3: SO(2) increments omega + U[-a_b, a_b].
TEST(Samplers, So2IncrementsAreUniform) {
  auto law = make_step_law(params_for("so2", {{"d", "4"}, {"a", "0.8"}, {"omega", "0.3"}}));
  std::vector<double> step(2), x;
  for (int i = 0; i < 20000; ++i) {
    Stream s(9, i);
    law->draw(s, step.data());
    x.push_back(step[1]);
  }
  auto uniform_cdf = [](double lo, double hi) { return [lo, hi](double t) { return (t - lo) / (hi - lo); }; };
  EXPECT_GT(chi2_equiprobable(x, uniform_cdf(0.3 - 0.8, 0.3 + 0.8), 40).pvalue, kReject);
  EXPECT_LT(chi2_equiprobable(x, uniform_cdf(-0.8, 0.8), 40).pvalue, kReject);  // drift forgotten
}

// Sampler S4: the plane uniform over the C(d,2) pairs, the angle U[-a, a].
TEST(Samplers, GivensPlaneAndAngle) {
  const int d = 5;
  Givens law(d, 1.3);
  std::vector<long long> pairs(d * (d - 1) / 2, 0);
  std::vector<double> angles;
  double step[3];
  for (int i = 0; i < 30000; ++i) {
    Stream s(4, i);
    law.draw(s, step);
    const int p = int(step[0]), q = int(step[1]);
    ASSERT_LT(p, q);
    ASSERT_LT(q, d);
    ++pairs[p * d - p * (p + 1) / 2 + (q - p - 1)];
    angles.push_back(step[2]);
  }
  EXPECT_GT(chi2_counts(pairs, std::vector<double>(pairs.size(), 1.0 / pairs.size())).pvalue, kReject);
  std::vector<double> skewed(pairs.size(), 0.5 / (pairs.size() - 1));
  skewed[0] = 0.5;
  EXPECT_LT(chi2_counts(pairs, skewed).pvalue, kReject);
  EXPECT_GT(chi2_equiprobable(angles, [](double t) { return (t + 1.3) / 2.6; }, 40).pvalue, kReject);
}

// Sampler S5, coordinate normals: +-e_i each with probability 1/(2d).
TEST(Samplers, CoordinateNormalsAreUniformOverSignedAxes) {
  const int d = 4;
  NormalSampler normals(NormalLaw::coordinate, d, 1.0);
  std::vector<long long> counts(2 * d, 0);
  std::vector<double> v(d);
  for (int i = 0; i < 20000; ++i) {
    Stream s(8, i);
    normals.draw(s, v.data(), d);
    for (int j = 0; j < d; ++j)
      if (v[j] != 0) ++counts[2 * j + (v[j] < 0)];
  }
  EXPECT_GT(chi2_counts(counts, std::vector<double>(2 * d, 1.0 / (2 * d))).pvalue, kReject);
}

TEST(Samplers, KsCriticalValueMatchesItsLevel) {
  EXPECT_NEAR(ks_pvalue(ks_critical_value(1e-3, 10000), 10000), 1e-3, 1e-9);
  // A uniform sample against the uniform law passes, against a shifted one fails.
  std::vector<double> u;
  Stream s(1, 1);
  for (int i = 0; i < 5000; ++i) u.push_back(s.uniform());
  auto copy = u;
  EXPECT_GT(ks_pvalue(ks_distance(copy, [](double t) { return t; }), 5000), kReject);
  copy = u;
  EXPECT_LT(ks_pvalue(ks_distance(copy, [](double t) { return std::min(1.0, t * 1.1); }), 5000), kReject);
}

}  // namespace
