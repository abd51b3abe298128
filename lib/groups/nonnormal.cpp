#include "groups/nonnormal.h"

#include "groups/family.h"

namespace routelab {

std::optional<Mat> NonNormal::mean() const {
  const double zero = 0.0, one = 1.0;
  return Mat((matrix(&zero) + matrix(&one)) / 2.0);
}

std::unique_ptr<StepLaw> make_nonnormal(const Params& p) {
  if (require_int(p, "d", 3, 3, "d = 3 (the example is three-dimensional)") != 3)
    throw BadInput("d", "nonnormal accepts only d = 3");
  return std::make_unique<NonNormal>();
}

}  // namespace routelab
