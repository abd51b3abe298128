// Lie-ball steps (S10) and the closed forms of the Lie-ball example: valid
// draws, E[M] against the SO(3) and SO(2) uniform-ball closed forms with a
// planted wrong convention, the bump's acceptance, and bad input.
#include <cmath>

#include <gtest/gtest.h>

#include "groups/lieball.h"
#include "step_law_checks.h"
#include "theory/lie_ball.h"

using namespace routelab;
using namespace routelab::testing;

namespace {

Params lieball_params(const std::string& d, const std::string& r, const std::string& density = "uniform") {
  return {{"family", "lieball"}, {"d", d}, {"r", r}, {"density", density}};
}

}  // namespace

TEST(LieBallSteps, OrthogonalWithDeterminantOneAndPathsAgree) {
  expect_valid_steps(*make_step_law(lieball_params("2", "1")), 41, 200);
  expect_valid_steps(*make_step_law(lieball_params("3", "3.141592653589793")), 42, 200);
  expect_valid_steps(*make_step_law(lieball_params("4", "2", "bump")), 43, 200);
  expect_valid_steps(*make_step_law(lieball_params("6", "3")), 44, 100);
}

TEST(LieBallTheory, So3ClosedFormMatchesReference) {
  // The closed form evaluated independently (docs/theory.md#lie-ball).
  EXPECT_NEAR(theory::lieball_so3_uniform_mean_scalar(0.5), 0.95074, 5e-6);
  EXPECT_NEAR(theory::lieball_so3_uniform_mean_scalar(1.5), 0.60687, 5e-6);
  EXPECT_NEAR(theory::lieball_so3_uniform_mean_scalar(3.0), -0.03349, 5e-6);
  // Bump at d = 4 (n = 6): measured acceptance 0.123.
  EXPECT_NEAR(theory::lieball_bump_acceptance(6), 0.123, 0.002);
}

TEST(LieBallMean, UniformBallAgainstClosedForm) {
  // Planted: the radius read in the Frobenius norm (r/sqrt 2 in ||.||_g).
  for (double r : {1.5, 3.0}) {
    auto law = make_step_law(lieball_params("3", std::to_string(r)));
    const Moments m = step_entry_moments(*law, 45, 8000);
    EXPECT_LE(max_abs_z(m, *law->mean()), 5.0) << "r " << r;
    EXPECT_GT(max_abs_z(m, theory::lieball_so3_uniform_mean_scalar(r / std::sqrt(2.0)) * Mat::Identity(3, 3)), 10.0);
  }
  auto law2 = make_step_law(lieball_params("2", "2"));
  const Moments m2 = step_entry_moments(*law2, 46, 8000);
  EXPECT_LE(max_abs_z(m2, *law2->mean()), 5.0);
  EXPECT_GT(max_abs_z(m2, theory::lieball_so2_uniform_mean_scalar(2 / std::sqrt(2.0)) * Mat::Identity(2, 2)), 10.0);
  EXPECT_FALSE(make_step_law(lieball_params("4", "2"))->mean().has_value());
  EXPECT_FALSE(make_step_law(lieball_params("3", "2", "bump"))->mean().has_value());
}

TEST(LieBallMean, BumpIsScalarAndMatchesReference) {
  // d = 4, r = 2: an independent Monte Carlo measured beta = 0.5965
  // (error about 1e-3); E M is a scalar times I (Ad-invariance).
  auto law = make_step_law(lieball_params("4", "2", "bump"));
  const Moments m = step_entry_moments(*law, 47, 8000);
  Mat want = 0.5965 * Mat::Identity(4, 4);
  double worst = 0;
  for (int j = 0; j < 16; ++j)
    worst = std::max(worst, std::abs(m.mean[j] - want.data()[j]) / std::hypot(m.stderr_of(j), 1e-3));
  EXPECT_LE(worst, 5.0);
  // Planted: the uniform ball's (larger) spread would give a smaller beta.
  EXPECT_GT(max_abs_z(m, 0.45 * Mat::Identity(4, 4)), 10.0);
}

TEST(LieBallBadInput, NamesTheFlag) {
  EXPECT_EQ(bad_input_flag(lieball_params("3", "0")), "r");
  EXPECT_EQ(bad_input_flag(lieball_params("3", "-1")), "r");
  EXPECT_EQ(bad_input_flag(lieball_params("3", "3.15")), "r");
  EXPECT_EQ(bad_input_flag(lieball_params("3", "1", "gauss")), "density");
  EXPECT_EQ(bad_input_flag(lieball_params("16", "1", "bump")), "density");
  EXPECT_EQ(bad_input_flag(lieball_params("1", "1")), "d");
  EXPECT_EQ(bad_input_flag(lieball_params("16", "1")), "none");
}
