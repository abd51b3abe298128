#include "groups/walk.h"

#include <cmath>

namespace routelab {

void walk_scores(const StepLaw& law, Stream& s, const double* q, const double* k, int n, double* scores,
                 WalkBuffers& buf) {
  const int d = law.dim(), m = law.step_size();
  double* x = buf.x.data();
  for (int i = 0; i < d; ++i) x[i] = k[i];
  for (int t = 0; t < n; ++t) {
    const int i = t % buf.batch;
    if (i == 0) law.draw_steps(s, buf.steps.data(), std::min(buf.batch, n - t));
    law.apply(buf.steps.data() + std::size_t(i) * m, x);
    // Orthogonal steps keep |x| = |k|; renormalising every block of steps
    // removes the O(n eps) drift without changing the law.
    if ((t + 1) % kReorthonormalizeEvery == 0) {
      double n2 = 0, k2 = 0;
      for (int i = 0; i < d; ++i) n2 += x[i] * x[i], k2 += k[i] * k[i];
      const double c = std::sqrt(k2 / n2);
      for (int i = 0; i < d; ++i) x[i] *= c;
    }
    double dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int i = 0; i < d; ++i) dot += q[i] * x[i];
    scores[t] = dot;
  }
}

}  // namespace routelab
