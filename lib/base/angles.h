// Angles shared by the step laws, the theory and the transformer, so that
// each exists once: RoPE's frequency table and the wraps to [-pi, pi] that
// come before sin and cos (a huge argument loses digits there). There are
// three wraps because three streams of results were first computed with
// them and their bytes are kept: wrap_angle (the step laws' accumulated
// angles, theory), wrap_remainder (the transformer, host and device alike),
// wrap_phase (the SO(2) phase walks on host and device, FMA-exact).
#pragma once

#include <cmath>
#include <vector>

#include "base/host_device.h"

namespace routelab {

// RoPE's frequencies f_b = base^(-2b/d), b < d/2: the rotary schemes' angle
// frequencies and the per-block half-widths of the paper's random variant
// (docs/theory.md#random-variant).
std::vector<double> rope_frequencies(int d, double base);

// An accumulated step-law angle wrapped to [-pi, pi) through fmod, in double.
double wrap_angle(double theta);

// remainder(x, 2 pi): exact, in [-pi, pi]. The transformer's angles on the
// host and the device both wrap with this one function, so a running sum
// that agrees on both sides wraps to the same double (glibc and CUDA both
// compute remainder exactly).
ROUTELAB_HOST_DEVICE inline double wrap_remainder(double x) { return remainder(x, 2.0 * 3.14159265358979323846); }

// Reduce x to about [-pi, pi] as x - k 2pi, k = round(x / 2pi), with 2pi
// split into two doubles (hi + lo carries about 106 bits of it) and each part
// subtracted by a fused multiply-add, whose single rounding makes x - k hi
// exact to half an ulp of pi. The result is within a few ulps of pi of the
// true remainder for |x| up to about 2^40 (past that, wrap_angle).
// (so2_phases.cpp's eight-lane copy uses the same constants.)
constexpr double kInvTwoPi = 0.15915494309189535;
constexpr double kTwoPiHi = 6.283185307179586;       // 2pi rounded to double
constexpr double kTwoPiLo = 2.4492935982947064e-16;  // 2pi - kTwoPiHi
ROUTELAB_HOST_DEVICE inline double wrap_phase(double x) {
  const double k = ::nearbyint(x * kInvTwoPi);
  return ::fma(-k, kTwoPiLo, ::fma(-k, kTwoPiHi, x));
}

}  // namespace routelab
