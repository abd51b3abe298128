// Uniform-plane Givens rotations (Example 3): the plane (p, q) uniform over
// the C(d,2) coordinate pairs, the angle U[-a, a]; O(1) on a vector.
#pragma once

#include "groups/step_law.h"

namespace routelab {

class Givens : public StepLaw {
 public:
  Givens(int d, double a) : StepLaw(d), a_(a) {}
  std::string family() const override { return "givens"; }
  DetClass det_class() const override { return DetClass::plus; }
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  int step_size() const override { return 3; }  // p, q, angle
  void draw(Stream& s, double* step) const override;
  void apply(const double* step, double* x) const override;
  std::optional<Mat> mean() const override;
  std::string closed_form_text() const override { return "E[M] = (1 - 2(1 - sin a/a)/d) I"; }
  std::optional<StepKernel> kernel() const override;

 private:
  double a_;
};

}  // namespace routelab
