#include "nn/adamw.h"

#include <cmath>

namespace routelab::nn {

double learning_rate(const TrainConfig& c, int step) {
  if (step < c.warmup) return c.lr * double(step + 1) / double(c.warmup);
  const int decay_steps = c.steps - c.warmup;
  if (decay_steps <= 1) return c.lr;
  const double progress = double(step - c.warmup) / double(decay_steps - 1);
  const double min_lr = c.lr * c.min_lr_ratio;
  return min_lr + 0.5 * (c.lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

double global_norm(std::span<const float> g) {
  double s = 0;
  for (float x : g) s += double(x) * double(x);
  return std::sqrt(s);
}

void AdamW::update(std::span<float> params, std::span<const float> grads, const std::vector<ParamTensor>& tensors,
                   const TrainConfig& c, double lr, double grad_scale, int t) {
  const float b1 = float(c.beta1), b2 = float(c.beta2), eps = float(c.eps);
  const float corr1 = float(1.0 - std::pow(c.beta1, t)), corr2 = float(1.0 - std::pow(c.beta2, t));
  const float step = float(lr), scale = float(grad_scale);
  for (const auto& tensor : tensors) {
    const float decay = tensor.decay ? float(c.weight_decay) : 0.f;
#pragma omp parallel for schedule(static)
    for (std::size_t i = tensor.offset; i < tensor.offset + tensor.size(); ++i) {
      const float g = grads[i] * scale;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const float mhat = m[i] / corr1, vhat = v[i] / corr2;
      params[i] -= step * (mhat / (std::sqrt(vhat) + eps) + decay * params[i]);
    }
  }
}

}  // namespace routelab::nn
