#include "theory/score_tails.h"

#include <algorithm>
#include <cmath>

#include <boost/math/special_functions/beta.hpp>

#include "base/angles.h"
#include "theory/step_gaps.h"

namespace routelab::theory {

// Theorem 2(b)
double hoeffding_score_tail(int blocks, double t) { return t <= 0 ? 1.0 : std::exp(-blocks * t * t / 2.0); }

// Theorem 2 / Theorem 1
double so2_mean_score(const std::vector<double>& half_widths, double omega, long long n) {
  double sum = 0;
  for (double a : half_widths) sum += std::pow(so2_uniform_harmonic(a), double(n));
  // cos(n omega) with n omega reduced in double (n up to 1e5, |omega| small).
  return std::cos(wrap_angle(double(n) * omega)) * sum / double(half_widths.size());
}

// Theorem 5(c)
double union_tail_bound(long long routes, double one_route_bound) { return double(routes) * one_route_bound; }

// Remark 3
double coordinate_householder_tail(int d, long long n, double s) {
  if (s <= -1) return 1.0;
  if (s > 1) return 0.0;
  return (1.0 + std::pow(1.0 - 2.0 / d, double(n))) / 2.0;
}

// Theorem 5, one step (before mixing)
double householder_one_step_tail(int d, double s) {
  if (s <= -1) return 1.0;
  if (s >= 1) return 0.0;
  return boost::math::ibeta(0.5, (d - 1) / 2.0, (1.0 - s) / 2.0);
}

// Note after Example 1
std::vector<double> random_variant_gaps(int d, double base) {
  std::vector<double> beta;
  for (double f : rope_frequencies(d, base)) beta.push_back(so2_uniform_harmonic(f));
  return beta;
}

}  // namespace routelab::theory
