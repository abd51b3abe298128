// The CUDA model, optimiser and training backend (lib/cuda/model.cpp,
// adamw.cu, angles.cu, forget_gate.cu, short_conv.cu, backend.cpp) against the CPU
// (nn::Model<float>, nn::AdamW, runs::train_run on the CPU backend). For every
// scheme (Householder ones with PaTH's beta, and once with reflections;
// learned tables once shared by the layers; projected angles), on
// one batch with perturbed weights (so no bias or
// LayerNorm weight sits at its initial 0 or 1), an odd length that ends
// mid-tile and a first_b past 0: the loss, the per-position losses and EVERY
// gradient tensor; the angles (cos, sin) of every layer; one AdamW step and
// the global norm; a 30-step training run's loss curve, and its checkpoint
// evaluated on either device. Planted errors (a shifted angle, a changed
// token) must fail the same comparisons.
// Tolerances, RMS of the difference over RMS of the CPU's (rms_relative_error):
//   fp32  loss 1e-5, per-position losses 1e-5, gradients 5e-4 (each layer
//         kernel agrees to 1e-6..1e-4, tests/test_gpu_*.cpp; errors compound
//         through 2 layers, and small gradients such as dcum cancel)
//   tf32  loss 2e-3, gradients 5e-2 (10-bit mantissa products)
//   cs    max |difference| 1.2e-7 (one float ulp at 1): theta is the CPU's
//         to double rounding, so cos and sin round to the same float bar ties
//   AdamW 1e-6 on params, m, v (float arithmetic, either side may fuse a
//         multiply-add); global norm 1e-12 (double sums in another order)
//   training loss curve: |GPU - CPU| < 2e-3 nats at every step (30 steps of
//         fp32 drift through the updates; the loss is ~5.5 at the start)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <span>
#include <vector>

#include "cli_helpers.h"
#include "cuda/adamw.h"
#include "cuda/backend.h"
#include "cuda/model.h"
#include "gpu_helpers.h"
#include "model_configs.h"
#include "nn/adamw.h"
#include "nn/model.h"
#include "nn/scheme.h"
#include "runs/config.h"
#include "runs/eval.h"
#include "runs/experiment.h"
#include "runs/passkey.h"
#include "runs/train.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

constexpr double kLossFp32 = 1e-5, kGradFp32 = 5e-4, kLossTf32 = 2e-3, kGradTf32 = 5e-2;
constexpr double kCosSin = 1.2e-7, kAdam = 1e-6, kNorm = 1e-12, kCurve = 2e-3;

// Every scheme: the device runs them all.
std::vector<std::string> device_schemes() {
  std::vector<std::string> out;
  for (const auto& s : nn::all_schemes()) out.push_back(s.name);
  return out;
}

// Two layers, two heads of 16 (8 angle pairs), MLP ratio 2.
nn::ModelConfig small_model(const std::string& scheme) { return small_model_config(scheme, 2, 48); }

// The CPU model with every weight nudged by N(0, 0.05^2), and a device model
// holding the same weights.
struct ModelPair {
  nn::Model<float> cpu;
  cuda::Model gpu;
  ModelPair(const nn::ModelConfig& m, uint64_t seed, cuda::MatmulMath math) : cpu(m, seed), gpu(m, seed, math) {
    const std::vector<float> noise = random_floats(cpu.params.size(), seed + 100, 0.05);
    for (std::size_t i = 0; i < noise.size(); ++i) cpu.params[i] += noise[i];
    gpu.params.upload(cpu.params);
  }
};

std::vector<float> slice(std::span<const float> v, const nn::ParamTensor& t) {
  return {v.begin() + std::ptrdiff_t(t.offset), v.begin() + std::ptrdiff_t(t.offset + t.size())};
}

double relative_difference(double got, double want) { return std::abs(got - want) / std::abs(want); }

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

// A batch: B x T tokens and their next-byte targets.
struct Batch {
  int B, T;
  std::vector<int> tokens, targets;
};
Batch random_batch(int B, int T, uint64_t seed) {
  return {B, T, random_tokens(std::size_t(B) * T, 256, seed), random_tokens(std::size_t(B) * T, 256, seed + 1)};
}

// The worst gradient tensor's error (and its name), device against CPU.
std::pair<double, std::string> worst_gradient(const ModelPair& p) {
  const std::vector<float> got = p.gpu.grads.download();
  std::pair<double, std::string> worst{0.0, ""};
  for (const auto& t : p.cpu.tensors()) {
    const double err = rms_relative_error(slice(got, t), slice(p.cpu.grads, t));
    if (!(err <= worst.first)) worst = {err, t.name};
  }
  return worst;
}

// Loss, per-position losses and every gradient tensor, device against CPU.
void expect_model_matches(const nn::ModelConfig& m, cuda::MatmulMath math, double loss_tol, double grad_tol) {
  SCOPED_TRACE(m.scheme + " (householder_beta " + m.householder_beta + ")");
  const uint64_t seed = 11;
  ModelPair p(m, seed, math);
  const Batch b = random_batch(3, 37, seed);  // 37: past one 32-row tile, mid-way through the next
  const uint64_t pass = 5;
  const int first_b = 2;  // a rank's share: random angles name streams from element 2 on
  const double want = p.cpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, pass, true, first_b);
  const double got = p.gpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, pass, true, first_b);
  EXPECT_LT(relative_difference(got, want), loss_tol) << "loss " << got << " against " << want;
  const std::vector<float> cpu_losses(p.cpu.losses(), p.cpu.losses() + b.B * b.T);
  EXPECT_LT(rms_relative_error(p.gpu.losses(), cpu_losses), loss_tol);
  p.cpu.backward();
  p.gpu.backward();
  const std::vector<float> grads = p.gpu.grads.download();
  for (const auto& t : p.cpu.tensors()) {
    const double err = rms_relative_error(slice(grads, t), slice(p.cpu.grads, t));
    EXPECT_LT(err, grad_tol) << "gradient of " << t.name << ": RMS relative error " << err;
  }
}

class GpuModel : public GpuTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(GpuModel, loss_and_every_gradient_match_the_cpu_in_fp32) {
  expect_model_matches(small_model(GetParam()), cuda::MatmulMath::fp32, kLossFp32, kGradFp32);
}

TEST_P(GpuModel, loss_and_every_gradient_match_the_cpu_in_tf32) {
  expect_model_matches(small_model(GetParam()), cuda::MatmulMath::tf32, kLossTf32, kGradTf32);
}

// Evaluation shares one arena across layers: the same losses as training mode.
TEST_P(GpuModel, evaluation_losses_match_the_cpu) {
  SCOPED_TRACE(GetParam());
  ModelPair p(small_model(GetParam()), 5, cuda::MatmulMath::fp32);
  const Batch b = random_batch(2, 300, 5);  // longer than the training length, 10 tiles
  const double want = p.cpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, runs::kEvalPass, false);
  const double got = p.gpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, runs::kEvalPass, false);
  EXPECT_LT(relative_difference(got, want), kLossFp32);
  const std::vector<float> cpu_losses(p.cpu.losses(), p.cpu.losses() + b.B * b.T);
  EXPECT_LT(rms_relative_error(p.gpu.losses(), cpu_losses), kLossFp32);
}

// householder_beta = "reflection": every step a reflection (beta = 2), no
// beta projection.
TEST_F(GpuTest, householder_reflections_match_the_cpu) {
  for (const char* scheme : {"householder_qk", "householder_qkv", "path_qk", "path_qkv", "path_qk_forget"}) {
    nn::ModelConfig m = small_model(scheme);
    m.householder_beta = "reflection";
    expect_model_matches(m, cuda::MatmulMath::fp32, kLossFp32, kGradFp32);
  }
}

// learned_shared: one table for every layer, its gradient summed over them.
TEST_F(GpuTest, a_shared_angle_table_matches_the_cpu) {
  for (const char* scheme : {"learned_qk", "learned_qkv"}) {
    nn::ModelConfig m = small_model(scheme);
    m.learned_shared = true;
    expect_model_matches(m, cuda::MatmulMath::fp32, kLossFp32, kGradFp32);
  }
}

INSTANTIATE_TEST_SUITE_P(schemes, GpuModel, ::testing::ValuesIn(device_schemes()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The CPU's (cos, sin) of one layer: nn::AngleSource's theta, then as
// nn::Model rounds them; `shift` is added to one angle (a planted error).
std::vector<float> cpu_cos_sin(const nn::Model<float>& model, uint64_t seed, const Batch& b, int layer,
                               uint64_t pass, int first_b, double shift = 0) {
  const nn::ModelConfig& m = model.config();
  const auto source = nn::make_angle_source<float>(m, seed);
  const nn::LayerParams lp = nn::layer_params(model.tensors(), layer);
  const float* table = lp.angles == std::size_t(-1) ? nullptr : model.params.data() + lp.angles;
  std::vector<double> theta(std::size_t(b.B) * b.T * (m.head_dim() / 2));
  source->angles(theta.data(), b.tokens.data(), b.B, b.T, layer, pass, table, first_b);
  theta[theta.size() / 2] += shift;
  std::vector<float> cs(2 * theta.size());
  for (std::size_t i = 0; i < theta.size(); ++i) {
    cs[2 * i] = float(std::cos(theta[i]));
    cs[2 * i + 1] = float(std::sin(theta[i]));
  }
  return cs;
}

class GpuAngles : public GpuTest, public ::testing::WithParamInterface<std::string> {};

// 600 positions: running sums long enough to wrap many times.
TEST_P(GpuAngles, every_layers_cos_sin_is_the_cpus_and_a_shifted_angle_is_caught) {
  SCOPED_TRACE(GetParam());
  nn::ModelConfig m = small_model(GetParam());
  m.angle_scale = 3.0;  // wide increments: the sums wrap often
  const uint64_t seed = 11;
  ModelPair p(m, seed, cuda::MatmulMath::fp32);
  const Batch b = random_batch(2, 600, 3);
  const uint64_t pass = 9;
  const int first_b = 1;
  p.gpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, pass, true, first_b);
  for (int l = 0; l < m.layers; ++l) {
    const std::vector<float> got = p.gpu.layer_cos_sin(l);
    EXPECT_LT(max_abs_difference(got, cpu_cos_sin(p.cpu, seed, b, l, pass, first_b)), kCosSin) << "layer " << l;
    // Planted: one angle off by 1e-3 must fail the same check.
    EXPECT_GT(max_abs_difference(got, cpu_cos_sin(p.cpu, seed, b, l, pass, first_b, 1e-3)), kCosSin) << "layer " << l;
  }
  if (nn::find_scheme(GetParam())->angles == nn::AngleKind::random) {
    // Another pass draws other angles: the streams are really per pass.
    EXPECT_GT(max_abs_difference(p.gpu.layer_cos_sin(0), cpu_cos_sin(p.cpu, seed, b, 0, pass + 1, first_b)), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(schemes, GpuAngles, ::testing::Values("rope", "random_qkv", "learned_qkv"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

using GpuModelChecks = GpuTest;

// A changed token must show up in the gradients: the comparison can fail.
TEST_F(GpuModelChecks, a_planted_token_change_fails_the_gradient_check) {
  ModelPair p(small_model("learned_qkv_forget"), 11, cuda::MatmulMath::fp32);
  Batch b = random_batch(3, 37, 11);
  p.gpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, 5, true, 0);
  p.gpu.backward();
  b.tokens[40] = (b.tokens[40] + 1) % 256;
  p.cpu.forward(b.tokens.data(), b.targets.data(), b.B, b.T, 5, true, 0);
  p.cpu.backward();
  EXPECT_GT(worst_gradient(p).first, kGradFp32);
}

// One AdamW step (decayed and undecayed tensors, bias correction at t = 3,
// clipping scale) and the global norm on a length that ends mid-chunk.
TEST_F(GpuModelChecks, adamw_step_and_global_norm_match_the_cpu) {
  const int64_t n = 3 * cuda::kNormChunk + 1234;
  const std::vector<nn::ParamTensor> tensors = {{"w", 0, true, {n / 2}}, {"b", std::size_t(n / 2), false, {n - n / 2}}};
  std::vector<float> params = random_floats(n, 1, 0.1), grads = random_floats(n, 2, 0.01);
  nn::AdamW cpu(n);
  cpu.m = random_floats(n, 3, 0.01);
  cpu.v = random_floats(n, 4, 1e-4);
  for (float& x : cpu.v) x = x * x;  // second moments are squares
  DeviceBuffer<float> d_params(params), d_grads(grads), d_m(cpu.m), d_v(cpu.v);

  EXPECT_LT(relative_difference(cuda::global_norm(d_grads.data(), n), nn::global_norm(grads)), kNorm);

  nn::TrainConfig c;
  const int t = 3;
  const double lr = 3e-4, scale = 0.7;
  cpu.update(params, grads, tensors, c, lr, scale, t);
  for (const auto& tensor : tensors) {
    const cuda::AdamWStep s{float(c.beta1), float(c.beta2), float(c.eps), float(1.0 - std::pow(c.beta1, t)),
                            float(1.0 - std::pow(c.beta2, t)), float(lr),
                            tensor.decay ? float(c.weight_decay) : 0.f, float(scale)};
    const std::size_t at = tensor.offset;
    cuda::adamw_update(d_params.data() + at, d_m.data() + at, d_v.data() + at, d_grads.data() + at,
                       int64_t(tensor.size()), s);
  }
  expect_close("params", d_params, params, kAdam);
  expect_close("m", d_m, cpu.m, kAdam);
  expect_close("v", d_v, cpu.v, kAdam);
}

// The backends' own optimiser loop (bias correction, decay per tensor) over
// a whole model: one forward, backward and update on each device.
TEST_F(GpuModelChecks, the_backends_take_the_same_training_step) {
  const nn::ModelConfig m = small_model("random_qkv_alibi");
  nn::CpuBackend cpu(m, 4);
  const auto gpu = cuda::cuda_backend_factory(false)(m, 4);
  nn::AdamW opt(cpu.param_count());
  opt.m = random_floats(opt.m.size(), 5, 0.01);
  opt.v = random_floats(opt.v.size(), 6, 1e-3);
  for (float& x : opt.v) x = x * x;
  cpu.set_optimizer(opt);
  gpu->set_optimizer(opt);
  const Batch b = random_batch(4, 40, 7);
  for (nn::ModelBackend* x : {static_cast<nn::ModelBackend*>(&cpu), gpu.get()}) {
    x->forward(b.tokens.data(), b.targets.data(), b.B, b.T, 2, true, 0);
    x->backward();
    x->mean_grads_over_ranks();
  }
  EXPECT_LT(relative_difference(gpu->grad_norm(), cpu.grad_norm()), kGradFp32);
  nn::TrainConfig c;
  cpu.adamw_update(c, 1e-3, 0.5, 7);
  gpu->adamw_update(c, 1e-3, 0.5, 7);
  EXPECT_LT(rms_relative_error(gpu->params(), cpu.params()), kAdam * 10);
  EXPECT_LT(rms_relative_error(gpu->optimizer().m, cpu.optimizer().m), kGradFp32);
  EXPECT_LT(rms_relative_error(gpu->optimizer().v, cpu.optimizer().v), kGradFp32);
}

// train.csv's loss column.
std::vector<double> logged_losses(const fs::path& run) {
  std::ifstream f(run / "train.csv");
  std::string line;
  std::getline(f, line);  // header
  std::vector<double> out;
  while (std::getline(f, line)) {
    std::stringstream row(line);
    std::string step, loss;
    std::getline(row, step, ',');
    std::getline(row, loss, ',');
    out.push_back(std::stod(loss));
  }
  return out;
}

class GpuTraining : public GpuTest, public ::testing::WithParamInterface<std::string> {};

// runs::train_run on each device, tests/test_nn_cli.cpp's tiny run: the loss
// curves agree step for step, and the GPU's checkpoint evaluates to the same
// bits per byte and passkey answers on the CPU and on the GPU.
TEST_P(GpuTraining, a_short_run_follows_the_cpus_loss_curve) {
  SCOPED_TRACE(GetParam());
  TempDir tmp;
  runs::RunConfig c;
  c.model.d_model = 16;
  c.model.heads = 2;
  c.model.layers = 1;
  c.model.mlp_ratio = 2;
  c.model.context = 16;
  c.model.scheme = GetParam();
  c.train.batch = 4;
  c.train.warmup = 2;
  c.train.steps = 30;
  c.train.log_every = 1;
  c.train.checkpoint_every = 30;
  c.corpus = kSlice;
  const fs::path cpu_run = tmp.path / "cpu", gpu_run = tmp.path / "gpu";
  runs::train_run(c, {cpu_run.string(), false, false});
  runs::train_run(c, {gpu_run.string(), false, false, cuda::cuda_backend_factory(false)});
  const std::vector<double> want = logged_losses(cpu_run), got = logged_losses(gpu_run);
  ASSERT_EQ(want.size(), 30u);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_LT(std::abs(got[i] - want[i]), kCurve) << "step " << i + 1 << ": " << got[i] << " against " << want[i];
  EXPECT_LT(want.back(), want.front());  // it trained

  // The checkpoint is the CPU's format: either device evaluates it.
  const std::string on_cpu = runs::evaluate_run(gpu_run.string(), "1x,2x", (tmp.path / "cpu.csv").string(), false);
  const std::string on_gpu = runs::evaluate_run(gpu_run.string(), "1x,2x", (tmp.path / "gpu.csv").string(), false,
                                                cuda::cuda_backend_factory(false));
  auto bits = [](const std::string& rows) {
    std::vector<double> out;
    std::stringstream in(rows);
    for (std::string line; std::getline(in, line);) {
      const auto last = line.rfind(','), before = line.rfind(',', last - 1);
      out.push_back(std::stod(line.substr(before + 1, last - before - 1)));  // bits_per_byte
    }
    return out;
  };
  const std::vector<double> bits_cpu = bits(on_cpu), bits_gpu = bits(on_gpu);
  ASSERT_EQ(bits_cpu.size(), 2u);
  ASSERT_EQ(bits_gpu.size(), 2u);
  for (int i = 0; i < 2; ++i) EXPECT_LT(relative_difference(bits_gpu[i], bits_cpu[i]), kLossFp32) << i;

  // Passkey on either device: the same trials, the same key bits (last
  // column) to kLossFp32, and at most one digit of the 40 read differently
  // (a near tie in the argmax may fall either way).
  const std::string L = std::to_string(runs::passkey_min_length() + 20);
  auto passkey = [&](const char* name, const nn::BackendFactory& backend) {
    const std::string csv =
        runs::passkey_run(gpu_run.string(), L, {0.5}, 8, 1, (tmp.path / name).string(), false, backend);
    const std::string row = csv.substr(csv.find('\n') + 1);
    std::vector<double> cells;
    std::stringstream in(row);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(std::atof(cell.c_str()));
    return cells;  // ..., accuracy, digit_accuracy, key_bits_per_byte
  };
  const std::vector<double> pk_cpu = passkey("pk-cpu.csv", {});
  const std::vector<double> pk_gpu = passkey("pk-gpu.csv", cuda::cuda_backend_factory(false));
  ASSERT_EQ(pk_cpu.size(), 9u);
  ASSERT_EQ(pk_gpu.size(), 9u);
  EXPECT_LT(relative_difference(pk_gpu[8], pk_cpu[8]), kLossFp32);
  EXPECT_LE(std::abs(pk_gpu[7] - pk_cpu[7]), 1.0 / 40 + 1e-12);
}

INSTANTIATE_TEST_SUITE_P(schemes, GpuTraining,
                         ::testing::Values("rope", "random_qkv", "learned_qkv_forget", "householder_qkv", "path_qkv"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
