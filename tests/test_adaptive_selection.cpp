// adaptive-selection (D.3) at small sizes with fixed seeds: the counterexample
// defeats Theorem 7 (the negative control passes), the non-adaptive control on
// the same draws obeys it, |t| >= cos eps, the Chernoff tail; planted errors fail.
#include <gtest/gtest.h>

#include <cmath>

#include "sims/adaptive_selection.h"

using namespace routelab;

namespace {

SimContext adaptive_selection_context(long long samples, uint64_t seed = 7) {
  return SimContext{seed, 2, samples, 0};  // seed, threads, samples, point
}

AdaptiveSelectionConfig config(long long M, double eps) {
  AdaptiveSelectionConfig c;
  c.M = M;
  c.eps = eps;
  return c;
}

// A copy: callers pass the rows of a call, a temporary that dies with the statement.
SimRow row_with_prefix(const std::vector<SimRow>& rows, const std::string& prefix) {
  for (const auto& r : rows)
    if (r.quantity.rfind(prefix, 0) == 0) return r;
  throw std::runtime_error("no row " + prefix);
}

}  // namespace

TEST(AdaptiveSelection, CounterexampleDefeatsTheorem7) {
  const auto rows = adaptive_selection_rows(config(1000, 0.3), adaptive_selection_context(60));
  for (const auto& r : rows) EXPECT_NE(r.verdict, Verdict::fail) << r.quantity << " = " << r.estimate;
  EXPECT_EQ(row_with_prefix(rows, "violation_frequency_adaptive").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "violation_frequency_adaptive").estimate, 1.0);
  EXPECT_EQ(row_with_prefix(rows, "exceedance_frequency_nonadaptive").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "min_abs_t_adaptive").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "selected_count_mean").verdict, Verdict::pass);
}

// Chernoff at M = 200, p = 0.0955 (true tail about 6e-3, bound 0.092); the
// planted exponent Mp/2 gives 7e-5, far below what 20000 trials see. The
// deterministic |t| >= cos eps runs over about 2e4 selections here (1e5 in verify).
TEST(AdaptiveSelection, ChernoffTailAndPlantedExponentFails) {
  const auto cfg = config(200, 0.3);
  const auto rows = adaptive_selection_rows(cfg, adaptive_selection_context(20000));
  EXPECT_EQ(row_with_prefix(rows, "chernoff_tail").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "min_abs_t_adaptive").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "violation_frequency_adaptive").verdict, Verdict::none);  // the bound exceeds 1 at N = 19
  AdaptiveSelectionTheory planted;
  planted.chernoff = [](long long M, double p) { return std::exp(-double(M) * p / 2.0); };
  EXPECT_EQ(row_with_prefix(adaptive_selection_rows(cfg, adaptive_selection_context(20000), planted), "chernoff_tail").verdict, Verdict::fail);
}

// Planted: the mean sin(eps)/eps as a lower bound on every |t|; the least of 200 trials falls below it.
TEST(AdaptiveSelection, PlantedLowerBoundFails) {
  AdaptiveSelectionTheory planted;
  planted.min_abs_t = [](double eps) { return std::sin(eps) / eps; };
  EXPECT_EQ(row_with_prefix(adaptive_selection_rows(config(1000, 0.3), adaptive_selection_context(200), planted), "min_abs_t_adaptive").verdict, Verdict::fail);
}

// Where Theorem 7's bound cannot be violated (raised past 1), the negative control does not pass.
TEST(AdaptiveSelection, NegativeControlNeedsAViolableBound) {
  AdaptiveSelectionTheory planted;
  planted.separate = [](double, long long, double, double, int, double) { return 1.5; };
  const auto rows = adaptive_selection_rows(config(1000, 0.3), adaptive_selection_context(60), planted);
  EXPECT_NE(row_with_prefix(rows, "violation_frequency_adaptive").verdict, Verdict::pass);
  EXPECT_EQ(row_with_prefix(rows, "violation_frequency_adaptive").estimate, 0.0);
}

TEST(AdaptiveSelection, BadInputNamesTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad = {{"M", "0"},   {"M", "2.5"}, {"eps", "0"},
                                                                {"eps", "4"}, {"eta", "0"}, {"eta", "1"}};
  for (const auto& [flag, value] : bad) {
    Params p = {{"M", "100"}, {"eps", "0.3"}, {"eta", "0.05"}};
    p[flag] = value;
    try {
      adaptive_selection_config(p);
      ADD_FAILURE() << "--" << flag << " " << value << " accepted";
    } catch (const BadInput& e) {
      EXPECT_EQ(e.flag, flag) << value << ": " << e.what();
    }
  }
}
