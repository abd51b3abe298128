#include "groups/lieball.h"

#include <cmath>
#include <vector>

#include <fmt/core.h>

#include "theory/lie_ball.h"

namespace routelab {

void LieBall::draw(Stream& s, double* step) const {
  // lieball_draw with Eigen's exponential (the GPU's is exp_skew_taylor).
  std::vector<double> x(so_dim(dim()));
  lieball_coords_draw(s, int(x.size()), r_, density_ == BallDensity::bump, x.data());
  Eigen::Map<Mat>(step, dim(), dim()) = exp_skew(skew_from_coords(x.data(), dim()));
}

std::optional<StepKernel> LieBall::kernel() const {
  return StepKernel{
      .family = KernelFamily::lieball, .d = dim(), .radius = r_, .bump = density_ == BallDensity::bump};
}

// Lie-ball: the law is Ad-invariant, so E M = (E tr M / d) I for every d and
// density, but E tr M has a closed form only for the uniform ball at d = 2, 3.
std::optional<Mat> LieBall::mean() const {
  const int d = dim();
  if (density_ != BallDensity::uniform || d > 3) return std::nullopt;
  const double beta =
      d == 2 ? theory::lieball_so2_uniform_mean_scalar(r_) : theory::lieball_so3_uniform_mean_scalar(r_);
  return Mat(beta * Mat::Identity(d, d));
}

std::string LieBall::closed_form_text() const {
  return "E[M] = beta I (Ad-invariant law); uniform ball: beta = sin(r)/r at d = 2, (1 + 2 E cos theta)/3 with "
         "E cos theta = 3[(r^2 - 2) sin r + 2 r cos r]/r^3 at d = 3; no closed form for d >= 4 or the bump";
}

std::unique_ptr<StepLaw> make_lieball(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  const double r = require_double(p, "r", 0.0, M_PI, true, "a radius 0 < r <= pi (exp is a diffeomorphism there)");
  const std::string& name = p.at("density");
  if (name == "uniform") return std::make_unique<LieBall>(d, r, BallDensity::uniform);
  if (name != "bump") throw BadInput("density", fmt::format("unknown density '{}'; accepts uniform, bump", name));
  if (theory::lieball_bump_acceptance(so_dim(d)) < kLieBallMinAcceptance) {
    int dmax = 2;
    while (theory::lieball_bump_acceptance(so_dim(dmax + 1)) >= kLieBallMinAcceptance) ++dmax;
    throw BadInput("density", fmt::format("bump is not accepted at d = {}; it accepts d <= {} (its rejection "
                                          "sampler accepts below {:g} beyond); uniform accepts any d",
                                          d, dmax, kLieBallMinAcceptance));
  }
  return std::make_unique<LieBall>(d, r, BallDensity::bump);
}

}  // namespace routelab
