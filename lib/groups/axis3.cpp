#include "groups/axis3.h"

#include <cmath>

#include "groups/family.h"
#include "theory/step_gaps.h"

namespace routelab {

void rodrigues_rotate(const double* n, double c, double s, double* x) {
  const double dot = n[0] * x[0] + n[1] * x[1] + n[2] * x[2];
  const double cx = n[1] * x[2] - n[2] * x[1];
  const double cy = n[2] * x[0] - n[0] * x[2];
  const double cz = n[0] * x[1] - n[1] * x[0];
  const double k = (1.0 - c) * dot;
  x[0] = c * x[0] + k * n[0] + s * cx;
  x[1] = c * x[1] + k * n[1] + s * cy;
  x[2] = c * x[2] + k * n[2] + s * cz;
}

void Axis3::draw(Stream& s, double* step) const {
  for (int b = 0; b < dim() / 3; ++b) {
    double* n = step + 3 * b;
    s.normals(n, 3);
    const double inv = 1.0 / std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int i = 0; i < 3; ++i) n[i] *= inv;
  }
}

void Axis3::apply(const double* step, double* x) const {
  const double c = std::cos(theta_), s = std::sin(theta_);
  for (int b = 0; b < dim() / 3; ++b) rodrigues_rotate(step + 3 * b, c, s, x + 3 * b);
}

// Example 4
std::optional<Mat> Axis3::mean() const {
  return Mat(theory::axis3_mean_scalar(theta_) * Mat::Identity(dim(), dim()));
}

std::unique_ptr<StepLaw> make_axis3(const Params& p) {
  const long long d = require_int(p, "d", 3, "a multiple of 3, d >= 3");
  if (d % 3 != 0) throw BadInput("d", std::to_string(d) + " is not a multiple of 3; axis3 accepts d = 3B, B >= 1");
  const double theta = require_double(p, "theta", 0.0, M_PI, true, "an angle in (0, pi)");
  if (theta == M_PI) throw BadInput("theta", "pi is not accepted; axis3 accepts an angle in (0, pi)");
  return std::make_unique<Axis3>(int(d), theta);
}

}  // namespace routelab
