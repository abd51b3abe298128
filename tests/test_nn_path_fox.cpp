// What the fox and path_* schemes mean, beyond their gradients
// (tests/test_nn_grad.cpp checks those): PaTH's step direction w_t reads the
// tokens t-2..t and no other, where householder_*'s reads t alone; every
// scheme is causal (a later token leaves earlier losses bit for bit); fox
// with its gate held open is nope, and with the gate at its start is not.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "model_configs.h"
#include "nn/model.h"
#include "nn/scheme.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;
using routelab::testing::small_model_config;

constexpr int kSeqs = 2, kLen = 20;

std::vector<int> path_fox_bytes(uint64_t seed) {
  Stream s(seed, 0);
  std::vector<int> v(std::size_t(kSeqs) * kLen);
  for (int& x : v) x = int(s.below(256));
  return v;
}

// Layer 0's unit step directions w (B, H, T, hd) for these tokens.
std::vector<double> first_layer_steps(Model<double>& model, const std::vector<int>& tokens) {
  std::vector<double> w;
  model.set_attention_observer([&](int layer, const double*, const double*, ScoreBias<double>, const double* hh_w,
                                   const double*, AttentionShape s) {
    if (layer == 0) w.assign(hh_w, hh_w + std::size_t(s.B) * s.H * s.T * s.hd);
  });
  model.forward(tokens.data(), tokens.data(), kSeqs, kLen, 1, false);
  model.set_attention_observer(nullptr);
  return w;
}

// The positions (b, t) whose direction w_t moves, in any head, when the token
// at (b0, s) changes.
std::set<std::pair<int, int>> steps_moved_by(const std::string& scheme, int b0, int s) {
  Model<double> model(small_model_config(scheme, 2, kLen), 3);
  const std::vector<int> tokens = path_fox_bytes(4);
  std::vector<int> changed = tokens;
  changed[std::size_t(b0) * kLen + s] = (changed[std::size_t(b0) * kLen + s] + 101) % 256;
  const std::vector<double> a = first_layer_steps(model, tokens), b = first_layer_steps(model, changed);
  const int H = model.config().heads, hd = model.config().head_dim();
  std::set<std::pair<int, int>> moved;
  for (int bb = 0; bb < kSeqs; ++bb)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < kLen; ++t) {
        const std::size_t at = ((std::size_t(bb) * H + h) * kLen + t) * hd;
        if (!std::equal(a.begin() + at, a.begin() + at + hd, b.begin() + at)) moved.insert({bb, t});
      }
  return moved;
}

// Layer 0 reads the embeddings, so its w_t is a function of the tokens the
// direction sees: PaTH's own form the last three (its convolution's window),
// householder_*'s the token at t alone. The second is the contrast that shows
// the check tells the two apart.
TEST(nn_path, a_step_direction_reads_its_token_and_the_two_before) {
  for (const char* scheme : {"path_qk", "path_qkv"})
    for (int s : {0, 7, kLen - 2, kLen - 1}) {
      std::set<std::pair<int, int>> want;
      for (int t = s; t <= std::min(s + 2, kLen - 1); ++t) want.insert({1, t});
      EXPECT_EQ(steps_moved_by(scheme, 1, s), want) << scheme << ", token " << s;
    }
  EXPECT_EQ(steps_moved_by("householder_qk", 1, 7), (std::set<std::pair<int, int>>{{1, 7}}));
}

// Every scheme: changing token s leaves the losses before s bit for bit and
// moves the loss at s (the blocked Householder chunks and the streamed
// softmax tiles compute masked work, which must stay masked).
TEST(nn_schemes, a_later_token_leaves_every_earlier_loss_bit_for_bit) {
  for (const SchemeInfo& info : all_schemes()) {
    Model<double> model(small_model_config(info.name, 2, kLen), 3);
    Stream noise(5, 0);
    for (auto& p : model.params) p += 0.05 * noise.normal();  // no bias at 0, no gate at its start
    const std::vector<int> tokens = path_fox_bytes(6), targets = path_fox_bytes(7);
    for (int s : {1, 11, kLen - 1}) {
      std::vector<int> changed = tokens;
      changed[std::size_t(kLen) + s] = (changed[std::size_t(kLen) + s] + 37) % 256;
      model.forward(tokens.data(), targets.data(), kSeqs, kLen, 9, false);
      const std::vector<double> a(model.losses(), model.losses() + kSeqs * kLen);
      model.forward(changed.data(), targets.data(), kSeqs, kLen, 9, false);
      const std::vector<double> b(model.losses(), model.losses() + kSeqs * kLen);
      for (int t = 0; t < kLen; ++t) EXPECT_EQ(a[t], b[t]) << info.name << ": the other sequence, t " << t;
      for (int t = 0; t < s; ++t) EXPECT_EQ(a[kLen + t], b[kLen + t]) << info.name << ": t " << t << " before " << s;
      EXPECT_NE(a[kLen + s], b[kLen + s]) << info.name << ": the changed token's own loss";
    }
  }
}

// fox is nope plus the gate's bias cum_i - cum_j. Held open (f = sigmoid(60),
// log f ~ -1e-26) the bias vanishes and fox computes nope's losses from the
// same weights; at its start (f = 1/2, a bias of -(i - j) log 2) it does not.
TEST(nn_fox, with_the_gate_held_open_it_is_nope) {
  Model<double> fox(small_model_config("fox", 2, kLen), 3), nope(small_model_config("nope", 2, kLen), 4);
  Stream noise(8, 0);
  for (auto& p : fox.params) p += 0.05 * noise.normal();
  const std::vector<int> tokens = path_fox_bytes(9), targets = path_fox_bytes(10);
  auto gate_bias = [&](double value) {
    for (const auto& t : fox.tensors()) {
      if (t.name.ends_with(".fgw")) std::fill_n(fox.params.data() + t.offset, t.size(), 0.0);
      if (t.name.ends_with(".fgb")) std::fill_n(fox.params.data() + t.offset, t.size(), value);
    }
  };
  for (const auto& t : nope.tensors()) {
    const ParamTensor& from = find_tensor(fox.tensors(), t.name);
    std::copy_n(fox.params.data() + from.offset, t.size(), nope.params.data() + t.offset);
  }
  nope.forward(tokens.data(), targets.data(), kSeqs, kLen, 1, false);
  const std::vector<double> want(nope.losses(), nope.losses() + kSeqs * kLen);
  auto worst_difference = [&] {
    fox.forward(tokens.data(), targets.data(), kSeqs, kLen, 1, false);
    double worst = 0;
    for (int i = 0; i < kSeqs * kLen; ++i) worst = std::max(worst, std::abs(fox.losses()[i] - want[i]));
    return worst;
  };
  gate_bias(60.0);
  EXPECT_LT(worst_difference(), 1e-13);
  gate_bias(0.0);
  EXPECT_GT(worst_difference(), 1e-3);
}

}  // namespace
