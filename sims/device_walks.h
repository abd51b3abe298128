// The sims' GPU paths (`routelab sim ... --device cuda`): the per-sample
// quantities of each sim's fill, made by lib/cuda/walks.h on the same streams
// (sample i of the context's point reads sample_stream(point, i, purpose)),
// in the same layout, so each sim reduces them to rows with its own code.
// In a build without CUDA these throw cuda::DeviceError; the runner refuses
// --device cuda before any of them is reached.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "groups/step_law.h"
#include "sims/sim.h"

namespace routelab {

// "" when the point's step law runs on the GPU; otherwise one line saying
// which family does not and which do.
std::string gpu_family_refusal(const Params& p);

// spectral-gap: the step matrices of samples first .. first + count - 1,
// column-major d x d each.
std::vector<double> gpu_step_matrices(const StepLaw& law, const SimContext& ctx, long long first, long long count);

// Sample i's step matrix for a reduction that asks for samples one at a time
// (estimate_matrix_means): made on the GPU a window of samples at a time,
// kept until a sample outside it is asked for. Thread-safe.
class GpuStepMatrices {
 public:
  GpuStepMatrices(const StepLaw& law, const SimContext& ctx);
  ~GpuStepMatrices();
  // One owner of the device windows: a copy would share them.
  GpuStepMatrices(const GpuStepMatrices&) = delete;
  GpuStepMatrices& operator=(const GpuStepMatrices&) = delete;
  void get(long long i, double* out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// haar-mixing: per sample, at each ns[c], P_n(0,0), tr P_n, (tr P_n)^2, [det P_n > 0].
std::vector<double> gpu_walk_matrix_records(const StepLaw& law, const SimContext& ctx, const std::vector<long long>& ns);
// score-tail: per sample e_1^T P_n e_1 at each ns[c] (stream purpose `purpose`).
std::vector<double> gpu_walk_score_records(const StepLaw& law, const SimContext& ctx, const std::vector<long long>& ns,
                                           unsigned purpose);
// score-tail, so2: per sample S_n = (1/B) sum_b cos Theta_{n,b} at each ns[c].
std::vector<double> gpu_so2_mean_cos_records(const StepLaw& law, const SimContext& ctx,
                                             const std::vector<long long>& ns, unsigned purpose);
// far-mass: per route, rho_D at each ML[c], then a_D at each.
std::vector<double> gpu_far_mass_routes(const StepLaw& law, const SimContext& ctx, long long routes, int K,
                                        double lambda, const std::vector<long long>& ML, int chunk, unsigned purpose);

}  // namespace routelab
