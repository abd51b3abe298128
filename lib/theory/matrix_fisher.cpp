#include "theory/matrix_fisher.h"

#include <cmath>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/quadrature/tanh_sinh.hpp>
#include <boost/math/special_functions/bessel.hpp>

namespace routelab::theory {

double bessel_i_scaled(int nu, double x) {
  x = std::abs(x);
  if (x <= 700.0) return boost::math::cyl_bessel_i(nu, x) * std::exp(-x);
  // Hankel: I_nu(x) e^{-x} sqrt(2 pi x) ~ sum_k (-1)^k a_k(nu) / x^k,
  // a_k = prod_{j=1..k} (4 nu^2 - (2j-1)^2) / (k! 8^k); at x > 700 ten terms
  // are exact to rounding.
  const double mu = 4.0 * nu * nu;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k <= 10; ++k) {
    term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
    sum += term;
  }
  return sum / std::sqrt(2.0 * M_PI * x);
}

// Matrix-Fisher, SO(2): item 4
double fisher_so2_gap(double kappa_vm) { return bessel_i_scaled(1, kappa_vm) / bessel_i_scaled(0, kappa_vm); }

double von_mises_cdf(double theta, double kappa_vm) {
  // The density scaled by e^{-kappa} so that large kappa cannot overflow.
  auto f = [&](double t) { return std::exp(kappa_vm * (std::cos(t) - 1.0)); };
  using Q = boost::math::quadrature::gauss_kronrod<double, 61>;
  const double total = Q::integrate(f, -M_PI, M_PI, 20, 1e-14);
  return Q::integrate(f, -M_PI, theta, 20, 1e-14) / total;
}

// Matrix-Fisher, SO(3): item 5, scaled by e^{-(s1+s2+s3)}. For ordered
// s1 >= s2 >= |s3| the Bessel arguments a = (s1-s2)(1-u)/2 and
// b = (s1+s2)(1+u)/2 add up to s1 + s2 u, so the leftover exponent
// (s2 + s3)(u - 1) is <= 0 and nothing overflows.
static double so3_scaled_normaliser(double s1, double s2, double s3) {
  auto f = [&](double u) {
    const double a = 0.5 * (s1 - s2) * (1.0 - u), b = 0.5 * (s1 + s2) * (1.0 + u);
    return 0.5 * bessel_i_scaled(0, a) * bessel_i_scaled(0, b) *
           std::exp(std::abs(a) + std::abs(b) - s1 - s2 + s3 * (u - 1.0));
  };
  boost::math::quadrature::tanh_sinh<double> integrator;
  return integrator.integrate(f, -1.0, 1.0, 1e-15);
}

double fisher_so3_log_normaliser(double s1, double s2, double s3) {
  return s1 + s2 + s3 + std::log(so3_scaled_normaliser(s1, s2, s3));
}

double fisher_so3_normaliser(double s1, double s2, double s3) {
  return std::exp(fisher_so3_log_normaliser(s1, s2, s3));
}

// Matrix-Fisher, SO(3): item 1
Eigen::Vector3d fisher_so3_mean_diagonal(const Eigen::Vector3d& s) {
  constexpr double h = 1e-5;
  Eigen::Vector3d g;
  for (int i = 0; i < 3; ++i) {
    Eigen::Vector3d up = s, dn = s;
    up(i) += h;
    dn(i) -= h;
    g(i) = (fisher_so3_log_normaliser(up(0), up(1), up(2)) - fisher_so3_log_normaliser(dn(0), dn(1), dn(2))) / (2 * h);
  }
  return g;
}

// Matrix-Fisher: item 2
double fisher_mixture_gap_bound(double nuclear_norm) { return 1.0 - std::exp(-2.0 * nuclear_norm); }

// S9
std::optional<double> fisher_rejection_acceptance(int d, double kappa) {
  if (d == 2) return bessel_i_scaled(0, 2.0 * kappa);
  if (d == 3) return so3_scaled_normaliser(kappa, kappa, kappa);
  return std::nullopt;
}

// S9
double fisher_rejection_acceptance_lower_bound(int d, double kappa) {
  double term = 1.0, sum = 1.0;
  for (int j = 1; j <= d; ++j) {
    term *= kappa * kappa / (2.0 * j);
    sum += term;
  }
  return std::exp(-d * kappa) * sum;
}

}  // namespace routelab::theory
