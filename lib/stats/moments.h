// Sample means with standard errors, accumulated in parallel but merged in a
// fixed order, so the result does not depend on the thread count.
//
// Samples are split into chunks of kChunk consecutive indices; each chunk is
// summed sequentially (Welford) and chunks are merged in index order (Chan et
// al.), batch by batch so memory stays bounded for any sample count.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

namespace routelab {

// Running mean and sum of squared deviations of k quantities.
struct Moments {
  long long n = 0;
  std::vector<double> mean, m2;

  explicit Moments(int k = 0) : mean(k, 0.0), m2(k, 0.0) {}
  int size() const { return int(mean.size()); }
  void add(const double* x) {
    ++n;
    for (std::size_t j = 0; j < mean.size(); ++j) {
      const double delta = x[j] - mean[j];
      mean[j] += delta / double(n);
      m2[j] += delta * (x[j] - mean[j]);
    }
  }
  void merge(const Moments& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const double na = double(n), nb = double(o.n), nt = na + nb;
    for (std::size_t j = 0; j < mean.size(); ++j) {
      const double delta = o.mean[j] - mean[j];
      mean[j] += delta * nb / nt;
      m2[j] += o.m2[j] + delta * delta * na * nb / nt;
    }
    n += o.n;
  }
  double variance(int j) const { return n > 1 ? m2[j] / double(n - 1) : 0.0; }
  // Standard error of the mean.
  double stderr_of(int j) const { return n > 1 ? std::sqrt(variance(j) / double(n)) : 0.0; }
};

constexpr long long kChunk = 1024;
constexpr long long kChunksPerBatch = 64;

// Calls sample(i, out, thread) for i in [begin, end), out holding k doubles,
// and returns their moments. `thread` indexes per-thread scratch (0..threads-1).
template <class Sample>
Moments parallel_moments(long long begin, long long end, int k, int threads, Sample&& sample) {
  Moments total(k);
  const long long chunks = (end - begin + kChunk - 1) / kChunk;
  std::vector<Moments> batch;
  for (long long c0 = 0; c0 < chunks; c0 += kChunksPerBatch) {
    const long long nc = std::min(kChunksPerBatch, chunks - c0);
    batch.assign(nc, Moments(k));
#pragma omp parallel num_threads(threads)
    {
      std::vector<double> out(k);
      const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
      for (long long c = 0; c < nc; ++c) {
        const long long lo = begin + (c0 + c) * kChunk, hi = std::min(end, lo + kChunk);
        for (long long i = lo; i < hi; ++i) {
          sample(i, out.data(), t);
          batch[c].add(out.data());
        }
      }
    }
    for (auto& m : batch) total.merge(m);
  }
  return total;
}

// Calls fill(i, out, thread) for i in [0, n), out holding k doubles, and
// returns all of them, sample i at [i k, (i + 1) k): for statistics that need
// the whole sample (KS, quantiles, tail counts with exact ties). Prefer it to
// writing into a shared array from parallel_for, so a distributed run can
// gather the rows.
template <class Fill>
std::vector<double> parallel_fill(long long n, int k, int threads, Fill&& fill) {
  std::vector<double> out(std::size_t(n) * k);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 256)
    for (long long i = 0; i < n; ++i) fill(i, out.data() + std::size_t(i) * k, t);
  }
  return out;
}

// Calls body(i, thread) for i in [0, n) in parallel; for filling per-sample
// arrays whose order is fixed by i.
template <class Body>
void parallel_for(long long n, int threads, Body&& body) {
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 256)
    for (long long i = 0; i < n; ++i) body(i, t);
  }
}

}  // namespace routelab
