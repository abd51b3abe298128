#include "groups/givens.h"

#include <cmath>

#include "groups/family.h"
#include "theory/step_gaps.h"

namespace routelab {

void Givens::draw(Stream& s, double* step) const { givens_draw(s, dim(), a_, step); }

void Givens::apply(const double* step, double* x) const { givens_apply(step, x); }

std::optional<StepKernel> Givens::kernel() const {
  return StepKernel{.family = KernelFamily::givens, .d = dim(), .a = a_};
}

// Example 3
std::optional<Mat> Givens::mean() const {
  return Mat(theory::givens_mean_scalar(dim(), a_) * Mat::Identity(dim(), dim()));
}

std::unique_ptr<StepLaw> make_givens(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  const double a = require_double(p, "a", 0.0, 1e6, true, "a half-width a > 0");
  return std::make_unique<Givens>(d, a);
}

}  // namespace routelab
