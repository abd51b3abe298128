#include "stats/chi2.h"

#include <algorithm>

#include <boost/math/distributions/chi_squared.hpp>

namespace routelab {

ChiSquared chi2_counts(const std::vector<long long>& counts, const std::vector<double>& probabilities) {
  long long n = 0;
  for (long long c : counts) n += c;
  double stat = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const double expected = double(n) * probabilities[k];
    stat += (counts[k] - expected) * (counts[k] - expected) / expected;
  }
  const int dof = int(counts.size()) - 1;
  boost::math::chi_squared_distribution<double> law(dof);
  return {stat, dof, boost::math::cdf(boost::math::complement(law, stat))};
}

ChiSquared chi2_equiprobable(const std::vector<double>& sample, const std::function<double(double)>& cdf, int bins) {
  std::vector<long long> counts(bins, 0);
  for (double x : sample) {
    const int k = std::clamp(int(cdf(x) * bins), 0, bins - 1);
    ++counts[k];
  }
  return chi2_counts(counts, std::vector<double>(bins, 1.0 / bins));
}

}  // namespace routelab
