// Theorem 3's non-normal example (docs/theory.md#theorem-3): d = 3, M = R_0 (axis
// (0.6, 0, 0.8), angle 1) with probability 1/2, otherwise H(e_1). E[M] is not
// normal, so ||E P_n|| < beta^n strictly.
#pragma once

#include "groups/step_law.h"

namespace routelab {

class NonNormal : public StepLaw {
 public:
  NonNormal() : StepLaw(3) {}
  std::string family() const override { return "nonnormal"; }
  DetClass det_class() const override { return DetClass::mixed; }
  int step_size() const override { return 1; }  // 0: rotation, 1: reflection
  void draw(Stream& s, double* step) const override { nonnormal_draw(s, step); }
  void apply(const double* step, double* x) const override { nonnormal_apply(step, x); }
  std::optional<Mat> mean() const override;
  std::optional<StepKernel> kernel() const override { return StepKernel{.family = KernelFamily::nonnormal, .d = 3}; }
  std::string closed_form_text() const override { return "E[M] = (R_0 + H(e_1))/2, not normal; beta = 0.9577"; }
};

}  // namespace routelab
