// Angle kernels; the contract is in cuda/angles.h, the reference in
// nn/scheme.cpp. Random and learned angles run in two steps: every increment
// in parallel (a thread per (b, t, j)), then one thread per (b, j) walks t
// with the running sum, so a long evaluation window costs T serial additions
// per thread rather than T Philox blocks.
#include "cuda/angles.h"

#include "base/angles.h"
#include "cuda/buffer.h"
#include "cuda/common.cuh"
#include "rng/stream.h"

namespace routelab::cuda {

namespace {

__global__ void rope_angles_kernel(double* theta, const double* freq, int B, int T, int nb) {
  const int64_t n = int64_t(B) * T * nb;
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const int64_t t = i / nb % T;
    // A product rounds once whether or not it is fused: nothing to contract.
    theta[i] = wrap_remainder(double(t) * freq[i % nb]);
  }
}

// x = 2 u - 1 for uniform number t nb + j of element b's stream. Uniform k
// takes the stream's words 2k and 2k + 1 (low, high), i.e. words 2 (k mod 2)
// and 2 (k mod 2) + 1 of Philox block k / 2 (Stream::uniform's order).
__global__ void random_increments_kernel(double* x, uint64_t seed, const uint64_t* streams, int B, int T, int nb) {
  const int64_t n = int64_t(B) * T * nb;
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const int64_t b = i / (int64_t(T) * nb), k = i % (int64_t(T) * nb);  // k = t nb + j
    const auto words = philox_block(seed, streams[b], uint64_t(k / 2));
    const int w = 2 * int(k % 2);
    const double u = u01_open(uint64_t(words.v[w]) | uint64_t(words.v[w + 1]) << 32);
    x[i] = 2.0 * u - 1.0;  // 2 u is exact, so fusing cannot change this
  }
}

// Increment (b, t, j) is row r of `rows` (nb wide): the table row of token
// (b, t) for learned angles, row b T + t of psi (tokens null) for projected.
__device__ inline int64_t increment_row(const int* tokens, int64_t bt) { return tokens ? int64_t(tokens[bt]) : bt; }

__global__ void increments_kernel(double* x, const float* rows, const int* tokens, int B, int T, int nb) {
  const int64_t n = int64_t(B) * T * nb;
  for (int64_t i = grid_first(); i < n; i += grid_stride())
    x[i] = double(rows[increment_row(tokens, i / nb) * nb + i % nb]);
}

// In place: x (increments) -> theta. With half_width (random angles) the sum
// is sum = fma(w_j, x, sum): the CPU's `sum += w * (2u - 1)` as GCC compiles
// it for C++ on an FMA machine (-march=native; GCC contracts by default in
// C++). Without (learned angles) it is a plain addition on both sides.
__global__ void running_sum_kernel(double* theta, const double* half_width, int B, int T, int nb) {
  for (int64_t bj = grid_first(); bj < int64_t(B) * nb; bj += grid_stride()) {
    const int64_t b = bj / nb;
    const int j = int(bj % nb);
    double* col = theta + b * T * nb + j;
    double sum = 0.0;
    if (half_width) {
      const double w = half_width[j];
      for (int64_t t = 0; t < T; ++t) {
        sum = fma(w, col[t * nb], sum);
        col[t * nb] = wrap_remainder(sum);
      }
    } else {
      for (int64_t t = 0; t < T; ++t) {
        sum = __dadd_rn(sum, col[t * nb]);
        col[t * nb] = wrap_remainder(sum);
      }
    }
  }
}

// Positions backwards, each entry's float addition in the CPU's order. A
// table row can take terms from every batch element, so with tokens one
// thread per j walks the elements in order; psi's rows are per position, so
// without, one thread per (b, j).
__global__ void increments_backward_kernel(float* drows, const double* dtheta, const int* tokens, int B, int T,
                                           int nb) {
  const int64_t lanes = tokens ? int64_t(nb) : int64_t(B) * nb;
  for (int64_t lane = grid_first(); lane < lanes; lane += grid_stride()) {
    const int64_t j = lane % nb, b0 = tokens ? 0 : lane / nb, b1 = tokens ? B : b0 + 1;
    for (int64_t b = b0; b < b1; ++b) {
      double suffix = 0.0;
      for (int64_t t = T - 1; t >= 0; --t) {
        const int64_t bt = b * T + t;
        suffix = __dadd_rn(suffix, dtheta[bt * nb + j]);
        drows[increment_row(tokens, bt) * nb + j] += float(suffix);
      }
    }
  }
}

__global__ void angle_cos_sin_kernel(float* cs, const double* theta, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    cs[2 * i] = float(cos(theta[i]));
    cs[2 * i + 1] = float(sin(theta[i]));
  }
}

}  // namespace

void rope_angles(double* theta, const double* freq, int B, int T, int nb) {
  const int64_t n = int64_t(B) * T * nb;
  if (n == 0) return;
  rope_angles_kernel<<<grid_blocks(n), kThreads>>>(theta, freq, B, T, nb);
  check_launch();
}

namespace {

// The second step of random and learned angles: increments -> wrapped sums.
void running_sum(double* theta, const double* half_width, int B, int T, int nb) {
  running_sum_kernel<<<grid_blocks(int64_t(B) * nb), kThreads>>>(theta, half_width, B, T, nb);
  check_launch();
}

}  // namespace

void random_angles(double* theta, const double* half_width, uint64_t seed, const uint64_t* streams, int B, int T,
                   int nb) {
  const int64_t n = int64_t(B) * T * nb;
  if (n == 0) return;
  random_increments_kernel<<<grid_blocks(n), kThreads>>>(theta, seed, streams, B, T, nb);
  check_launch();
  running_sum(theta, half_width, B, T, nb);
}

namespace {

void summed_increments(double* theta, const float* rows, const int* tokens, int B, int T, int nb) {
  const int64_t n = int64_t(B) * T * nb;
  if (n == 0) return;
  increments_kernel<<<grid_blocks(n), kThreads>>>(theta, rows, tokens, B, T, nb);
  check_launch();
  running_sum(theta, nullptr, B, T, nb);
}

void summed_increments_backward(float* drows, const double* dtheta, const int* tokens, int B, int T, int nb) {
  if (int64_t(B) * T * nb == 0) return;
  increments_backward_kernel<<<grid_blocks(tokens ? nb : int64_t(B) * nb), kThreads>>>(drows, dtheta, tokens, B, T,
                                                                                      nb);
  check_launch();
}

}  // namespace

void learned_angles(double* theta, const float* table, const int* tokens, int B, int T, int nb) {
  summed_increments(theta, table, tokens, B, T, nb);
}

void learned_angles_backward(float* dtable, const double* dtheta, const int* tokens, int B, int T, int nb) {
  summed_increments_backward(dtable, dtheta, tokens, B, T, nb);
}

void projected_angles(double* theta, const float* psi, int B, int T, int nb) {
  summed_increments(theta, psi, nullptr, B, T, nb);
}

void projected_angles_backward(float* dpsi, const double* dtheta, int B, int T, int nb) {
  summed_increments_backward(dpsi, dtheta, nullptr, B, T, nb);
}

void angle_cos_sin(float* cs, const double* theta, int64_t n) {
  if (n == 0) return;
  angle_cos_sin_kernel<<<grid_blocks(n), kThreads>>>(cs, theta, n);
  check_launch();
}

}  // namespace routelab::cuda
