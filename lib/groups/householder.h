// Householder steps H = I - 2 v v^T (Example 2) with the normal v drawn from
// one of three laws on S^{d-1}: uniform (sphere), the coordinate vectors
// +-e_i (Remark 3's counterexample: a first-moment gap but no Haar limit), or
// an angular Gaussian v = g/|g|, g ~ N(0, diag(sigma^2)).
#pragma once

#include "groups/family.h"
#include "groups/step_law.h"

namespace routelab {

// The law of the reflection normal, shared by `householder` and `dithered`.
struct NormalSampler {
  NormalLaw law = NormalLaw::sphere;
  Vec sigma;  // gaussian: per-coordinate standard deviations

  NormalSampler(NormalLaw law, int d, double aniso);
  void draw(Stream& s, double* v, int d) const;
  // count normals into v[i * d ..]: count calls of draw, their normals
  // drawn in one Stream::normals call.
  void draw_many(Stream& s, double* v, int d, int count) const;
  // Sigma_nu = E[v v^T], exact (diagonal for all three laws).
  Vec second_moment_diagonal(int d) const;
};

// Parses --normals and --aniso for a family of dimension d.
NormalSampler parse_normals(const Params& p, int d);

class Householder : public StepLaw {
 public:
  Householder(int d, NormalSampler normals) : StepLaw(d), normals_(std::move(normals)) {}
  std::string family() const override { return "householder"; }
  DetClass det_class() const override { return DetClass::minus; }
  int step_size() const override { return dim(); }
  void draw(Stream& s, double* step) const override { normals_.draw(s, step, dim()); }
  void draw_steps(Stream& s, double* steps, int count) const override { normals_.draw_many(s, steps, dim(), count); }
  void apply(const double* step, double* x) const override { householder_step(step, x, dim()); }
  void apply_matrix(const double* step, Mat& P) const override;
  std::optional<Mat> mean() const override;
  std::optional<Mat> second_moment() const override;
  std::string closed_form_text() const override;
  std::optional<StepKernel> kernel() const override;
  std::optional<ExactScoreLaw> exact_score_law(long long n) const override;
  // Proposition 2 (smooth normal density bounded below) vs Remark 3.
  HaarLimit haar_limit() const override {
    return normals_.law == NormalLaw::coordinate ? HaarLimit::no : HaarLimit::yes;
  }
  const NormalSampler& normals() const { return normals_; }

 private:
  NormalSampler normals_;
};

}  // namespace routelab
