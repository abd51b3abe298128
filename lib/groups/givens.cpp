#include "groups/givens.h"

#include <cmath>

#include "groups/family.h"
#include "theory/step_gaps.h"

namespace routelab {

void Givens::draw(Stream& s, double* step) const {
  const int d = dim();
  // Index the C(d,2) pairs p < q in row order.
  uint64_t k = s.below(uint64_t(d) * (d - 1) / 2);
  int p = 0;
  while (k >= uint64_t(d - 1 - p)) {
    k -= d - 1 - p;
    ++p;
  }
  step[0] = p;
  step[1] = p + 1 + double(k);
  step[2] = s.uniform(-a_, a_);
}

void Givens::apply(const double* step, double* x) const {
  const int p = int(step[0]), q = int(step[1]);
  const double c = std::cos(step[2]), s = std::sin(step[2]);
  const double xp = x[p], xq = x[q];
  x[p] = c * xp - s * xq;
  x[q] = s * xp + c * xq;
}

// Example 3
std::optional<Mat> Givens::mean() const {
  return Mat(theory::givens_mean_scalar(dim(), a_) * Mat::Identity(dim(), dim()));
}

std::unique_ptr<StepLaw> make_givens(const Params& p) {
  const int d = int(require_int(p, "d", 2, "an integer d >= 2"));
  const double a = require_double(p, "a", 0.0, 1e6, true, "a half-width a > 0");
  return std::make_unique<Givens>(d, a);
}

}  // namespace routelab
