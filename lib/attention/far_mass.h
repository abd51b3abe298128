// The stylized aggregation model's softmax side (paper §4; docs/theory.md#conventions):
// one query, a near set S of K sources and a far set D of M sources, logits
// l_j = lambda * S_j, weights alpha = softmax(l). The far mass is
// rho_D = sum_{j in D} alpha_j and the far-weight norm a_D = ||alpha_D||_2.
//
// FarMassAccumulator streams the logits with a running maximum (the online
// softmax), so a far set of 1e7 routes needs O(1) memory, and the result does
// not overflow for any logit scale. It is host-device: the GPU far-mass routes
// (lib/cuda/walks.cu) stream their logits through the same code.
#pragma once

#include <cmath>

#include "base/host_device.h"

namespace routelab {

class FarMassAccumulator {
 public:
  ROUTELAB_HOST_DEVICE void add_near(double logit) { add(near_, logit); }
  ROUTELAB_HOST_DEVICE void add_far(double logit) { add(far_, logit); }
  // Merge another accumulator's sums (a chunk of the far set, say); merging in
  // a fixed order gives a thread-count-independent result.
  ROUTELAB_HOST_DEVICE void merge(const FarMassAccumulator& o) {
    merge_part(near_, o.near_);
    merge_part(far_, o.far_);
  }

  // rho_D = F / (N + F), with N, F the near and far exponential sums.
  ROUTELAB_HOST_DEVICE double far_mass() const {
    if (far_.count == 0) return 0.0;
    if (near_.count == 0) return 1.0;
    // rho = F / (N + F) = 1 / (1 + N/F), with N/F = (sum_N / sum_F) e^{max_N - max_F}.
    const double ratio = near_.sum / far_.sum * ::exp(near_.max - far_.max);
    return 1.0 / (1.0 + ratio);
  }
  // a_D = sqrt(sum_D e^{2 l_j}) / (N + F).
  ROUTELAB_HOST_DEVICE double far_norm() const {
    if (far_.count == 0) return 0.0;
    // a = sqrt(sum2_F) e^{max_F} / (sum_N e^{max_N} + sum_F e^{max_F}), scaled by e^{-max_F}.
    const double near_scaled = near_.count ? near_.sum * ::exp(near_.max - far_.max) : 0.0;
    return ::sqrt(far_.sum2) / (near_scaled + far_.sum);
  }
  ROUTELAB_HOST_DEVICE long long far_count() const { return far_.count; }

 private:
  // Sums scaled by exp(-max): sum = sum_j e^{l_j - max}, sum2 = sum_j e^{2(l_j - max)}.
  struct Part {
    double max = -INFINITY;
    double sum = 0, sum2 = 0;
    long long count = 0;
  };

  ROUTELAB_HOST_DEVICE static void add(Part& p, double logit) {
    ++p.count;
    if (logit <= p.max) {
      const double e = ::exp(logit - p.max);
      p.sum += e;
      p.sum2 += e * e;
      return;
    }
    // A new maximum: rescale what is there.
    const double r = ::exp(p.max - logit);
    p.sum = p.sum * r + 1.0;
    p.sum2 = p.sum2 * r * r + 1.0;
    p.max = logit;
  }

  ROUTELAB_HOST_DEVICE static void merge_part(Part& p, const Part& o) {
    if (o.count == 0) return;
    if (p.count == 0) {
      p = o;
      return;
    }
    const double m = p.max > o.max ? p.max : o.max;
    const double rp = ::exp(p.max - m), ro = ::exp(o.max - m);
    p.sum = p.sum * rp + o.sum * ro;
    p.sum2 = p.sum2 * rp * rp + o.sum2 * ro * ro;
    p.max = m;
    p.count += o.count;
  }

  Part near_, far_;
};

}  // namespace routelab
