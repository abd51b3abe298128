#include "groups/fisher.h"

#include <cmath>

#include <fmt/core.h>

#include "groups/haar.h"
#include "theory/matrix_fisher.h"

namespace routelab {

void Fisher::draw(Stream& s, double* step) const {
  const int d = dim();
  Eigen::Map<Mat> Q(step, d, d);
  if (d == 2) {
    fisher_so2_draw(s, kappa_, step);
    return;
  }
  // Accept iff log u < kappa (tr Q - d): exp(tr(A^T Q) - m_A) <= 1 on SO(d).
  // fisher_draw with haar_sample's vectorised reflections, whose bytes are
  // haar_draw's.
  while (true) {
    Mat P = haar_sample(s, d, true);
    if (std::log(s.uniform()) < kappa_ * (P.trace() - d)) {
      Q = P;
      return;
    }
  }
}

// Matrix-Fisher: items 4 (SO(2)) and 1, 5 (SO(3))
std::optional<Mat> Fisher::mean() const {
  const int d = dim();
  if (d == 2) return Mat(theory::fisher_so2_gap(2.0 * kappa_) * Mat::Identity(2, 2));
  if (d == 3) return Mat(theory::fisher_so3_mean_diagonal(Eigen::Vector3d::Constant(kappa_)).asDiagonal());
  return std::nullopt;  // no closed form for c(A) when d >= 4
}

std::string Fisher::closed_form_text() const {
  return "E[Q] = (I_1(2 kappa)/I_0(2 kappa)) I on SO(2); on SO(3) diag(grad log c(S)) at S = (kappa, kappa, kappa), "
         "c(S) = int_{-1}^{1} 1/2 I_0((s1-s2)(1-u)/2) I_0((s1+s2)(1+u)/2) e^{s3 u} du; none for d >= 4; "
         "beta <= 1 - exp(-2 d kappa); rejection acceptance c(A) e^{-d kappa}";
}

std::unique_ptr<StepLaw> make_fisher(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  if (d == 2) {
    const double kappa = require_double(p, "kappa", 0.0, 1e5, false, "a concentration 0 <= kappa <= 1e5 on SO(2)");
    return std::make_unique<Fisher>(d, kappa);
  }
  // Largest kappa with acceptance >= kFisherMinAcceptance, by bisection (the
  // rate and its lower bound both decrease in kappa).
  auto rate = [d](double k) {
    auto exact = theory::fisher_rejection_acceptance(d, k);
    return exact ? *exact : theory::fisher_rejection_acceptance_lower_bound(d, k);
  };
  double lo = 0.0, hi = 1.0;
  while (rate(hi) >= kFisherMinAcceptance) hi *= 2;
  for (int i = 0; i < 60; ++i) (rate(0.5 * (lo + hi)) >= kFisherMinAcceptance ? lo : hi) = 0.5 * (lo + hi);
  const std::string accepts =
      fmt::format("0 <= kappa <= {:.3g} at d = {} (rejection from Haar accepts below {:g} beyond)", lo, d,
                  kFisherMinAcceptance);
  const double kappa = require_double(p, "kappa", 0.0, lo, false, accepts);
  return std::make_unique<Fisher>(d, kappa);
}

}  // namespace routelab
