// Angles shared by the step laws, the theory and the transformer, so that
// each exists once: RoPE's frequency table and the wraps to [-pi, pi] that
// come before sin and cos (a huge argument loses digits there). There are
// three wraps because three streams of results were first computed with
// them and their bytes are kept: wrap_angle (deterministic angles of the
// theory and the value-side model), wrap_remainder (the transformer, host and
// device alike), wrap_phase (the SO(2) phase walks on host and device,
// FMA-exact). Each names below the results whose bytes depend on it: a wrap
// folded into another moves the last digits of those, which must then be
// regenerated.
#pragma once

#include <cmath>
#include <vector>

#include "base/host_device.h"

namespace routelab {

// RoPE's frequencies f_b = base^(-2b/d), b < d/2: the rotary schemes' angle
// frequencies and the per-block half-widths of the paper's random variant
// (docs/theory.md#random-variant).
std::vector<double> rope_frequencies(int d, double base);

// An angle wrapped to [-pi, pi) through fmod, in double.
// Results that depend on its bytes: theory::so2_mean_score's cos(n omega)
// (the theory column of score-tail's SO(2)-block mean-score rows, Theorem 2 /
// Theorem 1), and RoPE's position-only transport in value-transport --part
// coherence (B.8: block_structure_max_deviation, max_b_q_position_only,
// rho_D_qk_only, and mean_max_t_accumulated's comparison, as `routelab sim`
// and the verify check "position-only coherence" write them).
// tests/test_so2_phases.cpp uses it as the slow reference of wrap_phase.
double wrap_angle(double theta);

// remainder(x, 2 pi): exact, in [-pi, pi]. The transformer's angles on the
// host and the device both wrap with this one function, so a running sum
// that agrees on both sides wraps to the same double (glibc and CUDA both
// compute remainder exactly).
// Results that depend on its bytes: every model of a rotary scheme (rope,
// rope_qkv, random, learned and projected angles, the hybrids; nn/scheme.cpp
// and cuda/angles.cu): its training, so every checkpoint and export, and
// every eval, passkey and probe CSV of such a run, among them the committed
// runs' CSVs under paper-figures/ (extrapolation, learned angles, far-mass
// control, passkey, probe). Changing it means retraining them.
ROUTELAB_HOST_DEVICE inline double wrap_remainder(double x) { return remainder(x, 2.0 * 3.14159265358979323846); }

// Reduce x to about [-pi, pi] as x - k 2pi, k = round(x / 2pi), with 2pi
// split into two doubles (hi + lo carries about 106 bits of it) and each part
// subtracted by a fused multiply-add, whose single rounding makes x - k hi
// exact to half an ulp of pi. The result is within a few ulps of pi of the
// true remainder for |x| up to about 2^40 (past that, wrap_angle).
// (so2_phases.cpp's eight-lane copy uses the same constants.)
// Results that depend on its bytes: the SO(2) phase walks of score-tail
// (--family so2, the matched score S_n of Theorem 2 and Corollary B.5) and
// random-variant (groups/so2_phases.cpp, on the GPU cuda/walks.cu), the
// value phases of every value-transport part (B.8, B.9, Theorems 6 and 7,
// D.4) and adaptive-selection's Theta_k (D.3): their rows, their verify rows
// and the figures' CSVs built from them.
constexpr double kInvTwoPi = 0.15915494309189535;
constexpr double kTwoPiHi = 6.283185307179586;       // 2pi rounded to double
constexpr double kTwoPiLo = 2.4492935982947064e-16;  // 2pi - kTwoPiHi
ROUTELAB_HOST_DEVICE inline double wrap_phase(double x) {
  const double k = ::nearbyint(x * kInvTwoPi);
  return ::fma(-k, kTwoPiLo, ::fma(-k, kTwoPiHi, x));
}

}  // namespace routelab
