// Matrix-Fisher steps (S9) and the closed forms of the Matrix-Fisher example:
// valid draws, the SO(2) angle law (chi-squared against the von Mises CDF),
// E[Q] against I_1/I_0 (SO(2)) and grad log c (SO(3)) with planted wrong
// values, the rejection acceptance rates, and the refusal of kappa where
// rejection would crawl.
#include <cmath>

#include <boost/math/special_functions/bessel.hpp>
#include <gtest/gtest.h>

#include "groups/fisher.h"
#include "step_law_checks.h"
#include "theory/matrix_fisher.h"

using namespace routelab;
using namespace routelab::testing;

namespace {

Params fisher_params(const std::string& d, const std::string& kappa) {
  return {{"family", "fisher"}, {"d", d}, {"kappa", kappa}};
}

Mat scalar_times_identity(int d, double s) { return s * Mat::Identity(d, d); }

}  // namespace

TEST(FisherSteps, OrthogonalWithDeterminantOneAndPathsAgree) {
  expect_valid_steps(*make_step_law(fisher_params("2", "1")), 21, 200);
  expect_valid_steps(*make_step_law(fisher_params("3", "1")), 22, 200);
  expect_valid_steps(*make_step_law(fisher_params("4", "0.5")), 23, 100);
}

TEST(FisherTheory, So3NormaliserMatchesReference) {
  // Reference values of c(S) by independent quadrature (and against 1e6 Haar draws).
  EXPECT_NEAR(theory::fisher_so3_normaliser(1, 0.5, 0.2), 1.25377, 1e-5);
  EXPECT_NEAR(theory::fisher_so3_normaliser(2, 1, -0.5), 1.99199, 1e-5);
  EXPECT_NEAR(theory::fisher_so3_normaliser(0, 0, 0), 1.0, 1e-14);
  // Small A: c = 1 + ||A||_F^2/(2d) + O(A^3) (E_Haar (tr A^T Q)^2 = ||A||_F^2/d).
  const double e = 1e-3;
  EXPECT_NEAR(theory::fisher_so3_normaliser(e, e, e), 1.0 + 3 * e * e / 6.0, 1e-8);
}

TEST(FisherTheory, AcceptanceRatesAndTheirLowerBound) {
  // docs/theory.md#calibration item 2: measured acceptance for A = s I (MC error ~ 1e-3 relative).
  EXPECT_NEAR(*theory::fisher_rejection_acceptance(2, 0.5), 0.465, 0.002);
  EXPECT_NEAR(*theory::fisher_rejection_acceptance(2, 1.0), 0.309, 0.002);
  EXPECT_NEAR(*theory::fisher_rejection_acceptance(3, 0.5), 0.258, 0.002);
  EXPECT_NEAR(*theory::fisher_rejection_acceptance(3, 1.0), 0.0929, 0.001);
  EXPECT_NEAR(*theory::fisher_rejection_acceptance(3, 4.0), 0.00943, 0.0002);
  EXPECT_FALSE(theory::fisher_rejection_acceptance(4, 1.0).has_value());
  // The bound used to refuse kappa for d >= 4 must hold where the rate is exact.
  for (int d : {2, 3})
    for (double k : {0.1, 0.5, 1.0, 2.0, 4.0, 8.0})
      EXPECT_LE(theory::fisher_rejection_acceptance_lower_bound(d, k), *theory::fisher_rejection_acceptance(d, k));
  // The Bessel tail past 700 (Hankel series) against Boost in long double,
  // whose range still holds e^x there.
  for (int nu : {0, 1})
    for (long double x : {700.5L, 900.0L, 5000.0L}) {
      const long double want = boost::math::cyl_bessel_i(nu, x) * std::exp(-x);
      EXPECT_NEAR(theory::bessel_i_scaled(nu, double(x)) / double(want), 1.0, 1e-13) << "nu " << nu << " x " << double(x);
    }
}

TEST(FisherTheory, MixtureBoundHolds) {
  // Matrix-Fisher item 2: ||E Q|| <= 1 - exp(-2 ||A||_*), ||A||_* = d kappa.
  for (double k : {0.2, 1.0, 3.0}) {
    EXPECT_LE(*make_step_law(fisher_params("2", std::to_string(k)))->gap(), theory::fisher_mixture_gap_bound(2 * k));
    EXPECT_LE(*make_step_law(fisher_params("3", std::to_string(k)))->gap(), theory::fisher_mixture_gap_bound(3 * k));
  }
}

TEST(FisherSo2, AngleLawChiSquared) {
  // A = kappa I on SO(2): theta ~ vonMises(0, 2 kappa). Planted: concentration kappa.
  const double kappa = 1.0;
  auto law = make_step_law(fisher_params("2", "1"));
  Stream s(24, 0);
  std::vector<double> step(law->step_size()), angles;
  for (int i = 0; i < 20000; ++i) {
    law->draw(s, step.data());
    angles.push_back(std::atan2(step[1], step[0]));
  }
  auto edges = [](double kvm) {
    return equiprobable_edges([kvm](double t) { return theory::von_mises_cdf(t, kvm); }, -M_PI, M_PI, 20);
  };
  EXPECT_GT(chi2_equiprobable_pvalue(angles, edges(2 * kappa)), 1e-6);
  EXPECT_LT(chi2_equiprobable_pvalue(angles, edges(kappa)), 1e-6);
}

TEST(FisherSo2, VonMisesSamplerAcrossConcentrations) {
  // E cos theta = I_1/I_0(kappa) for the raw sampler, small to large kappa.
  for (double kvm : {1e-6, 0.3, 5.0, 300.0}) {
    Stream s(25, uint64_t(kvm * 1000));
    Moments m(1);
    for (int i = 0; i < 20000; ++i) {
      const double c = std::cos(von_mises(s, kvm));
      m.add(&c);
    }
    const double want = theory::fisher_so2_gap(kvm);
    EXPECT_LE(std::abs(m.mean[0] - want), 5 * m.stderr_of(0) + 1e-12) << "kappa " << kvm;
  }
}

TEST(FisherMean, So2AgainstBesselRatio) {
  // Planted: the ratio at kappa instead of 2 kappa, and its small-kappa
  // limit kappa_vm/2 = kappa.
  const double kappa = 1.0;
  auto law = make_step_law(fisher_params("2", "1"));
  const Moments m = step_entry_moments(*law, 26, 8000);
  EXPECT_LE(max_abs_z(m, scalar_times_identity(2, theory::fisher_so2_gap(2 * kappa))), 5.0);
  EXPECT_GT(max_abs_z(m, scalar_times_identity(2, theory::fisher_so2_gap(kappa))), 10.0);
  EXPECT_GT(max_abs_z(m, scalar_times_identity(2, kappa)), 10.0);
  EXPECT_NEAR((*law->mean())(0, 0), theory::fisher_so2_gap(2 * kappa), 1e-15);
}

TEST(FisherMean, So3AgainstGradLogNormaliser) {
  // E Q = diag(grad log c) at S = (kappa, kappa, kappa): a scalar times I.
  // Planted: the first-order A/d.
  const double kappa = 1.5;
  auto law = make_step_law(fisher_params("3", "1.5"));
  const Mat want = *law->mean();
  EXPECT_NEAR(want(0, 0), want(1, 1), 1e-7);
  EXPECT_NEAR(want(0, 0), want(2, 2), 1e-7);
  const Moments m = step_entry_moments(*law, 27, 8000);
  EXPECT_LE(max_abs_z(m, want), 5.0);
  EXPECT_GT(max_abs_z(m, scalar_times_identity(3, kappa / 3)), 10.0);
}

TEST(FisherBadInput, NamesTheFlag) {
  EXPECT_EQ(bad_input_flag(fisher_params("3", "-0.1")), "kappa");
  EXPECT_EQ(bad_input_flag(fisher_params("3", "50")), "kappa");  // acceptance ~ 3e-4
  EXPECT_EQ(bad_input_flag(fisher_params("4", "3")), "kappa");
  EXPECT_EQ(bad_input_flag(fisher_params("2", "1e6")), "kappa");
  EXPECT_EQ(bad_input_flag(fisher_params("1", "1")), "d");
  EXPECT_EQ(bad_input_flag(fisher_params("3", "10")), "none");
  EXPECT_EQ(bad_input_flag(fisher_params("2", "50")), "none");
}
