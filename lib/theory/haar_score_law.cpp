#include "theory/haar_score_law.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/beta.hpp>

namespace routelab::theory {

// Theorem 5
double haar_score_cdf(int d, double x) {
  if (x <= -1) return 0.0;
  if (x >= 1) return 1.0;
  boost::math::beta_distribution<double> law((d - 1) / 2.0, (d - 1) / 2.0);
  return boost::math::cdf(law, (x + 1.0) / 2.0);
}

// Theorem 5
double haar_score_tail(int d, double s) {
  if (s <= -1) return 1.0;
  if (s >= 1) return 0.0;
  boost::math::beta_distribution<double> law((d - 1) / 2.0, (d - 1) / 2.0);
  return boost::math::cdf(boost::math::complement(law, (s + 1.0) / 2.0));
}

// Theorem 5(b)
double levy_tail_bound(int d, double s) { return 2.0 * std::exp(-(d - 1) * s * s / 2.0); }

// B.2
long long mixing_window(double beta, double eps) {
  if (beta <= 0) return 1;
  if (beta >= 1) return -1;  // never mixes
  return std::max(1LL, (long long)std::ceil(std::log(1.0 / eps) / std::log(1.0 / beta) - 1e-12));
}

}  // namespace routelab::theory
