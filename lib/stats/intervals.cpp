#include "stats/intervals.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/normal.hpp>

namespace routelab {

double bonferroni_z(long long count) {
  boost::math::normal_distribution<double> normal;
  const double total = 2.0 * boost::math::cdf(normal, -kZ);
  const double each = total / double(std::max(1LL, count));
  return std::max(kZ, -boost::math::quantile(normal, each / 2.0));
}

double clopper_pearson_lower(long long x, long long n, double alpha) {
  if (x == 0) return 0.0;
  return boost::math::ibeta_inv(double(x), double(n - x + 1), alpha);
}

double clopper_pearson_upper(long long x, long long n, double alpha) {
  if (x == n) return 1.0;
  return boost::math::ibeta_inv(double(x + 1), double(n - x), 1.0 - alpha);
}

}  // namespace routelab
