#include "groups/heat.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>
#include <unsupported/Eigen/MatrixFunctions>

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
  Mat X(d, d);
  skew_matrix(d, x, X.data());
  return X;
}

Mat exp_skew(const Mat& X) { return X.exp(); }

So3HeatAngle::So3HeatAngle(double tau) {
  // Beyond 13 sqrt(tau) the mass is below 1e-30 (the small-tau law is
  // sqrt(tau) chi_3), so the grid covers only where the angle lives.
  constexpr int kCells = kSo3HeatCells, n = kCells + 1;
  const double theta_max = std::min(M_PI, 13.0 * std::sqrt(tau));
  table_.resize(3 * n);
  double *theta = table_.data(), *cdf = theta + n, *pdf = cdf + n;
  for (int i = 0; i <= kCells; ++i) {
    theta[i] = theta_max * i / kCells;
    cdf[i] = theory::heat_kernel_so3_angle_cdf(tau, theta[i]);
    pdf[i] = theory::heat_kernel_so3_angle_density(tau, theta[i]);
  }
  // Rounding in the series can leave a node a few ulps out of order; the
  // search in so3_heat_quantile needs a nondecreasing table.
  for (int i = 1; i <= kCells; ++i) cdf[i] = std::max(cdf[i], cdf[i - 1]);
}

HeatSampler::HeatSampler(int d, double tau, double heat_h, HeatMethod method)
    : d_(d), tau_(tau), heat_h_(heat_h), method_(method) {
  if (method == HeatMethod::exact && d > 3) throw std::invalid_argument("HeatSampler: exact needs d <= 3");
  if (method == HeatMethod::exact && d == 3) so3_ = std::make_shared<So3HeatAngle>(tau);
}

void HeatSampler::draw(Stream& s, double* out) const {
  if (method_ == HeatMethod::exact) {
    heat_exact_draw(s, d_, tau_, so3_ ? so3_->table() : nullptr, out);
    return;
  }
  // heat_walk_draw with Eigen's exponential and products and an SVD for the
  // correction (the GPU's are exp_skew_taylor, matrix_product, Newton-Schulz).
  Eigen::Map<Mat> G(out, d_, d_);
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

void HeatSampler::fill_kernel(StepKernel& k) const {
  k.tau = tau_;
  if (method_ == HeatMethod::walk) {
    const theory::HeatWalkSteps w = theory::heat_walk_steps(tau_, heat_h_);
    k.heat_steps = w.n;
    k.heat_h = w.h;
  }
  if (so3_) {
    k.table = so3_->table();
    k.table_size = so3_->table_size();
  }
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

std::optional<StepKernel> Heat::kernel() const {
  StepKernel k{.family = KernelFamily::heat, .d = dim()};
  sampler_.fill_kernel(k);
  return k;
}

std::string Heat::closed_form_text() const {
  return "E[G] = exp(-(d-1) tau/2) I exactly for d <= 3; for d >= 4 the walk's own c(h)^n I, "
         "log c(h) = -(d-1)h/2 - (d-1)(d-2)h^2/24 - (d-1)(d-2)^2 h^3/144; "
         "E[G (x) G] = Pi_1 + e^{-d tau} Pi_Sym0 + e^{-(d-2) tau} Pi_Lambda2, so "
         "E(tr G)^2 = 1 + (d(d+1)/2 - 1) e^{-d tau} + d(d-1)/2 e^{-(d-2) tau} (the walk's exponents are "
         "larger by tau h d(d-2)/12 and tau h (d-2)^2/12: it differs from the kernel at O(tau h))";
}

std::unique_ptr<StepLaw> make_heat(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  return std::make_unique<Heat>(parse_heat(p, d));
}

}  // namespace routelab
