// The softmax side of the paper's aggregation model (§4, Appendix B.4-B.7,
// B.11-B.12; docs/theory.md#proposition-1): how much attention a far set of M sources can take
// from a near set of K, given the logit scale lambda and the score gap g.
// Every function is one displayed bound; the comment names the result.
//
// Symbols (docs/theory.md#conventions): rho_D = far mass, a_D = ||alpha_D||_2, Delta = a
// logit spread (lambda g for Prop 1, the near-max minus far-min for Prop 3).
#pragma once

#include <cmath>

namespace routelab::theory {

// rho = M e^{-Delta} / (K + M e^{-Delta}): the far mass when all K near logits
// sit Delta above all M far logits. Propositions 1 and 3 are this one function
// at different Delta (an upper bound at Delta = lambda g, a lower one at
// Delta = max near logit - min far logit); it is the extremal value of both.
double far_mass_at_spread(double M, double K, double delta);

// Proposition 1 (B.4): rho_D <= M e^{-lambda g} / (K + M e^{-lambda g}) when
// near scores >= c_near, far scores <= c_far, g = c_near - c_far > 0.
double prop1_far_mass_upper(double M, double K, double lambda_gap);
// Proposition 1 (B.4): a_D <= sqrt(M) e^{-lambda g} / K (each far alpha_j <= e^{-lambda g}/K).
double prop1_far_norm_upper(double M, double K, double lambda_gap);
// Proposition 1 (B.4), the scale condition: if lambda g >= this, then
// rho_D <= rho_star and a_D <= a_star for every M <= M_max:
// max{0, log(M_max (1 - rho_star)/(K rho_star)), log(sqrt(M_max)/(K a_star))}.
double prop1_required_lambda_gap(double M_max, double K, double rho_star, double a_star);
// Proposition 1 (B.4) with K = 1, as a shortcut for a check that computes
// rho_D and a_D itself (FarMassAccumulator): true when the logit gap
// l_near - l_far (l_far the largest far logit) exceeds `required_gap`
// (prop1_required_lambda_gap) by a margin, 1e-6 plus 1e-9 of the logits'
// size, far above what the accumulator's rounding (one exp, sums of at most
// M terms in [1, M], the logits' own difference) could make up. Then both
// targets hold and the computed values would say so: no need to compute
// them. Inline: score-tail asks it for every group, length and level.
inline bool prop1_gap_meets_targets(double l_near, double l_far, double required_gap) {
  return l_near - l_far > required_gap + 1e-6 + 1e-9 * (std::abs(l_near) + std::abs(l_far));
}
// The smallest lambda g at which Proposition 1's extremal configuration (K near
// scores = c_near, M_max far scores = c_far) meets both targets: the rho term
// of the condition above is exact there, the a term is not (a_D < sqrt(M)
// e^{-lambda g}/K), so its exact term is log((sqrt(M) - M a_star)/(K a_star)),
// absent when a_star >= 1/sqrt(M). Equals the condition whenever its rho term
// (or 0) is the largest.
double prop1_extremal_lambda_gap(double M_max, double K, double rho_star, double a_star);

// Proposition 3 (§4, B.6): rho_D >= M_L / (M_L + K e^{2 lambda}) for logits in
// [-lambda, lambda], whatever the transport.
double prop3_far_mass_lower(double M_L, double K, double lambda);
// Proposition 3 (B.6), general spread: rho_D >= M e^{-Delta}/(K + M e^{-Delta})
// when max_S logit - min_D logit <= Delta.
double prop3_far_mass_lower_spread(double M, double K, double delta);

// Corollary B.5: Proposition 1's conclusions fail with probability at most
// delta_orth = M (2 e^{-(d-1) s^2/2} + eps) for far routes past the TV window.
double corollary_b5_failure_probability(double M, int d, double s, double eps);

// Proposition 4 (§4, B.7): ||B_S||_op <= 1 - rho_D for orthogonal near transports.
double prop4_near_signal_upper(double rho);
// B.11 (lemma) / B.12: sigma_min(B_S U) >= (1 - rho_D)(1 - gamma) when
// ||(P_j - I) Pi_U||_op <= gamma for every near j.
double b11_near_gain_lower(double rho, double gamma);

}  // namespace routelab::theory
