#include "groups/heat.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>
#include <unsupported/Eigen/MatrixFunctions>

#include "groups/axis3.h"
#include "theory/heat_kernel.h"

namespace routelab {

void DenseStepLaw::apply(const double* step, double* x) const {
  Eigen::Map<const Mat> M(step, dim(), dim());
  Eigen::Map<Vec> v(x, dim());
  v = (M * v).eval();
}

void DenseStepLaw::apply_matrix(const double* step, Mat& P) const {
  Eigen::Map<const Mat> M(step, dim(), dim());
  P = (M * P).eval();
}

Mat skew_from_coords(const double* x, int d) {
  Mat X = Mat::Zero(d, d);
  int k = 0;
  for (int p = 0; p < d; ++p)
    for (int q = p + 1; q < d; ++q, ++k) {
      X(p, q) = x[k];
      X(q, p) = -x[k];
    }
  return X;
}

Mat exp_skew(const Mat& X) { return X.exp(); }

So3HeatAngle::So3HeatAngle(double tau) {
  // Beyond 13 sqrt(tau) the mass is below 1e-30 (the small-tau law is
  // sqrt(tau) chi_3), so the grid covers only where the angle lives.
  constexpr int kCells = 4096;
  const double theta_max = std::min(M_PI, 13.0 * std::sqrt(tau));
  theta_.resize(kCells + 1);
  cdf_.resize(kCells + 1);
  pdf_.resize(kCells + 1);
  for (int i = 0; i <= kCells; ++i) {
    theta_[i] = theta_max * i / kCells;
    cdf_[i] = theory::heat_kernel_so3_angle_cdf(tau, theta_[i]);
    pdf_[i] = theory::heat_kernel_so3_angle_density(tau, theta_[i]);
  }
  // Rounding in the series can leave a node a few ulps out of order; the
  // search below needs a nondecreasing table.
  for (int i = 1; i <= kCells; ++i) cdf_[i] = std::max(cdf_[i], cdf_[i - 1]);
}

double So3HeatAngle::quantile(double u) const {
  if (u <= cdf_.front()) return theta_.front();
  if (u >= cdf_.back()) return theta_.back();
  const std::size_t i = std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin() - 1;
  const double dt = theta_[i + 1] - theta_[i];
  const double f0 = cdf_[i], f1 = cdf_[i + 1], m0 = dt * pdf_[i], m1 = dt * pdf_[i + 1];
  // Solve H(t) = u for the cubic Hermite interpolant on the cell, Newton
  // safeguarded by bisection on [0, 1].
  double lo = 0, hi = 1, t = f1 > f0 ? (u - f0) / (f1 - f0) : 0.5;
  for (int it = 0; it < 60; ++it) {
    const double t2 = t * t, t3 = t2 * t;
    const double h = f0 * (2 * t3 - 3 * t2 + 1) + m0 * (t3 - 2 * t2 + t) + f1 * (3 * t2 - 2 * t3) + m1 * (t3 - t2);
    const double dh = (f1 - f0) * (6 * t - 6 * t2) + m0 * (3 * t2 - 4 * t + 1) + m1 * (3 * t2 - 2 * t);
    const double f = h - u;
    if (f > 0) hi = t; else lo = t;
    if (f == 0 || hi - lo < 1e-15) break;
    double next = dh > 0 ? t - f / dh : -1.0;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::abs(next - t) < 1e-15) break;
    t = next;
  }
  return theta_[i] + t * dt;
}

HeatSampler::HeatSampler(int d, double tau, double heat_h, HeatMethod method)
    : d_(d), tau_(tau), heat_h_(heat_h), method_(method) {
  if (method == HeatMethod::exact && d > 3) throw std::invalid_argument("HeatSampler: exact needs d <= 3");
  if (method == HeatMethod::exact && d == 3) so3_ = std::make_shared<So3HeatAngle>(tau);
}

void HeatSampler::draw(Stream& s, double* out) const {
  Eigen::Map<Mat> G(out, d_, d_);
  if (method_ == HeatMethod::exact && d_ == 2) {
    const double theta = std::sqrt(tau_) * s.normal();
    const double c = std::cos(theta), sn = std::sin(theta);
    G << c, -sn, sn, c;
    return;
  }
  if (method_ == HeatMethod::exact) {  // d = 3
    const double theta = so3_->quantile(s.uniform());
    double n[3];
    s.normals(n, 3);
    const double inv = 1.0 / std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (double& c : n) c *= inv;
    G.setIdentity();
    const double c = std::cos(theta), sn = std::sin(theta);
    for (int j = 0; j < 3; ++j) rodrigues_rotate(n, c, sn, G.col(j).data());
    return;
  }
  const theory::HeatWalkSteps w = theory::heat_walk_steps(tau_, heat_h_);
  const double sqrt_h = std::sqrt(w.h);
  std::vector<double> z(so_dim(d_));
  Mat P = Mat::Identity(d_, d_);
  for (int k = 0; k < w.n; ++k) {
    s.normals(z.data(), z.size());
    for (double& x : z) x *= sqrt_h;
    P = (P * exp_skew(skew_from_coords(z.data(), d_))).eval();
  }
  // n products drift by about n * 1e-16; keep steps orthogonal to 1e-13.
  reorthonormalize_if_drifted(P, 1e-13);
  G = P;
}

double HeatSampler::mean_scalar() const {
  return method_ == HeatMethod::exact ? theory::heat_kernel_mean_scalar(d_, tau_)
                                      : theory::heat_walk_mean_scalar(d_, tau_, heat_h_);
}

Mat HeatSampler::second_moment() const {
  return method_ == HeatMethod::exact ? theory::heat_kernel_second_moment(d_, tau_)
                                      : theory::heat_walk_second_moment(d_, tau_, heat_h_);
}

HeatSampler parse_heat(const Params& p, int d) {
  const double tau = require_double(p, "tau", 0.0, 1e6, true, "a Brownian time tau > 0");
  const double heat_h = require_double(p, "heat-h", 0.0, 1e6, true, "a walk step h > 0");
  const HeatMethod method = HeatSampler::natural_method(d);
  if (method == HeatMethod::walk && tau / heat_h > 1e6)
    throw BadInput("heat-h", fmt::format("{} is not accepted; the walk takes ceil(tau/h) steps, at most 1e6 (h >= {:g})",
                                         p.at("heat-h"), tau / 1e6));
  return HeatSampler(d, tau, heat_h, method);
}

// Heat kernel on SO(d): moments
std::optional<Mat> Heat::mean() const { return Mat(sampler_.mean_scalar() * Mat::Identity(dim(), dim())); }

std::string Heat::closed_form_text() const {
  return "E[G] = exp(-(d-1) tau/2) I exactly for d <= 3; for d >= 4 the walk's own c(h)^n I, "
         "log c(h) = -(d-1)h/2 - (d-1)(d-2)h^2/24 - (d-1)(d-2)^2 h^3/144; "
         "E[G (x) G] = Pi_1 + e^{-d tau} Pi_Sym0 + e^{-(d-2) tau} Pi_Lambda2, so "
         "E(tr G)^2 = 1 + (d(d+1)/2 - 1) e^{-d tau} + d(d-1)/2 e^{-(d-2) tau} (the walk's exponents are "
         "larger by tau h d(d-2)/12 and tau h (d-2)^2/12: it differs from the kernel at O(tau h))";
}

std::unique_ptr<StepLaw> make_heat(const Params& p) {
  const int d = int(require_int(p, "d", 2, "an integer d >= 2"));
  return std::make_unique<Heat>(parse_heat(p, d));
}

}  // namespace routelab
