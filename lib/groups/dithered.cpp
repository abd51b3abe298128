#include "groups/dithered.h"

#include <fmt/core.h>

namespace routelab {

Dithered::Dithered(HeatSampler heat, NormalSampler normals, bool mixed)
    : StepLaw(heat.dim()), heat_(std::move(heat)), reflection_(heat_.dim(), std::move(normals)), mixed_(mixed) {}

void Dithered::draw(Stream& s, double* step) const {
  const int d = dim();
  heat_.draw(s, step);
  reflection_.draw(s, step + d * d);
  step[d * d + d] = mixed_ ? double(s.next_u32() & 1u) : 1.0;
}

void Dithered::apply(const double* step, double* x) const {
  const int d = dim();
  Eigen::Map<const Mat> G(step, d, d);
  Eigen::Map<Vec> v(x, d);
  v = (G * v).eval();
  if (step[d * d + d] != 0) householder_step(step + d * d, x, d);
}

void Dithered::apply_matrix(const double* step, Mat& P) const {
  const int d = dim();
  P = (Eigen::Map<const Mat>(step, d, d) * P).eval();
  if (step[d * d + d] != 0) reflection_.apply_matrix(step + d * d, P);
}

// The CPU draws and applies as dithered_draw and dithered_apply do, with the
// heat walk's and the product's arithmetic Eigen's (heat.cpp); the kernel's
// step also carries the heat draw's workspace.
std::optional<StepKernel> Dithered::kernel() const {
  StepKernel k = *reflection_.kernel();
  k.family = KernelFamily::dithered;
  k.mixed = mixed_;
  heat_.fill_kernel(k);
  return k;
}

// Example 6: E[M] = E[L] a_tau, E[L] = I - 2 Sigma_nu (minus) or I - Sigma_nu (mixed).
std::optional<Mat> Dithered::mean() const {
  Mat L = *reflection_.mean();
  if (mixed_) L = (L + Mat::Identity(dim(), dim())) / 2.0;
  return Mat(heat_.mean_scalar() * L);
}

// Example 6: E[M (x) M] = E[L (x) L] E[G (x) G], since M (x) M = (L (x) L)(G (x) G).
std::optional<Mat> Dithered::second_moment() const {
  auto LL = reflection_.second_moment();
  if (!LL) return std::nullopt;  // gaussian normals: needs fourth moments of the angular Gaussian
  if (mixed_) *LL = (*LL + Mat::Identity(LL->rows(), LL->cols())) / 2.0;
  return Mat(*LL * heat_.second_moment());
}

std::string Dithered::closed_form_text() const {
  return "E[M] = E[L] a with a the heat step's mean scalar, E[L] = I - 2 Sigma_nu (minus) or I - Sigma_nu (mixed); "
         "E[M (x) M] = E[L (x) L] E[G (x) G] (sphere and coordinate normals); rho <= 1 - m_tau (SO(3), Lemma 1), "
         "1 - m_tau^2 (det -1, Remark 4)";
}

std::unique_ptr<StepLaw> make_dithered(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  NormalSampler normals = parse_normals(p, d);
  HeatSampler heat = parse_heat(p, d);
  const std::string& sign = p.at("sign");
  if (sign != "minus" && sign != "mixed")
    throw BadInput("sign", fmt::format("unknown sign '{}'; accepts minus, mixed", sign));
  return std::make_unique<Dithered>(std::move(heat), std::move(normals), sign == "mixed");
}

}  // namespace routelab
