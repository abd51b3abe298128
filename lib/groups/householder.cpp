#include "groups/householder.h"

#include <algorithm>
#include <cmath>

#include <boost/math/quadrature/exp_sinh.hpp>
#include <unsupported/Eigen/KroneckerProduct>
#include <fmt/core.h>

#include "theory/score_tails.h"
#include "theory/step_gaps.h"
#include "theory/trace_moments.h"

namespace routelab {

NormalSampler::NormalSampler(NormalLaw law, int d, double aniso) : law(law) {
  if (law == NormalLaw::gaussian) {
    sigma.resize(d);
    for (int i = 0; i < d; ++i) sigma(i) = d == 1 ? 1.0 : std::pow(aniso, double(i) / (d - 1));
  }
}

void NormalSampler::draw(Stream& s, double* v, int d) const {
  householder_normal_draw(s, law, sigma.data(), v, d);
}

void NormalSampler::draw_many(Stream& s, double* v, int d, int count) const {
  if (law == NormalLaw::coordinate) {
    for (int i = 0; i < count; ++i) draw(s, v + std::size_t(i) * d, d);
    return;
  }
  // Stream::normals gives the same values as one call per step would.
  s.normals(v, std::size_t(count) * d);
  // householder_normal_finish in two sweeps, every norm of a group and then
  // the scaling, with the same arithmetic. A step's sum, square root and
  // division are one chain (about 100 cycles at d = 64 with AVX2), and the
  // multiplies of its scaling, waiting on it, held the scheduler ahead of the
  // next step's chain. AVX2 on a Zen 4: 18.8 to 16.0 ns a step at d = 64,
  // 53.5 to 32.6 at d = 128; AVX-512: level at 64, 27 to 25.5 at 128.
  constexpr int kGroup = 32;
  double inv[kGroup];
  for (int i0 = 0; i0 < count; i0 += kGroup) {
    const int g = std::min(kGroup, count - i0);
    double* vg = v + std::size_t(i0) * d;
    for (int i = 0; i < g; ++i) inv[i] = householder_normal_inverse_norm(law, sigma.data(), vg + std::size_t(i) * d, d);
    for (int i = 0; i < g; ++i)
      for (int j = 0; j < d; ++j) vg[std::size_t(i) * d + j] *= inv[i];
  }
}

Vec NormalSampler::second_moment_diagonal(int d) const {
  if (law != NormalLaw::gaussian) return Vec::Constant(d, 1.0 / d);
  // E[g_i^2 / |g|^2] = int_0^inf s_i^2 (1 + 2t s_i^2)^(-3/2) prod_{j != i} (1 + 2t s_j^2)^(-1/2) dt,
  // from 1/S = int exp(-tS) dt and the Gaussian moment generating function.
  boost::math::quadrature::exp_sinh<double> integrator;
  Vec out(d);
  for (int i = 0; i < d; ++i) {
    auto f = [&](double t) {
      double v = sigma(i) * sigma(i) / (1.0 + 2.0 * t * sigma(i) * sigma(i));
      for (int j = 0; j < d; ++j) v /= std::sqrt(1.0 + 2.0 * t * sigma(j) * sigma(j));
      return v;
    };
    out(i) = integrator.integrate(f, 1e-14);
  }
  return out;
}

NormalSampler parse_normals(const Params& p, int d) {
  const std::string& name = p.at("normals");
  if (name == "sphere") return NormalSampler(NormalLaw::sphere, d, 1.0);
  if (name == "coordinate") return NormalSampler(NormalLaw::coordinate, d, 1.0);
  if (name == "gaussian") {
    const double aniso = require_double(p, "aniso", 1.0, 1e6, false, "a spread K >= 1 (standard deviations 1..K)");
    return NormalSampler(NormalLaw::gaussian, d, aniso);
  }
  throw BadInput("normals", fmt::format("unknown law '{}'; accepts sphere, coordinate, gaussian", name));
}

void Householder::apply_matrix(const double* step, Mat& P) const {
  // P <- P - 2 v (v^T P): one matrix-vector product and one rank-1 update.
  Eigen::Map<const Vec> v(step, dim());
  Eigen::RowVectorXd w = v.transpose() * P;
  P.noalias() -= 2.0 * v * w;
}

// Example 2
std::optional<Mat> Householder::mean() const {
  return theory::householder_mean(normals_.second_moment_diagonal(dim()));
}

std::optional<Mat> Householder::second_moment() const {
  const int d = dim();
  if (normals_.law == NormalLaw::sphere) return theory::householder_uniform_second_moment(d);  // Proposition 2
  if (normals_.law == NormalLaw::coordinate) {                                                   // Remark 3
    Mat T = Mat::Zero(d * d, d * d);
    for (int i = 0; i < d; ++i) {
      Mat H = Mat::Identity(d, d);
      H(i, i) = -1.0;
      T += Eigen::kroneckerProduct(H, H).eval() / double(d);
    }
    return T;
  }
  return std::nullopt;  // needs fourth moments of the angular Gaussian
}

std::optional<StepKernel> Householder::kernel() const {
  return StepKernel{.family = KernelFamily::householder,
                    .d = dim(),
                    .normals = normals_.law,
                    .sigma = normals_.law == NormalLaw::gaussian ? normals_.sigma.data() : nullptr};
}

// Remark 3 (coordinate normals, every n) and Theorem 5 before mixing (one
// uniform step); the gaussian normals' law is not known in closed form.
std::optional<ExactScoreLaw> Householder::exact_score_law(long long n) const {
  const int d = dim();
  if (normals_.law == NormalLaw::coordinate)
    return ExactScoreLaw{.tail = [d, n](double s) { return theory::coordinate_householder_tail(d, n, s); }};
  if (normals_.law == NormalLaw::sphere && n == 1)
    return ExactScoreLaw{.tail = [d](double s) { return theory::householder_one_step_tail(d, s); }};
  return std::nullopt;
}

std::string Householder::closed_form_text() const {
  return "E[H] = I - 2 Sigma_nu; beta = max_j |1 - 2 mu_j(Sigma_nu)| (uniform: |1 - 2/d|); "
         "E tr P_n = d(1-2/d)^n; E(tr P_n)^2: Proposition 2 (sphere), d + d(d-1)(1-4/d)^n (coordinate)";
}

std::unique_ptr<StepLaw> make_householder(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  return std::make_unique<Householder>(d, parse_normals(p, d));
}

}  // namespace routelab
