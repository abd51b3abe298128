#include "attention/far_mass.h"

#include <algorithm>

namespace routelab {

void FarMassAccumulator::add(Part& p, double logit) {
  ++p.count;
  if (logit <= p.max) {
    const double e = std::exp(logit - p.max);
    p.sum += e;
    p.sum2 += e * e;
    return;
  }
  // A new maximum: rescale what is there.
  const double r = std::exp(p.max - logit);
  p.sum = p.sum * r + 1.0;
  p.sum2 = p.sum2 * r * r + 1.0;
  p.max = logit;
}

void FarMassAccumulator::merge_part(Part& p, const Part& o) {
  if (o.count == 0) return;
  if (p.count == 0) {
    p = o;
    return;
  }
  const double m = std::max(p.max, o.max);
  const double rp = std::exp(p.max - m), ro = std::exp(o.max - m);
  p.sum = p.sum * rp + o.sum * ro;
  p.sum2 = p.sum2 * rp * rp + o.sum2 * ro * ro;
  p.max = m;
  p.count += o.count;
}

double FarMassAccumulator::far_mass() const {
  if (far_.count == 0) return 0.0;
  if (near_.count == 0) return 1.0;
  // rho = F / (N + F) = 1 / (1 + N/F), with N/F = (sum_N / sum_F) e^{max_N - max_F}.
  const double ratio = near_.sum / far_.sum * std::exp(near_.max - far_.max);
  return 1.0 / (1.0 + ratio);
}

double FarMassAccumulator::far_norm() const {
  if (far_.count == 0) return 0.0;
  // a = sqrt(sum2_F) e^{max_F} / (sum_N e^{max_N} + sum_F e^{max_F}), scaled by e^{-max_F}.
  const double near_scaled = near_.count ? near_.sum * std::exp(near_.max - far_.max) : 0.0;
  return std::sqrt(far_.sum2) / (near_scaled + far_.sum);
}

}  // namespace routelab
