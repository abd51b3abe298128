// The value side of the aggregation model restricted to the near set S
// (paper §4, §6; docs/theory.md#proposition-4, #b11, #b12): the near-signal
// coefficient B_S = sum_{j in S} alpha_j P_{j->i}, the part of the output
// c_i = sum_j alpha_j P_{j->i} v_j that carries the near values.
#pragma once

#include <vector>

#include <Eigen/Dense>

namespace routelab {

// B_S = sum_j alpha[j] P[j]; alpha holds the near weights (their sum is 1 - rho_D).
Eigen::MatrixXd near_signal_coefficient(const std::vector<double>& alpha, const std::vector<Eigen::MatrixXd>& P);

// gamma_j = ||(P - I) Pi_U||_op = ||(P - I) U||_op for U with orthonormal
// columns: how far a near transport moves the signal subspace (B.11).
double transport_misalignment(const Eigen::MatrixXd& P, const Eigen::MatrixXd& U);

// sigma_min(B_S U): the near-signal gain on the subspace of U (B.11, B.12).
double near_gain(const Eigen::MatrixXd& B, const Eigen::MatrixXd& U);

}  // namespace routelab
