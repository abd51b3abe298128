// far-mass at small sizes: the bounds of Propositions 1, 3, 4 and B.11/B.12
// hold with their extremal equalities, every planted wrong bound fails, the
// streamed far set equals the one-shot walk and its scratch does not grow with
// M_L, and every flag rejects bad values. Also lib/attention/near_signal.
#include <gtest/gtest.h>

#include <cmath>

#include "attention/far_mass.h"
#include "attention/near_signal.h"
#include "groups/haar.h"
#include "planted_law.h"
#include "sims/far_mass.h"
#include "sims/runner.h"
#include "theory/far_mass_bounds.h"
#include "theory/haar_score_law.h"

using namespace routelab;
using routelab::testing::params_for;

namespace {

SimContext far_mass_context(long long samples) {
  return SimContext{11, 2, samples, 0};  // seed, threads, samples, point
}

// A copy: callers pass the rows of a call, a temporary that dies with the statement.
SimRow far_mass_row(const std::vector<SimRow>& rows, const std::string& result, const std::string& quantity,
                  const std::string& ml = "") {
  for (const auto& r : rows) {
    if (r.result != result || r.quantity != quantity) continue;
    if (ml.empty()) return r;
    for (const auto& [k, v] : r.cells)
      if (k == "ML" && v == ml) return r;
  }
  throw std::runtime_error("no row " + result + " " + quantity + " " + ml);
}

const char* kP1 = "Proposition 1 (B.4)";
const char* kP3 = "Proposition 3 (B.6)";
const char* kP4 = "Proposition 4 (B.7)";

FarMassPoint point(int K, double lambda, std::vector<long long> ML = {10, 1000, 5000}) {
  FarMassPoint pt;
  pt.K = K;
  pt.lambda = lambda;
  pt.ML = std::move(ML);
  pt.routes = 4;
  return pt;
}

}  // namespace

// ---- closed forms ----

// Proposition 3's lower bound at K = 1 and B.4's worked example, computed by hand.
TEST(FarMass, ClosedFormsMatchReference) {
  EXPECT_NEAR(theory::prop3_far_mass_lower(1e2, 1, 2), 0.647, 5e-4);
  EXPECT_NEAR(theory::prop3_far_mass_lower(1e4, 1, 5), 0.312, 5e-4);
  EXPECT_NEAR(theory::prop3_far_mass_lower(1e6, 1, 5), 0.978, 5e-4);
  EXPECT_NEAR(theory::prop3_far_mass_lower(1e6, 1, 10), 0.0021, 5e-5);
  EXPECT_NEAR(theory::prop1_required_lambda_gap(1000, 1, 0.05, 0.01), 9.8522, 1e-4);
  // Proposition 1's rho bound is Proposition 3's general form at the same spread.
  EXPECT_DOUBLE_EQ(theory::prop1_far_mass_upper(50, 3, 2.5), theory::prop3_far_mass_lower_spread(50, 3, 2.5));
  EXPECT_EQ(theory::prop3_far_mass_lower(10, 1, 400), 0.0);  // e^{800} overflows to the right limit
  EXPECT_DOUBLE_EQ(theory::corollary_b5_failure_probability(10, 16, 0.5, 1e-3),
                   10 * (theory::levy_tail_bound(16, 0.5) + 1e-3));
}

// ---- the deterministic inequalities ----

// Score-tail's shortcut (Proposition 1, K = 1): wherever
// prop1_gap_meets_targets says yes, FarMassAccumulator's own rho_D and a_D
// meet the targets, on the extremal configuration (all M far logits at the
// gap's bottom) just past the margin, at logits of every size. Planted: a
// shortcut without the margin, a gap just under the required one where the
// rho term binds, is seen to fail by the accumulator, and is refused.
TEST(FarMass, Prop1ShortcutAgreesWithTheAccumulator) {
  struct Targets {
    long long M;
    double rho, a;
  };
  for (const Targets t : {Targets{1000, 0.05, 0.01}, {10, 0.05, 0.01}, {1, 0.2, 0.5}, {5000, 0.01, 0.2}}) {
    const double required = theory::prop1_required_lambda_gap(double(t.M), 1, t.rho, t.a);
    for (double l_near : {0.0, 37.5, -300.0, 1e4}) {
      auto extremal = [&](double gap) {
        FarMassAccumulator fm;
        fm.add_near(l_near);
        for (long long j = 0; j < t.M; ++j) fm.add_far(l_near - gap);
        return fm;
      };
      // The smallest gap the shortcut takes, found by doubling a step.
      double gap = required, step = 1e-7;
      while (!theory::prop1_gap_meets_targets(l_near, l_near - gap, required)) gap = required + (step *= 2);
      const FarMassAccumulator fm = extremal(gap);
      EXPECT_LE(fm.far_mass(), t.rho) << "M " << t.M << " near " << l_near;
      EXPECT_LE(fm.far_norm(), t.a) << "M " << t.M << " near " << l_near;
      EXPECT_FALSE(theory::prop1_gap_meets_targets(l_near, l_near - required, required));
    }
  }
  // M = 1000, rho* = 0.05, a* = 0.01: the rho term binds, so just under it the
  // extremal configuration's rho_D is over target.
  const double required = theory::prop1_required_lambda_gap(1000, 1, 0.05, 0.01);
  FarMassAccumulator fm;
  fm.add_near(0.0);
  for (int j = 0; j < 1000; ++j) fm.add_far(-(required - 1e-4));
  EXPECT_GT(fm.far_mass(), 0.05);
  EXPECT_FALSE(theory::prop1_gap_meets_targets(0.0, -(required - 1e-4), required));
}

TEST(FarMass, BoundsHoldWithExtremalEquality) {
  const auto rows = far_mass_bound_rows(FarMassBounds{}, point(3, 2), far_mass_context(4000));
  for (const auto& r : rows) EXPECT_NE(r.verdict, Verdict::fail) << r.result << " " << r.quantity << " = " << r.estimate;
  EXPECT_EQ(far_mass_row(rows, kP1, "far_mass_violations").estimate, 0);
  EXPECT_LE(far_mass_row(rows, kP4, "extremal_equality_error").estimate, 1e-12);
  EXPECT_LE(far_mass_row(rows, "B.11", "extremal_equality_error").estimate, 1e-12);
  for (const auto& r : rows)
    if (r.quantity.find("max_relative_excess") != std::string::npos) {
      EXPECT_LE(r.estimate, 1e-12) << r.quantity;
    }
}

// Planted: Proposition 3 with e^{lambda} instead of e^{2 lambda}.
TEST(FarMass, PlantedProp3WithSingleLambdaFails) {
  FarMassBounds wrong;
  wrong.far_mass_lower = [](double M, double K, double lambda) { return M / (M + K * std::exp(lambda)); };
  EXPECT_EQ(far_mass_row(far_mass_bound_rows(wrong, point(1, 2), far_mass_context(2000)), kP3, "far_mass_violations").verdict, Verdict::fail);
  auto law = make_step_law(params_for("householder", {{"d", "4"}}));
  EXPECT_EQ(far_mass_row(far_mass_route_rows(*law, wrong, point(1, 2), far_mass_context(2)), kP3, "extremal_equality_error", "1000").verdict, Verdict::fail);
}

// Planted: Proposition 1's a_D bound with sqrt(M) dropped (e^{-lambda g}/K).
TEST(FarMass, PlantedProp1WithoutSqrtMFails) {
  FarMassBounds wrong;
  wrong.far_norm_upper = [](double M, double K, double lambda_gap) { return std::exp(-lambda_gap) / K; };
  EXPECT_EQ(far_mass_row(far_mass_bound_rows(wrong, point(1, 2), far_mass_context(2000)), kP1, "far_norm_violations").verdict, Verdict::fail);
}

// Planted: Proposition 1's rho bound at twice the spread.
TEST(FarMass, PlantedProp1TooTightFails) {
  FarMassBounds wrong;
  wrong.far_mass_upper = [](double M, double K, double lambda_gap) {
    return theory::prop1_far_mass_upper(M, K, 2 * lambda_gap);
  };
  EXPECT_EQ(far_mass_row(far_mass_bound_rows(wrong, point(1, 2), far_mass_context(2000)), kP1, "far_mass_violations").verdict, Verdict::fail);
}

// Planted: Proposition 4 squared, (1 - rho)^2; B.11 without its (1 - gamma).
TEST(FarMass, PlantedProp4AndB11Fail) {
  FarMassBounds wrong;
  wrong.near_signal_upper = [](double rho) { return (1 - rho) * (1 - rho); };
  wrong.near_gain_lower = [](double rho, double gamma) { return 1 - rho; };
  const auto rows = far_mass_bound_rows(wrong, point(2, 2), far_mass_context(2000));
  EXPECT_EQ(far_mass_row(rows, kP4, "near_signal_norm_violations").verdict, Verdict::fail);
  EXPECT_EQ(far_mass_row(rows, kP4, "extremal_equality_error").verdict, Verdict::fail);
  EXPECT_EQ(far_mass_row(rows, "B.11", "near_gain_violations").verdict, Verdict::fail);
  EXPECT_EQ(far_mass_row(rows, "B.12", "sandwich_violations").verdict, Verdict::fail);
}

// ---- the streamed far set ----

TEST(FarMass, RouteRowsPassAndExtremalsAreExact) {
  auto law = make_step_law(params_for("householder", {{"d", "8"}}));
  const auto rows = far_mass_route_rows(*law, FarMassBounds{}, point(2, 3), far_mass_context(2));
  for (const auto& r : rows) EXPECT_NE(r.verdict, Verdict::fail) << r.result << " " << r.quantity << " = " << r.estimate;
  // Far mass grows with M_L and stays above Proposition 3.
  EXPECT_LT(far_mass_row(rows, kP3, "far_mass", "10").estimate, far_mass_row(rows, kP3, "far_mass", "5000").estimate);
  EXPECT_LE(far_mass_row(rows, kP1, "extremal_equality_error", "5000").estimate, 1e-12);
}

// The chunked stream equals one walk of K + M_L steps, read in full.
TEST(FarMass, StreamEqualsOneShotWalk) {
  auto law = make_step_law(params_for("householder", {{"d", "5"}}));
  const int K = 3;
  const double lambda = 2.5;
  const std::vector<long long> ML = {1, 4096, 5000, 9000};
  FarStreamBuffers buf(*law);
  std::vector<double> rho(ML.size()), a(ML.size());
  Stream s1(7, 1);
  stream_route_far_mass(*law, s1, K, lambda, ML, buf, rho.data(), a.data());

  std::vector<double> scores(K + ML.back()), e1(5, 0.0);
  e1[0] = 1;
  WalkBuffers wb(*law);
  Stream s2(7, 1);
  walk_scores(*law, s2, e1.data(), e1.data(), int(scores.size()), scores.data(), wb);
  double near = K * std::exp(lambda), far = 0, far2 = 0;
  for (std::size_t c = 0, m = 0; c < ML.size(); ++c) {
    for (; (long long)m < ML[c]; ++m) {
      const double e = std::exp(lambda * scores[K + m]);
      far += e, far2 += e * e;
    }
    EXPECT_NEAR(rho[c], far / (near + far), 1e-12) << ML[c];
    EXPECT_NEAR(a[c], std::sqrt(far2) / (near + far), 1e-12) << ML[c];
  }
}

// Memory does not grow with M_L: the far loop reuses the same fixed scratch.
TEST(FarMass, StreamScratchDoesNotGrowWithML) {
  auto law = make_step_law(params_for("householder", {{"d", "4"}}));
  FarStreamBuffers buf(*law);
  const double* scores = buf.scores.data();
  const std::size_t capacity = buf.scores.capacity();
  double rho[2], a[2];
  for (long long M : {100LL, 300000LL}) {
    Stream s(1, 2);
    stream_route_far_mass(*law, s, 1, 1.0, {M / 2, M}, buf, rho, a);
    EXPECT_EQ(buf.scores.data(), scores);
    EXPECT_EQ(buf.scores.capacity(), capacity);
    EXPECT_EQ(buf.scores.size(), std::size_t(FarStreamBuffers::kChunk));
  }
}

// ---- bad input: one BadInput naming the flag, before any output ----

TEST(FarMass, BadInputForEveryFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--K", "0"}, "K"},        {{"--K", "1.5"}, "K"},          {{"--lambda", "0"}, "lambda"},
      {{"--lambda", "-1"}, "lambda"}, {{"--ML", "0"}, "ML"},     {{"--ML", "10,2.5"}, "ML"},
      {{"--gap", "0"}, "gap"},    {{"--gap", "2.5"}, "gap"},      {{"--routes", "1"}, "routes"},
  };
  for (const auto& [args, flag] : cases) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--samples", "2"});
    try {
      run_sim(parse_sim_args("far-mass", a));
      ADD_FAILURE() << "accepted " << args[0] << " " << args[1];
    } catch (const BadInput& e) {
      EXPECT_EQ(e.flag, flag);
    }
  }
}

// ---- lib/attention/near_signal ----

TEST(NearSignal, CoefficientMisalignmentAndGain) {
  Stream s(5, 5);
  const Mat Q = haar_sample(s, 4, false);
  const Mat B = near_signal_coefficient({0.2, 0.3}, {Q, Q});
  EXPECT_NEAR(Eigen::JacobiSVD<Mat>(B).singularValues()(0), 0.5, 1e-14);
  // A rotation by theta in the (e_1, e_2) plane moves e_1 by 2 sin(theta/2).
  Mat R = Mat::Identity(3, 3);
  const double theta = 0.4;
  R(0, 0) = R(1, 1) = std::cos(theta);
  R(1, 0) = std::sin(theta), R(0, 1) = -std::sin(theta);
  const Mat u = Mat::Identity(3, 1);
  EXPECT_NEAR(transport_misalignment(R, u), 2 * std::sin(theta / 2), 1e-14);
  // Two opposite rotations average to cos(theta) on e_1: above B.11's (1 - gamma).
  Mat Rt = R.transpose();
  const double gain = near_gain(near_signal_coefficient({0.4, 0.4}, {R, Rt}), u);
  EXPECT_NEAR(gain, 0.8 * std::cos(theta), 1e-14);
  EXPECT_GT(gain, theory::b11_near_gain_lower(0.2, 2 * std::sin(theta / 2)));
}
