// The byte-level decoder on a CUDA device: nn::Model<float> (nn/model.h)
// over the same forward and backward (nn/model_pass.h), with the kernels of
// cuda/layers.h,
// cuda/attention.h, cuda/angles.h and cuda/forget_gate.h. The same
// param_layout and flat parameter and gradient buffers (on the device), the
// same activation layout (nn::ActivationLayout over one device arena, shared
// across layers for evaluation), the same forward/backward contract.
// Initial weights are the CPU model's, uploaded: initialisation is not
// written twice. Angles are computed on the device in double exactly as
// nn::AngleSource computes them (random angles from the same Philox streams).
// Householder schemes run PaTH's blocked algorithm of cuda/householder.h
// (cuda/householder_chunks.h, the CPU's, over a thread block).
// Expected agreement with the CPU Model<float> on one batch (RMS relative
// error, tests/test_gpu_model.cpp): loss ~1e-6, gradients ~1e-5 in fp32;
// with TF32 matmuls ~1e-3 and ~1e-2.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/layers.h"
#include "nn/model.h"

namespace routelab::cuda {

class Model {
 public:
  // `seed` draws the initial weights (on the CPU) and the random angles.
  Model(const nn::ModelConfig& config, uint64_t seed, MatmulMath math = MatmulMath::fp32);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const nn::ModelConfig& config() const { return config_; }
  const std::vector<nn::ParamTensor>& tensors() const { return tensors_; }
  MatmulMath math() const { return math_; }
  DeviceBuffer<float> params, grads;

  // As nn::Model::forward; tokens and targets are B x T on the host. Returns
  // the mean loss, summed on the host in double in position order.
  double forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train = true,
                 int first_b = 0);
  // grads = d (mean loss) / d params, for the last training forward.
  void backward();
  // Per-position losses of the last forward, B x T (kept on the host by
  // forward()).
  const std::vector<float>& losses() const { return losses_; }
  // Logits of the last forward, B x T x vocab, downloaded by this call.
  const std::vector<float>& logits();
  // Layer l's (cos, sin) of the last forward, B x T x d_head/2 x 2, from the
  // device (empty for schemes without angles); evaluation shares one buffer.
  std::vector<float> layer_cos_sin(int l) const;

 private:
  friend struct CudaOps;  // the pass's GPU calls (cuda/model.cpp)
  struct Arena;
  nn::ScoreBias<float> score_bias(const float* cum) const;
  // Layer l's angles into theta_, then (cos, sin) into cs; projected angles
  // from their increments psi.
  void layer_angles(float* cs, const float* psi, const nn::LayerParams& lp, int l, uint64_t pass, int first_b);

  nn::ModelConfig config_;
  uint64_t seed_;
  nn::SchemeInfo scheme_;
  std::vector<nn::ParamTensor> tensors_;
  nn::ParamOffsets offsets_;
  MatmulMath math_;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer<double> freq_;     // rope: f_b; random: half widths angle_scale f_b
  DeviceBuffer<double> slopes_;   // ALiBi's, empty otherwise
  std::unique_ptr<Arena> acts_, grad_acts_;
  DeviceBuffer<int> tokens_, targets_;
  DeviceBuffer<uint64_t> streams_;  // random angles: the stream of each batch element
  DeviceBuffer<double> theta_, dtheta_;
  DeviceBuffer<float> hh_scratch_;  // Householder attention's per-warp rows and partial gradients
  std::vector<int> host_tokens_;
  std::vector<float> losses_, logits_;
  int B_ = 0, T_ = 0;
};

}  // namespace routelab::cuda
