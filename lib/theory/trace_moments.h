// Closed forms for the first two trace moments of a walk P_n = M_n ... M_1,
// the class functions through which Theorem 4's TV mixing is seen in high d.
// For i.i.d. steps, E tr P_n = tr((E M)^n) (Theorem 3) and
// E (tr P_n)^2 = tr(T^n) with T = E[M (x) M].
#pragma once

#include <Eigen/Dense>

namespace routelab::theory {

struct TraceMoments {
  double first;   // E tr P_n
  double second;  // E (tr P_n)^2
};

// Theorem 3 (B.5): E P_n = (E M)^n.
Eigen::MatrixXd first_moment_power(const Eigen::MatrixXd& mean, int n);
// tr((E M)^n) and tr(T^n).
TraceMoments trace_moments_from_operators(const Eigen::MatrixXd& mean, const Eigen::MatrixXd& second, int n);

// The permutation K with K vec(X) = vec(X^T), and vec(I), for d x d matrices.
Eigen::MatrixXd commutation_matrix(int d);
Eigen::VectorXd vec_identity(int d);

// Proposition 2: E[H (x) H] = (1 - 4/d) I + 4 (I + K + vec I vec I^T) / (d (d+2))
// for uniform normals.
Eigen::MatrixXd householder_uniform_second_moment(int d);
// Proposition 2: E tr P_n = d (1 - 2/d)^n,
// E (tr P_n)^2 = 1 + (d(d+1)/2 - 1) ((d-2)/(d+2))^n + (d(d-1)/2) ((d-4)/d)^n.
TraceMoments householder_uniform_trace_moments(int d, int n);
// Remark 3: coordinate normals +-e_i with probability p_i = 1/d each:
// E tr P_n = d (1 - 2/d)^n, E (tr P_n)^2 = d + d(d-1)(1 - 4/d)^n.
TraceMoments coordinate_householder_trace_moments(int d, int n);
// Haar on O(d) (d >= 2) or SO(d) (d >= 3): E[U (x) U] = vec I vec I^T / d,
// so E tr U = 0 and E (tr U)^2 = 1.
Eigen::MatrixXd haar_second_moment(int d);

}  // namespace routelab::theory
