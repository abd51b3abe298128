// Estimating the mean of random d x d matrices, entry by entry and in
// operator norm.
//
// The operator norm of a noisy mean is biased upward by about 2 sqrt(d) times
// the entry standard error when the true mean is near 0 (docs/theory.md#statistical-protocol), so it
// is never the quantity a check compares. Checks compare every entry with the
// closed form; the reported norm is a split-sample estimate: the top singular
// vectors (u, v) come from the first half of the samples and the value
// u^T M v is averaged over the second half. Given (u, v) that average is
// unbiased for u^T E[M] v <= ||E M||, so the estimate is biased down only by
// the misalignment of (u, v), never up by the noise.
#pragma once

#include <Eigen/Dense>
#include <Eigen/SVD>

#include "stats/moments.h"

namespace routelab {

struct MatrixMeanEstimate {
  Eigen::MatrixXd mean, stderr_;  // entrywise
  long long samples = 0;
  double norm = 0, norm_stderr = 0;  // split-sample ||E M||_op
};

// sample(i, out, thread) writes `count` column-major d x d matrices for sample
// i; samples are regenerated for the second pass, so `sample` must be a pure
// function of i (draws from sample_stream(point, i)).
template <class Sample>
std::vector<MatrixMeanEstimate> estimate_matrix_means(long long samples, int d, int count, int threads,
                                                      Sample&& sample) {
  const int dd = d * d;
  const long long half = samples / 2;
  Moments first = parallel_moments(0, half, count * dd, threads, sample);
  Moments second = parallel_moments(half, samples, count * dd, threads, sample);
  std::vector<Eigen::VectorXd> u(count), v(count);
  for (int c = 0; c < count; ++c) {
    Eigen::Map<const Eigen::MatrixXd> m(first.mean.data() + c * dd, d, d);
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeFullU | Eigen::ComputeFullV);
    u[c] = svd.matrixU().col(0);
    v[c] = svd.matrixV().col(0);
  }
  std::vector<std::vector<double>> scratch(threads, std::vector<double>(count * dd));
  Moments projected = parallel_moments(half, samples, count, threads, [&](long long i, double* out, int t) {
    sample(i, scratch[t].data(), t);
    for (int c = 0; c < count; ++c) {
      Eigen::Map<const Eigen::MatrixXd> m(scratch[t].data() + c * dd, d, d);
      out[c] = u[c].dot(m * v[c]);
    }
  });
  Moments all = first;
  all.merge(second);
  std::vector<MatrixMeanEstimate> out(count);
  for (int c = 0; c < count; ++c) {
    auto& e = out[c];
    e.samples = samples;
    e.mean.resize(d, d);
    e.stderr_.resize(d, d);
    for (int j = 0; j < dd; ++j) {
      e.mean.data()[j] = all.mean[c * dd + j];
      e.stderr_.data()[j] = all.stderr_of(c * dd + j);
    }
    e.norm = projected.mean[c];
    e.norm_stderr = projected.stderr_of(c);
  }
  return out;
}

// max_ij |mean_ij - theory_ij| / stderr_ij; an entry within 1e-12 (relative)
// counts as 0, and a deviating entry with zero standard error as +inf.
double max_entry_z(const MatrixMeanEstimate& e, const Eigen::MatrixXd& theory);

}  // namespace routelab
