// The CUDA model: nn/model.cpp's forward and backward, call for call, over
// device buffers. Host code only (compiled by the C++ compiler): the work is
// in the kernels behind cuda/layers.h, cuda/attention.h, cuda/angles.h and
// cuda/forget_gate.h, all on the default stream, so calls run in order and a
// download waits for what came before it.
#include "cuda/model.h"

#include <stdexcept>

#include "cuda/angles.h"
#include "cuda/attention.h"
#include "cuda/backend.h"
#include "cuda/forget_gate.h"
#include "cuda/householder.h"
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
  {
    // The CPU model draws the initial weights; the device gets a copy.
    const nn::Model<float> init(config, seed);
    params = DeviceBuffer<float>(init.params);
  }
  grads = DeviceBuffer<float>(params.size());
  grads.zero();
  std::vector<double> f = nn::angle_frequencies(config);
  if (scheme_.angles == nn::AngleKind::random)
    for (double& x : f) x *= config.angle_scale;  // as make_angle_source's half widths
  freq_ = DeviceBuffer<double>(f);
  if (scheme_.alibi) slopes_ = DeviceBuffer<double>(nn::alibi_slopes(config.heads));
  CUBLAS_CHECK(cublasCreate(&cublas_));
}

Model::~Model() {
  if (cublas_) cublasDestroy(cublas_);
}

nn::ScoreBias<float> Model::score_bias(const float* cum) const {
  return {slopes_.size() ? slopes_.data() : nullptr, scheme_.forget ? cum : nullptr};
}

void Model::layer_angles(float* cs, float* psi, const float* ln1, int l, uint64_t pass, int first_b) {
  const int B = B_, T = T_, nb = config_.head_dim() / 2;
  const nn::LayerParams lp = nn::layer_params(tensors_, l);
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
      matmul_forward(cublas_, psi, ln1, params.data() + lp.psiw, params.data() + lp.psib, int64_t(B) * T,
                     config_.d_model, nb, math_);
      projected_angles(theta_.data(), psi, B, T, nb);
      break;
  }
  angle_cos_sin(cs, theta_.data(), int64_t(B) * T * nb);
}

double Model::forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                      int first_b) {
  const nn::ModelConfig& m = config_;
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const int nb = m.head_dim() / 2;
  const nn::AttentionShape shape{B, T, m.heads, m.head_dim()};
  nn::require_in_vocabulary(tokens, targets, N, int(V));
  Arena& a = *acts_;
  a.allocate(m, B, T, !train);
  host_tokens_.assign(tokens, tokens + N);
  ensure_size(tokens_, std::size_t(N));
  ensure_size(targets_, std::size_t(N));
  tokens_.upload(host_tokens_);
  targets_.upload(std::vector<int>(targets, targets + N));
  B_ = B, T_ = T;
  const float* P = params.data();
  const bool rotary = scheme_.angles != nn::AngleKind::none;
  if (rotary) ensure_size(theta_, std::size_t(N) * nb);
  const bool path_beta = m.householder_beta == "path";

  encoder_forward(a.encoded, tokens_.data(), P + nn::find_tensor(tensors_, "wte").offset, N, int(C));
  const float* residual = a.encoded;
  for (int l = 0; l < m.layers; ++l) {
    const nn::LayerParams lp = nn::layer_params(tensors_, l);
    auto& L = a.layers[l];
    layernorm_forward(L.ln1, L.ln1_mean, L.ln1_rstd, residual, P + lp.ln1w, P + lp.ln1b, N, int(C));
    matmul_forward(cublas_, L.qkv, L.ln1, P + lp.qkvw, P + lp.qkvb, N, int(C), int(3 * C), math_);
    if (scheme_.forget) {
      matmul_forward(cublas_, L.fz, L.ln1, P + lp.fgw, P + lp.fgb, N, int(C), m.heads, math_);
      forget_gate_forward(L.cum, L.fz, B, T, m.heads);
    }
    if (rotary) layer_angles(L.cs, L.psi, L.ln1, l, pass, first_b);
    if (scheme_.householder) {
      matmul_forward(cublas_, L.hz, L.ln1, P + lp.hhw, P + lp.hhb, N, int(C), int(C), math_);
      if (path_beta) matmul_forward(cublas_, L.hr, L.ln1, P + lp.hhu, P + lp.hhc, N, int(C), m.heads, math_);
      householder_steps_forward(L.hw, L.hbeta, L.hz, path_beta ? L.hr : nullptr, shape);
    }
    const float* cs = rotary ? L.cs : nullptr;
    split_heads_forward(L.q, L.k, L.v, L.qkv, cs, scheme_.values, shape);
    if (scheme_.householder)
      householder_attention_forward(L.o, L.q, L.k, L.v, L.hw, L.hbeta, scheme_.values, shape, hh_scratch_);
    else
      attention_forward(L.o, L.lse, L.q, L.k, L.v, score_bias(L.cum), shape);
    merge_heads_forward(L.atty, L.o, scheme_.values ? cs : nullptr, shape);
    matmul_forward(cublas_, L.attproj, L.atty, P + lp.attprojw, P + lp.attprojb, N, int(C), int(C), math_);
    residual_forward(L.res2, residual, L.attproj, N * C);
    layernorm_forward(L.ln2, L.ln2_mean, L.ln2_rstd, L.res2, P + lp.ln2w, P + lp.ln2b, N, int(C));
    matmul_forward(cublas_, L.fch, L.ln2, P + lp.fcw, P + lp.fcb, N, int(C), int(F), math_);
    gelu_forward(L.fch_gelu, L.fch, N * F);
    matmul_forward(cublas_, L.fcproj, L.fch_gelu, P + lp.fcprojw, P + lp.fcprojb, N, int(F), int(C), math_);
    residual_forward(L.res3, L.res2, L.fcproj, N * C);
    residual = L.res3;
  }
  const std::size_t lnfw = nn::find_tensor(tensors_, "lnfw").offset, lnfb = nn::find_tensor(tensors_, "lnfb").offset;
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, residual, P + lnfw, P + lnfb, N, int(C));
  matmul_forward(cublas_, a.logits, a.lnf, P + nn::find_tensor(tensors_, "wte").offset, nullptr, N, int(C), int(V), math_);
  crossentropy_forward(a.losses, a.logits, targets_.data(), N, int(V));
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
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const int nb = m.head_dim() / 2;
  const nn::AttentionShape shape{B, T, m.heads, m.head_dim()};
  Arena& g = *grad_acts_;
  g.allocate(m, B, T, false);
  g.mem.zero();
  grads.zero();
  const float* P = params.data();
  float* G = grads.data();
  const bool rotary = scheme_.angles != nn::AngleKind::none;
  const bool projected = scheme_.angles == nn::AngleKind::projected;
  const bool trained_angles = scheme_.angles == nn::AngleKind::learned || projected;
  const bool path_beta = m.householder_beta == "path";
  if (trained_angles) ensure_size(dtheta_, std::size_t(N) * nb);
  double* dtheta = trained_angles ? dtheta_.data() : nullptr;

  const std::size_t wte = nn::find_tensor(tensors_, "wte").offset, lnfw = nn::find_tensor(tensors_, "lnfw").offset,
                    lnfb = nn::find_tensor(tensors_, "lnfb").offset;
  crossentropy_backward(g.logits, a.logits, targets_.data(), float(1.0 / double(N)), N, int(V));
  matmul_backward(cublas_, g.lnf, G + wte, nullptr, g.logits, a.lnf, P + wte, N, int(C), int(V), math_);
  const float* last = a.layers[m.layers - 1].res3;
  float* dlast = g.layers[m.layers - 1].res3;
  layernorm_backward(dlast, G + lnfw, G + lnfb, g.lnf, last, P + lnfw, a.lnf_mean, a.lnf_rstd, N, int(C));
  for (int l = m.layers - 1; l >= 0; --l) {
    const nn::LayerParams lp = nn::layer_params(tensors_, l);
    auto& L = a.layers[l];
    auto& D = g.layers[l];
    const float* residual = l == 0 ? a.encoded : a.layers[l - 1].res3;
    float* dresidual = l == 0 ? g.encoded : g.layers[l - 1].res3;
    const float* cs = rotary ? L.cs : nullptr;
    residual_backward(D.res2, D.fcproj, D.res3, N * C);
    matmul_backward(cublas_, D.fch_gelu, G + lp.fcprojw, G + lp.fcprojb, D.fcproj, L.fch_gelu, P + lp.fcprojw, N,
                    int(F), int(C), math_);
    gelu_backward(D.fch, L.fch, D.fch_gelu, N * F);
    matmul_backward(cublas_, D.ln2, G + lp.fcw, G + lp.fcb, D.fch, L.ln2, P + lp.fcw, N, int(C), int(F), math_);
    layernorm_backward(D.res2, G + lp.ln2w, G + lp.ln2b, D.ln2, L.res2, P + lp.ln2w, L.ln2_mean, L.ln2_rstd, N,
                       int(C));
    residual_backward(dresidual, D.attproj, D.res2, N * C);
    matmul_backward(cublas_, D.atty, G + lp.attprojw, G + lp.attprojb, D.attproj, L.atty, P + lp.attprojw, N,
                    int(C), int(C), math_);
    if (dtheta) CUDA_CHECK(cudaMemset(dtheta, 0, dtheta_.size() * sizeof(double)));
    merge_heads_backward(D.o, dtheta, D.atty, L.atty, scheme_.values ? cs : nullptr, shape);
    if (scheme_.householder) {
      householder_attention_backward(D.q, D.k, D.v, D.hw, D.hbeta, D.o, L.q, L.k, L.v, L.hw, L.hbeta,
                                     scheme_.values, shape, hh_scratch_);
      householder_steps_backward(D.hz, path_beta ? D.hr : nullptr, D.hw, D.hbeta, L.hz, L.hbeta, shape);
      matmul_backward(cublas_, D.ln1, G + lp.hhw, G + lp.hhb, D.hz, L.ln1, P + lp.hhw, N, int(C), int(C), math_);
      if (path_beta)
        matmul_backward(cublas_, D.ln1, G + lp.hhu, G + lp.hhc, D.hr, L.ln1, P + lp.hhu, N, int(C), m.heads, math_);
    } else {
      attention_backward(D.q, D.k, D.v, D.cum, D.o, L.o, L.lse, L.q, L.k, L.v, score_bias(L.cum), shape);
    }
    if (scheme_.forget) {
      forget_gate_backward(D.fz, D.cum, L.fz, B, T, m.heads);
      matmul_backward(cublas_, D.ln1, G + lp.fgw, G + lp.fgb, D.fz, L.ln1, P + lp.fgw, N, int(C), m.heads, math_);
    }
    split_heads_backward(D.qkv, dtheta, D.q, D.k, D.v, L.q, L.k, L.v, cs, scheme_.values, shape);
    if (dtheta && projected) {
      projected_angles_backward(D.psi, dtheta, B, T, nb);
      matmul_backward(cublas_, D.ln1, G + lp.psiw, G + lp.psib, D.psi, L.ln1, P + lp.psiw, N, int(C), nb, math_);
    } else if (dtheta) {
      learned_angles_backward(G + lp.angles, dtheta, tokens_.data(), B, T, nb);
    }
    matmul_backward(cublas_, D.ln1, G + lp.qkvw, G + lp.qkvb, D.qkv, L.ln1, P + lp.qkvw, N, int(C), int(3 * C),
                    math_);
    layernorm_backward(dresidual, G + lp.ln1w, G + lp.ln1b, D.ln1, residual, P + lp.ln1w, L.ln1_mean, L.ln1_rstd,
                       N, int(C));
  }
  encoder_backward(G + wte, g.encoded, tokens_.data(), N, int(C));
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
