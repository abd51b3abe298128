// Angles shared by the step laws, the theory and the transformer, so that
// each exists once: RoPE's frequency table and the wraps to [-pi, pi] that
// come before sin and cos (a huge argument loses digits there).
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

}  // namespace routelab
