// Closed forms for Matrix-Fisher steps (docs/theory.md#matrix-fisher,
// the sampler in #step-laws): Haar density h_A(Q) = exp(tr(A^T Q))/c(A)
// on SO(d), c(A) = E_Haar exp(tr A^T Q).
#pragma once

#include <optional>

#include <Eigen/Dense>

namespace routelab::theory {

// I_nu(x) e^{-|x|}, nu = 0 or 1, finite for every x (Boost below |x| = 700,
// the Hankel asymptotic series above).
double bessel_i_scaled(int nu, double x);

// Matrix-Fisher, SO(2): tr(A^T R(theta)) = kappa_vm cos(theta - theta_0) with
// kappa_vm = ((a11 + a22)^2 + (a21 - a12)^2)^{1/2}; kappa_vm = 2 kappa for A = kappa I.
// Matrix-Fisher, SO(2): E Q = (I_1/I_0)(kappa_vm) R(theta_0), so beta = I_1(kappa_vm)/I_0(kappa_vm).
double fisher_so2_gap(double kappa_vm);
// The von Mises(0, kappa_vm) CDF on [-pi, pi], by quadrature of its density.
double von_mises_cdf(double theta, double kappa_vm);

// Matrix-Fisher, SO(3) (item 5): c(S) = int_{-1}^{1} 1/2 I_0((s1-s2)(1-u)/2) I_0((s1+s2)(1+u)/2) e^{s3 u} du,
// S the signed proper singular values. The scaled form c(S) e^{-(s1+s2+s3)} is
// computed (and is the rejection acceptance rate); the log avoids overflow.
double fisher_so3_log_normaliser(double s1, double s2, double s3);
double fisher_so3_normaliser(double s1, double s2, double s3);
// Matrix-Fisher, SO(3) (item 1): E Q = U diag(d log c / d s_i) V^T; this is the
// diagonal, by central differences with step 1e-5.
Eigen::Vector3d fisher_so3_mean_diagonal(const Eigen::Vector3d& s);

// Matrix-Fisher (item 2): beta <= 1 - exp(-2 ||A||_*).
double fisher_mixture_gap_bound(double nuclear_norm);

// S9: rejection from Haar on SO(d) with A = kappa I (m_A = d kappa) accepts at
// rate c(A) e^{-d kappa}. Exact for d = 2 (I_0(2 kappa) e^{-2 kappa}) and d = 3
// (the c(S) integral); no closed form for d >= 4.
std::optional<double> fisher_rejection_acceptance(int d, double kappa);
// S9: a rigorous lower bound on that rate for any d >= 2:
// e^{-d kappa} sum_{j <= d} (kappa^2/2)^j / j!, from e^x >= its odd-degree
// Taylor polynomials, E_Haar (tr Q)^odd >= 0 and E_Haar (tr Q)^{2j} >= (2j-1)!!
// for j <= d (the pairings are independent O(d)-invariants of V^{(x)2j}).
double fisher_rejection_acceptance_lower_bound(int d, double kappa);

}  // namespace routelab::theory
