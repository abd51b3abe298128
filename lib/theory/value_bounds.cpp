#include "theory/value_bounds.h"

#include <cmath>
#include <complex>

namespace routelab::theory {

namespace {

// 1 - e^{x + i y} without cancellation near x = y = 0:
// e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2).
std::complex<double> one_minus_exp(double x, double y) {
  const double h = std::sin(0.5 * y);
  return {-(std::expm1(x) * std::cos(y) - 2.0 * h * h), -std::exp(x) * std::sin(y)};
}

}  // namespace

// B.8
double position_only_coherence(double omega, long long M, double rho, double g) {
  const double n = double(M);
  // sum_{j<M} e^{-g j} = (1 - e^{-g M}) / (1 - e^{-g}), or M.
  const double mass = g == 0 ? n : std::expm1(-g * n) / std::expm1(-g);
  const std::complex<double> den = one_minus_exp(-g, -omega);
  if (std::abs(den) == 0) return rho;  // omega = 0 mod 2 pi, uniform: every phasor is 1
  return rho * std::abs(one_minus_exp(-g * n, -omega * n) / den) / mass;
}

// B.9 (36)
Eigen::MatrixXd shared_background_covariance(const Eigen::MatrixXd& T, double c0, double sigma_w, double a) {
  return c0 * c0 * T * T.transpose() +
         sigma_w * sigma_w * a * a * Eigen::MatrixXd::Identity(T.rows(), T.rows());
}

// B.9 (R_pp)
double prefix_product_radius(double mu, double rho, double a, double beta, int blocks, double eta) {
  return mu * rho + 4.0 * a / (1.0 - beta) * std::sqrt(std::log(4.0 * blocks / eta));
}

// Theorem 7 (D.2)
double separate_path_bound(double beta, long long w, double rho, double a, int blocks, double eta) {
  return prefix_product_radius(std::pow(beta, double(w)), rho, a, beta, blocks, eta);
}

// Theorem 7 (D.2), non-vacuous regime for uniform weights
double separate_path_min_far_count(double beta, long long w, int blocks, double eta) {
  const double r = 4.0 * std::sqrt(std::log(4.0 * blocks / eta)) / ((1.0 - beta) * (1.0 - std::pow(beta, double(w))));
  return r * r;
}

// Theorem 6 (B.10)
double same_path_bound(double lambda, int blocks, double beta, long long w, double rho, double a, double eta) {
  const double e = std::exp(2.0 * lambda / blocks);
  return e * prefix_product_radius(std::pow(beta, double(w)), rho, a, beta, blocks, eta) + (e - 1.0) * rho;
}

// D.4
double far_covariance_bound(double R, double c0, double sigma_w, double a) {
  return c0 * c0 * R * R + sigma_w * sigma_w * a * a;
}

// D.3
double chernoff_half_mean_tail(long long M, double p) { return std::exp(-double(M) * p / 8.0); }

}  // namespace routelab::theory
