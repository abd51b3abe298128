// Heat-kernel steps (S8) and the closed forms of "Heat kernel on SO(d):
// moments": valid draws, E[G] and E(tr G)^2 against theory with a planted
// wrong convention each, and the SO(3) angle law by chi-squared for both the
// exact sampler and the geodesic walk forced at d = 3.
#include <cmath>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <gtest/gtest.h>

#include "groups/heat.h"
#include "step_law_checks.h"
#include "theory/heat_kernel.h"

using namespace routelab;
using namespace routelab::testing;

namespace {

Params heat_params(const std::string& d, const std::string& tau, const std::string& h = "0.005") {
  return {{"family", "heat"}, {"d", d}, {"tau", tau}, {"heat-h", h}};
}

// E[G] entries and E(tr G)^2 from n draws, as d^2 + 1 quantities.
Moments mean_and_trace_square(const StepLaw& law, uint64_t seed, long long n) {
  const int d = law.dim();
  Stream s(seed, 0);
  std::vector<double> step(law.step_size()), q(d * d + 1);
  Moments m(d * d + 1);
  for (long long i = 0; i < n; ++i) {
    law.draw(s, step.data());
    Eigen::Map<const Mat> G(step.data(), d, d);
    std::copy(G.data(), G.data() + d * d, q.begin());
    q[d * d] = G.trace() * G.trace();
    m.add(q.data());
  }
  return m;
}

// Max z of E[G] = scalar I and of E(tr G)^2 = trace_square.
double moments_z(const Moments& m, int d, double scalar, double trace_square) {
  std::vector<double> want(d * d + 1, 0.0);
  for (int i = 0; i < d; ++i) want[i + d * i] = scalar;
  want[d * d] = trace_square;
  return max_abs_z(m, want.data());
}

std::vector<double> so3_angles(const StepLaw& law, uint64_t seed, int n) {
  Stream s(seed, 0);
  std::vector<double> step(law.step_size()), angles;
  for (int i = 0; i < n; ++i) {
    law.draw(s, step.data());
    const double c = (law.matrix(step.data()).trace() - 1.0) / 2.0;
    angles.push_back(std::acos(std::clamp(c, -1.0, 1.0)));
  }
  return angles;
}

std::vector<double> so3_edges(double tau, int bins) {
  return equiprobable_edges([tau](double t) { return theory::heat_kernel_so3_angle_cdf(tau, t); }, 0.0, M_PI, bins);
}

}  // namespace

TEST(HeatSteps, OrthogonalWithDeterminantOneAndPathsAgree) {
  for (const char* d : {"2", "3", "5"}) expect_valid_steps(*make_step_law(heat_params(d, "0.4", "0.05")), 11, 200);
  expect_valid_steps(Heat(HeatSampler(3, 0.4, 0.05, HeatMethod::walk)), 12, 200);
}

TEST(HeatTheory, So3SeriesMatchesReference) {
  // By quadrature of the SO(3) angle density: int p = 1, E tr G = 3 e^{-tau} and E (tr G)^2 = the formula.
  using Q = boost::math::quadrature::gauss_kronrod<double, 61>;
  for (double tau : {0.05, 0.3, 1.0, 2.0}) {
    auto p = [tau](double t) { return theory::heat_kernel_so3_angle_density(tau, t); };
    EXPECT_NEAR(Q::integrate(p, 0.0, M_PI, 15, 1e-13), 1.0, 1e-10);
    EXPECT_NEAR(theory::heat_kernel_so3_angle_cdf(tau, M_PI), 1.0, 1e-13);
    auto tr = [&](double t) { return (1.0 + 2.0 * std::cos(t)) * p(t); };
    auto tr2 = [&](double t) { return std::pow(1.0 + 2.0 * std::cos(t), 2) * p(t); };
    EXPECT_NEAR(Q::integrate(tr, 0.0, M_PI, 15, 1e-13), 3.0 * theory::heat_kernel_mean_scalar(3, tau), 1e-10);
    EXPECT_NEAR(Q::integrate(tr2, 0.0, M_PI, 15, 1e-13), theory::heat_kernel_trace_square(3, tau), 1e-10);
  }
  // The m_tau table of the heat-kernel entry (5 decimals; 0.606345 was rounded up).
  EXPECT_NEAR(theory::heat_kernel_so3_min_density(0.5), 0.00245, 1e-5);
  EXPECT_NEAR(theory::heat_kernel_so3_min_density(1.0), 0.12835, 1e-5);
  EXPECT_NEAR(theory::heat_kernel_so3_min_density(2.0), 0.60635, 1e-5);
  EXPECT_NEAR(theory::heat_kernel_so3_min_density(5.0), 0.97979, 1e-5);
  EXPECT_NEAR(theory::heat_kernel_so3_angle_density(1.0, M_PI) * M_PI / 2.0, theory::heat_kernel_so3_min_density(1.0),
              1e-12);
}

TEST(HeatTheory, TraceSquareIsTheTraceOfTheSecondMoment) {
  for (int d : {2, 3, 4, 7})
    for (double tau : {0.1, 0.5, 2.0}) {
      EXPECT_NEAR(theory::heat_kernel_second_moment(d, tau).trace(), theory::heat_kernel_trace_square(d, tau), 1e-12);
      // The walk's own second moment is the kernel's at h -> 0.
      EXPECT_NEAR(theory::heat_walk_second_moment(d, tau, 1e-7).trace(), theory::heat_kernel_trace_square(d, tau),
                  1e-5);
    }
  EXPECT_NEAR(theory::heat_kernel_trace_square(2, 0.3), 2.0 + 2.0 * std::exp(-0.6), 1e-14);
}

TEST(HeatTheory, WalkSeriesMatchesTheExactSo3StepMean) {
  // The h^3 coefficient was found by Wick enumeration; at d = 3 the step mean
  // is known exactly, and the series must agree up to the h^4 term h^4/576.
  for (double h : {0.001, 0.01, 0.05}) {
    const double exact = theory::heat_walk_step_log_mean(3, h);
    EXPECT_NEAR(theory::heat_walk_step_log_mean_series(3, h), exact, 2.0 * std::pow(h, 4) / 576.0);
    // Without the h^3 term it is off by h^3/72.
    EXPECT_GT(std::abs(-h - h * h / 12.0 - exact), 0.5 * std::pow(h, 3) / 72.0);
  }
  const auto w = theory::heat_walk_steps(0.5, 0.005);
  EXPECT_EQ(w.n, 100);
  EXPECT_EQ(theory::heat_walk_steps(0.5, 0.3).n, 2);
}

TEST(HeatMoments, ExactSamplersMatchKernel) {
  // d = 2, 3 exact: E[G] = a_tau I and E(tr G)^2; planted: the Frobenius-metric
  // convention a = e^{-(d-1) tau/4} (time halved), which must be rejected.
  for (int d : {2, 3}) {
    const double tau = 0.5;
    auto law = make_step_law(heat_params(std::to_string(d), "0.5"));
    const Moments m = mean_and_trace_square(*law, 100 + d, 20000);
    EXPECT_LE(moments_z(m, d, theory::heat_kernel_mean_scalar(d, tau), theory::heat_kernel_trace_square(d, tau)), 5.0);
    EXPECT_GT(moments_z(m, d, theory::heat_kernel_mean_scalar(d, tau / 2), theory::heat_kernel_trace_square(d, tau)),
              10.0);
    EXPECT_GT(moments_z(m, d, theory::heat_kernel_mean_scalar(d, tau), theory::heat_kernel_trace_square(d, tau / 2)),
              10.0);
    EXPECT_NEAR((*law->mean())(0, 0), theory::heat_kernel_mean_scalar(d, tau), 1e-15);
  }
}

TEST(HeatMoments, WalkMatchesItsOwnPrediction) {
  // d = 5 walk at a coarse h: E[G] = c(h)^n I and E(tr G)^2 = tr of the walk's
  // second moment; planted: the Frobenius convention.
  const int d = 5;
  const double tau = 0.3, h = 0.05;
  auto law = make_step_law(heat_params("5", "0.3", "0.05"));
  const Moments m = mean_and_trace_square(*law, 105, 6000);
  const double tr2 = theory::heat_walk_second_moment(d, tau, h).trace();
  EXPECT_LE(moments_z(m, d, theory::heat_walk_mean_scalar(d, tau, h), tr2), 5.0);
  EXPECT_GT(moments_z(m, d, theory::heat_kernel_mean_scalar(d, tau / 2), tr2), 10.0);
  EXPECT_NEAR((*law->mean())(0, 0), theory::heat_walk_mean_scalar(d, tau, h), 1e-15);
}

TEST(HeatSo3Angle, QuantileTableInvertsTheExactCdf) {
  for (double tau : {0.05, 0.5, 3.0}) {
    So3HeatAngle table(tau);
    double worst = 0;
    for (int i = 1; i < 1000; ++i) {
      const double u = (i - 0.5) / 999.0;
      worst = std::max(worst, std::abs(theory::heat_kernel_so3_angle_cdf(tau, table.quantile(u)) - u));
    }
    EXPECT_LT(worst, 1e-12) << "tau " << tau;
  }
}

TEST(HeatSo3Angle, ExactSamplerChiSquared) {
  // 20 equiprobable bins of the exact angle law; planted: the law at tau/2.
  const double tau = 0.5;
  const std::vector<double> angles = so3_angles(*make_step_law(heat_params("3", "0.5")), 31, 20000);
  EXPECT_GT(chi2_equiprobable_pvalue(angles, so3_edges(tau, 20)), 1e-6);
  EXPECT_LT(chi2_equiprobable_pvalue(angles, so3_edges(tau / 2, 20)), 1e-6);
}

TEST(HeatSo3Angle, WalkForcedAtD3ChiSquared) {
  // The walk's law differs from the kernel's at O(tau h): in the first
  // character by the factor c(h)^n / a_tau (next check), and comparably in
  // the next few. A relative shift eps of the bin probabilities gives the
  // chi-squared a noncentrality of about N eps^2, so at N = 10^4 and h = 0.01
  // (eps ~ 1e-3) it is ~ 0.01, far below the test's power; the mean check
  // below uses the walk's own c(h)^n.
  const double tau = 0.5, h = 0.01;
  Heat walk(HeatSampler(3, tau, h, HeatMethod::walk));
  const double eps = std::abs(theory::heat_walk_mean_scalar(3, tau, h) / theory::heat_kernel_mean_scalar(3, tau) - 1);
  EXPECT_LT(10000 * eps * eps, 0.01);
  const std::vector<double> angles = so3_angles(walk, 32, 10000);
  EXPECT_GT(chi2_equiprobable_pvalue(angles, so3_edges(tau, 20)), 1e-6);
  EXPECT_LT(chi2_equiprobable_pvalue(angles, so3_edges(tau / 2, 20)), 1e-6);
  const Moments m = mean_and_trace_square(walk, 33, 10000);
  EXPECT_LE(moments_z(m, 3, theory::heat_walk_mean_scalar(3, tau, h), theory::heat_walk_second_moment(3, tau, h).trace()),
            5.0);
}

TEST(HeatBadInput, NamesTheFlag) {
  EXPECT_EQ(bad_input_flag(heat_params("3", "0")), "tau");
  EXPECT_EQ(bad_input_flag(heat_params("3", "-1")), "tau");
  EXPECT_EQ(bad_input_flag(heat_params("3", "abc")), "tau");
  EXPECT_EQ(bad_input_flag(heat_params("4", "0.5", "0")), "heat-h");
  EXPECT_EQ(bad_input_flag(heat_params("4", "10", "1e-6")), "heat-h");  // 1e7 walk steps per draw
  EXPECT_EQ(bad_input_flag(heat_params("1", "0.5")), "d");
  EXPECT_EQ(bad_input_flag(heat_params("4", "0.5")), "none");
}
