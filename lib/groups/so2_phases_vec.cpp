// The cosine half of the SO(2) phase kernel (so2_phases.h): a *_vec.cpp, so
// compiled with confined fast-math and -fopenmp-simd, and the loop below calls
// libmvec's vector cos.
#include <cmath>

#include "groups/so2_phases.h"

// glibc declares libmvec's variants only under __FAST_MATH__, which
// -fno-finite-math-only leaves undefined: declare cos's here, for this file.
extern "C" {
__attribute__((__simd__("notinbranch"))) double cos(double) noexcept;
}

namespace routelab {

void cos_weighted_rows(const double* theta, int rows, int B, const double* w, double* S) {
  for (int r = 0; r < rows; ++r) {
    const double* th = theta + std::size_t(r) * B;
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int b = 0; b < B; ++b) acc += w[b] * ::cos(th[b]);
    S[r] = acc;
  }
}

}  // namespace routelab
