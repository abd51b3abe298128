#include "groups/so2_phases.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace routelab {

// Steps per batch: B * kSteps uniforms and phases stay in L1/L2.
constexpr int kSteps = 64;

namespace {

// The phase recursion, kSteps steps at a time: after each batch of m steps
// starting at step t0, record(t0, m, th) sees the batch's phase rows.
template <class Record>
void phase_batches(const So2Blocks& law, Stream& s, long long n, double* theta, So2WalkScratch& buf,
                   Record&& record) {
  const int B = law.blocks();
  const double omega = law.omega();
  // So2Blocks::draw computes omega + s.uniform(-a, a) = omega + (lo + (hi - lo) u);
  // the same expression here gives the same increment.
  buf.lo.resize(B), buf.width.resize(B), buf.u.resize(std::size_t(kSteps) * B), buf.th.resize(std::size_t(kSteps) * B);
  double *lo = buf.lo.data(), *width = buf.width.data(), *u = buf.u.data(), *th = buf.th.data();
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
  for (long long t0 = 0; t0 < n; t0 += kSteps) {
    const int m = int(std::min<long long>(kSteps, n - t0));
    s.uniforms(u, std::size_t(m) * B);
    for (int t = 0; t < m; ++t) {
      const double* ut = u + std::size_t(t) * B;
      double* tht = th + std::size_t(t) * B;
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
    record(t0, m, th);
  }
}

}  // namespace

void so2_cos_walk(const So2Blocks& law, Stream& s, int n, const double* weight, double* theta, double* S) {
  So2WalkScratch buf;
  const int B = law.blocks();
  phase_batches(law, s, n, theta, buf,
                [&](long long t0, int m, const double* th) { cos_weighted_rows(th, m, B, weight, S + t0); });
}

void so2_mean_cos_at(const So2Blocks& law, Stream& s, const long long* ns, int count, double* out,
                     So2WalkScratch& buf) {
  const int B = law.blocks();
  buf.weight.assign(B, 1.0 / B);
  buf.theta.assign(B, 0.0);
  int c = 0;
  phase_batches(law, s, ns[count - 1], buf.theta.data(), buf, [&](long long t0, int m, const double* th) {
    for (; c < count && ns[c] <= t0 + m; ++c)
      cos_weighted_rows(th + std::size_t(ns[c] - 1 - t0) * B, 1, B, buf.weight.data(), out + c);
  });
}

void so2_mean_cos_walk(const So2Blocks& law, Stream& s, int n, double* S) {
  const int B = law.blocks();
  std::vector<double> w(B, 1.0 / B), theta(B, 0.0);
  so2_cos_walk(law, s, n, w.data(), theta.data(), S);
}

}  // namespace routelab
