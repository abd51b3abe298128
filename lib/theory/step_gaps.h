// Closed-form first moments E[M] and spectral gaps beta = ||E M||_op of the
// step laws (docs/theory.md#example-1 to #example-5 and
// #heat-kernel). One
// function per result; the comment names it.
#pragma once

#include <vector>

#include <Eigen/Dense>

namespace routelab::theory {

// Example 1: E[R(psi)] = (sin a / a) R(omega) for psi = omega + U[-a, a];
// this returns sin(m a)/(m a), the m-th harmonic (signed).
double so2_uniform_harmonic(double a, int m = 1);

// Example 2: E[H] = I - 2 Sigma_nu; beta = max_j |1 - 2 mu_j(Sigma_nu)|.
Eigen::MatrixXd householder_mean(const Eigen::VectorXd& sigma_nu_diagonal);
// Example 2, uniform normals: beta = |1 - 2/d|.
double householder_uniform_gap(int d);

// Example 3: E[M] = (1 - 2(1 - sin a/a)/d) I for a uniform Givens plane.
double givens_mean_scalar(int d, double a);

// Example 4: E[M] = ((2 cos theta + 1)/3) I_3 per block.
double axis3_mean_scalar(double theta);

// Example 5: beta = max_j |sin(a lambda_j)/(a lambda_j)|.
double skewexp_gap(double a, const std::vector<double>& lambdas);

// sin(x)/x with the removable singularity filled in.
double sinc(double x);

}  // namespace routelab::theory
