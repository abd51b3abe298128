// Walks: products of i.i.d. steps from one law, propagated on a vector (the
// fast path for scores q^T P_n k) or accumulated as a matrix (for E[P_n] and
// traces). One walk reads one stream, so it is the same on any thread.
#pragma once

#include <algorithm>
#include <vector>

#include "groups/step_law.h"

namespace routelab {

// Scratch for one walk; reuse it across walks on one thread. Steps are
// drawn `batch` at a time, about kWalkDrawDoubles a batch, so a law that
// draws many steps at once pays its per-call costs once a batch.
constexpr int kWalkDrawDoubles = 2048;
struct WalkBuffers {
  int batch;
  std::vector<double> steps, x;
  explicit WalkBuffers(const StepLaw& law)
      : batch(std::max(1, kWalkDrawDoubles / law.step_size())),
        steps(std::size_t(batch) * law.step_size()),
        x(law.dim()) {}
};

// x_t = M_t x_{t-1}, x_0 = k; scores[t-1] = q . x_t for t = 1..n.
void walk_scores(const StepLaw& law, Stream& s, const double* q, const double* k, int n, double* scores,
                 WalkBuffers& buf);

// P <- M_n ... M_1 P, reorthonormalising every kReorthonormalizeEvery steps;
// calls on_step(t, P) after each step t = 1..n when given.
template <class OnStep>
void walk_matrix(const StepLaw& law, Stream& s, Mat& P, int n, std::vector<double>& step, OnStep&& on_step) {
  step.resize(law.step_size());
  for (int t = 1; t <= n; ++t) {
    law.draw(s, step.data());
    law.apply_matrix(step.data(), P);
    if (t % kReorthonormalizeEvery == 0) reorthonormalize_if_drifted(P);
    on_step(t, P);
  }
}

// One walk's products P_t = M_t ... M_1 at each t of `at` (ascending, each
// at least 1), as d x d matrices in Eigen's column-major layout, back to back
// in `out`. P and step are scratch for the walk (one per thread).
void walk_products_at(const StepLaw& law, Stream& s, const std::vector<long long>& at, double* out, Mat& P,
                      std::vector<double>& step);

}  // namespace routelab
