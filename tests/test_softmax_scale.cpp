// softmax-scale at small sizes: B.4's threshold reproduces the reference
// example, the bisection meets the closed form at the extremal configuration,
// random instances need no more than the threshold, a planted wrong threshold
// fails, and every flag rejects bad values.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/far_mass.h"
#include "sims/runner.h"
#include "sims/softmax_scale.h"
#include "theory/far_mass_bounds.h"

using namespace routelab;

namespace {

SimContext scale_context(long long samples) {
  return SimContext{4, 2, samples, 0};  // seed, threads, samples, point
}

// A copy: callers pass the rows of a call, a temporary that dies with the statement.
SimRow scale_row(const std::vector<SimRow>& rows, const std::string& quantity, Kind kind) {
  for (const auto& r : rows)
    if (r.quantity == quantity && r.kind == kind) return r;
  throw std::runtime_error("no row " + quantity + " " + to_string(kind));
}

SoftmaxScalePoint point(int K, long long M, double rho, double a, double gap) {
  SoftmaxScalePoint pt;
  pt.K = K, pt.M_max = M, pt.rho_star = rho, pt.a_star = a, pt.gap = gap;
  return pt;
}

}  // namespace

// B.4's worked example: K = 1, M_max = 1000, rho* = 0.05, a* = 0.01 needs
// lambda g >= 9.8522; there the extremal configuration gives rho = 0.05, a = 0.00158.
TEST(SoftmaxScale, ReferenceExample) {
  const auto rows = softmax_scale_rows(SoftmaxScaleTheory{}, point(1, 1000, 0.05, 0.01, 1.0), scale_context(50));
  const double lambda = scale_row(rows, "extremal_smallest_lambda", Kind::exact).estimate;
  EXPECT_NEAR(lambda, 9.8522, 1e-4);
  EXPECT_NEAR(lambda, theory::prop1_required_lambda_gap(1000, 1, 0.05, 0.01), 1e-12);
  FarMassAccumulator acc;
  acc.add_near(lambda);
  for (int j = 0; j < 1000; ++j) acc.add_far(0.0);
  EXPECT_NEAR(acc.far_mass(), 0.05, 1e-12);
  EXPECT_NEAR(acc.far_norm(), 0.00158, 1e-5);
  for (const auto& r : rows) EXPECT_NE(r.verdict, Verdict::fail) << r.quantity;
}

// With a* = 0.001 the a term binds; at the extremal configuration the exact
// smallest lambda is then strictly below B.4's (sufficient) threshold.
TEST(SoftmaxScale, ATermBindingSeparatesExactFromThreshold) {
  const auto rows = softmax_scale_rows(SoftmaxScaleTheory{}, point(2, 1000, 0.05, 0.001, 0.5), scale_context(100));
  for (const auto& r : rows) EXPECT_NE(r.verdict, Verdict::fail) << r.quantity << " = " << r.estimate;
  const auto& exact = scale_row(rows, "extremal_smallest_lambda", Kind::exact);
  const auto& threshold = scale_row(rows, "required_lambda", Kind::trend);
  EXPECT_LT(exact.estimate, threshold.estimate - 0.01);
  EXPECT_GT(scale_row(rows, "required_lambda_a_term", Kind::trend).estimate, scale_row(rows, "required_lambda_rho_term", Kind::trend).estimate);
  EXPECT_LE(scale_row(rows, "random_smallest_lambda_all_instances", Kind::upper).estimate, threshold.estimate);
}

// A near and a far score one apart: rho = a = 1/(1 + e^lambda) <= rho* iff
// lambda >= log((1 - rho*)/rho*).
TEST(SoftmaxScale, BisectionMatchesTwoScoreClosedForm) {
  const double near = 1.0, far = 0.0;
  const double lambda = smallest_lambda_meeting_targets(&near, 1, &far, 1, 0.1, 1.0, 1e6);
  EXPECT_NEAR(lambda, std::log(9.0), 1e-13);
  EXPECT_EQ(smallest_lambda_meeting_targets(&near, 1, &far, 1, 0.6, 1.0, 1e6), 0.0);
}

// Planted: sqrt(M_max) in place of M_max in the rho term; the threshold then
// undercuts the extremal smallest lambda. Planted exact form: same error.
TEST(SoftmaxScale, PlantedWrongThresholdFails) {
  SoftmaxScaleTheory wrong;
  wrong.required_lambda_gap = [](double M, double K, double rho, double a) {
    return std::max({0.0, std::log(std::sqrt(M) * (1 - rho) / (K * rho)), std::log(std::sqrt(M) / (K * a))});
  };
  wrong.extremal_lambda_gap = wrong.required_lambda_gap;
  const auto rows = softmax_scale_rows(wrong, point(1, 1000, 0.05, 0.01, 0.5), scale_context(200));
  EXPECT_EQ(scale_row(rows, "extremal_smallest_lambda", Kind::upper).verdict, Verdict::fail);
  EXPECT_EQ(scale_row(rows, "extremal_smallest_lambda", Kind::exact).verdict, Verdict::fail);
  EXPECT_EQ(scale_row(rows, "random_smallest_lambda_all_instances", Kind::upper).verdict, Verdict::fail);
}

TEST(SoftmaxScale, BadInputForEveryFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--K", "0"}, "K"},           {{"--Mmax", "0"}, "Mmax"},       {{"--Mmax", "2e7"}, "Mmax"},
      {{"--rho-star", "0"}, "rho-star"}, {{"--rho-star", "0.25"}, "rho-star"},  // gap/2 at gap 0.5
      {{"--a-star", "0"}, "a-star"}, {{"--a-star", "1.5"}, "a-star"}, {{"--gap", "0"}, "gap"},
      {{"--gap", "2.1"}, "gap"},
  };
  for (const auto& [args, flag] : cases) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--samples", "2"});
    try {
      run_sim(parse_sim_args("softmax-scale", a));
      ADD_FAILURE() << "accepted " << args[0] << " " << args[1];
    } catch (const BadInput& e) {
      EXPECT_EQ(e.flag, flag);
    }
  }
}
