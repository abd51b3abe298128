// AdamW (Loshchilov & Hutter) with decoupled weight decay on the tensors
// marked for it, global-norm gradient clipping, and the learning-rate
// schedule: linear warmup, then cosine decay to lr * min_lr_ratio.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/hyperparameters.h"
#include "nn/model.h"

namespace routelab::nn {

// The learning rate at `step` (0-based) of `c.steps`.
double learning_rate(const TrainConfig& c, int step);

// sqrt(sum g^2), summed in double in a fixed order.
double global_norm(std::span<const float> g);

struct AdamW {
  std::vector<float> m, v;
  explicit AdamW(std::size_t n = 0) : m(n, 0.f), v(n, 0.f) {}
  // One update with bias correction for update number t (1-based). Gradients
  // are scaled by `grad_scale` first (clipping).
  void update(std::span<float> params, std::span<const float> grads, const std::vector<ParamTensor>& tensors,
              const TrainConfig& c, double lr, double grad_scale, int t);
};

}  // namespace routelab::nn
