// Closed forms for the heat kernel q_tau on SO(d) (docs/theory.md#heat-kernel
// and the heat sampler in #step-laws) and for the geodesic random walk that samples
// it when d >= 4. Normalisation: Brownian motion with generator Laplacian/2
// for the metric <X, Y> = tr(X^T Y)/2, so on SO(3) the geodesic distance is
// the rotation angle.
#pragma once

#include <Eigen/Dense>

namespace routelab::theory {

// Heat kernel on SO(d): E[G_tau] = a_tau I, a_tau = exp(-(d-1) tau / 2).
double heat_kernel_mean_scalar(int d, double tau);

// Heat kernel on SO(d): E[(tr G_tau)^2] = 1 + (d(d+1)/2 - 1) e^{-d tau} + (d(d-1)/2) e^{-(d-2) tau}.
double heat_kernel_trace_square(int d, double tau);

// Heat kernel on SO(d): E[G (x) G] = Pi_1 + e^{-d tau} Pi_Sym0 + e^{-(d-2) tau} Pi_Lambda2
// (d^2 x d^2, acting on column-major vec X as vec(G X G^T)).
Eigen::MatrixXd heat_kernel_second_moment(int d, double tau);

// The walk G <- G exp(sqrt(h) sum_{p<q} Z_pq E_pq) takes n = ceil(tau / heat_h)
// steps of h = tau / n, so it ends exactly at time tau.
struct HeatWalkSteps {
  int n;
  double h;
};
HeatWalkSteps heat_walk_steps(double tau, double heat_h);

// S8: log c(h) for one walk step, E[exp(sqrt(h) X)] = c(h) I: exact for
// d = 2, 3, the series through h^3 for d >= 4.
double heat_walk_step_log_mean(int d, double h);
// S8: the series -(d-1)h/2 - (d-1)(d-2)h^2/24 - (d-1)(d-2)^2 h^3/144 alone.
double heat_walk_step_log_mean_series(int d, double h);
// S8: the walk's own E[G] = c(h)^n I (the scalar), n and h from heat_walk_steps.
double heat_walk_mean_scalar(int d, double tau, double heat_h);
// S8: the walk's own E[G (x) G], to O(tau h^2) (see the .cpp for the constants).
Eigen::MatrixXd heat_walk_second_moment(int d, double tau, double heat_h);

// The projectors of V (x) V, V = R^d, onto its SO(d)-isotypic parts
// (trivial, traceless symmetric, antisymmetric), as d^2 x d^2 matrices.
struct TensorSquareProjectors {
  Eigen::MatrixXd trivial, sym0, alt;
};
TensorSquareProjectors tensor_square_projectors(int d);

// SO(3): the rotation angle theta in [0, pi] of G_tau has density
// p_tau(theta) = q_tau(theta) (1 - cos theta) / pi, with the character series
// q_tau(theta) = sum_l (2l+1) e^{-l(l+1) tau/2} sin((2l+1) theta/2) / sin(theta/2).
// Its CDF integrates term by term: int_0^theta 2 sin(t/2) sin((2l+1)t/2) dt
// = sin(l theta)/l - sin((l+1) theta)/(l+1) (theta - sin theta for l = 0).
double heat_kernel_so3_angle_density(double tau, double theta);
double heat_kernel_so3_angle_cdf(double tau, double theta);
// Number of series terms kept: the last has (2l+1)^2 e^{-l(l+1) tau/2} < 1e-17.
int heat_kernel_so3_terms(double tau);

// Heat kernel on SO(3): m_tau = min q_tau = q_tau(pi) = sum_l (2l+1) (-1)^l e^{-l(l+1) tau/2}
// (Example 6: rho <= 1 - m_tau).
double heat_kernel_so3_min_density(double tau);

}  // namespace routelab::theory
