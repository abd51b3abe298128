// One Householder step H_t = I - beta_t w_t w_t^T from its projections
// (nn/householder.h), written once for the CPU (nn/householder.cpp) and the
// GPU (cuda/householder.cu): the direction w = z / max(|z|, floor) of one
// head's slice of z, and beta = 2 sigmoid(logit), or 2 (a reflection) when
// there is no logit.
#pragma once

#include <cmath>

#include "base/host_device.h"

namespace routelab::nn {

// A zero z would have no direction: its norm is floored.
constexpr double kHouseholderMinNorm = 1e-12;

namespace householder_math {
ROUTELAB_HOST_DEVICE inline float sqrt_of(float x) { return ::sqrtf(x); }
ROUTELAB_HOST_DEVICE inline double sqrt_of(double x) { return ::sqrt(x); }
ROUTELAB_HOST_DEVICE inline float exp_of(float x) { return ::expf(x); }
ROUTELAB_HOST_DEVICE inline double exp_of(double x) { return ::exp(x); }
template <class R>
ROUTELAB_HOST_DEVICE inline R dot(const R* a, const R* b, int n) {
  R acc = 0;
  for (int c = 0; c < n; ++c) acc += a[c] * b[c];
  return acc;
}
}  // namespace householder_math

// w (hd) and *beta from z (hd) and, for PaTH's beta, *beta_logit (else null).
template <class R>
ROUTELAB_HOST_DEVICE inline void householder_step_forward(R* w, R* beta, const R* z, const R* beta_logit, int hd) {
  using namespace householder_math;
  const R norm = sqrt_of(dot(z, z, hd));
  const R inv = R(1) / (norm < R(kHouseholderMinNorm) ? R(kHouseholderMinNorm) : norm);  // std::max's order
  for (int c = 0; c < hd; ++c) w[c] = z[c] * inv;
  *beta = beta_logit ? R(2) / (R(1) + exp_of(-*beta_logit)) : R(2);
}

// dz (hd) from dw (hd), and *dbeta_logit from dbeta when not null: written,
// not added.
template <class R>
ROUTELAB_HOST_DEVICE inline void householder_step_backward(R* dz, R* dbeta_logit, const R* dw, R dbeta, const R* z,
                                                           R beta, int hd) {
  using namespace householder_math;
  // w = z / max(|z|, floor): dz = (dw - w (w . dw)) / |z| above the floor.
  const R norm = sqrt_of(dot(z, z, hd));
  const R inv = R(1) / (norm < R(kHouseholderMinNorm) ? R(kHouseholderMinNorm) : norm);  // std::max's order
  const R wg = norm < R(kHouseholderMinNorm) ? R(0) : dot(z, dw, hd) * inv;
  for (int c = 0; c < hd; ++c) dz[c] = (dw[c] - z[c] * inv * wg) * inv;
  // beta = 2 sigmoid(x): d beta / dx = beta (1 - beta / 2).
  if (dbeta_logit) *dbeta_logit = dbeta * beta * (R(1) - beta / R(2));
}

}  // namespace routelab::nn
