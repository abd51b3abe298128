// SO(2) blocks (Example 1): d = 2B, block b rotated by
// psi_b = omega + U[-a_b, a_b], with a_b = a for every block or, with
// --rope-base, a_b = base^(-2b/d) (the paper's "random" experimental variant).
#pragma once

#include "base/angles.h"
#include "groups/step_law.h"

namespace routelab {

class So2Blocks : public StepLaw {
 public:
  So2Blocks(int d, std::vector<double> half_widths, double omega)
      : StepLaw(d), a_(std::move(half_widths)), omega_(omega) {}
  std::string family() const override { return "so2"; }
  DetClass det_class() const override { return DetClass::plus; }
  int blocks() const { return dim() / 2; }
  // Block-diagonal products never leave the torus SO(2)^B.
  HaarLimit haar_limit() const override { return dim() == 2 ? HaarLimit::yes : HaarLimit::no; }
  int step_size() const override { return blocks(); }  // the B angles
  void draw(Stream& s, double* step) const override;
  void apply(const double* step, double* x) const override;
  std::optional<Mat> mean() const override;
  std::string closed_form_text() const override {
    return "E[M] = diag_b (sin a_b / a_b) R(omega); beta = max_b |sin a_b / a_b|";
  }
  std::optional<StepKernel> kernel() const override;
  std::optional<PlaneRotations> plane_rotations() const override { return PlaneRotations{a_, omega_}; }
  const std::vector<double>& half_widths() const { return a_; }
  double omega() const { return omega_; }

 private:
  std::vector<double> a_;
  double omega_;
};

}  // namespace routelab
