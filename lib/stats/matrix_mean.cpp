#include "stats/matrix_mean.h"

#include <cmath>
#include <limits>

namespace routelab {

double max_entry_z(const MatrixMeanEstimate& e, const Eigen::MatrixXd& theory) {
  double worst = 0;
  for (Eigen::Index j = 0; j < theory.size(); ++j) {
    const double dev = std::abs(e.mean.data()[j] - theory.data()[j]);
    const double se = e.stderr_.data()[j];
    // Rounding-level deviations count as agreement even where the sample
    // variance is itself only rounding.
    double z;
    if (dev <= 1e-12 * std::max(1.0, std::abs(theory.data()[j])))
      z = 0.0;
    else
      z = se > 0 ? dev / se : std::numeric_limits<double>::infinity();
    worst = std::max(worst, z);
  }
  return worst;
}

}  // namespace routelab
