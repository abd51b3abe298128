// score-tail at small sizes with fixed seeds: every bound and exact law passes
// its check, the negative controls detect the Levy tail failing before and
// without mixing, and every planted error fails its check.
#include <gtest/gtest.h>

#include <cmath>

#include "groups/so2_phases.h"
#include "planted_law.h"
#include "rng/philox_lanes.h"
#include "sim_cells.h"
#include "sims/runner.h"
#include "sims/score_tail.h"
#include "theory/haar_score_law.h"
#include "theory/far_mass_bounds.h"
#include "theory/score_tails.h"

using namespace routelab;
using routelab::testing::cell;
using routelab::testing::expect_no_failures;
using routelab::testing::params_for;
using routelab::testing::PlantedLaw;

namespace {

SimContext score_tail_context(long long samples, int threads = 2) {
  return SimContext{11, threads, samples, 0};  // seed, threads, samples, point
}

// Rows of a quantity (prefix) at walk length n ("" = any).
std::vector<SimRow> rows_of(const std::vector<SimRow>& rows, const std::string& quantity, const std::string& n = "") {
  std::vector<SimRow> out;
  for (const auto& r : rows)
    if (r.quantity.rfind(quantity, 0) == 0 && (n.empty() || cell(r, "n") == n)) out.push_back(r);
  return out;
}

int count_verdict(const std::vector<SimRow>& rows, Verdict verdict) {
  int k = 0;
  for (const auto& r : rows) k += r.verdict == verdict;
  return k;
}


std::vector<SimRow> householder_rows(const ScoreTailTheory& theory = paper_score_tail_theory()) {
  auto law = make_step_law(params_for("householder", {{"d", "16"}}));
  return score_tail_rows(*law, {1, 60}, {0.4, 0.5, 0.6}, 4, score_tail_context(20000), theory);
}

}  // namespace

// Theorem 5(b) after mixing (d = 16, n = 60: tails 0.056 .. 0.0054 under Levy
// 0.60 .. 0.13), the exact Haar tail, the union bound, Corollary B.5; and n = 1
// (one step: tail 0.98 at s = 0.4) visibly breaks the Levy bound.
TEST(ScoreTail, LevyHoldsAfterMixingAndFailsBefore) {
  const auto rows = householder_rows();
  expect_no_failures(rows);
  EXPECT_EQ(count_verdict(rows_of(rows, "tail", "60"), Verdict::pass), 3 + 3);  // tail and tail_vs_exact_law
  EXPECT_EQ(count_verdict(rows_of(rows, "tail_exceeds_levy", "1"), Verdict::pass), 3);
  EXPECT_EQ(count_verdict(rows_of(rows, "tail_vs_exact_law", "1"), Verdict::pass), 3);  // the one-step law
  // M = 4: the union bound is vacuous (>= 1) at s = 0.4, 0.5, non-vacuous at 0.6.
  EXPECT_EQ(count_verdict(rows_of(rows, "max_of_M_tail", "60"), Verdict::pass), 1);
  EXPECT_EQ(count_verdict(rows_of(rows, "max_of_M_tail", "60"), Verdict::none), 2);
  EXPECT_EQ(count_verdict(rows_of(rows, "far_mass_over_target", "60"), Verdict::pass), 1 + 3);  // + off-event rows
  EXPECT_EQ(count_verdict(rows_of(rows, "ks_to_haar_score_law", "60"), Verdict::pass), 1);
  EXPECT_EQ(count_verdict(rows_of(rows, "near_route"), Verdict::pass), 6);
}

// Planted: the Levy exponent (d-1)/2 quadrupled, 2 exp(-2(d-1)s^2) = 1.1e-3 at
// s = 0.5, below the true tail 0.02; its tail and union rows must fail.
TEST(ScoreTail, PlantedTooSmallLevyBoundFails) {
  ScoreTailTheory planted = paper_score_tail_theory();
  planted.levy = [](int d, double s) { return 2 * std::exp(-2.0 * (d - 1) * s * s); };
  const auto rows = householder_rows(planted);
  EXPECT_GE(count_verdict(rows_of(rows, "tail", "60"), Verdict::fail), 2);
  EXPECT_GE(count_verdict(rows_of(rows, "max_of_M_tail", "60"), Verdict::fail), 2);
}

// Planted: the Haar law of dimension d/2 (variance 2/d) as the exact tail.
TEST(ScoreTail, PlantedWrongHaarLawFails) {
  ScoreTailTheory planted = paper_score_tail_theory();
  planted.haar_tail = [](int d, double s) { return theory::haar_score_tail(d / 2, s); };
  auto law = make_step_law(params_for("haar", {{"d", "16"}}));
  EXPECT_EQ(count_verdict(score_tail_rows(*law, {1}, {0.4, 0.5}, 2, score_tail_context(20000)), Verdict::fail), 0);
  EXPECT_EQ(count_verdict(rows_of(score_tail_rows(*law, {1}, {0.4, 0.5}, 2, score_tail_context(20000), planted), "tail_vs_exact_law"),
                          Verdict::fail),
            2);
}

// Remark 3: coordinate normals never mix; the tail stays (1 + (1-2/d)^n)/2
// above the Levy bound (0.117 at d = 8, s = 0.9): the negative control passes.
TEST(ScoreTail, CoordinateNormalsBreakLevy) {
  auto law = make_step_law(params_for("householder", {{"d", "8"}, {"normals", "coordinate"}}));
  const auto rows = score_tail_rows(*law, {1, 40}, {0.6, 0.9}, 2, score_tail_context(4000));
  expect_no_failures(rows);
  // At n = 40 the tail is 0.50 < Levy 0.57 at s = 0.6: no violation there.
  EXPECT_EQ(count_verdict(rows_of(rows, "tail_exceeds_levy"), Verdict::pass), 3);
  EXPECT_EQ(count_verdict(rows_of(rows, "tail_vs_exact_law"), Verdict::pass), 4);
  EXPECT_EQ(rows_of(rows, "tail_exceeds_levy")[0].result, "Remark 3");
}

// Planted: a claim that coordinate normals mix; the premise check fails.
TEST(ScoreTail, PlantedClaimThatCoordinateNormalsMixFails) {
  PlantedLaw law(make_step_law(params_for("householder", {{"d", "8"}, {"normals", "coordinate"}})));
  law.limit_ = HaarLimit::yes;
  const auto rows = score_tail_rows(law, {1, 40}, {0.9}, 2, score_tail_context(4000));
  EXPECT_EQ(rows_of(rows, "ks_to_haar_score_law", "40")[0].verdict, Verdict::fail);
}

// Theorem 2 on SO(2) blocks (d = 64, a = 1): E S_n = (sin 1)^n, Hoeffding
// holds, near routes and the union bound hold.
std::vector<SimRow> so2_rows(const ScoreTailTheory& theory = paper_score_tail_theory()) {
  auto law = make_step_law(params_for("so2", {{"d", "64"}, {"a", "1"}}));
  return score_tail_rows(*law, {3, 10, 30}, {0.3, 0.5, 0.7}, 4, score_tail_context(100000), theory);
}

TEST(ScoreTail, HoeffdingHoldsAndMeanMatches) {
  const auto rows = so2_rows();
  expect_no_failures(rows);
  EXPECT_EQ(count_verdict(rows_of(rows, "mean_score"), Verdict::pass), 3);
  EXPECT_GE(count_verdict(rows_of(rows, "tail"), Verdict::pass), 6);
  EXPECT_EQ(count_verdict(rows_of(rows, "near_route"), Verdict::pass), 6);
  EXPECT_EQ(rows_of(rows, "tail")[0].result, "Theorem 2(b)");
}

// Planted: Hoeffding at rate d instead of d/4, exp(-d t^2): at n = 30 (phases
// nearly uniform, S ~ N(0, 1/d)) and t = 0.3 the tail is about 9e-3 against
// the planted 3e-3.
TEST(ScoreTail, PlantedHoeffdingRateDFails) {
  ScoreTailTheory planted = paper_score_tail_theory();
  planted.hoeffding = [](int blocks, double t) { return t <= 0 ? 1.0 : std::exp(-2.0 * blocks * t * t); };
  EXPECT_GE(count_verdict(rows_of(so2_rows(planted), "tail"), Verdict::fail), 1);
}

// Planted: Example 1's cos a in place of sin a / a in E S_n.
TEST(ScoreTail, PlantedWrongMeanScoreFails) {
  ScoreTailTheory planted = paper_score_tail_theory();
  planted.so2_mean = [](const std::vector<double>& a, double, long long n) { return std::pow(std::cos(a[0]), double(n)); };
  EXPECT_GE(count_verdict(rows_of(so2_rows(planted), "mean_score"), Verdict::fail), 2);
}

TEST(ScoreTail, SameRowsAtOneAndTwoThreads) {
  auto law = make_step_law(params_for("householder", {{"d", "6"}}));
  const auto a = score_tail_rows(*law, {1, 8}, {0.5}, 3, score_tail_context(3000, 1));
  const auto b = score_tail_rows(*law, {1, 8}, {0.5}, 3, score_tail_context(3000, 2));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].estimate, b[i].estimate) << a[i].quantity;
}

// The batched phase kernel behind score-tail (eight walks a register, each
// lane its own Philox stream) gives every walk what so2_mean_cos_at gives it
// alone, bit for bit: B a multiple of eight (the interleaved path), even but
// not (one block at a time), odd (blocks straddling steps), 43 = 32 + 8 + 3
// (the single walk's phases in four registers, in one, then one at a time,
// groups/so2_phases.cpp), drifts that need
// the increment wrapped, a last group of fewer than eight walks, lengths
// across the 64-step batches, and stream ids crossing a 32-bit word.
TEST(ScoreTail, BatchedWalksEqualSingleWalksBitForBit) {
  struct Case {
    int B;
    double a, omega;
  };
  const std::vector<long long> ns = {1, 10, 63, 64, 65, 130};
  So2WalkScratch batch_buf, walk_buf;
  for (const Case& k : {Case{32, 1.0, 0.0}, Case{32, 0.5, 0.1}, Case{8, 3.0, 2.5}, Case{6, 1.0, -0.3},
                        Case{5, 1.0, 0.0}, Case{43, 0.8, 0.2}}) {
    std::vector<double> widths(k.B);
    for (int b = 0; b < k.B; ++b) widths[b] = k.a * std::pow(0.7, b);
    const So2Blocks law(2 * k.B, widths, k.omega);
    for (const uint64_t stream0 : {uint64_t(40), (uint64_t(1) << 32) - 5}) {
      const long long walks = 13;
      std::vector<double> batched(walks * ns.size()), alone(ns.size());
      so2_mean_cos_at_walks(law, 9, stream0, walks, ns.data(), int(ns.size()), batched.data(), batch_buf);
      for (long long w = 0; w < walks; ++w) {
        Stream s(9, stream0 + uint64_t(w));
        so2_mean_cos_at(law, s, ns.data(), int(ns.size()), alone.data(), walk_buf);
        for (std::size_t c = 0; c < ns.size(); ++c)
          ASSERT_EQ(batched[w * ns.size() + c], alone[c]) << "B " << k.B << " walk " << w << " n " << ns[c];
      }
    }
  }
}

// The near routes' draw: streams side by side give each stream's own uniforms.
TEST(ScoreTail, UniformsOfStreamsAreEachStreamsOwn) {
  const int n = 33;  // odd: the last block's second uniform is not used
  const long long streams = 19;
  const uint64_t stream0 = (uint64_t(1) << 56) + (uint64_t(1) << 32) - 7;
  std::vector<double> side(streams * n);
  uniforms_of_streams(3, stream0, streams, n, side.data());
  for (long long w = 0; w < streams; ++w) {
    Stream s(3, stream0 + uint64_t(w));
    for (int k = 0; k < n; ++k) ASSERT_EQ(side[w * n + k], s.uniform()) << "stream " << w << " draw " << k;
  }
}

TEST(ScoreTail, ClosedForms) {
  EXPECT_NEAR(theory::hoeffding_score_tail(32, 0.5), std::exp(-4.0), 1e-15);
  EXPECT_EQ(theory::hoeffding_score_tail(32, -0.1), 1.0);
  // Remark 3's example: d = 8, s = 0.9, Levy 0.117 < 1/2.
  EXPECT_NEAR(theory::levy_tail_bound(8, 0.9), 0.117, 5e-4);
  EXPECT_NEAR(theory::coordinate_householder_tail(8, 1, 0.9), 0.875, 1e-15);
  // The catalogue's walk before mixing: d = 16, n = 1, s = 0.4 gives 0.977.
  EXPECT_NEAR(theory::householder_one_step_tail(16, 0.4), 0.977, 1e-3);
  EXPECT_NEAR(theory::so2_mean_score({1.0, 1.0}, 0.0, 10), std::pow(std::sin(1.0), 10), 1e-15);
  // Catalogue Prop 1 example: K = 1, M = 1000, rho* = 0.05, a* = 0.01 needs lambda g >= 9.8522.
  EXPECT_NEAR(theory::prop1_required_lambda_gap(1000, 1, 0.05, 0.01), 9.8522, 1e-4);
}

TEST(ScoreTail, BadInputNamesTheFlag) {
  auto flag_of = [](std::vector<std::string> args) {
    try {
      run_sim(parse_sim_args("score-tail", args));
    } catch (const BadInput& e) {
      return e.flag;
    }
    return std::string("none");
  };
  EXPECT_EQ(flag_of({"--s", "1.5", "--samples", "100"}), "s");
  EXPECT_EQ(flag_of({"--s", "-1.01", "--samples", "100"}), "s");
  EXPECT_EQ(flag_of({"--s", "x", "--samples", "100"}), "s");
  EXPECT_EQ(flag_of({"--M", "0", "--samples", "100"}), "M");
  EXPECT_EQ(flag_of({"--M", "2.5", "--samples", "100"}), "M");
  EXPECT_EQ(flag_of({"--M", "101", "--samples", "100"}), "M");
  EXPECT_EQ(flag_of({"--n", "0", "--samples", "100"}), "n");
  EXPECT_EQ(flag_of({"--n", "-3", "--samples", "100"}), "n");
  EXPECT_EQ(flag_of({"--family", "so2", "--d", "5", "--samples", "100"}), "d");
}
