#include "groups/skewexp.h"

#include <cmath>

#include <fmt/core.h>

#include "groups/family.h"
#include "groups/haar.h"
#include "theory/step_gaps.h"

namespace routelab {

SkewExp::SkewExp(int d, double a, std::vector<double> lambdas) : StepLaw(d), a_(a), lambdas_(std::move(lambdas)) {
  Stream s(0x5eed, 0);
  Q_ = haar_sample(s, d, true);
  table_.assign(Q_.data(), Q_.data() + Q_.size());
  table_.insert(table_.end(), lambdas_.begin(), lambdas_.end());
}

// The CPU keeps Eigen's products (their sums run in another order than
// skewexp_apply's, which the GPU uses).
void SkewExp::apply(const double* step, double* x) const {
  // x <- Q R(eps lambda) Q^T x
  Eigen::Map<Vec> v(x, dim());
  Vec y = Q_.transpose() * v;
  for (std::size_t j = 0; j < lambdas_.size(); ++j) {
    const double t = step[0] * lambdas_[j];
    const double c = std::cos(t), s = std::sin(t);
    const double y0 = y(2 * j), y1 = y(2 * j + 1);
    y(2 * j) = c * y0 - s * y1;
    y(2 * j + 1) = s * y0 + c * y1;
  }
  v = Q_ * y;
}

std::optional<StepKernel> SkewExp::kernel() const {
  return StepKernel{
      .family = KernelFamily::skewexp, .d = dim(), .a = a_, .table = table_.data(), .table_size = int(table_.size())};
}

// Example 5: E exp(eps A) = Q diag(E R(eps lambda_j)) Q^T, and E sin(eps l) = 0.
std::optional<Mat> SkewExp::mean() const {
  Vec diag(dim());
  for (std::size_t j = 0; j < lambdas_.size(); ++j) diag(2 * j) = diag(2 * j + 1) = theory::sinc(a_ * lambdas_[j]);
  return Mat(Q_ * diag.asDiagonal() * Q_.transpose());
}

// Example 5
std::optional<double> SkewExp::gap() const { return theory::skewexp_gap(a_, lambdas_); }

std::unique_ptr<StepLaw> make_skewexp(const Params& p) {
  const long long d = require_int(p, "d", 2, kMaxDimension, "an even integer d in [2, 4096], d = 2 x (number of --lambdas)");
  const double a = require_double(p, "a", 0.0, 1e6, true, "a half-width a > 0");
  std::vector<double> lambdas = param_double_list(p, "lambdas");
  for (double l : lambdas)
    if (!(l > 0)) throw BadInput("lambdas", "positive eigenvalue magnitudes, e.g. 0.3,1,2.5");
  if (d != 2 * (long long)lambdas.size())
    throw BadInput("d", fmt::format("{} does not match --lambdas; skewexp accepts d = 2 x {} = {}", d, lambdas.size(),
                                    2 * lambdas.size()));
  return std::make_unique<SkewExp>(int(d), a, std::move(lambdas));
}

}  // namespace routelab
