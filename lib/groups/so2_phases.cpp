#include "groups/so2_phases.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace routelab {

// Steps per batch: B * kSteps uniforms and phases stay in L1/L2.
constexpr int kSteps = 64;

void so2_cos_walk(const So2Blocks& law, Stream& s, int n, const double* weight, double* theta, double* S) {
  const int B = law.blocks();
  const double omega = law.omega();
  // So2Blocks::draw computes omega + s.uniform(-a, a) = omega + (lo + (hi - lo) u);
  // the same expression here gives the same increment.
  std::vector<double> lo(B), width(B), u(std::size_t(kSteps) * B), th(std::size_t(kSteps) * B);
  // Adding an increment of size |omega| + a to a phase in [-pi, pi] would
  // round at ulp(|omega|) every step; when it can exceed pi, wrap it first.
  bool big = false;
  for (int b = 0; b < B; ++b) big |= std::abs(omega) + law.half_widths()[b] > M_PI;
  for (int b = 0; b < B; ++b) {
    const double a = law.half_widths()[b];
    lo[b] = -a;
    width[b] = a - (-a);
    theta[b] = wrap_phase(theta[b]);
  }
  for (int t0 = 0; t0 < n; t0 += kSteps) {
    const int m = std::min(kSteps, n - t0);
    s.uniforms(u.data(), std::size_t(m) * B);
    for (int t = 0; t < m; ++t) {
      const double* ut = u.data() + std::size_t(t) * B;
      double* tht = th.data() + std::size_t(t) * B;
      if (big) {
        for (int b = 0; b < B; ++b) {
          const double psi = wrap_phase(omega + (lo[b] + width[b] * ut[b]));
          theta[b] = wrap_phase(theta[b] + psi);
          tht[b] = theta[b];
        }
      } else {
        for (int b = 0; b < B; ++b) {
          const double psi = omega + (lo[b] + width[b] * ut[b]);
          theta[b] = wrap_phase(theta[b] + psi);
          tht[b] = theta[b];
        }
      }
    }
    cos_weighted_rows(th.data(), m, B, weight, S + t0);
  }
}

void so2_mean_cos_walk(const So2Blocks& law, Stream& s, int n, double* S) {
  const int B = law.blocks();
  std::vector<double> w(B, 1.0 / B), theta(B, 0.0);
  so2_cos_walk(law, s, n, w.data(), theta.data(), S);
}

}  // namespace routelab
