// Kolmogorov-Smirnov distance of a sample to a continuous law, with the
// asymptotic Kolmogorov distribution for p-values and critical values
// (Stephens' small-sample correction, as in Numerical Recipes §14.3).
#pragma once

#include <functional>
#include <vector>

namespace routelab {

// sup_x |F_n(x) - F(x)|; sorts `sample` in place.
double ks_distance(std::vector<double>& sample, const std::function<double(double)>& cdf);
// Pr[D_n > d] under the null.
double ks_pvalue(double d, long long n);
// The d with Pr[D_n > d] = alpha under the null.
double ks_critical_value(double alpha, long long n);

}  // namespace routelab
