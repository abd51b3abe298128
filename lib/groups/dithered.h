// Heat-kernel-dithered steps (Example 6): M = L G with G a heat-kernel step
// (HeatSampler, so exact for d <= 3 and the geodesic walk for d >= 4) and L
// an independent Householder reflection with normals from --normals/--aniso.
//   --sign minus: L always a reflection, det M = -1.
//   --sign mixed: L a reflection with probability 1/2, else I; det mixed.
// Step layout: [G (d x d, column-major) | v (d) | 1 if L reflects, else 0].
#pragma once

#include "groups/heat.h"
#include "groups/householder.h"

namespace routelab {

class Dithered : public StepLaw {
 public:
  Dithered(HeatSampler heat, NormalSampler normals, bool mixed);
  std::string family() const override { return "dithered"; }
  DetClass det_class() const override { return mixed_ ? DetClass::mixed : DetClass::minus; }
  // Example 6: Lemma 1 (mixed) or Remark 4 (det -1), whatever the normals.
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  int step_size() const override { return dim() * dim() + dim() + 1; }
  void draw(Stream& s, double* step) const override;
  void apply(const double* step, double* x) const override;
  void apply_matrix(const double* step, Mat& P) const override;
  std::optional<Mat> mean() const override;
  std::optional<Mat> second_moment() const override;
  std::optional<StepKernel> kernel() const override;
  std::string closed_form_text() const override;

 private:
  HeatSampler heat_;
  Householder reflection_;  // the law of L when it reflects: its moments
  bool mixed_;
};

}  // namespace routelab
