// Batch walks on the GPU (walks.h): one thread per sample, each holding its
// own Stream and stepping with groups/step_kernels.h, the functions the CPU
// step laws call. A window of W samples keeps its vectors interleaved
// (element e of sample w at scratch[e W + w], groups/step_kernels.h's
// Strided), so a warp's loads and stores of one element coalesce.
#include "cuda/walks.h"

#include <algorithm>
#include <stdexcept>

#include "attention/far_mass.h"
#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

constexpr int kWalkThreads = 128;
// Device memory per window: scratch and outputs of all its samples.
constexpr std::size_t kWindowBytes = std::size_t(1) << 30;

// The law with its parameter arrays (SO(2) half-widths, Gaussian normals'
// standard deviations, skewexp's Q and lambdas, the SO(3) heat angle table)
// copied to the device, one after another in one buffer.
struct DeviceLaw {
  DeviceBuffer<double> params;
  StepKernel k;
  explicit DeviceLaw(const StepKernel& host) : k(host) {
    std::vector<double> p;
    auto append = [&p](const double* a, std::size_t n) {
      const std::size_t at = p.size();
      if (a) p.insert(p.end(), a, a + n);
      return at;
    };
    const std::size_t widths_at = append(host.widths, std::size_t(host.d / 2));
    const std::size_t sigma_at = append(host.sigma, std::size_t(host.d));
    const std::size_t table_at = append(host.table, std::size_t(host.table_size));
    params = DeviceBuffer<double>(p);
    if (host.widths) k.widths = params.data() + widths_at;
    if (host.sigma) k.sigma = params.data() + sigma_at;
    if (host.table) k.table = params.data() + table_at;
  }
};

// One window of samples as a kernel sees it: samples first .. first + n - 1
// of streams base | i, vectors interleaved with stride W (>= n), scratch and
// outputs in device memory.
struct Window {
  uint64_t seed, base;
  long long first, n, W;
  double* scratch;
  double* out;
};

// Runs launch(window) on windows of at most W samples (W fixed, so every
// window uses the same strides), each sample with `scratch_doubles` of
// scratch and `per_out` outputs, and copies the outputs of sample i to
// out[(i - r.first) per_out ..].
template <class Launch>
void over_windows(const SampleRange& r, std::size_t scratch_doubles, std::size_t per_out, double* out,
                  Launch&& launch) {
  if (r.count <= 0) return;
  if (r.first < 0 || uint64_t(r.first + r.count) > (uint64_t(1) << 40))
    throw std::invalid_argument("cuda walks: sample indices must lie in [0, 2^40)");
  const std::size_t per_sample = (scratch_doubles + per_out) * sizeof(double);
  const long long W = std::clamp<long long>((long long)(kWindowBytes / per_sample), 1, r.count);
  DeviceBuffer<double> scratch(std::size_t(W) * scratch_doubles), dout(std::size_t(W) * per_out);
  for (long long w0 = 0; w0 < r.count; w0 += W) {
    const long long n = std::min(W, r.count - w0);
    launch(Window{r.seed, r.base, r.first + w0, n, W, scratch.data(), dout.data()});
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(out + std::size_t(w0) * per_out, dout.data(), std::size_t(n) * per_out * sizeof(double),
                          cudaMemcpyDeviceToHost));
  }
}

unsigned walk_blocks(long long n) { return unsigned((n + kWalkThreads - 1) / kWalkThreads); }

void require_lengths(const std::vector<long long>& ns, const char* what) {
  if (ns.empty()) throw std::invalid_argument(std::string("cuda walks: ") + what + " is empty");
  for (std::size_t c = 0; c < ns.size(); ++c)
    if (ns[c] < 1 || (c > 0 && ns[c] <= ns[c - 1]))
      throw std::invalid_argument(std::string("cuda walks: ") + what + " must be positive and strictly ascending");
}

// This thread's sample within the window, or -1 past its end.
__device__ inline int64_t window_sample(const Window& a) {
  const int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  return w < a.n ? w : -1;
}

// Sample w's stream.
__device__ inline Stream window_stream(const Window& a, int64_t w) {
  return Stream(a.seed, a.base | uint64_t(a.first + w));
}

// Sample w's vector starting at element e0 of its scratch.
__device__ inline Strided scratch_vector(const Window& a, int64_t e0, int64_t w) {
  return {a.scratch + e0 * a.W + w, a.W};
}

// walk_scores with q = e_1 from x, which holds k on entry: after each step
// t = 1..n, on_score(t, e_1^T x_t); |x| is restored to |k| every
// kReorthonormalizeEvery steps.
template <class OnScore>
__device__ void walk_e1_scores(const StepKernel& law, Stream& s, Strided step, Strided x, long long n,
                               OnScore&& on_score) {
  const int d = law.d;
  double k2 = 0;
  for (int i = 0; i < d; ++i) k2 += x[i] * x[i];
  for (long long t = 0; t < n; ++t) {
    kernel_draw(law, s, step);
    kernel_apply(law, step, x);
    if ((t + 1) % kReorthonormalizeEvery == 0) {
      double n2 = 0;
      for (int i = 0; i < d; ++i) n2 += x[i] * x[i];
      const double c = sqrt(k2 / n2);
      for (int i = 0; i < d; ++i) x[i] *= c;
    }
    on_score(t + 1, x[0]);
  }
}

// ---------------------------------------------------------------------------
// Kernels. Every one: sample i = first + w of the window, stream base | i.

__global__ void __launch_bounds__(kWalkThreads)
    step_matrices_kernel(StepKernel law, Window a) {
  const int64_t w = window_sample(a);
  if (w < 0) return;
  Stream s = window_stream(a, w);
  const Strided step = scratch_vector(a, 0, w);
  kernel_draw(law, s, step);
  const int d = law.d;
  double* m = a.out + w * int64_t(d) * d;
  set_identity(m, d);
  for (int j = 0; j < d; ++j) kernel_apply(law, step, m + int64_t(j) * d);
}

__global__ void __launch_bounds__(kWalkThreads)
    walk_matrix_kernel(StepKernel law, Window a, const long long* ns, int C) {
  const int64_t w = window_sample(a);
  if (w < 0) return;
  const int d = law.d;
  const int64_t dd = int64_t(d) * d;
  const Strided P = scratch_vector(a, 0, w), A = scratch_vector(a, dd, w);
  const Strided row = scratch_vector(a, 2 * dd, w), step = scratch_vector(a, 2 * dd + d, w);
  set_identity(P, d);
  Stream s = window_stream(a, w);
  double* o = a.out + w * 4 * C;
  int c = 0;
  for (long long t = 1; t <= ns[C - 1]; ++t) {
    kernel_draw(law, s, step);
    for (int j = 0; j < d; ++j) kernel_apply(law, step, offset(P, j * d));
    if (t % kReorthonormalizeEvery == 0) polar_correct_if_drifted(P, A, row, d, kDriftTolerance);
    if (c < C && t == ns[c]) {
      double tr = 0;
      for (int i = 0; i < d; ++i) tr += P[int64_t(i) * d + i];
      o[4 * c] = P[0];
      o[4 * c + 1] = tr;
      o[4 * c + 2] = tr * tr;
      o[4 * c + 3] = determinant_positive(P, A, d) ? 1.0 : 0.0;
      ++c;
    }
  }
}

__global__ void __launch_bounds__(kWalkThreads)
    walk_scores_kernel(StepKernel law, Window a, const long long* ns, int C) {
  const int64_t w = window_sample(a);
  if (w < 0) return;
  const int d = law.d;
  const Strided x = scratch_vector(a, 0, w), step = scratch_vector(a, d, w);
  for (int i = 0; i < d; ++i) x[i] = i == 0 ? 1.0 : 0.0;
  Stream s = window_stream(a, w);
  double* o = a.out + w * C;
  int c = 0;
  walk_e1_scores(law, s, step, x, ns[C - 1], [&](long long t, double score) {
    if (c < C && t == ns[c]) o[c++] = score;
  });
}

// so2_cos_walk's phase recursion from Theta_0 = 0 with weights 1/B; the mean
// cosine is formed only at the recorded lengths.
__global__ void __launch_bounds__(kWalkThreads)
    so2_mean_cos_kernel(StepKernel law, Window a, const long long* ns, int C) {
  const int64_t w = window_sample(a);
  if (w < 0) return;
  const int B = law.d / 2;
  const double omega = law.omega, weight = 1.0 / B;
  const Strided theta = scratch_vector(a, 0, w);
  bool big = false;
  for (int b = 0; b < B; ++b) {
    big |= fabs(omega) + law.widths[b] > M_PI;
    theta[b] = wrap_phase(0.0);
  }
  Stream s = window_stream(a, w);
  double* o = a.out + w * C;
  int c = 0;
  for (long long t = 1; t <= ns[C - 1]; ++t) {
    for (int b = 0; b < B; ++b) {
      const double half = law.widths[b], lo = -half, width = half - (-half);
      const double psi = omega + (lo + width * s.uniform());
      theta[b] = wrap_phase(theta[b] + (big ? wrap_phase(psi) : psi));
    }
    if (c < C && t == ns[c]) {
      double acc = 0;
      for (int b = 0; b < B; ++b) acc += weight * cos(theta[b]);
      o[c++] = acc;
    }
  }
}

// stream_route_far_mass: the walk from k = e_1 restarted, renormalised, from
// its end point every `chunk` steps; K near steps, then the far set.
__global__ void __launch_bounds__(kWalkThreads)
    far_mass_kernel(StepKernel law, Window a, int K, double lambda, const long long* ML, int C, int chunk) {
  const int64_t w = window_sample(a);
  if (w < 0) return;
  const int d = law.d;
  const Strided start = scratch_vector(a, 0, w), x = scratch_vector(a, d, w), step = scratch_vector(a, 2 * d, w);
  for (int i = 0; i < d; ++i) start[i] = i == 0 ? 1.0 : 0.0;
  Stream s = window_stream(a, w);
  auto walk_chunk = [&](long long m, auto&& on_score) {
    for (int i = 0; i < d; ++i) x[i] = start[i];
    walk_e1_scores(law, s, step, x, m, on_score);
    double n2 = 0;
    for (int i = 0; i < d; ++i) n2 += x[i] * x[i];
    const double inv = 1.0 / sqrt(n2);
    for (int i = 0; i < d; ++i) start[i] = x[i] * inv;
  };
  FarMassAccumulator acc;
  for (int j = 0; j < K; ++j) acc.add_near(lambda);
  for (long long done = 0; done < K; done += chunk)
    walk_chunk(min((long long)chunk, K - done), [](long long, double) {});
  double* o = a.out + w * 2 * C;
  int c = 0;
  for (long long done = 0; done < ML[C - 1];) {
    walk_chunk(min((long long)chunk, ML[C - 1] - done), [&](long long, double score) {
      acc.add_far(lambda * score);
      ++done;
      if (c < C && done == ML[c]) {
        o[c] = acc.far_mass();
        o[C + c] = acc.far_norm();
        ++c;
      }
    });
  }
}

}  // namespace

void step_matrices(const StepKernel& law, const SampleRange& r, double* out) {
  const DeviceLaw dl(law);
  over_windows(r, std::size_t(law.step_size()), std::size_t(law.d) * law.d, out, [&](const Window& a) {
    step_matrices_kernel<<<walk_blocks(a.n), kWalkThreads>>>(dl.k, a);
  });
}

void walk_matrix_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out) {
  require_lengths(ns, "ns");
  const DeviceLaw dl(law);
  const DeviceBuffer<long long> dns(ns);
  const int C = int(ns.size());
  const std::size_t dd = std::size_t(law.d) * law.d;
  over_windows(r, 2 * dd + law.d + law.step_size(), 4 * std::size_t(C), out, [&](const Window& a) {
    walk_matrix_kernel<<<walk_blocks(a.n), kWalkThreads>>>(dl.k, a, dns.data(), C);
  });
}

void walk_score_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out) {
  require_lengths(ns, "ns");
  const DeviceLaw dl(law);
  const DeviceBuffer<long long> dns(ns);
  const int C = int(ns.size());
  over_windows(r, std::size_t(law.d + law.step_size()), std::size_t(C), out, [&](const Window& a) {
    walk_scores_kernel<<<walk_blocks(a.n), kWalkThreads>>>(dl.k, a, dns.data(), C);
  });
}

void so2_mean_cos_records(const StepKernel& law, const SampleRange& r, const std::vector<long long>& ns, double* out) {
  if (law.family != KernelFamily::so2) throw std::invalid_argument("cuda so2_mean_cos_records: not an so2 law");
  require_lengths(ns, "ns");
  const DeviceLaw dl(law);
  const DeviceBuffer<long long> dns(ns);
  const int C = int(ns.size());
  over_windows(r, std::size_t(law.d / 2), std::size_t(C), out, [&](const Window& a) {
    so2_mean_cos_kernel<<<walk_blocks(a.n), kWalkThreads>>>(dl.k, a, dns.data(), C);
  });
}

void far_mass_routes(const StepKernel& law, const SampleRange& r, int K, double lambda, const std::vector<long long>& ML,
                     int chunk, double* out) {
  require_lengths(ML, "ML");
  if (K < 1 || chunk < 1) throw std::invalid_argument("cuda far_mass_routes: K and chunk must be >= 1");
  const DeviceLaw dl(law);
  const DeviceBuffer<long long> dml(ML);
  const int C = int(ML.size());
  over_windows(r, std::size_t(2 * law.d + law.step_size()), 2 * std::size_t(C), out, [&](const Window& a) {
    far_mass_kernel<<<walk_blocks(a.n), kWalkThreads>>>(dl.k, a, K, lambda, dml.data(), C, chunk);
  });
}

}  // namespace routelab::cuda
