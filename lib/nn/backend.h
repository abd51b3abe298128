// What the training and evaluation loops (runs/train.cpp, runs/eval.cpp) ask
// of a model and its optimiser, whichever device holds them: one loop serves
// the CPU (Model<float> + AdamW here) and the GPU (cuda/backend.h). Parameters,
// gradients and Adam's moments stay on the backend's device; the loop sees
// host copies only where it needs them (per-position losses for evaluation,
// the state for a checkpoint), and the checkpoint format is the same for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/adamw.h"
#include "nn/hyperparameters.h"
#include "nn/model.h"

namespace routelab::nn {

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;

  // "cpu" or "cuda" (written into evaluation sidecars).
  virtual std::string device() const = 0;
  virtual std::size_t param_count() const = 0;

  // As Model::forward: mean loss over the B x T positions (tokens and targets
  // on the host).
  virtual double forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                         int first_b) = 0;
  virtual void backward() = 0;
  // Per-position losses of the last forward, B x T, on the host; valid until
  // the next forward.
  virtual const float* losses() = 0;
  // Logits of the last forward, B x T x vocab, on the host (the GPU's are
  // downloaded by this call); valid until the next forward.
  virtual const float* logits() = 0;

  // Data parallelism: every rank's gradient becomes the mean over ranks (a
  // no-op in one process).
  virtual void mean_grads_over_ranks() = 0;
  // sqrt(sum g^2) over all gradients, summed in double in a fixed order.
  virtual double grad_norm() = 0;
  // One AdamW update (nn::AdamW's semantics) with gradients scaled by
  // grad_scale; t is the 1-based update number.
  virtual void adamw_update(const TrainConfig& c, double lr, double grad_scale, int t) = 0;

  // The weights (and Adam's moments) from or to the host: a checkpoint's.
  virtual void set_params(const std::vector<float>& params) = 0;
  virtual void set_optimizer(const AdamW& opt) = 0;
  virtual std::vector<float> params() = 0;
  virtual AdamW optimizer() = 0;
};

// The CPU backend: a Model<float> and an AdamW, exactly the arithmetic the
// loops always ran. Either owns its model or drives one the caller holds.
class CpuBackend final : public ModelBackend {
 public:
  CpuBackend(const ModelConfig& config, uint64_t seed);
  explicit CpuBackend(Model<float>& model);

  std::string device() const override { return "cpu"; }
  std::size_t param_count() const override { return model_->params.size(); }
  double forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                 int first_b) override;
  void backward() override { model_->backward(); }
  const float* losses() override { return model_->losses(); }
  const float* logits() override { return model_->logits(); }
  void mean_grads_over_ranks() override;
  double grad_norm() override { return global_norm(model_->grads); }
  void adamw_update(const TrainConfig& c, double lr, double grad_scale, int t) override;
  void set_params(const std::vector<float>& params) override;
  void set_optimizer(const AdamW& opt) override;
  std::vector<float> params() override { return {model_->params.begin(), model_->params.end()}; }
  AdamW optimizer() override { return adam_; }

 private:
  std::unique_ptr<Model<float>> owned_;
  Model<float>* model_;
  AdamW adam_;
};

// Builds the backend for one run's model; `seed` draws the initial weights
// and the random angles, as Model's. `free_bytes`, when set, says how many
// bytes the device its models live on has free, so that a model too large
// for it is refused before one is built (runs/memory.h); unset, the host's
// memory is what the model takes.
struct BackendFactory {
  using Make = std::function<std::unique_ptr<ModelBackend>(const ModelConfig& config, uint64_t seed)>;
  Make make;
  std::function<std::size_t()> free_bytes;

  BackendFactory() = default;
  BackendFactory(std::nullptr_t) {}
  BackendFactory(Make m, std::function<std::size_t()> free = nullptr)
      : make(std::move(m)), free_bytes(std::move(free)) {}
  explicit operator bool() const { return bool(make); }
  std::unique_ptr<ModelBackend> operator()(const ModelConfig& config, uint64_t seed) const {
    return make(config, seed);
  }
};
// The CPU's: what the loops use when no factory is given.
BackendFactory cpu_backend_factory();

}  // namespace routelab::nn
