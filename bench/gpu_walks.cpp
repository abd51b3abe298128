// bench_gpu_walks: walk-steps per second of the sims' walks on the CPU
// (OpenMP over walks, as the sims run them: parallel_fill) and on the GPU
// (lib/cuda/walks.h), on the same streams, side by side, with their ratio
// and the largest difference between the two results (a check that both ran
// the same walks).
//
//   scores   Householder score walks, uniform normals, d = 16, e_1^T P_n e_1
//            at n = 1024 (score-tail's walk)
//   phases   SO(2) phases, B = 32, S_n = mean_b cos Theta_{n,b} at n = 1024
//            (score-tail's so2 walk)
//   matrix   Householder matrix walks, d = 8, P_n(0,0), tr, det at n = 64
//            (haar-mixing's walk)
//   farmass  Householder far-mass routes, d = 8, M_L = 1e5 (far-mass's routes;
//            one long walk per route, so few threads)
//
// Usage: bench_gpu_walks [--workload scores|phases|matrix|farmass|all]
//                        [--scale s] [--threads T]
// Without a GPU (or in a build without CUDA) the GPU half is skipped with a
// line saying why; the CPU half always runs. Prints `key=value` lines.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/device.h"
#include "groups/householder.h"
#include "groups/so2.h"
#include "groups/so2_phases.h"
#include "groups/walk.h"
#include "sims/far_mass.h"
#include "stats/moments.h"
#ifdef ROUTELAB_WITH_CUDA
#include "cuda/walks.h"
#endif

using namespace routelab;

namespace {

constexpr uint64_t kSeed = 20240611;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Workload {
  std::string name;
  long long walks;
  double steps_per_walk;
  std::unique_ptr<StepLaw> law;
  int outputs;  // per walk
  // The CPU fill of one walk (the sim's code) and the GPU call for all.
  std::function<void(long long i, double* out)> cpu = nullptr;
  std::function<void(double* out)> gpu = nullptr;
};

void run(const Workload& w, int threads, bool gpu_ok, const std::string& why_not) {
  const double steps = double(w.walks) * w.steps_per_walk;
  double t0 = now();
  const std::vector<double> cpu = parallel_fill(w.walks, w.outputs, threads, [&](long long i, double* o, int) { w.cpu(i, o); });
  const double cpu_s = now() - t0;
  std::printf("%s walks=%lld steps_per_walk=%.0f cpu_threads=%d cpu_s=%.4f cpu_steps_per_s=%.4g", w.name.c_str(),
              w.walks, w.steps_per_walk, threads, cpu_s, steps / cpu_s);
  if (!gpu_ok) {
    std::printf(" gpu=skipped\n");
    std::fprintf(stderr, "bench_gpu_walks: %s: GPU half skipped: %s\n", w.name.c_str(), why_not.c_str());
    return;
  }
  std::vector<double> gpu(cpu.size());
  w.gpu(gpu.data());  // warm-up: context creation and module load
  t0 = now();
  w.gpu(gpu.data());
  const double gpu_s = now() - t0;
  double diff = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) diff = std::max(diff, std::abs(cpu[i] - gpu[i]));
  std::printf(" gpu_s=%.4f gpu_steps_per_s=%.4g gpu_speedup=%.2f max_abs_diff=%.3g\n", gpu_s, steps / gpu_s,
              cpu_s / gpu_s, diff);
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "all";
  double scale = 1.0;
  int threads = omp_get_max_threads();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_gpu_walks: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--workload") which = argv[++i];
    else if (a == "--scale") scale = std::atof(argv[++i]);
    else if (a == "--threads") threads = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "bench_gpu_walks: unknown flag %s; accepts --workload scores|phases|matrix|farmass|all, "
                           "--scale s, --threads T\n", a.c_str());
      return 2;
    }
  }
  const bool gpu_ok = cuda::cuda_available();
  const std::string why_not = gpu_ok ? "" : cuda::cuda_unavailable_reason();
  auto walks = [&](long long n) { return std::max(1LL, (long long)(double(n) * scale)); };
#ifdef ROUTELAB_WITH_CUDA
  auto range = [](long long count) { return cuda::SampleRange{kSeed, 0, 0, count}; };
#endif

  std::vector<Workload> all;
  {  // score-tail's Householder walk
    Workload w{"scores", walks(1 << 16), 1024, std::make_unique<Householder>(16, NormalSampler(NormalLaw::sphere, 16, 1.0)), 1};
    const StepLaw& law = *w.law;
    const std::vector<long long> ns = {1024};
    w.cpu = [&law](long long i, double* o) {
      thread_local std::vector<double> q, path;
      thread_local std::unique_ptr<WalkBuffers> buf;
      if (!buf) q.assign(16, 0.0), q[0] = 1, path.resize(1024), buf = std::make_unique<WalkBuffers>(law);
      Stream s(kSeed, uint64_t(i));
      walk_scores(law, s, q.data(), q.data(), 1024, path.data(), *buf);
      o[0] = path[1023];
    };
#ifdef ROUTELAB_WITH_CUDA
    w.gpu = [&law, ns, n = w.walks, range](double* out) { cuda::walk_score_records(*law.kernel(), range(n), ns, out); };
#endif
    all.push_back(std::move(w));
  }
  {  // score-tail's so2 phase walk
    Workload w{"phases", walks(1 << 14), 1024, std::make_unique<So2Blocks>(64, std::vector<double>(32, 0.5), 0.3), 1};
    const StepLaw& law = *w.law;
    const std::vector<long long> ns = {1024};
    w.cpu = [&law](long long i, double* o) {
      thread_local std::vector<double> path(1024);
      Stream s(kSeed, uint64_t(i));
      so2_mean_cos_walk(dynamic_cast<const So2Blocks&>(law), s, 1024, path.data());
      o[0] = path[1023];
    };
#ifdef ROUTELAB_WITH_CUDA
    w.gpu = [&law, ns, n = w.walks, range](double* out) { cuda::so2_mean_cos_records(*law.kernel(), range(n), ns, out); };
#endif
    all.push_back(std::move(w));
  }
  {  // haar-mixing's matrix walk
    Workload w{"matrix", walks(1 << 15), 64, std::make_unique<Householder>(8, NormalSampler(NormalLaw::sphere, 8, 1.0)), 4};
    const StepLaw& law = *w.law;
    const std::vector<long long> ns = {64};
    w.cpu = [&law](long long i, double* o) {
      thread_local std::vector<double> step;
      Stream s(kSeed, uint64_t(i));
      Mat P = Mat::Identity(8, 8);
      walk_matrix(law, s, P, 64, step, [](int, const Mat&) {});
      o[0] = P(0, 0), o[1] = P.trace(), o[2] = o[1] * o[1], o[3] = P.determinant() > 0;
    };
#ifdef ROUTELAB_WITH_CUDA
    w.gpu = [&law, ns, n = w.walks, range](double* out) { cuda::walk_matrix_records(*law.kernel(), range(n), ns, out); };
#endif
    all.push_back(std::move(w));
  }
  {  // far-mass's routes
    Workload w{"farmass", walks(256), 1e5, std::make_unique<Householder>(8, NormalSampler(NormalLaw::sphere, 8, 1.0)), 2};
    const StepLaw& law = *w.law;
    const std::vector<long long> ML = {100000};
    w.cpu = [&law, ML](long long i, double* o) {
      thread_local std::unique_ptr<FarStreamBuffers> buf;
      if (!buf) buf = std::make_unique<FarStreamBuffers>(law);
      Stream s(kSeed, uint64_t(i));
      stream_route_far_mass(law, s, 1, 2.0, ML, *buf, o, o + 1);
    };
#ifdef ROUTELAB_WITH_CUDA
    w.gpu = [&law, ML, n = w.walks, range](double* out) {
      cuda::far_mass_routes(*law.kernel(), range(n), 1, 2.0, ML, FarStreamBuffers::kChunk, out);
    };
#endif
    all.push_back(std::move(w));
  }
  bool ran = false;
  for (const auto& w : all)
    if (which == "all" || which == w.name) {
      run(w, threads, gpu_ok, why_not);
      ran = true;
    }
  if (!ran) {
    std::fprintf(stderr, "bench_gpu_walks: unknown workload %s; accepts scores|phases|matrix|farmass|all\n", which.c_str());
    return 2;
  }
  return 0;
}
