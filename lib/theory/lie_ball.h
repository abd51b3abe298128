// Closed forms for Lie-ball steps (docs/theory.md#lie-ball and the
// sampler in #step-laws): M = exp(X), X = sum x_pq E_pq with x uniform on the
// ball |x| < r in R^{d(d-1)/2}, or with the smooth bump density
// exp(1 - 1/(1 - |x|^2/r^2)) on it. Both laws are Ad-invariant, so E M is a
// scalar times I; the scalar has a closed form only for the uniform ball at
// d = 2 (an interval of angles) and d = 3 (below).
#pragma once

namespace routelab::theory {

// Lie-ball, SO(3), uniform ball: E cos theta = 3 [(r^2 - 2) sin r + 2 r cos r] / r^3,
// theta = |x| the rotation angle.
double lieball_so3_uniform_mean_cos(double r);
// Lie-ball, SO(3), uniform ball: E M = beta I with beta = (1 + 2 E cos theta)/3.
double lieball_so3_uniform_mean_scalar(double r);
// Lie-ball, SO(2): x ~ U[-r, r], E M = (sin r / r) I.
double lieball_so2_uniform_mean_scalar(double r);

// S10: acceptance rate of the bump by rejection from the uniform ball in
// R^n: E[exp(1 - 1/(1 - U^{2/n}))] = int_0^1 n t^{n-1} e^{1 - 1/(1 - t^2)} dt.
// Falls like e^{1 - sqrt(2(n-1))}: 0.12 at n = 6.
double lieball_bump_acceptance(int n);

}  // namespace routelab::theory
