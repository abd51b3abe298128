#include "nn/layers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Core>

#include "nn/gemm.h"

namespace routelab::nn {

namespace {

template <class R>
using MatR = Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class R>
using Map = Eigen::Map<MatR<R>>;
template <class R>
using CMap = Eigen::Map<const MatR<R>>;

// Rows per task. Fixed, so a row's arithmetic never depends on the thread count.
constexpr int64_t kRowChunk = 64;
// A weight gradient's rows per task, and the rows of the product's long k
// (the N positions) that a task takes at a time.
constexpr int kWeightRowsPerTask = 2 * gemm::kRows;
constexpr int64_t kWeightRows = 1024;
// Columns per task of a reduction over rows (layernorm parameters, biases).
constexpr int kColChunk = 16;

int64_t chunks(int64_t n, int64_t size) { return (n + size - 1) / size; }

// dst[c] += sum_n src[n, c], the rows summed in order.
template <class R>
void add_column_sums(R* dst, const R* src, int64_t N, int C) {
#pragma omp parallel for schedule(static)
  for (int64_t cc = 0; cc < chunks(C, kColChunk); ++cc) {
    const int c0 = int(cc * kColChunk), c1 = std::min(C, c0 + kColChunk);
    R acc[kColChunk] = {};
    for (int64_t n = 0; n < N; ++n)
      for (int c = c0; c < c1; ++c) acc[c - c0] += src[n * C + c];
    for (int c = c0; c < c1; ++c) dst[c] += acc[c - c0];
  }
}

}  // namespace

template <class R>
void encoder_forward(R* out, const int* tokens, const R* wte, int64_t N, int C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) std::copy(wte + int64_t(tokens[n]) * C, wte + int64_t(tokens[n] + 1) * C, out + n * C);
}

template <class R>
void encoder_backward(R* dwte, const R* dout, const int* tokens, int64_t N, int C) {
  // Rows of one token add in position order; serial, so the sum has one order.
  for (int64_t n = 0; n < N; ++n) {
    R* row = dwte + int64_t(tokens[n]) * C;
    const R* d = dout + n * C;
    for (int c = 0; c < C; ++c) row[c] += d[c];
  }
}

template <class R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* inp, const R* w, const R* b, int64_t N, int C) {
  constexpr R eps = R(1e-5);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const R* x = inp + n * C;
    const R m = gemm::sum_of<R>(C, [&](int c) { return x[c]; }) / C;
    const R v = gemm::sum_of<R>(C, [&](int c) { return (x[c] - m) * (x[c] - m); }) / C;
    const R s = R(1) / std::sqrt(v + eps);
    R* o = out + n * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * w[c] + b[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <class R>
void layernorm_backward(R* dinp, R* dw, R* db, const R* dout, const R* inp, const R* w, const R* mean,
                        const R* rstd, int64_t N, int C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const R* x = inp + n * C;
    const R* d = dout + n * C;
    const R dnorm_mean = gemm::sum_of<R>(C, [&](int c) { return w[c] * d[c]; }) / C;
    const R dnorm_norm_mean =
        gemm::sum_of<R>(C, [&](int c) { return w[c] * d[c] * ((x[c] - mean[n]) * rstd[n]); }) / C;
    R* di = dinp + n * C;
    for (int c = 0; c < C; ++c) {
      const R norm = (x[c] - mean[n]) * rstd[n];
      di[c] += (w[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t cc = 0; cc < chunks(C, kColChunk); ++cc) {
    const int c0 = int(cc * kColChunk), c1 = std::min(C, c0 + kColChunk);
    R aw[kColChunk] = {}, ab[kColChunk] = {};
    // A whole chunk's columns in one loop of fixed length, which vectorizes.
    auto add_rows = [&](auto width) {
      for (int64_t n = 0; n < N; ++n) {
        const R* x = inp + n * C + c0;
        const R* d = dout + n * C + c0;
        for (int j = 0; j < width; ++j) {
          aw[j] += (x[j] - mean[n]) * rstd[n] * d[j];
          ab[j] += d[j];
        }
      }
    };
    if (c1 - c0 == kColChunk)
      add_rows(std::integral_constant<int, kColChunk>());
    else
      add_rows(c1 - c0);
    for (int c = c0; c < c1; ++c) {
      dw[c] += aw[c - c0];
      db[c] += ab[c - c0];
    }
  }
}

template <class R>
void matmul_forward(R* out, const R* inp, const R* w, const R* bias, int64_t N, int C, int OC) {
  std::vector<R> scratch;
  const auto Wt = gemm::panels_of(w, 1, C, C, OC, scratch);  // W^T, C x OC
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunks(N, kRowChunk); ++k) {
    const int64_t n0 = k * kRowChunk, rows = std::min(kRowChunk, N - n0);
    gemm::multiply(out + n0 * OC, OC, inp + n0 * C, C, 1, Wt, int(rows), C, OC, bias, false);
  }
}

template <class R>
void matmul_backward(R* dinp, R* dw, R* dbias, const R* dout, const R* inp, const R* w, int64_t N, int C, int OC) {
  std::vector<R> w_scratch, d_scratch, x_scratch;
  const auto W = gemm::panels_of(w, C, 1, OC, C, w_scratch);  // OC x C
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunks(N, kRowChunk); ++k) {
    const int64_t n0 = k * kRowChunk, rows = std::min(kRowChunk, N - n0);
    gemm::multiply(dinp + n0 * C, C, dout + n0 * OC, OC, 1, W, int(rows), OC, C, static_cast<const R*>(nullptr),
                   true);
  }
  // dw += dout^T inp, a product over all N rows. The narrower of dout and
  // inp is the one read in panels: dw^T (C x OC) = inp^T dout when dout is,
  // dw itself = dout^T inp when inp is. Its rows go to tasks, and each task
  // takes the rows' k in order, a block of kWeightRows at a time, so a block
  // of the panels stays in the core's cache across its rows.
  const bool by_dout = OC <= C;
  const int rows = by_dout ? C : OC, cols = by_dout ? OC : C;
  const auto B = by_dout ? gemm::panels_of(dout, OC, 1, int(N), OC, d_scratch)
                         : gemm::panels_of(inp, C, 1, int(N), C, x_scratch);
  const R* a = by_dout ? inp : dout;  // A(r, n) = a[n rows + r]
  std::vector<R> dwt(by_dout ? std::size_t(C) * OC : 0, R(0));
  R* out = by_dout ? dwt.data() : dw;
  const int64_t groups = chunks(rows, kWeightRowsPerTask);
  const R one = 1;
#pragma omp parallel
  {
    for (int64_t n0 = 0; n0 < N; n0 += kWeightRows) {
      const int k = int(std::min<int64_t>(kWeightRows, N - n0));
      const gemm::Panels<R> Bk{B.b + n0 * B.row, B.row, B.panel};
      // The same thread takes the same groups in every block (a static
      // schedule over the same count), so no barrier is needed between blocks.
#pragma omp for schedule(static) nowait
      for (int64_t g = 0; g < groups; ++g) {
        const int r0 = int(g * kWeightRowsPerTask), nr = std::min(kWeightRowsPerTask, rows - r0);
        gemm::multiply(out + int64_t(r0) * cols, cols, a + n0 * rows + r0, 1, rows, Bk, nr, k, cols,
                       static_cast<const R*>(nullptr), true);
      }
    }
  }
  if (by_dout) {
#pragma omp parallel for schedule(static)
    for (int o = 0; o < OC; ++o)
      for (int c = 0; c < C; ++c) dw[int64_t(o) * C + c] += dwt[int64_t(c) * OC + o];
  }
  // The bias's gradient sums dout's columns, rows in order: a product with a
  // row of ones.
  if (dbias) {
    const auto D = by_dout ? B : gemm::panels_of(dout, OC, 1, int(N), OC, d_scratch);
    gemm::multiply(dbias, 0, &one, 0, 0, D, 1, int(N), OC, static_cast<const R*>(nullptr), true);
  }
}

// tanh goes through Eigen's vectorized kernel (float) a block at a time;
// scalar tanhf made GELU a third of a training step. f(i0, len) handles one
// block of the n elements.
template <class F>
void for_gelu_blocks(int64_t n, F f) {
  constexpr int64_t kBlock = 1024;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunks(n, kBlock); ++k) f(k * kBlock, std::min(kBlock, n - k * kBlock));
}

// tanh(sqrt(2/pi) (x + 0.044715 x^3)), the tanh approximation's inner term.
template <class X>
auto gelu_tanh(const X& x) {
  using R = typename X::Scalar;
  return (R(std::sqrt(2.0 / M_PI)) * (x + R(0.044715) * x.cube())).tanh();
}

template <class R>
void gelu_forward(R* out, const R* inp, int64_t n) {
  using Arr = Eigen::Array<R, Eigen::Dynamic, 1>;
  for_gelu_blocks(n, [&](int64_t i0, int64_t len) {
    Eigen::Map<const Arr> x(inp + i0, len);
    Eigen::Map<Arr>(out + i0, len) = R(0.5) * x * (R(1) + gelu_tanh(x));
  });
}

template <class R>
void gelu_backward(R* dinp, const R* inp, const R* dout, int64_t n) {
  using Arr = Eigen::Array<R, Eigen::Dynamic, 1>;
  const R s = R(std::sqrt(2.0 / M_PI));
  for_gelu_blocks(n, [&](int64_t i0, int64_t len) {
    Eigen::Map<const Arr> x(inp + i0, len), d(dout + i0, len);
    const Arr th = gelu_tanh(x);
    const Arr g = R(0.5) * (R(1) + th) + R(0.5) * x * (R(1) - th.square()) * s * (R(1) + R(3 * 0.044715) * x.square());
    Eigen::Map<Arr>(dinp + i0, len) += g * d;
  });
}

template <class R>
void residual_forward(R* out, const R* a, const R* b, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class R>
void residual_backward(R* da, R* db, const R* dout, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

template <class R>
void crossentropy_forward(R* losses, const R* logits, const int* targets, int64_t N, int V) {
  using Arr = Eigen::Array<R, Eigen::Dynamic, 1>;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    Eigen::Map<const Arr> l(logits + n * V, V);
    const R mx = l.maxCoeff();
    losses[n] = std::log((l - mx).exp().sum()) + mx - l(targets[n]);
  }
}

template <class R>
void crossentropy_backward(R* dlogits, const R* logits, const int* targets, R dloss, int64_t N, int V) {
  using Arr = Eigen::Array<R, Eigen::Dynamic, 1>;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    Eigen::Map<const Arr> l(logits + n * V, V);
    Eigen::Map<Arr> d(dlogits + n * V, V);
    d = (l - l.maxCoeff()).exp();
    d *= dloss / d.sum();
    d(targets[n]) -= dloss;
  }
}

#define ROUTELAB_LAYERS(R)                                                                                     \
  template void encoder_forward<R>(R*, const int*, const R*, int64_t, int);                                   \
  template void encoder_backward<R>(R*, const R*, const int*, int64_t, int);                                  \
  template void layernorm_forward<R>(R*, R*, R*, const R*, const R*, const R*, int64_t, int);                 \
  template void layernorm_backward<R>(R*, R*, R*, const R*, const R*, const R*, const R*, const R*, int64_t,  \
                                      int);                                                                   \
  template void matmul_forward<R>(R*, const R*, const R*, const R*, int64_t, int, int);                       \
  template void matmul_backward<R>(R*, R*, R*, const R*, const R*, const R*, int64_t, int, int);              \
  template void gelu_forward<R>(R*, const R*, int64_t);                                                       \
  template void gelu_backward<R>(R*, const R*, const R*, int64_t);                                            \
  template void residual_forward<R>(R*, const R*, const R*, int64_t);                                         \
  template void residual_backward<R>(R*, R*, const R*, int64_t);                                              \
  template void crossentropy_forward<R>(R*, const R*, const int*, int64_t, int);                              \
  template void crossentropy_backward<R>(R*, const R*, const int*, R, int64_t, int);
ROUTELAB_LAYERS(float)
ROUTELAB_LAYERS(double)
#undef ROUTELAB_LAYERS

}  // namespace routelab::nn
