// The three simulations of the foundation at small sizes with fixed seeds:
// every closed form passes its check, and every planted error fails it.
#include <gtest/gtest.h>

#include <cmath>

#include "planted_law.h"
#include "sim_cells.h"
#include "sims/runner.h"
#include "sims/sim.h"
#include "theory/step_gaps.h"
#include "theory/trace_moments.h"

using namespace routelab;
using routelab::testing::expect_no_failures;
using routelab::testing::find_row;
using routelab::testing::params_for;
using routelab::testing::PlantedLaw;

namespace {

SimContext sims_context(long long samples, uint64_t seed = 3) {
  return SimContext{seed, 2, samples, 0};  // seed, threads, samples, point
}

// ---- spectral-gap ----

// Every family's closed forms at every point of its verify checks:
// families/RegisteredFamily in tests/test_registry.cpp.

// Example 2's planted error: E H = (1 - 1/d) I instead of (1 - 2/d) I. With
// 40000 samples the entry SE is about 0.003 < 1/(10 d).
TEST(SpectralGap, PlantedWrongHouseholderMeanFails) {
  const int d = 5;
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "5"}})));
  law.mean_ = Mat((1.0 - 1.0 / d) * Mat::Identity(d, d));
  EXPECT_EQ(find_row(spectral_gap_rows(law, sims_context(40000)), "max_entry_z").verdict, Verdict::fail);
}

// Example 1's planted error: cos a instead of sin a / a (0.30 apart at a = 1).
TEST(SpectralGap, PlantedWrongSo2MeanFails) {
  PlantedLaw law(make_step_law(params_for("so2", {{"d", "2"}, {"a", "1"}})));
  law.mean_ = Mat(std::cos(1.0) * Mat::Identity(2, 2));
  EXPECT_EQ(find_row(spectral_gap_rows(law, sims_context(20000)), "max_entry_z").verdict, Verdict::fail);
}

// A gap() 20% below the law's with its mean() right: the beta row's own check
// fails (it used to take the entrywise verdict, and pass), the entries pass.
TEST(SpectralGap, PlantedWrongGapFailsTheBetaRow) {
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "5"}})));
  law.gap_ = 0.8 * *law.gap();
  const auto rows = spectral_gap_rows(law, sims_context(20000));
  EXPECT_EQ(find_row(rows, "beta").verdict, Verdict::fail);
  EXPECT_EQ(find_row(rows, "max_entry_z").verdict, Verdict::pass);
}

// Example 3's planted error: 1 - (1 - sin a/a)/d, 0.0198 away at d = 8, a = 1;
// needs entry SE below 0.002, i.e. about 1e5 samples.
TEST(SpectralGap, PlantedWrongGivensMeanFails) {
  PlantedLaw law(make_step_law(params_for("givens", {{"d", "8"}, {"a", "1"}})));
  law.mean_ = Mat((1.0 - (1.0 - std::sin(1.0)) / 8.0) * Mat::Identity(8, 8));
  EXPECT_EQ(find_row(spectral_gap_rows(law, sims_context(100000)), "max_entry_z").verdict, Verdict::fail);
}

// The split-sample norm is not biased up by noise where E M = 0 (Haar), unlike
// the norm of the noisy mean.
TEST(SpectralGap, SplitNormIsNotBiasedUpward) {
  auto law = make_step_law(params_for("haar", {{"d", "8"}, {"group", "o"}}));
  const auto& beta = find_row(spectral_gap_rows(*law, sims_context(20000)), "beta");
  EXPECT_LT(std::abs(beta.estimate), 5 * beta.stderr_);
}

// ---- moment-decay ----

TEST(MomentDecay, Theorem3AndWindowsPass) {
  const std::vector<Params> cases = {
      params_for("householder", {{"d", "8"}}),
      params_for("so2", {{"d", "2"}, {"a", "1"}}),
      params_for("nonnormal", {{"d", "3"}}),
  };
  for (const auto& p : cases) expect_no_failures(moment_decay_rows(*make_step_law(p), {1, 4, 8}, {0.1}, sims_context(20000)), p.at("family"));
}

// Theorem 3 is strict for the non-normal example: ||E P_8|| = 0.4068 < beta^8 = 0.7079.
TEST(MomentDecay, NonNormalIsStrictlyBelowBetaPower) {
  auto law = make_step_law(params_for("nonnormal", {{"d", "3"}}));
  const auto& r = find_row(moment_decay_rows(*law, {8}, {0.1}, sims_context(40000)), "norm_mean_product", "8");
  EXPECT_NEAR(r.estimate, 0.4068, 5 * r.stderr_ + 1e-3);
  EXPECT_LT(r.ci_high, *r.theory);
}

// Planted: a gap 20% too small makes beta^n undercut the measured norm.
TEST(MomentDecay, PlantedTooSmallGapFails) {
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "8"}})));
  law.gap_ = 0.8 * 0.75;
  const auto rows = moment_decay_rows(law, {1, 4}, {0.1}, sims_context(20000));
  EXPECT_EQ(find_row(rows, "norm_mean_product", "4").verdict, Verdict::fail);
}

// Planted: a wrong E M makes the window arithmetic and the entries disagree.
TEST(MomentDecay, PlantedWrongMeanFailsEntries) {
  PlantedLaw law(make_step_law(params_for("so2", {{"d", "2"}, {"a", "1"}})));
  law.mean_ = Mat(std::cos(1.0) * Mat::Identity(2, 2));
  const auto rows = moment_decay_rows(law, {1, 4}, {0.1}, sims_context(20000));
  EXPECT_EQ(find_row(rows, "max_entry_z_vs_power_of_mean", "4").verdict, Verdict::fail);
}

// ---- haar-mixing ----

TEST(HaarMixing, UniformNormalsMixAndMomentsMatchProposition2) {
  auto law = make_step_law(params_for("householder", {{"d", "6"}}));
  const auto rows = haar_mixing_rows(*law, {1, 5, 40}, sims_context(8000));
  expect_no_failures(rows, "householder d=6");
  EXPECT_EQ(find_row(rows, "first_n_indistinguishable_from_haar").verdict, Verdict::pass);
  EXPECT_NEAR(*find_row(rows, "mean_trace_squared", "5").theory, theory::householder_uniform_trace_moments(6, 5).second, 1e-12);
}

// Remark 3: coordinate normals never reach the Haar law; the check passes
// because the failure to mix is detected.
TEST(HaarMixing, CoordinateNormalsVisiblyFailToMix) {
  auto law = make_step_law(params_for("householder", {{"d", "8"}, {"normals", "coordinate"}}));
  const auto rows = haar_mixing_rows(*law, {1, 10, 40}, sims_context(8000));
  expect_no_failures(rows, "coordinate d=8");
  EXPECT_EQ(find_row(rows, "first_n_indistinguishable_from_haar").verdict, Verdict::pass);
  EXPECT_NEAR(find_row(rows, "mean_trace_squared", "40").estimate, 8.0, 0.3);
}

// Planted: claiming that coordinate normals mix must fail.
TEST(HaarMixing, PlantedClaimThatCoordinateNormalsMixFails) {
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "8"}, {"normals", "coordinate"}})));
  law.limit_ = HaarLimit::yes;
  EXPECT_EQ(find_row(haar_mixing_rows(law, {1, 40}, sims_context(8000)), "first_n_indistinguishable_from_haar").verdict, Verdict::fail);
}

// Planted: Proposition 2's second moment for coordinate normals (the two laws
// share E tr P_n but not E (tr P_n)^2: 8 against about 1 at n = 40).
TEST(HaarMixing, PlantedWrongSecondMomentFails) {
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "8"}, {"normals", "coordinate"}})));
  law.second_ = theory::householder_uniform_second_moment(8);
  const auto rows = haar_mixing_rows(law, {10, 40}, sims_context(8000));
  EXPECT_EQ(find_row(rows, "mean_trace", "40").verdict, Verdict::pass);
  EXPECT_EQ(find_row(rows, "mean_trace_squared", "40").verdict, Verdict::fail);
}

// The determinant component of a fixed det -1 law alternates.
TEST(HaarMixing, DeterminantComponentAlternates) {
  auto law = make_step_law(params_for("householder", {{"d", "4"}}));
  const auto rows = haar_mixing_rows(*law, {3, 4}, sims_context(2000));
  EXPECT_EQ(find_row(rows, "det_plus_fraction", "3").estimate, 0.0);
  EXPECT_EQ(find_row(rows, "det_plus_fraction", "4").estimate, 1.0);
}

// ---- the runner ----

TEST(Runner, SweepExpandsOnlyTheFlagsAFamilyReads) {
  RunRequest req = parse_sim_args("spectral-gap", {"--family", "so2,axis3", "--d", "6", "--theta", "1,2", "--a", "0.5,1"});
  const auto points = expand_points(req);
  // so2: a in {0.5, 1}; axis3: theta in {1, 2}.
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].at("family"), "so2");
  EXPECT_EQ(points[0].count("theta"), 0u);
  EXPECT_EQ(points[3].at("theta"), "2");
}

TEST(Runner, BadInputNamesTheFlag) {
  auto flag_of = [](std::vector<std::string> args) {
    try {
      RunRequest req = parse_sim_args("spectral-gap", args);
      run_sim(req);
    } catch (const BadInput& e) {
      return e.flag;
    }
    return std::string("none");
  };
  EXPECT_EQ(flag_of({"--family", "so2", "--d", "5"}), "d");
  EXPECT_EQ(flag_of({"--family", "axis3", "--d", "4"}), "d");
  EXPECT_EQ(flag_of({"--family", "so2", "--a", "0"}), "a");
  EXPECT_EQ(flag_of({"--family", "givens", "--a", "-1"}), "a");
  EXPECT_EQ(flag_of({"--family", "nope"}), "family");
  EXPECT_EQ(flag_of({"--bogus", "1"}), "bogus");
  EXPECT_EQ(flag_of({"--samples", "0"}), "samples");
  EXPECT_EQ(flag_of({"--samples", "-5"}), "samples");
  EXPECT_EQ(flag_of({"--family", "givens", "--theta", "1"}), "theta");
  EXPECT_EQ(flag_of({"--family", "householder", "--normals", "cube"}), "normals");
  EXPECT_EQ(flag_of({"--family", "skewexp", "--d", "4"}), "d");
  EXPECT_EQ(flag_of({"--family", "haar", "--group", "u"}), "group");
  EXPECT_EQ(flag_of({"--d", "2.5"}), "d");
  try {
    find_sim("nosuch");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(e.flag, "sim");
  }
  try {
    RunRequest req = parse_sim_args("moment-decay", {"--n", "0,4"});
    run_sim(req);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(e.flag, "n");
  }
}

}  // namespace
