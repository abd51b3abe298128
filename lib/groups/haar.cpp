#include "groups/haar.h"

#include <fmt/core.h>

#include "groups/family.h"
#include "theory/trace_moments.h"

namespace routelab {

Mat haar_sample(Stream& s, int d, bool special) {
  Mat Q(d, d);
  s.normals(Q.data(), std::size_t(d) * d);
  // Gram-Schmidt on the Gaussian columns, each projection done twice (CGS2:
  // "twice is enough" keeps Q orthogonal to rounding). Z = Q R with
  // R_jj = |v_j| > 0, which is exactly Mezzadri's sign-fixed QR factor.
  Vec r(d);
  for (int j = 0; j < d; ++j) {
    auto v = Q.col(j);
    for (int pass = 0; pass < 2 && j > 0; ++pass) {
      r.head(j).noalias() = Q.leftCols(j).transpose() * v;
      v.noalias() -= Q.leftCols(j) * r.head(j);
    }
    v /= v.norm();
  }
  if (special && Eigen::PartialPivLU<Mat>(Q).determinant() < 0) Q.col(0) = -Q.col(0);
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

std::optional<StepKernel> Haar::kernel() const {
  return StepKernel{.family = KernelFamily::haar, .d = dim(), .special = special_};
}

std::optional<Mat> Haar::second_moment() const {
  const int d = dim();
  if (special_ && d == 2) {  // SO(2) is abelian: the antisymmetric part is invariant
    return Mat(theory::haar_second_moment(2) + (Mat::Identity(4, 4) - theory::commutation_matrix(2)) / 2.0);
  }
  return theory::haar_second_moment(d);
}

std::unique_ptr<StepLaw> make_haar(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  const std::string& g = p.at("group");
  if (g != "o" && g != "so") throw BadInput("group", fmt::format("unknown group '{}'; accepts o, so", g));
  return std::make_unique<Haar>(d, g == "so");
}

}  // namespace routelab
