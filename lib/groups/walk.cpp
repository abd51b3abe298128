#include "groups/walk.h"

#include <algorithm>
#include <cmath>

namespace routelab {

void walk_scores(const StepLaw& law, Stream& s, const double* q, const double* k, int n, double* scores,
                 WalkBuffers& buf) {
  const int d = law.dim(), m = law.step_size();
  double* x = buf.x.data();
  for (int i = 0; i < d; ++i) x[i] = k[i];
  const double *step = nullptr, *drawn = nullptr;  // the next drawn step, and the end of the batch
  for (int t = 0; t < n; ++t) {
    if (step == drawn) {
      const int count = std::min(buf.batch, n - t);
      law.draw_steps(s, buf.steps.data(), count);
      step = buf.steps.data();
      drawn = step + std::size_t(count) * m;
    }
    law.apply(step, x);
    step += m;
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

void walk_products_at(const StepLaw& law, Stream& s, const std::vector<long long>& at, double* out, Mat& P,
                      std::vector<double>& step) {
  const int d = law.dim();
  const std::size_t dd = std::size_t(d) * d;
  P.setIdentity(d, d);
  std::size_t next = 0;
  walk_matrix(law, s, P, int(at.back()), step, [&](int t, const Mat& Pt) {
    if (next < at.size() && t == at[next]) {
      std::copy(Pt.data(), Pt.data() + dd, out + next * dd);
      ++next;
    }
  });
}

}  // namespace routelab
