#include "theory/trace_moments.h"

#include <cmath>

namespace routelab::theory {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Theorem 3 (B.5)
MatrixXd first_moment_power(const MatrixXd& mean, int n) {
  MatrixXd out = MatrixXd::Identity(mean.rows(), mean.cols());
  for (int i = 0; i < n; ++i) out = mean * out;
  return out;
}

TraceMoments trace_moments_from_operators(const MatrixXd& mean, const MatrixXd& second, int n) {
  return {first_moment_power(mean, n).trace(), first_moment_power(second, n).trace()};
}

MatrixXd commutation_matrix(int d) {
  MatrixXd K = MatrixXd::Zero(d * d, d * d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) K(i + d * j, j + d * i) = 1.0;
  return K;
}

VectorXd vec_identity(int d) {
  VectorXd v = VectorXd::Zero(d * d);
  for (int i = 0; i < d; ++i) v(i + d * i) = 1.0;
  return v;
}

// Proposition 2
MatrixXd householder_uniform_second_moment(int d) {
  const int n = d * d;
  VectorXd vi = vec_identity(d);
  return (1.0 - 4.0 / d) * MatrixXd::Identity(n, n) +
         4.0 * (MatrixXd::Identity(n, n) + commutation_matrix(d) + vi * vi.transpose()) / (d * (d + 2.0));
}

// Proposition 2
TraceMoments householder_uniform_trace_moments(int d, int n) {
  const double first = d * std::pow(1.0 - 2.0 / d, n);
  const double second = 1.0 + (d * (d + 1) / 2.0 - 1.0) * std::pow((d - 2.0) / (d + 2.0), n) +
                        (d * (d - 1) / 2.0) * std::pow((d - 4.0) / d, n);
  return {first, second};
}

// Remark 3
TraceMoments coordinate_householder_trace_moments(int d, int n) {
  return {d * std::pow(1.0 - 2.0 / d, n), d + d * (d - 1.0) * std::pow(1.0 - 4.0 / d, n)};
}

MatrixXd haar_second_moment(int d) {
  VectorXd vi = vec_identity(d);
  return vi * vi.transpose() / double(d);
}

}  // namespace routelab::theory
