#include "groups/fisher.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "groups/haar.h"
#include "theory/matrix_fisher.h"

namespace routelab {

double von_mises(Stream& s, double kappa) {
  if (kappa < 1e-8) return M_PI * (2.0 * s.uniform() - 1.0);
  // Best-Fisher wrapped-Cauchy envelope, in the numerically stable form of
  // numpy's sampler (the series branch avoids 0/0 at small kappa).
  double r;
  if (kappa < 1e-5) {
    r = 1.0 / kappa + kappa;
  } else {
    const double t = 1.0 + std::sqrt(1.0 + 4.0 * kappa * kappa);
    const double rho = (t - std::sqrt(2.0 * t)) / (2.0 * kappa);
    r = (1.0 + rho * rho) / (2.0 * rho);
  }
  double w;
  while (true) {
    const double z = std::cos(M_PI * s.uniform());
    w = (1.0 + r * z) / (r + z);
    const double y = kappa * (r - w);
    const double v = s.uniform();
    if (y * (2.0 - y) - v >= 0 || std::log(y / v) + 1.0 - y >= 0) break;
  }
  const double theta = std::acos(std::clamp(w, -1.0, 1.0));
  return s.uniform() < 0.5 ? -theta : theta;
}

void Fisher::draw(Stream& s, double* step) const {
  const int d = dim();
  Eigen::Map<Mat> Q(step, d, d);
  if (d == 2) {
    const double theta = von_mises(s, 2.0 * kappa_);
    const double c = std::cos(theta), sn = std::sin(theta);
    Q << c, -sn, sn, c;
    return;
  }
  // Accept iff log u < kappa (tr Q - d): exp(tr(A^T Q) - m_A) <= 1 on SO(d).
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
  const int d = int(require_int(p, "d", 2, "an integer d >= 2"));
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
