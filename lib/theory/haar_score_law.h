// Theorem 5's exact Haar law: for U Haar on O(d) or SO(d) and unit q, k,
// x = q^T U k has (x + 1)/2 ~ Beta((d-1)/2, (d-1)/2): E x = 0, Var x = 1/d.
#pragma once

namespace routelab::theory {

// Theorem 5: Pr[q^T U k <= x].
double haar_score_cdf(int d, double x);
// Theorem 5: Pr[q^T U k >= s] (exact Haar tail).
double haar_score_tail(int d, double s);
// Theorem 5(b): the Levy bound 2 exp(-(d-1) s^2 / 2) on that tail.
double levy_tail_bound(int d, double s);
// Mixing window (B.2): w_eps = ceil(log(1/eps)/log(1/beta)), 1 when beta = 0.
long long mixing_window(double beta, double eps);

}  // namespace routelab::theory
