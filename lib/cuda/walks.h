// Batch walks on the GPU for the vector-propagation sims (spectral-gap,
// haar-mixing, score-tail, far-mass): one GPU thread per independent sample,
// drawing Stream(seed, base | i) for sample i exactly as the CPU sim does, and
// stepping with the shared draw and apply of groups/step_kernels.h. Each
// function returns the per-sample quantities the CPU sim computes in its fill
// (the same layout), so the sim's own reduction turns them into rows.
//
// Agreement with the CPU: the words drawn are the same; the values differ only
// by rounding (CUDA's log, sin, cos against libm's and libmvec's, FMA
// contraction, sums in another order, the polar factor by Newton-Schulz
// instead of an SVD, should a walk drift past 1e-12, which those of at most
// 1e5 steps do not), about 1e-16 per step, growing linearly along a walk;
// about 1e-15 per step where a draw takes a matrix exponential (lieball, the
// heat walk at d >= 4: a Taylor polynomial against Eigen's Pade approximant,
// groups/step_kernels_dense.h). tests/test_gpu_sims.cpp holds every sim's
// rows to 1e-9 relative.
//
// Plain C++: no CUDA header is needed to include this. Host arrays in and
// out; device memory is allocated per call, in windows of samples sized to
// stay under about 1 GiB.
#pragma once

#include <cstdint>
#include <vector>

#include "groups/step_kernels.h"

namespace routelab::cuda {

// Samples first .. first + count - 1 of one parameter point: sample i reads
// Stream(seed, base | i) (base = sample_stream(point, 0, purpose), i < 2^40).
struct SampleRange {
  uint64_t seed = 1;
  uint64_t base = 0;
  long long first = 0, count = 0;
};

// spectral-gap: out[(i - first) d^2 ..] = the step M of sample i as a
// column-major d x d matrix (StepLaw::matrix of one draw).
void step_matrices(const StepKernel& law, const SampleRange& r, double* out);

// haar-mixing: P_n = M_n ... M_1 from P_0 = I up to max(ns) steps (ns strictly
// ascending), with walk_matrix's reorthonormalisation every
// kReorthonormalizeEvery steps; at n = ns[c],
// out[(i - first) 4C + 4c + (0, 1, 2, 3)] = P_n(0, 0), tr P_n, (tr P_n)^2,
// [det P_n > 0] (C = ns.size()).
void walk_matrix_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out);

// score-tail: walk_scores from k = e_1 with q = e_1: out[(i - first) C + c] =
// e_1^T P_n e_1 at n = ns[c] (ns strictly ascending).
void walk_score_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out);

// score-tail, SO(2) blocks: so2_mean_cos_walk's S_n = (1/B) sum_b cos
// Theta_{n,b}: out[(i - first) C + c] = S_{ns[c]}.
void so2_mean_cos_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out);

// far-mass: route i of stream_route_far_mass (K near logits +lambda, the walk
// restarted from its renormalised end point every `chunk` steps):
// out[(i - first) 2C + c] = rho_D and out[(i - first) 2C + C + c] = a_D at
// M_L = ML[c] (strictly ascending).
void far_mass_routes(const StepKernel& law, const SampleRange& r, int K, double lambda, const std::vector<long long>& ML,
                     int chunk, double* out);

}  // namespace routelab::cuda
