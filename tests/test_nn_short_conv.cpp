// The short causal convolution with SiLU (nn/short_conv.h), PaTH's layer
// over its step directions: which inputs each output reads (x_{t-2}, x_{t-1},
// x_t of its own sequence, nothing later), the kernel's layout (PyTorch
// Conv1d's, tap K-1 at x_t), backward against finite differences in double,
// and the same bytes at any thread count. A convolution reading x_{t+1} (its
// window one step late) must fail the window check.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "nn/short_conv.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;

std::vector<double> conv_inputs(std::size_t n, uint64_t seed, double scale = 1.0) {
  Stream s(seed, 0);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * s.normal();
  return v;
}

// B = 2 sequences of 9, C = 19 channels (a whole group of 16 and a ragged
// one), the model's 3 taps.
constexpr int kConvB = 2, kConvT = 9, kConvC = 19, kConvK = 3;

using ConvForward = std::function<void(double* out, const double* inp, const double* kernel)>;

void conv_layer(double* out, const double* inp, const double* kernel) {
  std::vector<double> pre(std::size_t(kConvB) * kConvT * kConvC);
  short_conv_forward(out, pre.data(), inp, kernel, kConvB, kConvT, kConvC, kConvK);
}

// The convolution written out, its window moved `ahead` steps later (zero
// outside the sequence): ahead = 0 is the layer's definition, ahead = 1 the
// planted error, out_t from x_{t-1}, x_t, x_{t+1}.
void written_out(double* out, const double* inp, const double* kernel, int ahead) {
  for (int b = 0; b < kConvB; ++b)
    for (int t = 0; t < kConvT; ++t)
      for (int c = 0; c < kConvC; ++c) {
        double pre = 0;
        for (int k = 0; k < kConvK; ++k) {
          const int src = t - (kConvK - 1) + k + ahead;
          if (src >= 0 && src < kConvT) pre += kernel[c * kConvK + k] * inp[(int64_t(b) * kConvT + src) * kConvC + c];
        }
        out[(int64_t(b) * kConvT + t) * kConvC + c] = pre / (1 + std::exp(-pre));
      }
}
void reads_one_ahead(double* out, const double* inp, const double* kernel) { written_out(out, inp, kernel, 1); }

// The positions (b, t) whose output changes when x at (b0, s) changes: each
// output row compared bit for bit.
std::set<std::pair<int, int>> outputs_moved_by(const ConvForward& f, int b0, int s) {
  const auto x = conv_inputs(std::size_t(kConvB) * kConvT * kConvC, 1), kernel = conv_inputs(std::size_t(kConvC) * kConvK, 2);
  std::vector<double> a(x.size()), b(x.size());
  f(a.data(), x.data(), kernel.data());
  auto y = x;
  for (int c = 0; c < kConvC; ++c) y[(int64_t(b0) * kConvT + s) * kConvC + c] += 0.5;
  f(b.data(), y.data(), kernel.data());
  std::set<std::pair<int, int>> moved;
  for (int bb = 0; bb < kConvB; ++bb)
    for (int t = 0; t < kConvT; ++t)
      if (!std::equal(a.begin() + (int64_t(bb) * kConvT + t) * kConvC, a.begin() + (int64_t(bb) * kConvT + t + 1) * kConvC,
                      b.begin() + (int64_t(bb) * kConvT + t) * kConvC))
        moved.insert({bb, t});
  return moved;
}

TEST(nn_short_conv, each_output_reads_its_own_position_and_the_two_before) {
  for (int b0 = 0; b0 < kConvB; ++b0)
    for (int s = 0; s < kConvT; ++s) {
      std::set<std::pair<int, int>> want;
      for (int t = s; t <= std::min(s + 2, kConvT - 1); ++t) want.insert({b0, t});
      EXPECT_EQ(outputs_moved_by(conv_layer, b0, s), want) << "x at b " << b0 << ", t " << s;
    }
  // Planted: a window one step late reads x_{t+1}, so changing x_s moves
  // out_{s-1}; the check above must see it.
  std::set<std::pair<int, int>> late;
  for (int t = 3; t <= 5; ++t) late.insert({1, t});
  EXPECT_EQ(outputs_moved_by(reads_one_ahead, 1, 4), late);
  EXPECT_NE(outputs_moved_by(reads_one_ahead, 1, 4), outputs_moved_by(conv_layer, 1, 4));
  // And the layer is the sum written out.
  const auto x = conv_inputs(std::size_t(kConvB) * kConvT * kConvC, 1), kernel = conv_inputs(std::size_t(kConvC) * kConvK, 2);
  std::vector<double> got(x.size()), want(x.size());
  conv_layer(got.data(), x.data(), kernel.data());
  written_out(want.data(), x.data(), kernel.data(), 0);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
}

// kernel[c, k] multiplies x_{t - (K - 1) + k}, as PyTorch's Conv1d weight
// (C, 1, K) with K - 1 zeros of padding on the left (fla's ShortConvolution):
// a one-hot kernel on tap k shifts the sequence by K - 1 - k, zeros first.
TEST(nn_short_conv, a_one_hot_kernel_shifts_the_sequence) {
  const auto x = conv_inputs(std::size_t(kConvB) * kConvT * kConvC, 3);
  for (int k = 0; k < kConvK; ++k) {
    std::vector<double> kernel(std::size_t(kConvC) * kConvK, 0.0), out(x.size()), pre(x.size());
    for (int c = 0; c < kConvC; ++c) kernel[c * kConvK + k] = 1.0;
    short_conv_forward(out.data(), pre.data(), x.data(), kernel.data(), kConvB, kConvT, kConvC, kConvK);
    const int back = kConvK - 1 - k;
    for (int b = 0; b < kConvB; ++b)
      for (int t = 0; t < kConvT; ++t)
        for (int c = 0; c < kConvC; ++c) {
          const std::size_t at = (std::size_t(b) * kConvT + t) * kConvC + c;
          const double want = t >= back ? x[at - std::size_t(back) * kConvC] : 0.0;
          EXPECT_EQ(pre[at], want) << "tap " << k << " b " << b << " t " << t << " c " << c;
          EXPECT_DOUBLE_EQ(out[at], want / (1 + std::exp(-want)));  // SiLU
        }
  }
}

// d loss / d x and d loss / d kernel for loss = sum g . out, g fixed, against
// a five-point stencil; dinp and dkernel start non-zero (backward adds).
TEST(nn_short_conv, backward_matches_finite_differences) {
  omp_set_num_threads(1);
  auto x = conv_inputs(std::size_t(kConvB) * kConvT * kConvC, 4), kernel = conv_inputs(std::size_t(kConvC) * kConvK, 5);
  const auto g = conv_inputs(x.size(), 6);
  auto loss = [&]() {
    std::vector<double> out(x.size()), pre(x.size());
    short_conv_forward(out.data(), pre.data(), x.data(), kernel.data(), kConvB, kConvT, kConvC, kConvK);
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += g[i] * out[i];
    return l;
  };
  std::vector<double> out(x.size()), pre(x.size());
  short_conv_forward(out.data(), pre.data(), x.data(), kernel.data(), kConvB, kConvT, kConvC, kConvK);
  const auto dx0 = conv_inputs(x.size(), 7), dk0 = conv_inputs(kernel.size(), 8);
  auto dx = dx0, dk = dk0;
  short_conv_backward(dx.data(), dk.data(), g.data(), pre.data(), x.data(), kernel.data(), kConvB, kConvT, kConvC, kConvK);
  auto check = [&](std::vector<double>& param, const std::vector<double>& grad, const std::vector<double>& start,
                   const char* what) {
    const double h = 1e-4;
    double diff2 = 0, fd2 = 0;
    for (std::size_t j = 0; j < param.size(); ++j) {
      const double p0 = param[j];
      auto at = [&](double d) {
        param[j] = p0 + d;
        return loss();
      };
      const double fd = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h);
      param[j] = p0;
      diff2 += std::pow(grad[j] - start[j] - fd, 2);
      fd2 += fd * fd;
    }
    EXPECT_LT(std::sqrt(diff2 / fd2), 1e-9) << what;
    EXPECT_GT(fd2, 0.0) << what;
  };
  check(x, dx, dx0, "d loss / d x");
  check(kernel, dk, dk0, "d loss / d kernel");
}

TEST(nn_short_conv, same_bytes_at_one_and_two_threads) {
  const int B = 3, T = 200, C = 40, K = 3;
  std::vector<float> x(std::size_t(B) * T * C), kernel(std::size_t(C) * K), g(x.size());
  Stream s(9, 0);
  for (auto* v : {&x, &kernel, &g})
    for (auto& e : *v) e = float(s.normal());
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> out(x.size()), pre(x.size()), dx(x.size(), 0.0f), dk(kernel.size(), 0.0f);
    short_conv_forward(out.data(), pre.data(), x.data(), kernel.data(), B, T, C, K);
    short_conv_backward(dx.data(), dk.data(), g.data(), pre.data(), x.data(), kernel.data(), B, T, C, K);
    out.insert(out.end(), dx.begin(), dx.end());
    out.insert(out.end(), dk.begin(), dk.end());
    return out;
  };
  const int threads = omp_get_max_threads();
  EXPECT_EQ(run(1), run(2));
  omp_set_num_threads(threads);
}

}  // namespace
