#include "groups/so2.h"

#include <cmath>

#include "groups/family.h"
#include "theory/step_gaps.h"

namespace routelab {

void So2Blocks::draw(Stream& s, double* step) const { so2_draw(s, blocks(), a_.data(), omega_, step); }

void So2Blocks::apply(const double* step, double* x) const { so2_apply(blocks(), step, x); }

std::optional<StepKernel> So2Blocks::kernel() const {
  return StepKernel{.family = KernelFamily::so2, .d = dim(), .omega = omega_, .widths = a_.data()};
}

// Example 1
std::optional<Mat> So2Blocks::mean() const {
  Mat m = Mat::Zero(dim(), dim());
  for (int b = 0; b < blocks(); ++b) {
    const double beta = theory::so2_uniform_harmonic(a_[b]);
    const double c = std::cos(omega_), s = std::sin(omega_);
    m(2 * b, 2 * b) = beta * c;
    m(2 * b, 2 * b + 1) = -beta * s;
    m(2 * b + 1, 2 * b) = beta * s;
    m(2 * b + 1, 2 * b + 1) = beta * c;
  }
  return m;
}

std::unique_ptr<StepLaw> make_so2(const Params& p) {
  const long long d = require_int(p, "d", 2, kMaxDimension, "an even integer d in [2, 4096] (B = d/2 blocks)");
  if (d % 2 != 0) throw BadInput("d", std::to_string(d) + " is odd; so2 accepts an even integer d >= 2 (B = d/2 blocks)");
  const double omega = require_double(p, "omega", -1e6, 1e6, false, "a finite angle");
  if (has_param(p, "rope-base") && !p.at("rope-base").empty()) {
    const double base = require_double(p, "rope-base", 1.0, 1e12, true, "a base > 1, e.g. 10000");
    return std::make_unique<So2Blocks>(int(d), rope_frequencies(int(d), base), omega);
  }
  const double a = require_double(p, "a", 0.0, 1e6, true, "a half-width a > 0");
  return std::make_unique<So2Blocks>(int(d), std::vector<double>(d / 2, a), omega);
}

}  // namespace routelab
