// Finite-difference gradient checks, in double, for every positional scheme
// and every parameter tensor of the transformer. T spans two attention tiles
// so the streamed softmax's tile boundary is inside the check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <omp.h>

#include "nn/model.h"
#include "nn/scheme.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;

// "householder_qk:reflection" names a scheme and its householder_beta,
// "learned_qkv:shared" one angle table for all layers, "learned_qk:uniform" a
// learned_init.
ModelConfig grad_config(const std::string& scheme) {
  ModelConfig m;
  const std::size_t colon = scheme.find(':');
  const std::string option = colon == std::string::npos ? "" : scheme.substr(colon + 1);
  if (option == "shared") m.learned_shared = true;
  else if (option == "uniform" || option == "rope") m.learned_init = option;
  else if (!option.empty()) m.householder_beta = option;
  m.d_model = 8;
  m.heads = 2;
  m.layers = 2;
  m.mlp_ratio = 2;
  m.context = 66;
  m.scheme = scheme.substr(0, colon);
  // Large angle increments so the angles' derivatives are far from zero.
  m.angle_scale = 3.0;
  return m;
}

struct Batch {
  int B = 1, T = 66;
  std::vector<int> tokens, targets;
};

Batch tiny_batch() {
  Batch b;
  Stream s(7, 0);
  // A small alphabet, so each learned-table row is used many times.
  for (int i = 0; i < b.B * b.T; ++i) b.tokens.push_back(int(97 + s.below(6)));
  for (int i = 0; i < b.B * b.T; ++i) b.targets.push_back(int(97 + s.below(6)));
  return b;
}

// Relative error of a tensor's gradient, || g - fd || / max(|| g ||, || fd ||),
// over the entries checked. A five-point stencil keeps truncation far below
// the 1e-6 tolerance; h trades it against rounding in the loss.
struct TensorError {
  std::string name;
  double rel, norm;
};

std::vector<TensorError> check_gradients(Model<double>& model, const Batch& b, uint64_t pass,
                                        const std::function<void(std::vector<double>&)>& tamper = {}) {
  model.forward(b.tokens.data(), b.targets.data(), b.B, b.T, pass);
  model.backward();
  std::vector<double> analytic(model.grads.begin(), model.grads.end());
  if (tamper) tamper(analytic);
  std::set<int> used(b.tokens.begin(), b.tokens.end());
  used.insert({0, 200, 255});  // and a few rows no token touches
  std::vector<TensorError> out;
  const double h = 3e-5;
  for (const auto& t : model.tensors()) {
    const bool by_token = t.name == "wte" || t.name == "angles" || t.name.ends_with(".angles");
    const std::size_t row = by_token ? t.size() / 256 : 1;
    double diff2 = 0, g2 = 0, fd2 = 0;
    for (std::size_t j = 0; j < t.size(); ++j) {
      if (by_token && !used.count(int(j / row))) continue;
      double& p = model.params[t.offset + j];
      const double p0 = p;
      auto loss_at = [&](double x) {
        p = p0 + x;
        return model.forward(b.tokens.data(), b.targets.data(), b.B, b.T, pass);
      };
      const double fd = (-loss_at(2 * h) + 8 * loss_at(h) - 8 * loss_at(-h) + loss_at(-2 * h)) / (12 * h);
      p = p0;
      const double g = analytic[t.offset + j];
      diff2 += (g - fd) * (g - fd);
      g2 += g * g;
      fd2 += fd * fd;
    }
    out.push_back({t.name, std::sqrt(diff2) / std::max({std::sqrt(g2), std::sqrt(fd2), 1e-300}), std::sqrt(g2)});
  }
  return out;
}

// One thread: the check makes thousands of tiny forward passes, where
// threads only add barriers (thread invariance is tested on its own).
class nn_grad : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { omp_set_num_threads(1); }
};

// Biases and LayerNorm parameters start at 0 and 1: move them off those
// symmetric points, and make the scores large enough that every gradient
// stands well above the loss's rounding error.
void move_off_the_start(Model<double>& model) {
  Stream s(11, 0);
  for (auto& p : model.params) p += 0.3 * s.normal();
}

TEST_P(nn_grad, every_tensor_matches_finite_differences) {
  Model<double> model(grad_config(GetParam()), 3);
  move_off_the_start(model);
  const Batch b = tiny_batch();
  for (const auto& e : check_gradients(model, b, 5)) {
    EXPECT_LE(e.rel, 1e-6) << GetParam() << " tensor " << e.name;
    EXPECT_GT(e.norm, 0.0) << GetParam() << " tensor " << e.name << " has no gradient at all";
  }
}

// Every registered scheme, so a new one is checked without touching this
// list, plus the config variants that take the gradient down another path.
std::vector<std::string> grad_cases() {
  std::vector<std::string> cases;
  for (const SchemeInfo& s : all_schemes()) {
    cases.push_back(s.name);
    if (s.householder) cases.push_back(s.name + ":reflection");
  }
  cases.push_back("learned_qkv:shared");
  cases.push_back("learned_qk:uniform");
  return cases;
}

INSTANTIATE_TEST_SUITE_P(scheme, nn_grad, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string name = i.param;
                           std::replace(name.begin(), name.end(), ':', '_');
                           return name;
                         });

// The check itself must be able to fail: an analytic gradient off by one part
// in 1e5 in a single tensor (the angle table, the projected angles' weights,
// PaTH's convolution kernel) is caught there and only there.
class nn_grad_planted : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(nn_grad_planted, error_is_caught_in_its_tensor_only) {
  omp_set_num_threads(1);
  const auto& [scheme, tensor] = GetParam();
  Model<double> model(grad_config(scheme), 3);
  move_off_the_start(model);
  const Batch b = tiny_batch();
  const auto& ts = model.tensors();
  const auto it = std::find_if(ts.begin(), ts.end(), [&](const ParamTensor& t) { return t.name == tensor; });
  ASSERT_NE(it, ts.end());
  const auto errors = check_gradients(model, b, 5, [&](std::vector<double>& g) {
    for (std::size_t j = it->offset; j < it->offset + it->size(); ++j) g[j] *= 1 + 1e-5;
  });
  for (const auto& e : errors) {
    if (e.name == tensor)
      EXPECT_GT(e.rel, 1e-6);
    else
      EXPECT_LE(e.rel, 1e-6) << e.name;
  }
}

INSTANTIATE_TEST_SUITE_P(tensor, nn_grad_planted,
                         ::testing::Values(std::pair<std::string, std::string>{"learned_qkv", "layer1.angles"},
                                           std::pair<std::string, std::string>{"projected_qkv", "layer1.psiw"},
                                           std::pair<std::string, std::string>{"path_qkv", "layer1.hhconv"}));

}  // namespace
