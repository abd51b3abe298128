// CUDA Householder transport (lib/cuda/householder.cu) against the CPU
// reference (nn/householder.h): the steps from their projections (PaTH's
// beta and reflections), and attention forward and backward, on both GPU
// paths (blocked, the model's, and rows), with and without value transport,
// on lengths below one chunk, ragged lengths, head widths that fill one, two and four
// coordinates per lane (16, 48, 128), batches whose rows split over many
// warps, and gradients that start non-zero (backward adds). A planted error
// (value transport switched on the GPU) must fail the same comparison.
// Tolerances, RMS of the difference over RMS of the reference:
//   kSteps     1e-6  the same code (nn/householder_step.h), up to FMA contraction
//   kForward   1e-5  fp32 dots reduced across a warp, in another order
//   kBackward  5e-5  chains of up to T steps walked back, partial sums per warp
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/householder.h"
#include "gpu_helpers.h"
#include "nn/householder.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

constexpr double kSteps = 1e-6;

class gpu_householder : public GpuTest {};

struct Case {
  nn::AttentionShape s;
  bool path_beta, values;
  nn::HouseholderPath path = nn::HouseholderPath::blocked;
};
constexpr nn::HouseholderPath kGpuPaths[] = {nn::HouseholderPath::blocked, nn::HouseholderPath::rows};

std::string describe(const Case& c) {
  return "B " + std::to_string(c.s.B) + " T " + std::to_string(c.s.T) + " H " + std::to_string(c.s.H) + " hd " +
         std::to_string(c.s.hd) + (c.path_beta ? ", path beta" : ", reflections") +
         (c.values ? ", values transported" : "") +
         (c.path == nn::HouseholderPath::blocked ? ", blocked" : ", rows");
}

// CPU steps, attention and gradients from random projections; the GPU fed the
// CPU's inputs at each stage. values_on_gpu != c.values plants an error.
void check_case(const Case& c, uint64_t seed, bool values_on_gpu, double forward_tol, double backward_tol,
                bool expect_pass = true) {
  SCOPED_TRACE(describe(c) + ", seed " + std::to_string(seed));
  const nn::AttentionShape& s = c.s;
  const std::size_t n = std::size_t(s.B) * s.H * s.T * s.hd, steps = std::size_t(s.B) * s.H * s.T;
  // Steps: z (B, T, C), beta logits (B, T, H).
  const std::vector<float> z = random_floats(n, seed), logit = random_floats(steps, seed + 1);
  const float* logit_cpu = c.path_beta ? logit.data() : nullptr;
  std::vector<float> w(n), beta(steps);
  nn::householder_steps_forward(w.data(), beta.data(), z.data(), logit_cpu, s);
  DeviceBuffer<float> z_d(z), logit_d(logit), w_d(n), beta_d(steps);
  cuda::householder_steps_forward(w_d.data(), beta_d.data(), z_d.data(), c.path_beta ? logit_d.data() : nullptr, s);
  if (expect_pass) {
    expect_close("steps w", w_d, w, kSteps);
    expect_close("steps beta", beta_d, beta, kSteps);
  }

  // Attention forward and backward from the CPU's steps.
  const std::vector<float> q = random_floats(n, seed + 2), k = random_floats(n, seed + 3), v = random_floats(n, seed + 4);
  const std::vector<float> d_o = random_floats(n, seed + 5);
  std::vector<float> o(n), dq = random_floats(n, seed + 6), dk = random_floats(n, seed + 7),
                           dv = random_floats(n, seed + 8), dw = random_floats(n, seed + 9),
                           dbeta = random_floats(steps, seed + 10);
  DeviceBuffer<float> q_d(q), k_d(k), v_d(v), o_d(n), d_o_d(d_o), dq_d(dq), dk_d(dk), dv_d(dv), dw_d(dw),
      dbeta_d(dbeta), scratch;
  w_d.upload(w), beta_d.upload(beta);
  nn::householder_attention_forward(o.data(), q.data(), k.data(), v.data(), w.data(), beta.data(), c.values, s);
  nn::householder_attention_backward(dq.data(), dk.data(), dv.data(), dw.data(), dbeta.data(), d_o.data(), q.data(),
                                     k.data(), v.data(), w.data(), beta.data(), c.values, s);
  cuda::householder_attention_forward(o_d.data(), q_d.data(), k_d.data(), v_d.data(), w_d.data(), beta_d.data(),
                                      values_on_gpu, s, scratch, c.path);
  cuda::householder_attention_backward(dq_d.data(), dk_d.data(), dv_d.data(), dw_d.data(), dbeta_d.data(),
                                       d_o_d.data(), q_d.data(), k_d.data(), v_d.data(), w_d.data(), beta_d.data(),
                                       values_on_gpu, s, scratch, c.path);
  if (!expect_pass) {
    EXPECT_GT(rms_relative_error(o_d.download(), o), 100 * forward_tol) << "planted error not caught in o";
    EXPECT_GT(rms_relative_error(dv_d.download(), dv), 100 * backward_tol) << "planted error not caught in dv";
    return;
  }
  expect_close("attention o", o_d, o, forward_tol);
  expect_close("dq", dq_d, dq, backward_tol);
  expect_close("dk", dk_d, dk, backward_tol);
  expect_close("dv", dv_d, dv, backward_tol);
  expect_close("dw", dw_d, dw, backward_tol);
  expect_close("dbeta", dbeta_d, dbeta, backward_tol);

  // The steps' backward from the CPU's dw, dbeta.
  std::vector<float> dz(n), dlogit(steps);
  nn::householder_steps_backward(dz.data(), c.path_beta ? dlogit.data() : nullptr, dw.data(), dbeta.data(), z.data(),
                                 beta.data(), s);
  DeviceBuffer<float> dz_d(n), dlogit_d(steps);
  dw_d.upload(dw), dbeta_d.upload(dbeta);
  cuda::householder_steps_backward(dz_d.data(), c.path_beta ? dlogit_d.data() : nullptr, dw_d.data(), dbeta_d.data(),
                                   z_d.data(), beta_d.data(), s);
  expect_close("steps dz", dz_d, dz, kSteps);
  if (c.path_beta) expect_close("steps dbeta_logit", dlogit_d, dlogit, kSteps);
}

// 13 rows (below the blocked path's chunk of 16), 37 (a ragged end); head
// widths 16, 48 and 128.
TEST_F(gpu_householder, steps_and_attention_match_cpu) {
  for (const nn::AttentionShape s :
       {nn::AttentionShape{2, 13, 2, 16}, {2, 37, 3, 16}, {1, 37, 2, 48}, {1, 21, 1, 128}})
    for (bool path_beta : {true, false})
      for (bool values : {false, true})
        for (nn::HouseholderPath path : kGpuPaths) check_case({s, path_beta, values, path}, 3, values, kForward, kBackward);
}

// One head of 300 rows (many chunks, many warps per head), one of 1000 and
// one of 600 at hd 128 (the chunk of 48), a batch of many short heads, and
// 256 heads of 300 rows (fewer forward blocks per head than chunks, so a
// block runs several query chunks in one workspace).
TEST_F(gpu_householder, long_heads_and_many_heads_match_cpu) {
  for (const nn::AttentionShape s : {nn::AttentionShape{1, 300, 1, 64}, {1, 1000, 1, 32}, {1, 600, 1, 128},
                                     {8, 64, 8, 32}, {32, 300, 8, 32}})
    for (bool values : {false, true})
      for (nn::HouseholderPath path : kGpuPaths) check_case({s, true, values, path}, 5, values, kForward, kBackward);
}

// The blocked path with its scratch limit at 1 MB: the 64 heads go one or
// two a launch, each launch on its own slice of the scratch.
TEST_F(gpu_householder, heads_in_groups_match_cpu) {
  const std::size_t before = cuda::set_householder_scratch_limit(std::size_t(1) << 20);
  for (bool values : {false, true}) check_case({{8, 200, 8, 32}, true, values}, 7, values, kForward, kBackward);
  cuda::set_householder_scratch_limit(before);
}

// The blocked path: the same bytes on a second run (no atomics).
TEST_F(gpu_householder, blocked_path_gives_the_same_bytes_twice) {
  const nn::AttentionShape s{2, 200, 2, 32};
  const std::size_t n = std::size_t(s.B) * s.H * s.T * s.hd, steps = std::size_t(s.B) * s.H * s.T;
  std::vector<float> w = random_floats(n, 1), beta(steps, 2.0f);
  for (std::size_t t = 0; t < steps; ++t) {  // unit steps
    float norm = 0;
    for (int c = 0; c < s.hd; ++c) norm += w[t * s.hd + c] * w[t * s.hd + c];
    for (int c = 0; c < s.hd; ++c) w[t * s.hd + c] /= std::sqrt(norm);
  }
  const DeviceBuffer<float> q(random_floats(n, 2)), k(random_floats(n, 3)), v(random_floats(n, 4)), w_d(w),
      beta_d(beta), d_o(random_floats(n, 5));
  auto run = [&] {
    const std::vector<float> zeros(n, 0.0f), zero_steps(steps, 0.0f);  // backward adds
    DeviceBuffer<float> o(n), dq(zeros), dk(zeros), dv(zeros), dw(zeros), dbeta(zero_steps), scratch;
    cuda::householder_attention_forward(o.data(), q.data(), k.data(), v.data(), w_d.data(), beta_d.data(), true, s,
                                        scratch);
    cuda::householder_attention_backward(dq.data(), dk.data(), dv.data(), dw.data(), dbeta.data(), d_o.data(),
                                         q.data(), k.data(), v.data(), w_d.data(), beta_d.data(), true, s, scratch);
    return std::vector<std::vector<float>>{o.download(), dq.download(), dk.download(), dv.download(), dw.download(),
                                           dbeta.download()};
  };
  EXPECT_TRUE(run() == run());
}

TEST_F(gpu_householder, planted_error_value_transport_switched_fails) {
  for (bool values : {false, true})
    for (nn::HouseholderPath path : kGpuPaths)
      check_case({{2, 37, 2, 16}, true, values, path}, 3, !values, kForward, kBackward, false);
}

}  // namespace
