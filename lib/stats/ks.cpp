#include "stats/ks.h"

#include <algorithm>
#include <cmath>

namespace routelab {

double ks_distance(std::vector<double>& sample, const std::function<double(double)>& cdf) {
  std::sort(sample.begin(), sample.end());
  const double n = double(sample.size());
  double d = 0;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const double f = cdf(sample[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

namespace {
// Q_KS(lambda) = 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2 lambda^2).
double kolmogorov_q(double lambda) {
  if (lambda < 0.2) return 1.0;
  double sum = 0, sign = 1;
  for (int j = 1; j <= 200; ++j) {
    const double term = sign * std::exp(-2.0 * j * j * lambda * lambda);
    sum += term;
    if (std::abs(term) < 1e-18) break;
    sign = -sign;
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}
double effective_root_n(long long n) {
  const double s = std::sqrt(double(n));
  return s + 0.12 + 0.11 / s;
}
}  // namespace

double ks_pvalue(double d, long long n) { return kolmogorov_q(effective_root_n(n) * d); }

double ks_critical_value(double alpha, long long n) {
  double lo = 0.2, hi = 10.0;  // Q is decreasing in lambda
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (kolmogorov_q(mid) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi) / effective_root_n(n);
}

}  // namespace routelab
