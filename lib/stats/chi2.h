// Chi-squared goodness of fit on equiprobable bins (Stan's sampler tests):
// each sample is mapped through the law's CDF and binned in [0, 1].
#pragma once

#include <functional>
#include <vector>

namespace routelab {

struct ChiSquared {
  double statistic;
  int dof;
  double pvalue;
};

ChiSquared chi2_equiprobable(const std::vector<double>& sample, const std::function<double(double)>& cdf, int bins);
// For a discrete law on {0, ..., k-1} with the given probabilities.
ChiSquared chi2_counts(const std::vector<long long>& counts, const std::vector<double>& probabilities);

}  // namespace routelab
