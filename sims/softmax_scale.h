// softmax-scale: the logit scale that Proposition 1 (B.4) asks for, against
// the smallest one that does the job. The computational core, with the
// theory passed in so a test can plant a wrong threshold.
#pragma once

#include <functional>

#include "sims/sim.h"
#include "theory/far_mass_bounds.h"

namespace routelab {

struct SoftmaxScaleTheory {
  // B.4's condition on lambda g, of (M_max, K, rho_star, a_star).
  std::function<double(double, double, double, double)> required_lambda_gap = theory::prop1_required_lambda_gap;
  // The exact smallest lambda g at the extremal configuration, same arguments.
  std::function<double(double, double, double, double)> extremal_lambda_gap = theory::prop1_extremal_lambda_gap;
};

struct SoftmaxScalePoint {
  int K = 1;
  long long M_max = 1000;
  double rho_star = 0.05, a_star = 0.01, gap = 0.5;
};

// The smallest lambda >= 0 at which softmax(lambda S) over K near scores and
// M far scores has rho_D <= rho_star and a_D <= a_star, by bisection to
// relative 1e-15; +inf if no lambda up to `limit` does. The targets, once met,
// stay met as lambda grows whenever every near score exceeds every far score
// by g and rho_star < g/2 (then every far weight decreases in lambda: d log
// alpha_j/d lambda = S_j - mean_alpha S <= -g + 2 rho_D), so the bisection is
// well founded.
double smallest_lambda_meeting_targets(const double* near, int K, const double* far, long long M, double rho_star,
                                       double a_star, double limit);

// Rows: B.4's threshold lambda; the bisected smallest lambda at the extremal
// configuration (K near scores = c_near, M_max far = c_far) against its exact
// value (which is the threshold whenever B.4's rho term binds) and against the
// threshold; the largest smallest-lambda over ctx.samples random instances
// (scores in the allowed ranges, M = M_max) against the threshold.
std::vector<SimRow> softmax_scale_rows(const SoftmaxScaleTheory& theory, const SoftmaxScalePoint& pt,
                                       const SimContext& ctx);

}  // namespace routelab
