// CUDA attention (lib/cuda/attention.cu) against the CPU reference
// (lib/nn/attention.cpp): split_heads, attention and merge_heads, forward and
// backward, for every option the schemes use: plain (nope), rotation of q and
// k (rope, *_qk), rotation of q, k and v (*_qkv), ALiBi slopes, a forget
// gate's running sum, and the combinations the schemes make of them. Each
// stage is fed the CPU's inputs, so an error points at one kernel. Shapes are
// awkward: lengths that end mid-tile (the GPU's 32-row tiles and the CPU's
// 64), head dimensions 16, 64 and the largest supported, 128.
// Tolerances, as RMS of the difference over RMS of the reference:
//   kExact     1e-6  split/merge: the same products, up to FMA contraction
//   kForward   1e-5  attention output and lse: fp32 dots and exps summed in
//                    another order
//   kBackward  5e-5  dq, dk, dv, dtheta: sums over up to T products of P and
//                    (dP - D), which cancel partly
//   kCum       1e-4  dcum: row sums of dS vanish in exact arithmetic, so only
//                    the column sums carry signal and rounding is relatively
//                    larger
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/attention.h"
#include "gpu_helpers.h"
#include "nn/attention.h"
#include "nn/scheme.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

constexpr double kCum = 1e-4;

enum class Rotation { none, qk, qkv };

struct AttentionCase {
  std::string name;
  Rotation rotation;
  bool alibi, forget;
};

// The CPU's tensors for one case: inputs, then every forward and backward
// output, computed with the reference functions.
struct Reference {
  std::vector<float> qkv, cs, cum, q, k, v, o, lse, y, dy, d_o, dq, dk, dv, dcum, dqkv;
  std::vector<double> slopes, dtheta;
};

Reference run_cpu(const AttentionCase& c, const nn::AttentionShape& s, uint64_t seed) {
  const std::size_t per_head = std::size_t(s.B) * s.H * s.T * s.hd, rows = std::size_t(s.B) * s.T;
  const std::size_t nb = s.hd / 2;
  Reference r;
  r.qkv = random_floats(rows * 3 * s.C(), seed);
  if (c.rotation != Rotation::none) {
    // Angles of every size, as accumulated transport makes them.
    const auto theta = random_floats(rows * nb, seed + 1, 3.0);
    r.cs.resize(rows * nb * 2);
    for (std::size_t i = 0; i < theta.size(); ++i) {
      r.cs[2 * i] = std::cos(theta[i]);
      r.cs[2 * i + 1] = std::sin(theta[i]);
    }
  }
  if (c.alibi) r.slopes = nn::alibi_slopes(s.H);
  if (c.forget) {  // a running sum of log f_t < 0
    r.cum = random_floats(std::size_t(s.B) * s.H * s.T, seed + 2);
    for (std::size_t i = 0; i < r.cum.size(); ++i)
      r.cum[i] = (i % s.T ? r.cum[i - 1] : 0.0f) - 0.1f * std::abs(r.cum[i]);
  }
  const float* cs = r.cs.empty() ? nullptr : r.cs.data();
  const bool rotate_v = c.rotation == Rotation::qkv;
  const nn::ScoreBias<float> bias{r.slopes.empty() ? nullptr : r.slopes.data(), r.cum.empty() ? nullptr : r.cum.data()};
  r.q.resize(per_head), r.k.resize(per_head), r.v.resize(per_head), r.o.resize(per_head);
  r.lse.resize(std::size_t(s.B) * s.H * s.T);
  r.y.resize(rows * s.C());
  nn::split_heads_forward(r.q.data(), r.k.data(), r.v.data(), r.qkv.data(), cs, rotate_v, s);
  nn::attention_forward(r.o.data(), r.lse.data(), r.q.data(), r.k.data(), r.v.data(), bias, s);
  // Values transported forward are transported back on the way out.
  const float* merge_cs = rotate_v ? cs : nullptr;
  nn::merge_heads_forward(r.y.data(), r.o.data(), merge_cs, s);

  // Backward from a random dy into gradients that start non-zero (backward adds).
  r.dy = random_floats(rows * s.C(), seed + 3);
  r.d_o = random_floats(per_head, seed + 4);
  r.dq = random_floats(per_head, seed + 5);
  r.dk = random_floats(per_head, seed + 6);
  r.dv = random_floats(per_head, seed + 7);
  r.dcum = random_floats(r.lse.size(), seed + 8);
  r.dqkv = random_floats(r.qkv.size(), seed + 9);
  r.dtheta.assign(rows * nb, 0.5);
  double* dtheta = cs ? r.dtheta.data() : nullptr;
  nn::merge_heads_backward(r.d_o.data(), dtheta, r.dy.data(), r.y.data(), merge_cs, s);
  nn::attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), r.dcum.data(), r.d_o.data(), r.o.data(),
                         r.lse.data(), r.q.data(), r.k.data(), r.v.data(), bias, s);
  nn::split_heads_backward(r.dqkv.data(), dtheta, r.dq.data(), r.dk.data(), r.dv.data(), r.q.data(), r.k.data(),
                           r.v.data(), cs, rotate_v, s);
  return r;
}

// The same stages on the GPU, each from the CPU's inputs to it.
void check_case(const AttentionCase& c, const nn::AttentionShape& s, uint64_t seed) {
  SCOPED_TRACE(c.name + ", B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " H " + std::to_string(s.H) +
               " hd " + std::to_string(s.hd) + ", seed " + std::to_string(seed));
  const Reference r = run_cpu(c, s, seed);
  // Gradient start values: regenerated, as run_cpu drew them.
  const Reference start = [&] {
    Reference z;
    z.d_o = random_floats(r.o.size(), seed + 4);
    z.dq = random_floats(r.q.size(), seed + 5);
    z.dk = random_floats(r.k.size(), seed + 6);
    z.dv = random_floats(r.v.size(), seed + 7);
    z.dcum = random_floats(r.lse.size(), seed + 8);
    z.dqkv = random_floats(r.qkv.size(), seed + 9);
    z.dtheta.assign(r.dtheta.size(), 0.5);
    return z;
  }();
  const bool rotate_v = c.rotation == Rotation::qkv;
  DeviceBuffer<float> qkv(r.qkv), cs(r.cs), cum(r.cum), q(r.q.size()), k(r.k.size()), v(r.v.size());
  DeviceBuffer<float> o(r.o.size()), lse(r.lse.size()), y(r.y.size());
  DeviceBuffer<double> slopes(r.slopes);
  const float* cs_ptr = r.cs.empty() ? nullptr : cs.data();
  const float* merge_cs = rotate_v ? cs_ptr : nullptr;
  const nn::ScoreBias<float> bias{r.slopes.empty() ? nullptr : slopes.data(), r.cum.empty() ? nullptr : cum.data()};

  cuda::split_heads_forward(q.data(), k.data(), v.data(), qkv.data(), cs_ptr, rotate_v, s);
  expect_close("split q", q, r.q, kExact);
  expect_close("split k", k, r.k, kExact);
  expect_close("split v", v, r.v, kExact);
  q.upload(r.q), k.upload(r.k), v.upload(r.v);
  cuda::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), bias, s);
  expect_close("attention o", o, r.o, kForward);
  expect_close("attention lse", lse, r.lse, kForward);
  o.upload(r.o), lse.upload(r.lse);
  cuda::merge_heads_forward(y.data(), o.data(), merge_cs, s);
  expect_close("merge y", y, r.y, kExact);
  y.upload(r.y);

  DeviceBuffer<float> dy(r.dy), d_o(start.d_o), dq(start.dq), dk(start.dk), dv(start.dv), dcum(start.dcum);
  DeviceBuffer<float> dqkv(start.dqkv);
  DeviceBuffer<double> dtheta(start.dtheta);
  double* dtheta_ptr = cs_ptr ? dtheta.data() : nullptr;
  cuda::merge_heads_backward(d_o.data(), dtheta_ptr, dy.data(), y.data(), merge_cs, s);
  // The CPU's d_o includes its merge; so the GPU's, checked here, feeds the rest.
  const auto d_o_gpu = d_o.download();
  EXPECT_LT(rms_relative_error(d_o_gpu, r.d_o), kExact) << "merge d_o";
  d_o.upload(r.d_o);
  cuda::attention_backward(dq.data(), dk.data(), dv.data(), dcum.data(), d_o.data(), o.data(), lse.data(), q.data(),
                           k.data(), v.data(), bias, s);
  expect_close("attention dq", dq, r.dq, kBackward);
  expect_close("attention dk", dk, r.dk, kBackward);
  expect_close("attention dv", dv, r.dv, kBackward);
  // Without a forget gate dcum is untouched: still its random start.
  expect_close("attention dcum", dcum, r.dcum, c.forget ? kCum : 1e-12);
  dq.upload(r.dq), dk.upload(r.dk), dv.upload(r.dv);
  cuda::split_heads_backward(dqkv.data(), dtheta_ptr, dq.data(), dk.data(), dv.data(), q.data(), k.data(), v.data(),
                             cs_ptr, rotate_v, s);
  expect_close("split dqkv", dqkv, r.dqkv, kExact);
  // dtheta gathers merge's and split's parts, as in the model.
  expect_close("dtheta", dtheta, r.dtheta, kBackward);
}

const AttentionCase kCases[] = {
    {"plain", Rotation::none, false, false},
    {"rotation qk", Rotation::qk, false, false},
    {"rotation qkv", Rotation::qkv, false, false},
    {"alibi", Rotation::none, true, false},
    {"forget cum", Rotation::none, false, true},
    {"rotation qkv + alibi", Rotation::qkv, true, false},
    {"rotation qkv + forget cum", Rotation::qkv, false, true},
};

class gpu_attention : public GpuTest {};

TEST_F(gpu_attention, every_option_matches_cpu_on_a_ragged_length) {
  uint64_t seed = 100;
  for (const auto& c : kCases) check_case(c, {2, 75, 3, 16}, seed += 10);
}

TEST_F(gpu_attention, longer_sequences_and_wide_heads_match_cpu) {
  check_case(kCases[6], {1, 300, 2, 64}, 200);   // ten GPU tiles, five CPU tiles, both ragged
  check_case(kCases[5], {1, 70, 1, 128}, 210);   // the largest head dimension
  check_case(kCases[0], {3, 1, 2, 8}, 220);      // a single position
}

// The query-side term of dcum (row sums of dS, + on row i) vanishes when o is
// the forward's own output, so the cases above cannot see it. With an o that
// is not (D_i = do_i . o_i no longer equals sum_j P_ij dP_ij) the row sums are
// not zero, and the GPU must add them as the CPU does.
TEST_F(gpu_attention, dcum_keeps_its_query_side_term) {
  const nn::AttentionShape s{2, 37, 2, 8};
  const uint64_t seed = 300;
  const Reference r = run_cpu(kCases[4], s, seed);  // forget cum
  const auto o_other = random_floats(r.o.size(), seed + 20);
  const auto d_o = random_floats(r.o.size(), seed + 21);
  const nn::ScoreBias<float> cpu_bias{nullptr, r.cum.data()};
  auto cpu_dcum = [&](const std::vector<float>& o) {
    std::vector<float> dq(r.q.size()), dk(r.k.size()), dv(r.v.size()), dcum(r.lse.size());
    nn::attention_backward(dq.data(), dk.data(), dv.data(), dcum.data(), d_o.data(), o.data(), r.lse.data(),
                           r.q.data(), r.k.data(), r.v.data(), cpu_bias, s);
    return dcum;
  };
  const auto want = cpu_dcum(o_other);
  // The term is there to be missed: far larger than the tolerance.
  ASSERT_GT(rms_relative_error(cpu_dcum(r.o), want), 100 * kCum);
  DeviceBuffer<float> q(r.q), k(r.k), v(r.v), o(o_other), lse(r.lse), cum(r.cum), dout(d_o);
  DeviceBuffer<float> dq(r.q.size()), dk(r.k.size()), dv(r.v.size()), dcum(r.lse.size());
  dq.zero(), dk.zero(), dv.zero(), dcum.zero();
  cuda::attention_backward(dq.data(), dk.data(), dv.data(), dcum.data(), dout.data(), o.data(), lse.data(), q.data(),
                           k.data(), v.data(), {nullptr, cum.data()}, s);
  expect_close("dcum with its query-side term", dcum, want, kCum);
}

// Host-side checks run without a device: a head the kernels cannot hold is
// refused before any launch.
TEST(gpu_attention_shapes, unsupported_head_dimensions_are_refused) {
  const nn::AttentionShape too_wide{1, 4, 1, cuda::kMaxHeadDim + 2};
  EXPECT_THROW(cuda::attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, {}, too_wide),
               std::invalid_argument);
  const nn::AttentionShape odd{1, 4, 1, 7};
  const float* fake_cs = reinterpret_cast<const float*>(16);  // only compared with null
  EXPECT_THROW(cuda::split_heads_forward(nullptr, nullptr, nullptr, nullptr, fake_cs, false, odd),
               std::invalid_argument);
}

}  // namespace
