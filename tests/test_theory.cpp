// Closed forms against each other and against their defining identities.
#include <gtest/gtest.h>

#include <cmath>

#include "groups/family.h"
#include "groups/householder.h"
#include "planted_law.h"
#include "stats/intervals.h"
#include "theory/haar_score_law.h"
#include "theory/step_gaps.h"
#include "theory/trace_moments.h"

using namespace routelab;
using routelab::testing::params_for;

namespace {

// Proposition 2: the operator form and the eigenvalue form agree.
TEST(Theory, HouseholderTraceMomentsOperatorMatchesClosedForm) {
  for (int d : {2, 3, 6}) {
    const Mat T = theory::householder_uniform_second_moment(d);
    const Mat m = theory::householder_mean(Vec::Constant(d, 1.0 / d));
    for (int n : {1, 2, 5, 12}) {
      const auto op = theory::trace_moments_from_operators(m, T, n);
      const auto cf = theory::householder_uniform_trace_moments(d, n);
      EXPECT_NEAR(op.first, cf.first, 1e-10);
      EXPECT_NEAR(op.second, cf.second, 1e-10) << "d=" << d << " n=" << n;
    }
  }
  // d = 2 alternates 0 (odd n) and 2 (even n), O^-(2) and SO(2).
  EXPECT_NEAR(theory::householder_uniform_trace_moments(2, 7).second, 0.0, 1e-12);
  EXPECT_NEAR(theory::householder_uniform_trace_moments(2, 8).second, 2.0, 1e-12);
}

// Remark 3: coordinate normals, the law's own operator against the closed form.
TEST(Theory, CoordinateTraceMomentsOperatorMatchesClosedForm) {
  auto law = make_step_law(params_for("householder", {{"d", "5"}, {"normals", "coordinate"}}));
  for (int n : {1, 3, 10, 40}) {
    const auto op = theory::trace_moments_from_operators(*law->mean(), *law->second_moment(), n);
    const auto cf = theory::coordinate_householder_trace_moments(5, n);
    EXPECT_NEAR(op.first, cf.first, 1e-10);
    EXPECT_NEAR(op.second, cf.second, 1e-9);
  }
  EXPECT_NEAR(theory::coordinate_householder_trace_moments(5, 400).second, 5.0, 1e-9);  // limit d, not 1
}

// Example 2: the angular-Gaussian Sigma_nu by quadrature has trace 1, reduces
// to I/d at K = 1 and orders with the standard deviations.
TEST(Theory, GaussianNormalSecondMoment) {
  NormalSampler iso(NormalLaw::gaussian, 4, 1.0);
  const Vec flat = iso.second_moment_diagonal(4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(flat(i), 0.25, 1e-12);
  NormalSampler aniso(NormalLaw::gaussian, 5, 3.0);
  const Vec s = aniso.second_moment_diagonal(5);
  EXPECT_NEAR(s.sum(), 1.0, 1e-10);
  for (int i = 1; i < 5; ++i) EXPECT_GT(s(i), s(i - 1));
}

// B.2: beta^w <= eps < beta^(w-1), and the reference windows.
TEST(Theory, MixingWindowArithmetic) {
  for (double beta : {0.3, 0.841470984807897, 0.99}) {
    for (double eps : {0.1, 0.01, 1e-3}) {
      const long long w = theory::mixing_window(beta, eps);
      EXPECT_LE(std::pow(beta, double(w)), eps * (1 + 1e-12));
      if (w > 1) {
        EXPECT_GT(std::pow(beta, double(w - 1)), eps);
      }
    }
  }
  EXPECT_EQ(theory::mixing_window(theory::so2_uniform_harmonic(1.0), 0.01), 27);
  EXPECT_EQ(theory::mixing_window(theory::so2_uniform_harmonic(0.5), 0.01), 110);
  EXPECT_EQ(theory::mixing_window(theory::so2_uniform_harmonic(2.0), 1e-3), 9);
  EXPECT_EQ(theory::mixing_window(0.0, 0.01), 1);
}

// Theorem 5: the exact Haar tail sits below the Levy bound for every d and s
// (the largest ratio over d up to 4096 is 0.2499), and matches the reference table.
TEST(Theory, HaarTailBelowLevyBound) {
  double worst = 0;
  for (int d = 2; d <= 64; ++d)
    for (int k = 1; k <= 100; ++k) {
      const double s = k / 100.0;
      worst = std::max(worst, theory::haar_score_tail(d, s) / theory::levy_tail_bound(d, s));
    }
  EXPECT_LT(worst, 0.25);
  EXPECT_GT(worst, 0.24);
  EXPECT_NEAR(theory::haar_score_tail(64, 0.25), 2.23e-2, 1e-4);
  EXPECT_NEAR(theory::haar_score_tail(256, 0.25), 2.53e-5, 1e-7);
}

// Examples 1, 3, 4 against independently computed reference numbers (numpy/scipy).
TEST(Theory, GapsMatchReference) {
  EXPECT_NEAR(theory::so2_uniform_harmonic(1.0), 0.84147, 1e-5);
  EXPECT_NEAR(theory::so2_uniform_harmonic(4.0), -0.18920, 1e-5);
  EXPECT_NEAR(std::abs(theory::givens_mean_scalar(8, 1.0)), 0.96037, 1e-5);
  EXPECT_NEAR(std::abs(theory::givens_mean_scalar(3, 2.0)), 0.63643, 1e-5);
  EXPECT_NEAR(std::abs(theory::axis3_mean_scalar(M_PI / 6)), 0.91068, 1e-5);
  EXPECT_NEAR(theory::householder_uniform_gap(8), 0.75, 1e-15);
  EXPECT_NEAR(theory::skewexp_gap(3.0, {0.3, 1, 2.5}), 0.8704, 1e-4);
}

TEST(Theory, BonferroniZ) {
  EXPECT_DOUBLE_EQ(bonferroni_z(1), kZ);
  EXPECT_GT(bonferroni_z(4096), 6.0);
  EXPECT_LT(bonferroni_z(4096), 7.0);
}

TEST(Theory, ClopperPearsonBracketsTheRate) {
  EXPECT_LT(clopper_pearson_lower(30, 100, 1e-3), 0.3);
  EXPECT_GT(clopper_pearson_upper(30, 100, 1e-3), 0.3);
  EXPECT_EQ(clopper_pearson_lower(0, 100, 1e-3), 0.0);
  EXPECT_NEAR(clopper_pearson_upper(0, 100, 0.05), 1 - std::pow(0.05, 0.01), 1e-12);
}

}  // namespace
