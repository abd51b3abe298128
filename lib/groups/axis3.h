// 3D axis rotations (Example 4): d = 3B; each 3D block is rotated by a fixed
// angle theta about an axis uniform on S^2 (Rodrigues' formula).
#pragma once

#include "groups/step_law.h"

namespace routelab {

class Axis3 : public StepLaw {
 public:
  Axis3(int d, double theta) : StepLaw(d), theta_(theta) {}
  std::string family() const override { return "axis3"; }
  DetClass det_class() const override { return DetClass::plus; }
  // Block-diagonal products never leave SO(3)^B.
  HaarLimit haar_limit() const override { return dim() == 3 ? HaarLimit::yes : HaarLimit::no; }
  int step_size() const override { return dim(); }  // one unit axis per block
  void draw(Stream& s, double* step) const override;
  void apply(const double* step, double* x) const override;
  std::optional<Mat> mean() const override;
  std::string closed_form_text() const override { return "E[M] = ((2 cos theta + 1)/3) I; beta = |2 cos theta + 1|/3"; }
  std::optional<StepKernel> kernel() const override;

 private:
  double theta_;
};

}  // namespace routelab
