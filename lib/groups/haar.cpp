#include "groups/haar.h"

#include <fmt/core.h>

#include "groups/family.h"
#include "theory/trace_moments.h"

namespace routelab {

Mat haar_sample(Stream& s, int d, bool special) {
  Mat Z(d, d);
  s.normals(Z.data(), std::size_t(d) * d);
  Eigen::HouseholderQR<Mat> qr(Z);
  Mat Q = qr.householderQ();
  const Mat& R = qr.matrixQR();
  for (int j = 0; j < d; ++j)
    if (R(j, j) < 0) Q.col(j) = -Q.col(j);
  // Eigen may skip trivial reflections, so (-1)^d is not Q's determinant.
  if (special && Q.determinant() < 0) Q.col(0) = -Q.col(0);
  return Q;
}

void Haar::draw(Stream& s, double* step) const {
  Mat Q = haar_sample(s, dim(), special_);
  std::copy(Q.data(), Q.data() + Q.size(), step);
}

void Haar::apply(const double* step, double* x) const {
  Eigen::Map<const Mat> U(step, dim(), dim());
  Eigen::Map<Vec> v(x, dim());
  v = (U * v).eval();
}

void Haar::apply_matrix(const double* step, Mat& P) const {
  Eigen::Map<const Mat> U(step, dim(), dim());
  P = (U * P).eval();
}

std::optional<Mat> Haar::second_moment() const {
  const int d = dim();
  if (special_ && d == 2) {  // SO(2) is abelian: the antisymmetric part is invariant
    return Mat(theory::haar_second_moment(2) + (Mat::Identity(4, 4) - theory::commutation_matrix(2)) / 2.0);
  }
  return theory::haar_second_moment(d);
}

std::unique_ptr<StepLaw> make_haar(const Params& p) {
  const int d = int(require_int(p, "d", 2, "an integer d >= 2"));
  const std::string& g = p.at("group");
  if (g != "o" && g != "so") throw BadInput("group", fmt::format("unknown group '{}'; accepts o, so", g));
  return std::make_unique<Haar>(d, g == "so");
}

}  // namespace routelab
