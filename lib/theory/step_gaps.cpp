#include "theory/step_gaps.h"

#include <cmath>

namespace routelab::theory {

double sinc(double x) { return std::abs(x) < 1e-8 ? 1.0 - x * x / 6.0 : std::sin(x) / x; }

// Example 1 (and its harmonics, Theorem 1)
double so2_uniform_harmonic(double a, int m) { return sinc(m * a); }

// Example 2
Eigen::MatrixXd householder_mean(const Eigen::VectorXd& sigma_nu_diagonal) {
  const auto d = sigma_nu_diagonal.size();
  return Eigen::MatrixXd::Identity(d, d) - 2.0 * Eigen::MatrixXd(sigma_nu_diagonal.asDiagonal());
}

// Example 2, uniform normals
double householder_uniform_gap(int d) { return std::abs(1.0 - 2.0 / d); }

// Example 3
double givens_mean_scalar(int d, double a) { return 1.0 - 2.0 * (1.0 - sinc(a)) / d; }

// Example 4
double axis3_mean_scalar(double theta) { return (2.0 * std::cos(theta) + 1.0) / 3.0; }

// Example 5
double skewexp_gap(double a, const std::vector<double>& lambdas) {
  double beta = 0;
  for (double l : lambdas) beta = std::max(beta, std::abs(sinc(a * l)));
  return beta;
}

}  // namespace routelab::theory
