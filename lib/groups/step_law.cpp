#include "groups/step_law.h"

#include <Eigen/SVD>

namespace routelab {

void StepLaw::draw_steps(Stream& s, double* steps, int count) const {
  for (int i = 0; i < count; ++i) draw(s, steps + std::size_t(i) * step_size());
}

void StepLaw::apply_matrix(const double* step, Mat& P) const {
  for (Eigen::Index j = 0; j < P.cols(); ++j) apply(step, P.col(j).data());
}

Mat StepLaw::matrix(const double* step) const {
  Mat M = Mat::Identity(d_, d_);
  apply_matrix(step, M);
  return M;
}

std::optional<double> StepLaw::gap() const {
  auto m = mean();
  if (!m) return std::nullopt;
  Eigen::JacobiSVD<Mat> svd(*m);
  return svd.singularValues()(0);
}

double reorthonormalize_if_drifted(Mat& P, double tol) {
  const double drift = (P.transpose() * P - Mat::Identity(P.cols(), P.cols())).cwiseAbs().maxCoeff();
  if (drift > tol) {
    // Nearest orthogonal matrix (polar factor): keeps the determinant's sign.
    Eigen::JacobiSVD<Mat> svd(P, Eigen::ComputeFullU | Eigen::ComputeFullV);
    P = svd.matrixU() * svd.matrixV().transpose();
  }
  return drift;
}

}  // namespace routelab
