#include "nn/backend.h"

#include <stdexcept>

#include "stats/distributed.h"

namespace routelab::nn {

CpuBackend::CpuBackend(const ModelConfig& config, uint64_t seed)
    : owned_(std::make_unique<Model<float>>(config, seed)), model_(owned_.get()), adam_(model_->params.size()) {}

// A borrowed model is mostly evaluated: Adam's moments wait for an update.
CpuBackend::CpuBackend(Model<float>& model) : model_(&model) {}

double CpuBackend::forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                           int first_b) {
  return model_->forward(tokens, targets, B, T, pass, train, first_b);
}

void CpuBackend::mean_grads_over_ranks() { dist::mean_over_ranks(model_->grads); }

void CpuBackend::adamw_update(const TrainConfig& c, double lr, double grad_scale, int t) {
  if (adam_.m.size() != model_->params.size()) adam_ = AdamW(model_->params.size());
  adam_.update(model_->params, model_->grads, model_->tensors(), c, lr, grad_scale, t);
}

void CpuBackend::set_params(const std::vector<float>& params) {
  if (params.size() != model_->params.size()) throw std::invalid_argument("CpuBackend::set_params: size mismatch");
  model_->params.assign(params.begin(), params.end());
}

void CpuBackend::set_optimizer(const AdamW& opt) {
  if (opt.m.size() != model_->params.size() || opt.v.size() != model_->params.size())
    throw std::invalid_argument("CpuBackend::set_optimizer: size mismatch");
  adam_ = opt;
}

BackendFactory cpu_backend_factory() {
  return {[](const ModelConfig& config, uint64_t seed) -> std::unique_ptr<ModelBackend> {
    return std::make_unique<CpuBackend>(config, seed);
  }};
}

}  // namespace routelab::nn
