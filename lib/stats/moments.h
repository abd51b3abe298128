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

#include "stats/distributed.h"

namespace routelab {

// Running mean and sum of squared deviations of k quantities.
struct Moments {
  long long n = 0;
  std::vector<double> mean, m2;

  explicit Moments(int k = 0) : mean(k, 0.0), m2(k, 0.0) {}
  int size() const { return int(mean.size()); }
  // Back to no observations, keeping the buffers.
  void reset() {
    n = 0;
    std::fill(mean.begin(), mean.end(), 0.0);
    std::fill(m2.begin(), m2.end(), 0.0);
  }
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

// Merges the moments of chunks c0 .. c0 + nc - 1 (batch[c - c0]) into total
// in chunk order. Under MPI, chunk c was computed by rank c % size alone: the
// chunks' moments are exchanged first (stats/distributed.h), so every rank
// merges the same values in the same order.
inline void merge_chunk_moments(std::vector<Moments>& batch, long long c0, long long nc, Moments& total) {
  const int ranks = dist::size(), me = dist::rank();
  if (ranks > 1) {
    const int k = int(total.mean.size());
    // Pack each owned chunk as (n, mean, m2), exchange, unpack all.
    std::vector<double> mine, all;
    std::vector<long long> per_chunk(nc, 1 + 2LL * k);
    for (long long c = 0; c < nc; ++c) {
      if ((c0 + c) % ranks != me) continue;
      mine.push_back(double(batch[c].n));
      mine.insert(mine.end(), batch[c].mean.begin(), batch[c].mean.end());
      mine.insert(mine.end(), batch[c].m2.begin(), batch[c].m2.end());
    }
    // Chunk ownership within the batch starts at c0 % ranks: rotate so the
    // exchange's "chunk c belongs to rank c % size" holds.
    std::vector<long long> shifted(nc + c0 % ranks, 0);
    std::copy(per_chunk.begin(), per_chunk.end(), shifted.begin() + c0 % ranks);
    dist::allgather_chunks(mine, shifted, all);
    const double* p = all.data();
    for (long long c = 0; c < nc; ++c, p += 1 + 2LL * k) {
      batch[c].n = (long long)p[0];
      std::copy(p + 1, p + 1 + k, batch[c].mean.begin());
      std::copy(p + 1 + k, p + 1 + 2LL * k, batch[c].m2.begin());
    }
  }
  for (long long c = 0; c < nc; ++c) total.merge(batch[c]);
}

// Calls sample(i, out, thread) for i in [begin, end), out holding k doubles,
// and returns their moments. `thread` indexes per-thread scratch
// (0..threads-1). Under MPI, chunk c goes to rank c % size and the chunks'
// moments are exchanged before the in-order merge (stats/distributed.h).
template <class Sample>
Moments parallel_moments(long long begin, long long end, int k, int threads, Sample&& sample) {
  Moments total(k);
  const long long chunks = (end - begin + kChunk - 1) / kChunk;
  const int ranks = dist::size(), me = dist::rank();
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
        if ((c0 + c) % ranks != me) continue;
        const long long lo = begin + (c0 + c) * kChunk, hi = std::min(end, lo + kChunk);
        for (long long i = lo; i < hi; ++i) {
          sample(i, out.data(), t);
          batch[c].add(out.data());
        }
      }
    }
    merge_chunk_moments(batch, c0, nc, total);
  }
  return total;
}

// Calls fill(i, out, thread) for i in [0, n), out holding k doubles, and
// returns all of them, sample i at [i k, (i + 1) k): for statistics that need
// the whole sample (KS, quantiles, tail counts with exact ties). Under MPI the
// chunks are split over the ranks and gathered, in order, on every rank.
template <class Fill>
std::vector<double> parallel_fill(long long n, int k, int threads, Fill&& fill) {
  std::vector<double> out(std::size_t(n) * k);
  const int ranks = dist::size(), me = dist::rank();
  const long long chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (long long c = 0; c < chunks; ++c) {
      if (c % ranks != me) continue;
      for (long long i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
        fill(i, out.data() + std::size_t(i) * k, t);
    }
  }
  if (ranks > 1) {
    std::vector<double> mine, all;
    std::vector<long long> per_chunk(chunks);
    for (long long c = 0; c < chunks; ++c) {
      const long long rows = std::min(n, (c + 1) * kChunk) - c * kChunk;
      per_chunk[c] = rows * k;
      if (c % ranks == me)
        mine.insert(mine.end(), out.begin() + c * kChunk * k, out.begin() + (c * kChunk + rows) * k);
    }
    dist::allgather_chunks(mine, per_chunk, all);
    out.swap(all);
  }
  return out;
}

}  // namespace routelab
