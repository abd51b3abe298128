#include "theory/lie_ball.h"

#include <cmath>

#include <boost/math/quadrature/tanh_sinh.hpp>

#include "theory/step_gaps.h"

namespace routelab::theory {

// Lie-ball, SO(3): the radius of a uniform point of the 3-ball has density
// 3 t^2 / r^3 on [0, r], and int_0^r t^2 cos t dt = (r^2 - 2) sin r + 2 r cos r.
double lieball_so3_uniform_mean_cos(double r) {
  return 3.0 * ((r * r - 2.0) * std::sin(r) + 2.0 * r * std::cos(r)) / (r * r * r);
}

// Lie-ball, SO(3): tr exp X = 1 + 2 cos theta
double lieball_so3_uniform_mean_scalar(double r) { return (1.0 + 2.0 * lieball_so3_uniform_mean_cos(r)) / 3.0; }

// Lie-ball, SO(2)
double lieball_so2_uniform_mean_scalar(double r) { return sinc(r); }

// S10
double lieball_bump_acceptance(int n) {
  auto f = [n](double t) {
    const double q = 1.0 - t * t;
    return q <= 0 ? 0.0 : n * std::pow(t, n - 1) * std::exp(1.0 - 1.0 / q);
  };
  boost::math::quadrature::tanh_sinh<double> integrator;
  return integrator.integrate(f, 0.0, 1.0, 1e-13);
}

}  // namespace routelab::theory
