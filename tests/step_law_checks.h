// Checks shared by the step-law family tests (test_heat, test_fisher,
// test_lieball, test_dithered): valid draws, sampled means with standard
// errors, and equiprobable-bin chi-squared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "groups/family.h"
#include "groups/step_law.h"
#include "stats/chi2.h"
#include "stats/moments.h"

namespace routelab::testing {

// Every drawn step is orthogonal to 1e-12 with the law's determinant, and
// the vector and matrix paths agree with matrix(step).
inline void expect_valid_steps(const StepLaw& law, uint64_t seed, int count) {
  const int d = law.dim();
  Stream s(seed, 0);
  std::vector<double> step(law.step_size());
  bool seen_plus = false, seen_minus = false;
  for (int i = 0; i < count; ++i) {
    law.draw(s, step.data());
    const Mat M = law.matrix(step.data());
    ASSERT_LT((M.transpose() * M - Mat::Identity(d, d)).cwiseAbs().maxCoeff(), 1e-12) << "draw " << i;
    const double det = M.determinant();
    ASSERT_LT(std::abs(std::abs(det) - 1.0), 1e-12);
    (det > 0 ? seen_plus : seen_minus) = true;
    Vec x(d);
    s.normals(x.data(), d);
    const Vec want = M * x;
    law.apply(step.data(), x.data());
    ASSERT_LT((x - want).cwiseAbs().maxCoeff(), 1e-13);
    Mat P(d, 3);
    s.normals(P.data(), P.size());
    const Mat wantP = M * P;
    law.apply_matrix(step.data(), P);
    ASSERT_LT((P - wantP).cwiseAbs().maxCoeff(), 1e-13);
  }
  switch (law.det_class()) {
    case DetClass::plus: EXPECT_FALSE(seen_minus); break;
    case DetClass::minus: EXPECT_FALSE(seen_plus); break;
    case DetClass::mixed: EXPECT_TRUE(seen_plus && seen_minus); break;
  }
}

// Moments of the d^2 entries (column-major) of n steps from Stream(seed, 0).
inline Moments step_entry_moments(const StepLaw& law, uint64_t seed, long long n) {
  const int d = law.dim();
  Stream s(seed, 0);
  std::vector<double> step(law.step_size());
  Moments m(d * d);
  for (long long i = 0; i < n; ++i) {
    law.draw(s, step.data());
    const Mat M = law.matrix(step.data());
    m.add(M.data());
  }
  return m;
}

// max over quantities of |mean - predicted| / stderr; the check passes at
// max_abs_z <= 5 (docs/theory.md#statistical-protocol).
inline double max_abs_z(const Moments& m, const double* predicted) {
  double z = 0;
  for (int j = 0; j < m.size(); ++j) z = std::max(z, std::abs(m.mean[j] - predicted[j]) / m.stderr_of(j));
  return z;
}
inline double max_abs_z(const Moments& m, const Mat& predicted) { return max_abs_z(m, predicted.data()); }

// Edges at the i/bins quantiles of a continuous CDF on [lo, hi], by bisection.
inline std::vector<double> equiprobable_edges(const std::function<double(double)>& cdf, double lo, double hi,
                                              int bins) {
  std::vector<double> edges{lo};
  for (int i = 1; i < bins; ++i) {
    double a = lo, b = hi;
    for (int it = 0; it < 60; ++it) (cdf(0.5 * (a + b)) < double(i) / bins ? a : b) = 0.5 * (a + b);
    edges.push_back(0.5 * (a + b));
  }
  edges.push_back(hi);
  return edges;
}

// Pearson chi-squared p-value of a sample against equiprobable bins.
inline double chi2_equiprobable_pvalue(const std::vector<double>& sample, const std::vector<double>& edges) {
  const int bins = int(edges.size()) - 1;
  std::vector<long long> counts(bins, 0);
  for (double x : sample) {
    const int b = int(std::upper_bound(edges.begin() + 1, edges.end() - 1, x) - (edges.begin() + 1));
    ++counts[b];
  }
  return chi2_counts(counts, std::vector<double>(bins, 1.0 / bins)).pvalue;
}

// The flag a BadInput from make_step_law names, or "none" if the law was built.
inline std::string bad_input_flag(const Params& p) {
  try {
    make_step_law(p);
  } catch (const BadInput& e) {
    return e.flag;
  }
  return "none";
}

}  // namespace routelab::testing
