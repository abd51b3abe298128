// Every CUDA layer (lib/cuda/layers.cu, short_conv.cu) against its CPU
// reference (lib/nn/layers.cpp, short_conv.cpp), forward and backward, on fresh random inputs of
// awkward sizes (channels not a multiple of 32, rows not a multiple of the
// block). Gradient buffers start non-zero, so "backward adds" is checked too.
// Tolerances, as RMS of the difference over RMS of the reference:
//   kExact 1e-6   copies, adds and in-order sums (the same operations in the
//                 same order as the CPU, up to FMA contraction)
//   kFloat 1e-5   fp32 reductions in a different order, tanh/exp/log from
//                 CUDA's math library against Eigen's and glibc's
//   kTF32  5e-3   matmuls on TF32 tensor cores (inputs rounded to 10-bit
//                 mantissas: ~5e-4 each, summed over the inner size)
#include <gtest/gtest.h>

#include <vector>

#include "cuda/layers.h"
#include "cuda/short_conv.h"
#include "gpu_helpers.h"
#include "nn/layers.h"
#include "nn/short_conv.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

constexpr double kFloat = 1e-5, kTF32 = 5e-3;

// Rows and channels of most tests: 3 x 45 rows, 72 channels.
constexpr int64_t N = 135;
constexpr int C = 72;

class gpu_layers : public GpuTest {};

TEST_F(gpu_layers, encoder_matches_cpu) {
  const int V = 50;
  const auto tokens = random_tokens(N, V, 1);
  const auto wte = random_floats(std::size_t(V) * C, 2), dout = random_floats(N * C, 3);
  auto dwte = random_floats(std::size_t(V) * C, 4);
  DeviceBuffer<int> d_tokens(tokens);
  DeviceBuffer<float> d_wte(wte), d_out(N * C), d_dout(dout), d_dwte(dwte);
  std::vector<float> out(N * C);
  nn::encoder_forward(out.data(), tokens.data(), wte.data(), N, C);
  cuda::encoder_forward(d_out.data(), d_tokens.data(), d_wte.data(), N, C);
  expect_close("encoder out", d_out, out, kExact);
  nn::encoder_backward(dwte.data(), dout.data(), tokens.data(), N, C);
  cuda::encoder_backward(d_dwte.data(), d_dout.data(), d_tokens.data(), N, C);
  expect_close("encoder dwte", d_dwte, dwte, kExact);
}

TEST_F(gpu_layers, layernorm_matches_cpu) {
  // A large mean and a spread scale, so cancellation in the variance shows.
  auto inp = random_floats(N * C, 10, 3.0);
  for (auto& x : inp) x += 5.0f;
  const auto w = random_floats(C, 11), b = random_floats(C, 12), dout = random_floats(N * C, 13);
  auto dinp = random_floats(N * C, 14), dw = random_floats(C, 15), db = random_floats(C, 16);
  DeviceBuffer<float> d_inp(inp), d_w(w), d_b(b), d_dout(dout), d_dinp(dinp), d_dw(dw), d_db(db);
  DeviceBuffer<float> d_out(N * C), d_mean(N), d_rstd(N);
  std::vector<float> out(N * C), mean(N), rstd(N);
  nn::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
  cuda::layernorm_forward(d_out.data(), d_mean.data(), d_rstd.data(), d_inp.data(), d_w.data(), d_b.data(), N, C);
  expect_close("layernorm out", d_out, out, kFloat);
  expect_close("layernorm mean", d_mean, mean, kFloat);
  expect_close("layernorm rstd", d_rstd, rstd, kFloat);
  // Backward from the CPU's mean and rstd, so only backward's error is measured.
  d_mean.upload(mean);
  d_rstd.upload(rstd);
  nn::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                         rstd.data(), N, C);
  cuda::layernorm_backward(d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_inp.data(), d_w.data(),
                           d_mean.data(), d_rstd.data(), N, C);
  expect_close("layernorm dinp", d_dinp, dinp, kFloat);
  expect_close("layernorm dw", d_dw, dw, kFloat);
  expect_close("layernorm db", d_db, db, kFloat);
}

struct Cublas {
  cublasHandle_t handle = nullptr;
  Cublas() { CUBLAS_CHECK(cublasCreate(&handle)); }
  ~Cublas() { cublasDestroy(handle); }
};

void check_matmul(cuda::MatmulMath math, bool with_bias, double tol) {
  const int OC = 200;  // not a multiple of any tile
  const auto inp = random_floats(N * C, 20), w = random_floats(std::size_t(OC) * C, 21, 0.1);
  const auto bias = random_floats(OC, 22), dout = random_floats(N * OC, 23);
  auto dinp = random_floats(N * C, 24), dw = random_floats(std::size_t(OC) * C, 25), dbias = random_floats(OC, 26);
  DeviceBuffer<float> d_inp(inp), d_w(w), d_bias(bias), d_dout(dout), d_dinp(dinp), d_dw(dw), d_dbias(dbias);
  DeviceBuffer<float> d_out(N * OC);
  std::vector<float> out(N * OC);
  Cublas blas;
  const float* b = with_bias ? bias.data() : nullptr;
  nn::matmul_forward(out.data(), inp.data(), w.data(), b, N, C, OC);
  cuda::matmul_forward(blas.handle, d_out.data(), d_inp.data(), d_w.data(), with_bias ? d_bias.data() : nullptr, N,
                       C, OC, math);
  expect_close("matmul out", d_out, out, tol);
  float* db = with_bias ? dbias.data() : nullptr;
  nn::matmul_backward(dinp.data(), dw.data(), db, dout.data(), inp.data(), w.data(), N, C, OC);
  cuda::matmul_backward(blas.handle, d_dinp.data(), d_dw.data(), with_bias ? d_dbias.data() : nullptr, d_dout.data(),
                        d_inp.data(), d_w.data(), N, C, OC, math);
  expect_close("matmul dinp", d_dinp, dinp, tol);
  expect_close("matmul dw", d_dw, dw, tol);
  // Untouched without a bias: still the random start.
  expect_close("matmul dbias", d_dbias, dbias, kFloat);
}

TEST_F(gpu_layers, matmul_fp32_matches_cpu) {
  check_matmul(cuda::MatmulMath::fp32, true, kFloat);
  check_matmul(cuda::MatmulMath::fp32, false, kFloat);
}

TEST_F(gpu_layers, matmul_tf32_matches_cpu_within_tf32_rounding) {
  check_matmul(cuda::MatmulMath::tf32, true, kTF32);
}

TEST_F(gpu_layers, gelu_matches_cpu) {
  const int64_t n = N * C;
  const auto inp = random_floats(n, 30, 2.0), dout = random_floats(n, 31);
  auto dinp = random_floats(n, 32);
  DeviceBuffer<float> d_inp(inp), d_out(n), d_dout(dout), d_dinp(dinp);
  std::vector<float> out(n);
  nn::gelu_forward(out.data(), inp.data(), n);
  cuda::gelu_forward(d_out.data(), d_inp.data(), n);
  expect_close("gelu out", d_out, out, kFloat);
  nn::gelu_backward(dinp.data(), inp.data(), dout.data(), n);
  cuda::gelu_backward(d_dinp.data(), d_inp.data(), d_dout.data(), n);
  expect_close("gelu dinp", d_dinp, dinp, kFloat);
}

TEST_F(gpu_layers, residual_matches_cpu) {
  const int64_t n = N * C;
  const auto a = random_floats(n, 40), b = random_floats(n, 41), dout = random_floats(n, 42);
  auto da = random_floats(n, 43), db = random_floats(n, 44);
  DeviceBuffer<float> d_a(a), d_b(b), d_out(n), d_dout(dout), d_da(da), d_db(db);
  std::vector<float> out(n);
  nn::residual_forward(out.data(), a.data(), b.data(), n);
  cuda::residual_forward(d_out.data(), d_a.data(), d_b.data(), n);
  expect_close("residual out", d_out, out, kExact);
  nn::residual_backward(da.data(), db.data(), dout.data(), n);
  cuda::residual_backward(d_da.data(), d_db.data(), d_dout.data(), n);
  expect_close("residual da", d_da, da, kExact);
  expect_close("residual db", d_db, db, kExact);
}

TEST_F(gpu_layers, crossentropy_matches_cpu) {
  for (const int V : {256, 77}) {  // the byte vocabulary and a ragged one
    SCOPED_TRACE("V = " + std::to_string(V));
    const auto logits = random_floats(N * V, 50, 4.0);
    const auto targets = random_tokens(N, V, 51);
    const float dloss = 1.0f / float(N);
    DeviceBuffer<float> d_logits(logits), d_losses(N), d_dlogits(random_floats(N * V, 52));
    DeviceBuffer<int> d_targets(targets);
    std::vector<float> losses(N), dlogits(N * V);
    nn::crossentropy_forward(losses.data(), logits.data(), targets.data(), N, V);
    cuda::crossentropy_forward(d_losses.data(), d_logits.data(), d_targets.data(), N, V);
    expect_close("crossentropy losses", d_losses, losses, kFloat);
    nn::crossentropy_backward(dlogits.data(), logits.data(), targets.data(), dloss, N, V);
    cuda::crossentropy_backward(d_dlogits.data(), d_logits.data(), d_targets.data(), dloss, N, V);
    expect_close("crossentropy dlogits", d_dlogits, dlogits, kFloat);
  }
}

// PaTH's short convolution over 3 sequences of 45 (N rows), 72 channels, 3
// taps: out and pre, then dinp and dkernel added to non-zero buffers (the
// kernel's gradient sums 135 rows in order on both sides).
TEST_F(gpu_layers, short_conv_matches_cpu) {
  const int B = 3, T = int(N / B), K = 3;
  const auto inp = random_floats(N * C, 60), kernel = random_floats(int64_t(C) * K, 61);
  const auto dout = random_floats(N * C, 62);
  auto dinp = random_floats(N * C, 63), dkernel = random_floats(int64_t(C) * K, 64);
  DeviceBuffer<float> d_inp(inp), d_kernel(kernel), d_dout(dout), d_out(N * C), d_pre(N * C), d_dinp(dinp),
      d_dkernel(dkernel);
  std::vector<float> out(N * C), pre(N * C);
  nn::short_conv_forward(out.data(), pre.data(), inp.data(), kernel.data(), B, T, C, K);
  cuda::short_conv_forward(d_out.data(), d_pre.data(), d_inp.data(), d_kernel.data(), B, T, C, K);
  expect_close("short_conv pre", d_pre, pre, kExact);
  expect_close("short_conv out", d_out, out, kFloat);
  nn::short_conv_backward(dinp.data(), dkernel.data(), dout.data(), pre.data(), inp.data(), kernel.data(), B, T, C, K);
  cuda::short_conv_backward(d_dinp.data(), d_dkernel.data(), d_dout.data(), d_pre.data(), d_inp.data(),
                            d_kernel.data(), B, T, C, K);
  expect_close("short_conv dinp", d_dinp, dinp, kFloat);
  expect_close("short_conv dkernel", d_dkernel, dkernel, kFloat);
}

}  // namespace
