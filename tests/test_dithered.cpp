// Heat-kernel-dithered steps (Example 6): valid draws (det -1, or mixed),
// E[M] = E[L] a, and the check E tr P_n, E (tr P_n)^2 against
// tr((E M)^n) and tr(T^n), T = E[L (x) L] E[G (x) G], with planted wrong
// closed forms.
#include <cmath>

#include <unsupported/Eigen/KroneckerProduct>
#include <gtest/gtest.h>

#include "groups/dithered.h"
#include "step_law_checks.h"
#include "theory/heat_kernel.h"
#include "theory/trace_moments.h"

using namespace routelab;
using namespace routelab::testing;

namespace {

Params dithered_params(const std::string& d, const std::string& normals, const std::string& sign,
                       const std::string& tau = "0.5", const std::string& h = "0.005") {
  return {{"family", "dithered"}, {"d", d},      {"normals", normals}, {"aniso", "4"},
          {"tau", tau},           {"heat-h", h}, {"sign", sign}};
}

}  // namespace

TEST(DitheredSteps, DeterminantClassAndPathsAgree) {
  expect_valid_steps(*make_step_law(dithered_params("3", "sphere", "minus")), 51, 200);
  expect_valid_steps(*make_step_law(dithered_params("3", "gaussian", "mixed")), 52, 200);
  expect_valid_steps(*make_step_law(dithered_params("4", "coordinate", "minus", "0.5", "0.05")), 53, 100);
}

TEST(DitheredMean, MixedSignAgainstClosedForm) {
  // E[M] = (I - Sigma_nu) a_tau for sign mixed; planted: the minus-sign I - 2 Sigma_nu.
  auto law = make_step_law(dithered_params("3", "gaussian", "mixed"));
  const Moments m = step_entry_moments(*law, 54, 20000);
  EXPECT_LE(max_abs_z(m, *law->mean()), 5.0);
  auto minus = make_step_law(dithered_params("3", "gaussian", "minus"));
  EXPECT_GT(max_abs_z(m, *minus->mean()), 10.0);
}

TEST(DitheredMoments, TraceMomentsOfTheWalkMatchExample6) {
  // Reference table for Example 6: d = 4, tau = 0.5, coordinate normals, n = 1, 2, 5.
  // The heat step is the walk at the default h = 0.005; mean() and
  // second_moment() are the walk's own (to O(tau h^2)).
  const int d = 4, N = 8000;
  const std::vector<int> ns = {1, 2, 5};
  auto law = make_step_law(dithered_params("4", "coordinate", "minus"));
  Moments m(2 * int(ns.size()));
  Stream s(55, 0);
  std::vector<double> step(law->step_size()), q(m.size());
  for (int i = 0; i < N; ++i) {
    Mat P = Mat::Identity(d, d);
    for (int t = 1, k = 0; t <= ns.back(); ++t) {
      law->draw(s, step.data());
      law->apply_matrix(step.data(), P);
      if (t == ns[k]) {
        q[2 * k] = P.trace();
        q[2 * k + 1] = P.trace() * P.trace();
        ++k;
      }
    }
    m.add(q.data());
  }
  auto predicted = [&](const Mat& mean, const Mat& second) {
    std::vector<double> want;
    for (int n : ns) {
      const auto tm = theory::trace_moments_from_operators(mean, second, n);
      want.push_back(tm.first);
      want.push_back(tm.second);
    }
    return want;
  };
  const Mat mean = *law->mean(), second = *law->second_moment();
  EXPECT_LE(max_abs_z(m, predicted(mean, second).data()), 5.0);
  // The closed-form predictions are for the exact kernel, which the walk
  // approaches as h -> 0 (a law is built, never drawn, at h = 1e-6).
  auto exact = make_step_law(dithered_params("4", "coordinate", "minus", "0.5", "1e-6"));
  const std::vector<double> table = predicted(*exact->mean(), *exact->second_moment());
  EXPECT_NEAR(table[0], 0.9447, 1e-4);
  EXPECT_NEAR(table[1], 1.4060, 1e-4);
  EXPECT_NEAR(table[2], 0.2231, 1e-4);
  EXPECT_NEAR(table[3], 1.0549, 1e-4);
  // Planted: the Frobenius-metric a_tau; and E[L] (x) E[L] in place of E[L (x) L].
  const double a = theory::heat_kernel_mean_scalar(d, 0.5);
  EXPECT_GT(max_abs_z(m, predicted(mean * (theory::heat_kernel_mean_scalar(d, 0.25) / a), second).data()), 10.0);
  const Mat EL = mean / a;
  const Mat wrong_second = Eigen::kroneckerProduct(EL, EL).eval() * theory::heat_kernel_second_moment(d, 0.5);
  EXPECT_GT(max_abs_z(m, predicted(mean, wrong_second).data()), 10.0);
}

TEST(DitheredBadInput, NamesTheFlag) {
  EXPECT_EQ(bad_input_flag(dithered_params("4", "sphere", "plus")), "sign");
  EXPECT_EQ(bad_input_flag(dithered_params("4", "sphere", "minus", "0")), "tau");
  EXPECT_EQ(bad_input_flag(dithered_params("4", "sphere", "minus", "0.5", "-1")), "heat-h");
  EXPECT_EQ(bad_input_flag(dithered_params("4", "cube", "minus")), "normals");
  EXPECT_EQ(bad_input_flag(dithered_params("4", "sphere", "mixed")), "none");
}
