// Walks of two step laws on O(d), and their spectral gap beta = ||E M||_op
// measured against the closed form (Assumption 1; Examples 1 and 2).
//
// A walk multiplies i.i.d. steps, P_t = M_t ... M_1. For these laws E[M] is
// normal, so ||E P_t|| = ||E M||^t = beta^t: the mean of the walk decays at
// the rate of the gap. The program draws `samples` walks of `steps` steps,
// estimates E[P_t] for every t with the library's estimator, and prints the
// measured norm beside beta^t. Sample i reads its own Philox stream (seed, i),
// so the output is the same at any thread count.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <omp.h>

#include "base/version.h"     // ROUTELAB_VERSION_STRING
#include "groups/family.h"    // make_step_law: any family by name, as `routelab --family`
#include "groups/walk.h"      // walk_matrix
#include "stats/matrix_mean.h"  // estimate_matrix_means: entrywise and split-sample norm

using namespace routelab;

void print_gap(const Params& params, long long samples, int steps, uint64_t seed) {
  const std::unique_ptr<StepLaw> law = make_step_law(params);  // throws BadInput on a bad parameter
  const int d = law->dim(), dd = d * d, threads = omp_get_max_threads();
  // Per-thread scratch: the walk's matrix and its drawn step.
  std::vector<Mat> walks(threads, Mat(d, d));
  std::vector<std::vector<double>> step(threads);
  // Writes P_1 .. P_steps of walk i, column-major, one after another.
  auto sample = [&](long long i, double* out, int t) {
    Stream s(seed, uint64_t(i));
    walks[t].setIdentity();
    walk_matrix(*law, s, walks[t], steps, step[t], [&](int n, const Mat& P) {
      std::copy(P.data(), P.data() + dd, out + (n - 1) * dd);
    });
  };
  const std::vector<MatrixMeanEstimate> e = estimate_matrix_means(samples, d, steps, threads, sample);
  const double beta = *law->gap();  // these families have a closed-form E[M]
  std::printf("%s, d = %d: %s\n", law->family().c_str(), d, law->closed_form_text().c_str());
  for (int t = 1; t <= steps; ++t)
    std::printf("  t = %d  ||E P_t|| = %.5f +- %.5f   beta^t = %.5f\n", t, e[t - 1].norm, e[t - 1].norm_stderr,
                std::pow(beta, t));
}

int main() {
  std::printf("routelab %s\n", ROUTELAB_VERSION_STRING);
  // Example 1: two SO(2) blocks, angle increments 0.7 + U[-1, 1]: beta = sin(1)/1.
  print_gap({{"family", "so2"}, {"d", "4"}, {"a", "1"}, {"omega", "0.7"}}, 200000, 3, 1);
  // Example 2: reflections in uniform directions (the sphere) of R^5: beta = |1 - 2/5|.
  print_gap({{"family", "householder"}, {"d", "5"}, {"normals", "sphere"}}, 200000, 3, 2);
}
