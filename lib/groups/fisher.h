// Matrix-Fisher steps (sampler S9) on SO(d) with A = kappa I: Haar density
// exp(kappa tr Q)/c(A). Both samplers are exact:
//   d = 2: Q = R(theta), theta ~ vonMises(0, 2 kappa), since
//          tr(A^T R(theta)) = 2 kappa cos theta (Best-Fisher rejection).
//   d >= 3: rejection from Haar on SO(d), accepting with probability
//          exp(kappa tr Q - m_A), m_A = d kappa (the maximum, at Q = I).
//          The acceptance rate c(A) e^{-d kappa} decays like kappa^{-d(d-1)/4}
//          (docs/theory.md#calibration, item 2); kappa is refused where it would fall below
//          1e-3: exactly from the c(S) integral for d = 3 (kappa up to 17.2),
//          from a rigorous lower bound for d >= 4 (kappa up to 2.4 at d = 4,
//          1.65 at d = 5, 0.92 at d = 8, roughly 7/d beyond; conservative,
//          since the true rate is higher). Past that, a Gibbs sampler
//          (Hoff 2009) would be needed.
// A draw consumes a variable number of stream values; it is still a pure
// function of (seed, stream).
#pragma once

#include "groups/heat.h"

namespace routelab {

// von_mises(s, kappa_vm): theta ~ vonMises(0, kappa_vm), is in
// groups/step_kernels_dense.h, with the draw the GPU shares.

// Acceptance rates below this are refused.
constexpr double kFisherMinAcceptance = 1e-3;

class Fisher : public DenseStepLaw {
 public:
  Fisher(int d, double kappa) : DenseStepLaw(d), kappa_(kappa) {}
  std::string family() const override { return "fisher"; }
  DetClass det_class() const override { return DetClass::plus; }
  // Lemma 1: a density bounded below by exp(-2 ||A||_*).
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  void draw(Stream& s, double* step) const override;
  std::optional<Mat> mean() const override;
  std::optional<StepKernel> kernel() const override {
    return StepKernel{.family = KernelFamily::fisher, .d = dim(), .kappa = kappa_};
  }
  std::string closed_form_text() const override;

 private:
  double kappa_;
};

}  // namespace routelab
