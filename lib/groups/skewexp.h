// exp of a scaled fixed skew matrix (Example 5): M = exp(eps A), eps ~ U[-a, a],
// A = Q diag(lambda_j J) Q^T with a fixed orthogonal Q (a Haar draw from the
// fixed stream (seed 0x5eed, stream 0), so A is not block-aligned).
#pragma once

#include "groups/step_law.h"

namespace routelab {

class SkewExp : public StepLaw {
 public:
  SkewExp(int d, double a, std::vector<double> lambdas);
  std::string family() const override { return "skewexp"; }
  DetClass det_class() const override { return DetClass::plus; }
  int step_size() const override { return 1; }  // eps
  void draw(Stream& s, double* step) const override { step[0] = s.uniform(-a_, a_); }
  void apply(const double* step, double* x) const override;
  std::optional<Mat> mean() const override;
  std::optional<double> gap() const override;
  std::string closed_form_text() const override {
    return "E[M] = Q diag(sinc(a lambda_j) I_2) Q^T; beta = max_j |sin(a lambda_j)/(a lambda_j)|";
  }

 private:
  double a_;
  std::vector<double> lambdas_;
  Mat Q_;
};

}  // namespace routelab
