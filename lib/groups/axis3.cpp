#include "groups/axis3.h"

#include <cmath>

#include "groups/family.h"
#include "theory/step_gaps.h"

namespace routelab {

void Axis3::draw(Stream& s, double* step) const { axis3_draw(s, dim(), step); }

void Axis3::apply(const double* step, double* x) const { axis3_apply(dim(), theta_, step, x); }

std::optional<StepKernel> Axis3::kernel() const {
  return StepKernel{.family = KernelFamily::axis3, .d = dim(), .theta = theta_};
}

// Example 4
std::optional<Mat> Axis3::mean() const {
  return Mat(theory::axis3_mean_scalar(theta_) * Mat::Identity(dim(), dim()));
}

std::unique_ptr<StepLaw> make_axis3(const Params& p) {
  const long long d = require_int(p, "d", 3, kMaxDimension, "a multiple of 3 in [3, 4096]");
  if (d % 3 != 0) throw BadInput("d", std::to_string(d) + " is not a multiple of 3; axis3 accepts d = 3B, B >= 1");
  const double theta = require_double(p, "theta", 0.0, M_PI, true, "an angle in (0, pi)");
  if (theta == M_PI) throw BadInput("theta", "pi is not accepted; axis3 accepts an angle in (0, pi)");
  return std::make_unique<Axis3>(int(d), theta);
}

}  // namespace routelab
