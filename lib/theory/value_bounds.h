// Closed forms and bounds of the value side (docs/theory.md#b8 to #d4):
// the position-only Fourier coefficient, the shared-background covariance,
// the prefix-product radius and the separate- and same-path bounds on the far
// transport t_b, and D.3's Chernoff tail. One function per result.
#pragma once

#include <Eigen/Dense>

namespace routelab::theory {

// B.8: q_{b,L} = |sum_{k=w}^{w+M-1} alpha_k e^{-i omega k}| for far weights
// alpha_k = rho e^{-g (k - w)} / sum_j e^{-g j} (g = 0: uniform, rho / M):
// rho |sum_j (e^{-g - i omega})^j| / sum_j e^{-g j}, summed as geometric
// series; for g = 0 it is the Dirichlet kernel rho |sin(M omega/2)| / (M |sin(omega/2)|).
double position_only_coherence(double omega, long long M, double rho, double g = 0.0);

// B.9 (36): Delta_D = Cov(e | environment) = c0^2 T_D T_D^T + sigma_w^2 a_D^2 I_d.
Eigen::MatrixXd shared_background_covariance(const Eigen::MatrixXd& T, double c0, double sigma_w, double a);

// B.9: the prefix-product radius R_pp(mu, rho, a; eta) = mu rho + (4 a / (1 - beta)) sqrt(log(4 B / eta)).
double prefix_product_radius(double mu, double rho, double a, double beta, int blocks, double eta);

// Theorem 7 (D.2): with conditional probability >= 1 - eta, for all b,
// |t_b| <= beta^w rho + (4 a / (1 - beta)) sqrt(log(4 B / eta)) = R_pp(beta^w, rho, a; eta).
double separate_path_bound(double beta, long long w, double rho, double a, int blocks, double eta);

// Theorem 7, uniform far weights (a = rho / sqrt(M)): the bound is below rho
// (not vacuous) iff M > (4 sqrt(log(4B/eta)) / ((1 - beta)(1 - beta^w)))^2.
double separate_path_min_far_count(double beta, long long w, int blocks, double eta);

// Theorem 6 (B.10): R_same = e^{2 lambda / B} R_pp(beta^w, rho, a; eta) + (e^{2 lambda / B} - 1) rho.
double same_path_bound(double lambda, int blocks, double beta, long long w, double rho, double a, double eta);

// D.4: ||T_D|| <= R gives Delta_D <= (c0^2 R^2 + sigma_w^2 a^2) I; this is that eigenvalue bound.
double far_covariance_bound(double R, double c0, double sigma_w, double a);

// D.3: N ~ Bin(M, p) has Pr[N < M p / 2] <= exp(-M p / 8) (Chernoff, delta = 1/2).
double chernoff_half_mean_tail(long long M, double p);

}  // namespace routelab::theory
