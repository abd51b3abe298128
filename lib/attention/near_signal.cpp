#include "attention/near_signal.h"

namespace routelab {

Eigen::MatrixXd near_signal_coefficient(const std::vector<double>& alpha, const std::vector<Eigen::MatrixXd>& P) {
  Eigen::MatrixXd B = Eigen::MatrixXd::Zero(P.front().rows(), P.front().cols());
  for (std::size_t j = 0; j < P.size(); ++j) B += alpha[j] * P[j];
  return B;
}

double transport_misalignment(const Eigen::MatrixXd& P, const Eigen::MatrixXd& U) {
  const Eigen::MatrixXd moved = P * U - U;
  return Eigen::JacobiSVD<Eigen::MatrixXd>(moved).singularValues()(0);
}

double near_gain(const Eigen::MatrixXd& B, const Eigen::MatrixXd& U) {
  const Eigen::MatrixXd BU = B * U;
  const auto s = Eigen::JacobiSVD<Eigen::MatrixXd>(BU).singularValues();
  return s(s.size() - 1);
}

}  // namespace routelab
