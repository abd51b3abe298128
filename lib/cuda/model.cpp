// The CUDA model: the one forward and backward of nn/model_pass.h, the CPU
// model's own sequence of calls, over device buffers through CudaOps. Host
// code only (compiled by the C++ compiler): the work is in the kernels behind
// cuda/layers.h, cuda/attention.h, cuda/angles.h, cuda/forget_gate.h,
// cuda/householder.h and cuda/short_conv.h, all on the default stream, so
// calls run in order and a download waits for what came before it.
#include "cuda/model.h"

#include <stdexcept>

#include "cuda/angles.h"
#include "cuda/attention.h"
#include "cuda/backend.h"
#include "cuda/forget_gate.h"
#include "cuda/householder.h"
#include "cuda/short_conv.h"
#include "nn/model_pass.h"
#include "nn/scheme.h"
#include "nn/streams.h"

namespace routelab::cuda {

// One forward's activations: nn::ActivationLayout over a device arena.
struct Model::Arena : nn::ActivationLayout<float> {
  int B = 0, T = 0;
  bool shared = false;
  DeviceBuffer<float> mem;

  void allocate(const nn::ModelConfig& m, int B_, int T_, bool shared_) {
    if (B_ == B && T_ == T && shared_ == shared && mem.size() > 0) return;
    B = B_, T = T_, shared = shared_;
    mem = DeviceBuffer<float>();  // free the old arena before taking the new one
    mem = DeviceBuffer<float>(size(m, B, T, shared));
    mem.zero();
    place(mem.data(), m, B, T, shared);
  }
};

namespace {

// A device buffer of exactly n elements (reallocated only when n changes).
template <class T>
void ensure_size(DeviceBuffer<T>& buf, std::size_t n) {
  if (buf.size() != n) buf = DeviceBuffer<T>(n);
}

}  // namespace

Model::Model(const nn::ModelConfig& config, uint64_t seed, MatmulMath math)
    : config_(config), seed_(seed), math_(math), acts_(std::make_unique<Arena>()),
      grad_acts_(std::make_unique<Arena>()) {
  const nn::SchemeInfo* s = nn::find_scheme(config.scheme);
  if (!s) throw std::invalid_argument("unknown scheme " + config.scheme);
  scheme_ = *s;
  tensors_ = nn::param_layout(config);
  offsets_ = nn::param_offsets(tensors_, config.layers);
  {
    // The CPU model draws the initial weights; the device gets a copy.
    const nn::Model<float> init(config, seed);
    params = DeviceBuffer<float>(init.params);
  }
  grads = DeviceBuffer<float>(params.size());
  grads.zero();
  freq_ = DeviceBuffer<double>(nn::angle_rates(config));
  if (scheme_.alibi) slopes_ = DeviceBuffer<double>(nn::alibi_slopes(config.heads));
  CUBLAS_CHECK(cublasCreate(&cublas_));
}

Model::~Model() {
  if (cublas_) cublasDestroy(cublas_);
}

nn::ScoreBias<float> Model::score_bias(const float* cum) const {
  return nn::model_score_bias(slopes_, scheme_.forget, cum);
}

void Model::layer_angles(float* cs, const float* psi, const nn::LayerParams& lp, int l, uint64_t pass, int first_b) {
  const int B = B_, T = T_, nb = config_.head_dim() / 2;
  switch (scheme_.angles) {
    case nn::AngleKind::none:
      return;
    case nn::AngleKind::rope:
      rope_angles(theta_.data(), freq_.data(), B, T, nb);
      break;
    case nn::AngleKind::random: {
      // The streams nn::RandomAngles opens: (seed, pass, layer, first_b + b).
      std::vector<uint64_t> ids(B);
      for (int b = 0; b < B; ++b) ids[b] = nn::random_angle_stream(pass, uint64_t(l), uint64_t(first_b + b));
      ensure_size(streams_, ids.size());
      streams_.upload(ids);
      random_angles(theta_.data(), freq_.data(), seed_, streams_.data(), B, T, nb);
      break;
    }
    case nn::AngleKind::learned:
      learned_angles(theta_.data(), params.data() + lp.angles, tokens_.data(), B, T, nb);
      break;
    case nn::AngleKind::projected:
      projected_angles(theta_.data(), psi, B, T, nb);
      break;
  }
  angle_cos_sin(cs, theta_.data(), int64_t(B) * T * nb);
}

// model_pass.h's Ops on the GPU: the kernels of cuda/*.h, the matmuls through
// cuBLAS in the model's math, the device's angles (layer_angles), and
// Householder rows with the model's scratch. Nothing watches the pass: the
// probe runs on the CPU model.
struct CudaOps {
  using Layer = nn::ActivationLayout<float>::Layer;
  Model& model;
  uint64_t pass;
  int first_b;

  nn::ScoreBias<float> score_bias(const float* cum) const { return model.score_bias(cum); }

  ROUTELAB_PASS_LAYERS(cuda)
  template <class... A> void matmul_forward(A&&... a) {
    cuda::matmul_forward(model.cublas_, std::forward<A>(a)..., model.math_);
  }
  template <class... A> void matmul_backward(A&&... a) {
    cuda::matmul_backward(model.cublas_, std::forward<A>(a)..., model.math_);
  }

  void layer_angles(Layer& L, const nn::LayerParams& lp, int l) { model.layer_angles(L.cs, L.psi, lp, l, pass, first_b); }
  void watch_attention(int, const Layer&, nn::AttentionShape) {}
  void householder_attention_forward(Layer& L, int, nn::AttentionShape shape) {
    cuda::householder_attention_forward(L.o, L.q, L.k, L.v, L.hw, L.hbeta, model.scheme_.values, shape,
                                        model.hh_scratch_, nn::HouseholderPath::blocked,
                                        model.scheme_.forget ? L.cum : nullptr);
  }
  void householder_attention_backward(Layer& D, const Layer& L, int, nn::AttentionShape shape) {
    cuda::householder_attention_backward(D.q, D.k, D.v, D.hw, D.hbeta, D.o, L.q, L.k, L.v, L.hw, L.hbeta,
                                         model.scheme_.values, shape, model.hh_scratch_, nn::HouseholderPath::blocked,
                                         model.scheme_.forget ? L.cum : nullptr, D.cum);
  }
  void zero_dtheta() { CUDA_CHECK(cudaMemset(model.dtheta_.data(), 0, model.dtheta_.size() * sizeof(double))); }
  void angles_backward(float* dincrements, const double* dtheta) {
    const int nb = model.config_.head_dim() / 2;
    if (model.scheme_.angles == nn::AngleKind::projected)
      projected_angles_backward(dincrements, dtheta, model.B_, model.T_, nb);
    else
      learned_angles_backward(dincrements, dtheta, model.tokens_.data(), model.B_, model.T_, nb);
  }
};

double Model::forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                      int first_b) {
  const nn::ModelConfig& m = config_;
  const int64_t N = int64_t(B) * T, V = m.vocab;
  const int nb = m.head_dim() / 2;
  nn::require_in_vocabulary(tokens, targets, N, int(V));
  Arena& a = *acts_;
  a.allocate(m, B, T, !train);
  host_tokens_.assign(tokens, tokens + N);
  ensure_size(tokens_, std::size_t(N));
  ensure_size(targets_, std::size_t(N));
  tokens_.upload(host_tokens_);
  targets_.upload(std::vector<int>(targets, targets + N));
  B_ = B, T_ = T;
  if (scheme_.angles != nn::AngleKind::none) ensure_size(theta_, std::size_t(N) * nb);
  CudaOps ops{*this, pass, first_b};
  nn::model_forward(ops, m, scheme_, offsets_, a, params.data(), tokens_.data(), targets_.data(), B, T);
  losses_.resize(std::size_t(N));
  CUDA_CHECK(cudaMemcpy(losses_.data(), a.losses, std::size_t(N) * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float x : losses_) sum += double(x);
  return sum / double(N);
}

void Model::backward() {
  const nn::ModelConfig& m = config_;
  Arena& a = *acts_;
  if (a.shared || a.B == 0) throw std::logic_error("backward() needs a training forward() first");
  const int B = B_, T = T_;
  const int64_t N = int64_t(B) * T;
  const int nb = m.head_dim() / 2;
  Arena& g = *grad_acts_;
  g.allocate(m, B, T, false);
  g.mem.zero();
  grads.zero();
  const bool trained_angles = scheme_.angles == nn::AngleKind::learned || scheme_.angles == nn::AngleKind::projected;
  if (trained_angles) ensure_size(dtheta_, std::size_t(N) * nb);
  CudaOps ops{*this, 0, 0};
  nn::model_backward(ops, m, scheme_, offsets_, a, g, params.data(), grads.data(),
                     trained_angles ? dtheta_.data() : nullptr, tokens_.data(), targets_.data(), B, T);
}

const std::vector<float>& Model::logits() {
  logits_.resize(std::size_t(acts_->B) * acts_->T * config_.vocab);
  if (!logits_.empty())
    CUDA_CHECK(cudaMemcpy(logits_.data(), acts_->logits, logits_.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return logits_;
}

std::vector<float> Model::layer_cos_sin(int l) const {
  if (scheme_.angles == nn::AngleKind::none || l < 0 || l >= config_.layers || acts_->B == 0) return {};
  const std::size_t n = std::size_t(acts_->B) * acts_->T * (config_.head_dim() / 2) * 2;
  std::vector<float> out(n);
  CUDA_CHECK(cudaMemcpy(out.data(), acts_->layers[l].cs, n * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace routelab::cuda
