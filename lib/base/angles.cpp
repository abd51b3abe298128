#include "base/angles.h"

namespace routelab {

std::vector<double> rope_frequencies(int d, double base) {
  std::vector<double> f(d / 2);
  for (int b = 0; b < d / 2; ++b) f[b] = std::pow(base, -2.0 * b / d);
  return f;
}

double wrap_angle(double theta) {
  constexpr double two_pi = 2.0 * M_PI;
  double w = std::fmod(theta + M_PI, two_pi);
  if (w < 0) w += two_pi;
  return w - M_PI;
}

}  // namespace routelab
