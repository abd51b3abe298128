// Score-gap tails and the closed forms they are checked against: Theorem 2
// (B.3, SO(2) blocks by Hoeffding), Theorem 5 (B.5, orthogonal walks by Levy
// concentration; its exact Haar law is theory/haar_score_law.h), Corollary B.5
// (score gap => far-mass bound through Proposition 1), Remark 3 (coordinate
// normals: the pre-mixing law that breaks the Levy tail) and the paper's
// "random" experimental variant (docs/theory.md#random-variant).
#pragma once

#include <vector>

namespace routelab::theory {

// Theorem 2(b): Pr[S - E S >= t] <= exp(-B t^2 / 2) = exp(-d t^2 / 4) for the
// mean S of B independent [-1, 1] block cosines; 1 for t <= 0.
double hoeffding_score_tail(int blocks, double t);

// Theorem 2 (mean display) / Theorem 1: E S_n = (1/B) sum_b cos(n omega)
// (sin a_b / a_b)^n for angle increments omega + U[-a_b, a_b].
double so2_mean_score(const std::vector<double>& half_widths, double omega, long long n);

// Theorem 5(c) / Theorem 2(c): the union bound over M far routes, M times the
// one-route bound (not capped at 1, so a vacuous bound shows as >= 1).
double union_tail_bound(long long routes, double one_route_bound);


// Remark 3: coordinate normals keep P_n diagonal, e_1^T P_n e_1 = +-1 with
// Pr[+1] = (1 + (1 - 2/d)^n)/2, so Pr[e_1^T P_n e_1 >= s] is that for s in (-1, 1].
double coordinate_householder_tail(int d, long long n, double s);

// Theorem 5 before mixing (n = 1): one uniform Householder step,
// e_1^T H e_1 = 1 - 2 v_1^2 with v_1^2 ~ Beta(1/2, (d-1)/2), so
// Pr[e_1^T H e_1 >= s] = I_{(1-s)/2}(1/2, (d-1)/2).
double householder_one_step_tail(int d, double s);

// Note after Example 1 (the "random" variant): block b's half-width is
// f_b = base^(-2b/d) and its gap beta_b = sin f_b / f_b; E S_n = (1/B) sum_b
// beta_b^n is so2_mean_score at omega = 0. This returns the beta_b.
std::vector<double> random_variant_gaps(int d, double base);

}  // namespace routelab::theory
