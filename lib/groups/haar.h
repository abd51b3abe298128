// Haar measure on O(d) or SO(d) (sampler S1): the law of the QR factor of a
// matrix of i.i.d. N(0,1) entries with Q <- Q diag(sign R_jj) (Mezzadri
// 2007; without the sign fix the law is not Haar), drawn as Stewart's (1980)
// product of reflections of d(d+1)/2 normals; for SO(d), negate column 0
// when det Q < 0.
#pragma once

#include "groups/step_law.h"

namespace routelab {

// One Haar draw on O(d) (special = false) or SO(d) (special = true).
Mat haar_sample(Stream& s, int d, bool special);

class Haar : public StepLaw {
 public:
  Haar(int d, bool special) : StepLaw(d), special_(special) {}
  std::string family() const override { return "haar"; }
  DetClass det_class() const override { return special_ ? DetClass::plus : DetClass::mixed; }
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  int step_size() const override { return dim() * dim(); }  // the matrix, column-major
  void draw(Stream& s, double* step) const override;
  void apply(const double* step, double* x) const override;
  void apply_matrix(const double* step, Mat& P) const override;
  std::optional<Mat> mean() const override { return Mat(Mat::Zero(dim(), dim())); }
  std::optional<Mat> second_moment() const override;
  std::optional<StepKernel> kernel() const override;
  // Every P_n is Haar: Theorem 5's exact law at every n.
  std::optional<ExactScoreLaw> exact_score_law(long long) const override {
    return ExactScoreLaw{.haar = true, .tail = {}};
  }
  std::string closed_form_text() const override {
    return "E[U] = 0; (x+1)/2 ~ Beta((d-1)/2, (d-1)/2) for x = q^T U k; E (tr U)^2 = 1 (2 on SO(2))";
  }

 private:
  bool special_;
};

}  // namespace routelab
