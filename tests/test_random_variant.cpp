// random-variant at small sizes with fixed seeds: the per-block harmonics,
// windows and E S_n pass against the paper's beta_b = sin f_b / f_b, the
// reference table comes out of the closed forms, and a planted cos f_b fails.
#include <gtest/gtest.h>

#include <cmath>

#include "groups/so2.h"
#include "sims/random_variant.h"
#include "sim_cells.h"
#include "sims/runner.h"
#include "theory/haar_score_law.h"
#include "theory/score_tails.h"

using namespace routelab;
using routelab::testing::cell;

namespace {

SimContext random_variant_context(long long samples, int threads = 2) {
  return SimContext{5, threads, samples, 0};  // seed, threads, samples, point
}

// A copy: callers pass the rows of a call, a temporary that dies with the statement.
SimRow variant_row(const std::vector<SimRow>& rows, const std::string& quantity, const std::string& key,
                  const std::string& value) {
  for (const auto& r : rows)
    if (r.quantity == quantity && cell(r, key) == value) return r;
  throw std::runtime_error("no row " + quantity);
}

int count_verdict(const std::vector<SimRow>& rows, const std::string& quantity, Verdict verdict) {
  int k = 0;
  for (const auto& r : rows) k += r.quantity == quantity && r.verdict == verdict;
  return k;
}

}  // namespace

// docs/theory.md#random-variant (d = 64): E S_n and the windows per block.
TEST(RandomVariant, ReferenceTable) {
  const std::vector<double> f = rope_frequencies(64, 10000);
  const double table[] = {0.923, 0.800, 0.675, 0.550, 0.425};
  long long n = 10;
  for (double v : table) {
    EXPECT_NEAR(theory::so2_mean_score(f, 0.0, n), v, 5e-4) << n;
    n *= 10;
  }
  const auto beta = theory::random_variant_gaps(64, 10000);
  EXPECT_EQ(theory::mixing_window(beta[0], 0.01), 27);
  EXPECT_EQ(theory::mixing_window(beta[4], 0.01), 276);
  EXPECT_EQ(theory::mixing_window(beta[8], 0.01), 2763);
  EXPECT_NEAR(double(theory::mixing_window(beta[16], 0.01)), 2.8e5, 0.05e5);
  EXPECT_NEAR(double(theory::mixing_window(beta[31], 0.01)), 1.55e9, 0.05e9);
}

std::vector<SimRow> variant_rows(const std::vector<double>& gaps = {}, int threads = 2) {
  RandomVariantSetup setup;
  setup.gaps = gaps;
  return random_variant_rows(setup, {10, 100, 1000}, {0, 4, 8, 31}, random_variant_context(400, threads));
}

TEST(RandomVariant, BlocksWindowsAndMeanScorePass) {
  const auto rows = variant_rows();
  for (const auto& r : rows)
    EXPECT_NE(r.verdict, Verdict::fail) << r.quantity << " n=" << cell(r, "n") << " block=" << cell(r, "block") << ": "
                                 << r.estimate << " vs " << r.theory.value_or(NAN);
  EXPECT_EQ(count_verdict(rows, "mean_score", Verdict::pass), 3);
  EXPECT_EQ(count_verdict(rows, "blocks_carrying_gap", Verdict::pass), 3);
  // Windows 27 and 276 fall inside the walk, 2763 and 1.6e9 do not.
  EXPECT_EQ(variant_row(rows, "mixing_window_b", "block", "0").verdict, Verdict::pass);
  EXPECT_EQ(variant_row(rows, "mixing_window_b", "block", "4").verdict, Verdict::pass);
  EXPECT_EQ(variant_row(rows, "mixing_window_b", "block", "31").verdict, Verdict::none);
  // At n = 1000 the 25 slowest blocks still carry the gap (beta_b^n > 0.01).
  EXPECT_EQ(variant_row(rows, "blocks_carrying_gap", "n", "1000").theory.value(), 25);
}

// Planted: cos f_b instead of sin f_b / f_b (E S_n 0.864 / 0.740 / 0.616
// against 0.923 / 0.800 / 0.675).
TEST(RandomVariant, PlantedCosGapFails) {
  std::vector<double> planted;
  for (double f : rope_frequencies(64, 10000)) planted.push_back(std::cos(f));
  const auto rows = variant_rows(planted);
  EXPECT_EQ(count_verdict(rows, "mean_score", Verdict::fail), 3);
  EXPECT_GE(count_verdict(rows, "first_harmonic_re", Verdict::fail), 3);
  EXPECT_GE(count_verdict(rows, "beta_b", Verdict::fail), 1);
}

TEST(RandomVariant, SameRowsAtOneAndTwoThreads) {
  RandomVariantSetup setup;
  setup.d = 8;
  const auto a = random_variant_rows(setup, {5, 50}, {0, 3}, random_variant_context(300, 1));
  const auto b = random_variant_rows(setup, {5, 50}, {0, 3}, random_variant_context(300, 2));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)  // NaN: a window beyond the walk
    if (!(std::isnan(a[i].estimate) && std::isnan(b[i].estimate))) {
      EXPECT_EQ(a[i].estimate, b[i].estimate) << a[i].quantity;
    }
}

TEST(RandomVariant, BadInputNamesTheFlag) {
  auto flag_of = [](std::vector<std::string> args) {
    try {
      run_sim(parse_sim_args("random-variant", args));
    } catch (const BadInput& e) {
      return e.flag;
    }
    return std::string("none");
  };
  EXPECT_EQ(flag_of({"--d", "7", "--samples", "10", "--n", "5"}), "d");
  EXPECT_EQ(flag_of({"--d", "0", "--samples", "10", "--n", "5"}), "d");
  EXPECT_EQ(flag_of({"--base", "1", "--samples", "10", "--n", "5"}), "base");
  EXPECT_EQ(flag_of({"--eps", "0", "--samples", "10", "--n", "5"}), "eps");
  EXPECT_EQ(flag_of({"--eps", "1", "--samples", "10", "--n", "5"}), "eps");
  EXPECT_EQ(flag_of({"--n", "0", "--samples", "10"}), "n");
  EXPECT_EQ(flag_of({"--n", "200000", "--samples", "10"}), "n");
  EXPECT_EQ(flag_of({"--block", "32", "--samples", "10", "--n", "5"}), "block");
  EXPECT_EQ(flag_of({"--block", "-1", "--samples", "10", "--n", "5"}), "block");
  EXPECT_EQ(flag_of({"--family", "so2", "--samples", "10"}), "family");
}
