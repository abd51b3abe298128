#include "sims/device_walks.h"

#include <algorithm>
#include <mutex>

#include "cuda/device.h"
#include "cuda/walks.h"  // plain C++; defined by lib/cuda/walks.cu in a CUDA build

namespace routelab {

std::string gpu_family_refusal(const Params& p) {
  if (make_step_law(p)->kernel()) return "";
  return "family " + p.at("family") + " has no GPU path (ported to the GPU: " + gpu_family_names() + "); use --device cpu";
}

namespace {

cuda::SampleRange range(const SimContext& ctx, unsigned purpose, long long first, long long count) {
  return {ctx.seed, sample_stream(ctx.point, 0, purpose), first, count};
}

// `size` outputs from call(kernel, out) on the GPU; refused for a law that has
// no kernel or a build without CUDA (where `call`, never called, is never
// emitted, so the cuda:: functions it names need no definition).
template <class Call>
std::vector<double> on_gpu(const StepLaw& law, std::size_t size, Call&& call) {
  const auto k = law.kernel();
  if (!k) throw cuda::DeviceError("--device cuda: family " + law.family() + " has no GPU path");
  std::vector<double> out(size);
#ifdef ROUTELAB_WITH_CUDA
  call(*k, out.data());
#else
  throw cuda::DeviceError("--device cuda: " + cuda::cuda_unavailable_reason());
#endif
  return out;
}

}  // namespace

std::vector<double> gpu_step_matrices(const StepLaw& law, const SimContext& ctx, long long first, long long count) {
  return on_gpu(law, std::size_t(count) * law.dim() * law.dim(), [&](const StepKernel& k, double* out) {
    cuda::step_matrices(k, range(ctx, 0, first, count), out);
  });
}

// Windows of kWindow samples, two kept: the threads of parallel_moments work
// inside one batch of 64 chunks of 1024 samples, which touches at most two
// windows, so no window is made twice within a pass.
struct GpuStepMatrices::State {
  static constexpr long long kWindow = 1 << 18;
  struct Window {
    long long first = -1;
    long long used = 0;
    std::vector<double> matrices;
  };
  State(const StepLaw& law, const SimContext& ctx) : law(law), ctx(ctx) {}
  const StepLaw& law;
  SimContext ctx;
  std::mutex lock;
  Window windows[2];
  long long clock = 0;
};

GpuStepMatrices::GpuStepMatrices(const StepLaw& law, const SimContext& ctx)
    : state_(std::make_unique<State>(law, ctx)) {}
GpuStepMatrices::~GpuStepMatrices() = default;

void GpuStepMatrices::get(long long i, double* out) {
  State& s = *state_;
  const std::size_t dd = std::size_t(s.law.dim()) * s.law.dim();
  std::lock_guard<std::mutex> guard(s.lock);
  const long long first = i / State::kWindow * State::kWindow;
  State::Window* w = s.windows[0].first == first ? &s.windows[0] : s.windows[1].first == first ? &s.windows[1] : nullptr;
  if (!w) {  // replace the least recently used
    w = s.windows[0].used <= s.windows[1].used ? &s.windows[0] : &s.windows[1];
    w->matrices = gpu_step_matrices(s.law, s.ctx, first, std::min(State::kWindow, s.ctx.samples - first));
    w->first = first;
  }
  w->used = ++s.clock;
  const double* m = w->matrices.data() + std::size_t(i - first) * dd;
  std::copy(m, m + dd, out);
}

std::vector<double> gpu_walk_matrix_records(const StepLaw& law, const SimContext& ctx, const std::vector<long long>& ns) {
  return on_gpu(law, std::size_t(ctx.samples) * 4 * ns.size(), [&](const StepKernel& k, double* out) {
    cuda::walk_matrix_records(k, range(ctx, 0, 0, ctx.samples), ns, out);
  });
}

std::vector<double> gpu_walk_score_records(const StepLaw& law, const SimContext& ctx, const std::vector<long long>& ns,
                                           unsigned purpose) {
  return on_gpu(law, std::size_t(ctx.samples) * ns.size(), [&](const StepKernel& k, double* out) {
    cuda::walk_score_records(k, range(ctx, purpose, 0, ctx.samples), ns, out);
  });
}

std::vector<double> gpu_so2_mean_cos_records(const StepLaw& law, const SimContext& ctx,
                                             const std::vector<long long>& ns, unsigned purpose) {
  return on_gpu(law, std::size_t(ctx.samples) * ns.size(), [&](const StepKernel& k, double* out) {
    cuda::so2_mean_cos_records(k, range(ctx, purpose, 0, ctx.samples), ns, out);
  });
}

std::vector<double> gpu_far_mass_routes(const StepLaw& law, const SimContext& ctx, long long routes, int K,
                                        double lambda, const std::vector<long long>& ML, int chunk, unsigned purpose) {
  return on_gpu(law, std::size_t(routes) * 2 * ML.size(), [&](const StepKernel& k, double* out) {
    cuda::far_mass_routes(k, range(ctx, purpose, 0, routes), K, lambda, ML, chunk, out);
  });
}

}  // namespace routelab
