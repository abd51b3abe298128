// Lie-ball steps (sampler S10): M = exp(X), X = sum_{p<q} x_pq E_pq with x in
// R^n, n = d(d-1)/2, either uniform on the ball |x| < r (x = r U^{1/n} z/|z|)
// or with the smooth bump density exp(1 - 1/(1 - |x|^2/r^2)) on it (exact
// rejection from the uniform ball). r <= pi in ||.||_g = |x| keeps exp a
// diffeomorphism onto its image. The bump's acceptance falls like
// e^{1 - sqrt(2(n-1))} (0.12 at d = 4, 3e-3 at d = 8), so it is refused past
// d = 9, where it would drop below 1e-3.
#pragma once

#include "groups/heat.h"

namespace routelab {

enum class BallDensity { uniform, bump };

// Acceptance rates below this are refused.
constexpr double kLieBallMinAcceptance = 1e-3;

class LieBall : public DenseStepLaw {
 public:
  LieBall(int d, double r, BallDensity density) : DenseStepLaw(d), r_(r), density_(density) {}
  std::string family() const override { return "lieball"; }
  DetClass det_class() const override { return DetClass::plus; }
  // Lemma 1 (non-explicit part).
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  void draw(Stream& s, double* step) const override;
  std::optional<Mat> mean() const override;
  std::optional<StepKernel> kernel() const override;
  std::string closed_form_text() const override;

 private:
  double r_;
  BallDensity density_;
};

}  // namespace routelab
