// The stylized aggregation model's softmax side (paper §4, CATALOGUE §1):
// one query, a near set S of K sources and a far set D of M sources, logits
// l_j = lambda * S_j, weights alpha = softmax(l). The far mass is
// rho_D = sum_{j in D} alpha_j and the far-weight norm a_D = ||alpha_D||_2.
//
// FarMassAccumulator streams the logits with a running maximum (the online
// softmax), so a far set of 1e7 routes needs O(1) memory, and the result does
// not overflow for any logit scale.
#pragma once

#include <cmath>
#include <limits>

namespace routelab {

class FarMassAccumulator {
 public:
  void add_near(double logit) { add(near_, logit); }
  void add_far(double logit) { add(far_, logit); }
  // Merge another accumulator's sums (a chunk of the far set, say); merging in
  // a fixed order gives a thread-count-independent result.
  void merge(const FarMassAccumulator& o) {
    merge_part(near_, o.near_);
    merge_part(far_, o.far_);
  }

  // rho_D = F / (N + F), with N, F the near and far exponential sums.
  double far_mass() const;
  // a_D = sqrt(sum_D e^{2 l_j}) / (N + F).
  double far_norm() const;
  // 1 - rho_D: the total near weight.
  double near_mass() const { return 1.0 - far_mass(); }
  long long near_count() const { return near_.count; }
  long long far_count() const { return far_.count; }

 private:
  // Sums scaled by exp(-max): sum = sum_j e^{l_j - max}, sum2 = sum_j e^{2(l_j - max)}.
  struct Part {
    double max = -std::numeric_limits<double>::infinity();
    double sum = 0, sum2 = 0;
    long long count = 0;
  };
  static void add(Part& p, double logit);
  static void merge_part(Part& p, const Part& o);

  Part near_, far_;
};

}  // namespace routelab
