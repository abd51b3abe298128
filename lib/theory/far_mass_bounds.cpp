#include "theory/far_mass_bounds.h"

#include <algorithm>
#include <cmath>

#include "theory/haar_score_law.h"

namespace routelab::theory {

double far_mass_at_spread(double M, double K, double delta) {
  // 1 / (1 + (K/M) e^{Delta}): no overflow of M e^{-Delta} for large Delta,
  // and e^{Delta} = inf gives 0, the right limit.
  return 1.0 / (1.0 + K / M * std::exp(delta));
}

double prop1_far_mass_upper(double M, double K, double lambda_gap) { return far_mass_at_spread(M, K, lambda_gap); }

double prop1_far_norm_upper(double M, double K, double lambda_gap) { return std::sqrt(M) * std::exp(-lambda_gap) / K; }

double prop1_required_lambda_gap(double M_max, double K, double rho_star, double a_star) {
  const double for_rho = std::log(M_max * (1.0 - rho_star) / (K * rho_star));
  const double for_a = std::log(std::sqrt(M_max) / (K * a_star));
  return std::max({0.0, for_rho, for_a});
}

double prop1_extremal_lambda_gap(double M_max, double K, double rho_star, double a_star) {
  const double for_rho = std::log(M_max * (1.0 - rho_star) / (K * rho_star));
  // a = sqrt(M) x / (K + M x), x = e^{-lambda g}, increases in x; a <= a_star
  // iff x <= K a_star / (sqrt(M) - M a_star), always when sqrt(M) a_star >= 1.
  const double root = std::sqrt(M_max);
  const double for_a = root * a_star < 1.0 ? std::log((root - M_max * a_star) / (K * a_star)) : 0.0;
  return std::max({0.0, for_rho, for_a});
}

double prop3_far_mass_lower(double M_L, double K, double lambda) { return far_mass_at_spread(M_L, K, 2.0 * lambda); }

double prop3_far_mass_lower_spread(double M, double K, double delta) { return far_mass_at_spread(M, K, delta); }

double corollary_b5_failure_probability(double M, int d, double s, double eps) {
  return M * (levy_tail_bound(d, s) + eps);
}

double prop4_near_signal_upper(double rho) { return 1.0 - rho; }

double b11_near_gain_lower(double rho, double gamma) { return (1.0 - rho) * (1.0 - gamma); }

}  // namespace routelab::theory
