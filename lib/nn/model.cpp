#include "nn/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <Eigen/Core>

#include "nn/attention.h"
#include "nn/forget_gate.h"
#include "nn/householder.h"
#include "nn/layers.h"
#include "nn/streams.h"
#include "rng/stream.h"

namespace routelab::nn {

namespace {

std::size_t find_offset(const std::vector<ParamTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t.offset;
  return std::size_t(-1);
}

}  // namespace

const ParamTensor& find_tensor(const std::vector<ParamTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  throw std::out_of_range("no parameter tensor " + name);
}

LayerParams layer_params(const std::vector<ParamTensor>& ts, int l) {
  const std::string p = "layer" + std::to_string(l) + ".";
  auto o = [&](const char* n) { return find_offset(ts, p + n); };
  const std::size_t shared_angles = find_offset(ts, "angles");
  return {o("ln1w"), o("ln1b"),  o("qkvw"), o("qkvb"),    o("attprojw"), o("attprojb"), o("ln2w"),
          o("ln2b"), o("fcw"),   o("fcb"),  o("fcprojw"), o("fcprojb"),
          shared_angles != std::size_t(-1) ? shared_angles : o("angles"),
          o("fgw"),  o("fgb"),   o("hhw"),  o("hhb"),     o("hhu"),      o("hhc"),      o("psiw"),
          o("psib")};
}

void require_in_vocabulary(const int* tokens, const int* targets, int64_t n, int vocab) {
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab || targets[i] < 0 || targets[i] >= vocab)
      throw std::invalid_argument("token outside the vocabulary");
}

std::vector<ParamTensor> param_layout(const ModelConfig& m) {
  const int64_t C = m.d_model, V = m.vocab, F = int64_t(m.mlp_ratio) * C, H = m.heads;
  const SchemeInfo* scheme = find_scheme(m.scheme);
  const bool learned = scheme && scheme->angles == AngleKind::learned;
  const bool projected = scheme && scheme->angles == AngleKind::projected;
  const int64_t nb = m.head_dim() / 2;
  const bool forget = scheme && scheme->forget;
  const bool householder = scheme && scheme->householder;
  std::vector<ParamTensor> ts;
  std::size_t at = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    std::size_t size = 1;
    for (int64_t n : shape) size *= std::size_t(n);
    ts.push_back({std::move(name), at, size, decay, std::move(shape)});
    at += size;
  };
  add("wte", {V, C}, true);  // token embedding, also the output projection (tied)
  // The angle tables (one row of nb increments per byte) are not decayed:
  // decay would pull them towards no position.
  if (learned && m.learned_shared) add("angles", {256, nb}, false);
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    add(p + "ln1w", {C}, false), add(p + "ln1b", {C}, false);  // LayerNorm before attention
    add(p + "qkvw", {3 * C, C}, true), add(p + "qkvb", {3 * C}, false);  // rows: q, k, v; head h at h d_head
    add(p + "attprojw", {C, C}, true), add(p + "attprojb", {C}, false);  // attention output projection
    add(p + "ln2w", {C}, false), add(p + "ln2b", {C}, false);            // LayerNorm before the MLP
    add(p + "fcw", {F, C}, true), add(p + "fcb", {F}, false);            // MLP in
    add(p + "fcprojw", {C, F}, true), add(p + "fcprojb", {C}, false);    // MLP out
    if (learned && !m.learned_shared) add(p + "angles", {256, nb}, false);
    // The projected increments psi = W xhat + b, not decayed for the tables'
    // reason: decay would pull psi towards a constant step.
    if (projected) add(p + "psiw", {nb, C}, false), add(p + "psib", {nb}, false);
    // The forget gate's projection and bias (0 at start: f = 1/2).
    if (forget) add(p + "fgw", {H, C}, true), add(p + "fgb", {H}, false);
    // Householder directions (every head's d_head rows) and, for PaTH's beta,
    // its logits; biases 0 at start (beta = 1).
    if (householder) add(p + "hhw", {C, C}, true), add(p + "hhb", {C}, false);
    if (householder && m.householder_beta == "path") add(p + "hhu", {H, C}, true), add(p + "hhc", {H}, false);
  }
  add("lnfw", {C}, false), add("lnfb", {C}, false);  // the final LayerNorm
  return ts;
}

namespace {

// Walks the arena's buffers in one fixed order: count (base null) or place.
template <class R>
std::size_t walk_activations(ActivationLayout<R>& a, R* base, const ModelConfig& m, int B, int T, bool shared) {
  const std::size_t N = std::size_t(B) * T, C = m.d_model, F = std::size_t(m.mlp_ratio) * C, V = m.vocab;
  const std::size_t nb = std::size_t(m.head_dim() / 2);
  const SchemeInfo* scheme = find_scheme(m.scheme);
  const std::size_t hh = scheme && scheme->householder ? 1 : 0;  // other schemes keep no steps
  const std::size_t psi = scheme && scheme->angles == AngleKind::projected ? 1 : 0;
  a.layers.assign(m.layers, {});
  std::size_t total = 0;
  auto place = [&](R*& p, std::size_t n) {
    p = base ? base + total : nullptr;
    total += n;
  };
  place(a.encoded, N * C), place(a.lnf, N * C), place(a.lnf_mean, N);
  place(a.lnf_rstd, N), place(a.logits, N * V), place(a.losses, N);
  for (int l = 0; l < m.layers; ++l) {
    auto& L = a.layers[l];
    if (shared && l > 0) {
      L = a.layers[0];
      continue;
    }
    place(L.ln1, N * C), place(L.ln1_mean, N), place(L.ln1_rstd, N);
    place(L.qkv, 3 * N * C), place(L.q, N * C), place(L.k, N * C);
    place(L.v, N * C), place(L.o, N * C), place(L.lse, N * m.heads);
    place(L.atty, N * C), place(L.attproj, N * C), place(L.res2, N * C);
    place(L.ln2, N * C), place(L.ln2_mean, N), place(L.ln2_rstd, N);
    place(L.fch, N * F), place(L.fch_gelu, N * F), place(L.fcproj, N * C);
    place(L.res3, N * C), place(L.cs, N * nb * 2);
    place(L.fz, N * m.heads), place(L.cum, N * m.heads);
    place(L.hz, hh * N * C), place(L.hw, hh * N * C);
    place(L.hr, hh * N * m.heads), place(L.hbeta, hh * N * m.heads);
    place(L.psi, psi * N * nb);
  }
  return total;
}

}  // namespace

template <class R>
std::size_t ActivationLayout<R>::size(const ModelConfig& m, int B, int T, bool shared) {
  ActivationLayout<R> counter;
  return walk_activations(counter, (R*)nullptr, m, B, T, shared);
}

template <class R>
void ActivationLayout<R>::place(R* base, const ModelConfig& m, int B, int T, bool shared) {
  walk_activations(*this, base, m, B, T, shared);
}

template struct ActivationLayout<float>;
template struct ActivationLayout<double>;

// The CPU's activations: the layout over one host vector.
template <class R>
struct Model<R>::Arena : ActivationLayout<R> {
  int B = 0, T = 0;
  bool shared = false;
  HostVector<R> mem;

  void allocate(const ModelConfig& m, int B_, int T_, bool shared_) {
    if (B_ == B && T_ == T && shared_ == shared && !mem.empty()) return;
    B = B_, T = T_, shared = shared_;
    mem.assign(ActivationLayout<R>::size(m, B, T, shared), R(0));
    this->place(mem.data(), m, B, T, shared);
  }
};

template <class R>
Model<R>::Model(const ModelConfig& config, uint64_t seed) : config_(config), seed_(seed) {
  const SchemeInfo* s = find_scheme(config.scheme);
  if (!s) throw std::invalid_argument("unknown scheme " + config.scheme);
  scheme_ = *s;
  tensors_ = param_layout(config);
  params.assign(tensors_.back().offset + tensors_.back().size, R(0));
  grads.assign(params.size(), R(0));
  angles_ = make_angle_source<R>(config, seed);
  if (scheme_.alibi) slopes_ = alibi_slopes(config.heads);
  if (scheme_.householder)
    for (int l = 0; l < config.layers; ++l) hh_cache_.push_back(make_householder_cache<R>());
  acts_ = std::make_unique<Arena>();
  grad_acts_ = std::make_unique<Arena>();
  // The layers split work into fixed chunks themselves; Eigen must not
  // split a product again behind them.
  Eigen::setNbThreads(1);
  init_params();
}

template <class R>
Model<R>::~Model() = default;

template <class R>
void Model<R>::init_params() {
  const double resid_std = 0.02 / std::sqrt(2.0 * config_.layers);
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const ParamTensor& t = tensors_[i];
    R* p = params.data() + t.offset;
    const std::string leaf = t.name.substr(t.name.find('.') + 1);
    if (leaf == "angles") {
      // A shared table ("angles") starts as layer 0's would.
      angles_->init_table(p, seed_, t.name == "angles" ? 0 : std::stoi(t.name.substr(5)));
    } else if (leaf == "psiw") {
      // xhat has C coordinates of unit mean square, so psi_b = w_b . xhat
      // spreads over tokens with s.d. |w_b| ~ sigma: at the start each block's
      // increments have the normal table's law N(0, sigma^2).
      Stream s(seed_, init_stream(i));
      const double sd = config_.learned_sigma / std::sqrt(double(config_.d_model));
      for (std::size_t j = 0; j < t.size; ++j) p[j] = R(sd * s.normal());
    } else if (leaf == "ln1w" || leaf == "ln2w" || t.name == "lnfw") {
      std::fill(p, p + t.size, R(1));
    } else if (t.decay) {
      Stream s(seed_, init_stream(i));
      const double sd = (leaf == "attprojw" || leaf == "fcprojw") ? resid_std : 0.02;
      for (std::size_t j = 0; j < t.size; ++j) p[j] = R(sd * s.normal());
    } else {
      std::fill(p, p + t.size, R(0));
    }
  }
}

template <class R>
double Model<R>::forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                         int first_b) {
  const ModelConfig& m = config_;
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const int nb = m.head_dim() / 2;
  const AttentionShape shape{B, T, m.heads, m.head_dim()};
  require_in_vocabulary(tokens, targets, N, int(V));
  Arena& a = *acts_;
  a.allocate(m, B, T, !train);
  tokens_.assign(tokens, tokens + N);
  targets_.assign(targets, targets + N);
  B_ = B, T_ = T;
  const R* P = params.data();
  const bool rotary = angles_ != nullptr;
  if (rotary) theta_.resize(std::size_t(N) * nb);
  const bool path_beta = m.householder_beta == "path";

  encoder_forward(a.encoded, tokens, P + find_tensor(tensors_, "wte").offset, N, int(C));
  const R* residual = a.encoded;
  for (int l = 0; l < m.layers; ++l) {
    const LayerParams lp = layer_params(tensors_, l);
    auto& L = a.layers[l];
    layernorm_forward(L.ln1, L.ln1_mean, L.ln1_rstd, residual, P + lp.ln1w, P + lp.ln1b, N, int(C));
    matmul_forward(L.qkv, L.ln1, P + lp.qkvw, P + lp.qkvb, N, int(C), int(3 * C));
    if (scheme_.forget) {
      matmul_forward(L.fz, L.ln1, P + lp.fgw, P + lp.fgb, N, int(C), m.heads);
      forget_gate_forward(L.cum, L.fz, B, T, m.heads);
    }
    if (rotary) {
      const R* increments = lp.angles == std::size_t(-1) ? nullptr : P + lp.angles;
      if (lp.psiw != std::size_t(-1)) {
        matmul_forward(L.psi, L.ln1, P + lp.psiw, P + lp.psib, N, int(C), nb);
        increments = L.psi;
      }
      angles_->angles(theta_.data(), tokens, B, T, l, pass, increments, first_b);
      if (angle_observer_) angle_observer_(l, theta_.data(), B, T, nb);
      for (std::size_t i = 0; i < theta_.size(); ++i) {
        L.cs[2 * i] = R(std::cos(theta_[i]));
        L.cs[2 * i + 1] = R(std::sin(theta_[i]));
      }
    }
    if (scheme_.householder) {
      matmul_forward(L.hz, L.ln1, P + lp.hhw, P + lp.hhb, N, int(C), int(C));
      if (path_beta) matmul_forward(L.hr, L.ln1, P + lp.hhu, P + lp.hhc, N, int(C), m.heads);
      householder_steps_forward(L.hw, L.hbeta, L.hz, path_beta ? L.hr : nullptr, shape);
    }
    const R* cs = rotary ? L.cs : nullptr;
    split_heads_forward(L.q, L.k, L.v, L.qkv, cs, scheme_.values, shape);
    if (observer_)
      observer_(l, L.q, L.k, score_bias(L.cum), scheme_.householder ? L.hw : nullptr,
                scheme_.householder ? L.hbeta : nullptr, shape);
    if (scheme_.householder)
      householder_attention_forward(L.o, L.q, L.k, L.v, L.hw, L.hbeta, scheme_.values, shape,
                                    HouseholderPath::blocked, 0, train ? hh_cache_[l].get() : nullptr);
    else
      attention_forward(L.o, L.lse, L.q, L.k, L.v, score_bias(L.cum), shape);
    merge_heads_forward(L.atty, L.o, scheme_.values ? cs : nullptr, shape);
    matmul_forward(L.attproj, L.atty, P + lp.attprojw, P + lp.attprojb, N, int(C), int(C));
    residual_forward(L.res2, residual, L.attproj, N * C);
    layernorm_forward(L.ln2, L.ln2_mean, L.ln2_rstd, L.res2, P + lp.ln2w, P + lp.ln2b, N, int(C));
    matmul_forward(L.fch, L.ln2, P + lp.fcw, P + lp.fcb, N, int(C), int(F));
    gelu_forward(L.fch_gelu, L.fch, N * F);
    matmul_forward(L.fcproj, L.fch_gelu, P + lp.fcprojw, P + lp.fcprojb, N, int(F), int(C));
    residual_forward(L.res3, L.res2, L.fcproj, N * C);
    residual = L.res3;
  }
  const std::size_t lnfw = find_tensor(tensors_, "lnfw").offset, lnfb = find_tensor(tensors_, "lnfb").offset;
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, residual, P + lnfw, P + lnfb, N, int(C));
  matmul_forward(a.logits, a.lnf, P + find_tensor(tensors_, "wte").offset, (const R*)nullptr, N, int(C), int(V));
  crossentropy_forward(a.losses, a.logits, targets, N, int(V));
  double sum = 0;
  for (int64_t n = 0; n < N; ++n) sum += double(a.losses[n]);
  return sum / double(N);
}

template <class R>
void Model<R>::backward() {
  const ModelConfig& m = config_;
  Arena& a = *acts_;
  if (a.shared || a.B == 0) throw std::logic_error("backward() needs a training forward() first");
  const int B = B_, T = T_;
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const AttentionShape shape{B, T, m.heads, m.head_dim()};
  Arena& g = *grad_acts_;
  g.allocate(m, B, T, false);
  std::fill(g.mem.begin(), g.mem.end(), R(0));
  std::fill(grads.begin(), grads.end(), R(0));
  const R* P = params.data();
  R* G = grads.data();
  const bool rotary = angles_ != nullptr;
  const bool trained_angles = rotary && angles_->trained();
  const bool path_beta = m.householder_beta == "path";
  const int nb = m.head_dim() / 2;
  if (trained_angles) dtheta_.assign(std::size_t(N) * nb, 0.0);
  double* dtheta = trained_angles ? dtheta_.data() : nullptr;
  const int* tokens = tokens_.data();

  const std::size_t wte = find_tensor(tensors_, "wte").offset, lnfw = find_tensor(tensors_, "lnfw").offset,
                    lnfb = find_tensor(tensors_, "lnfb").offset;
  crossentropy_backward(g.logits, a.logits, targets_.data(), R(1.0 / double(N)), N, int(V));
  matmul_backward(g.lnf, G + wte, (R*)nullptr, g.logits, a.lnf, P + wte, N, int(C), int(V));
  const R* last = a.layers[m.layers - 1].res3;
  R* dlast = g.layers[m.layers - 1].res3;
  layernorm_backward(dlast, G + lnfw, G + lnfb, g.lnf, last, P + lnfw, a.lnf_mean, a.lnf_rstd, N, int(C));
  for (int l = m.layers - 1; l >= 0; --l) {
    const LayerParams lp = layer_params(tensors_, l);
    auto& L = a.layers[l];
    auto& D = g.layers[l];
    const R* residual = l == 0 ? a.encoded : a.layers[l - 1].res3;
    R* dresidual = l == 0 ? g.encoded : g.layers[l - 1].res3;
    const R* cs = rotary ? L.cs : nullptr;
    residual_backward(D.res2, D.fcproj, D.res3, N * C);
    matmul_backward(D.fch_gelu, G + lp.fcprojw, G + lp.fcprojb, D.fcproj, L.fch_gelu, P + lp.fcprojw, N, int(F),
                    int(C));
    gelu_backward(D.fch, L.fch, D.fch_gelu, N * F);
    matmul_backward(D.ln2, G + lp.fcw, G + lp.fcb, D.fch, L.ln2, P + lp.fcw, N, int(C), int(F));
    layernorm_backward(D.res2, G + lp.ln2w, G + lp.ln2b, D.ln2, L.res2, P + lp.ln2w, L.ln2_mean, L.ln2_rstd, N,
                       int(C));
    residual_backward(dresidual, D.attproj, D.res2, N * C);
    matmul_backward(D.atty, G + lp.attprojw, G + lp.attprojb, D.attproj, L.atty, P + lp.attprojw, N, int(C),
                    int(C));
    if (dtheta) std::fill(dtheta_.begin(), dtheta_.end(), 0.0);
    merge_heads_backward(D.o, dtheta, D.atty, L.atty, scheme_.values ? cs : nullptr, shape);
    if (scheme_.householder) {
      householder_attention_backward(D.q, D.k, D.v, D.hw, D.hbeta, D.o, L.q, L.k, L.v, L.hw, L.hbeta,
                                     scheme_.values, shape, HouseholderPath::blocked, 0, hh_cache_[l].get());
      householder_steps_backward(D.hz, path_beta ? D.hr : nullptr, D.hw, D.hbeta, L.hz, L.hbeta, shape);
      matmul_backward(D.ln1, G + lp.hhw, G + lp.hhb, D.hz, L.ln1, P + lp.hhw, N, int(C), int(C));
      if (path_beta) matmul_backward(D.ln1, G + lp.hhu, G + lp.hhc, D.hr, L.ln1, P + lp.hhu, N, int(C), m.heads);
    } else {
      attention_backward(D.q, D.k, D.v, D.cum, D.o, L.o, L.lse, L.q, L.k, L.v, score_bias(L.cum), shape);
    }
    if (scheme_.forget) {
      forget_gate_backward(D.fz, D.cum, L.fz, B, T, m.heads);
      matmul_backward(D.ln1, G + lp.fgw, G + lp.fgb, D.fz, L.ln1, P + lp.fgw, N, int(C), m.heads);
    }
    split_heads_backward(D.qkv, dtheta, D.q, D.k, D.v, L.q, L.k, L.v, cs, scheme_.values, shape);
    if (dtheta && lp.psiw != std::size_t(-1)) {
      angles_->angles_backward(D.psi, dtheta, tokens, B, T);
      matmul_backward(D.ln1, G + lp.psiw, G + lp.psib, D.psi, L.ln1, P + lp.psiw, N, int(C), nb);
    } else if (dtheta) {
      angles_->angles_backward(G + lp.angles, dtheta, tokens, B, T);
    }
    matmul_backward(D.ln1, G + lp.qkvw, G + lp.qkvb, D.qkv, L.ln1, P + lp.qkvw, N, int(C), int(3 * C));
    layernorm_backward(dresidual, G + lp.ln1w, G + lp.ln1b, D.ln1, residual, P + lp.ln1w, L.ln1_mean, L.ln1_rstd,
                       N, int(C));
  }
  encoder_backward(G + wte, g.encoded, tokens, N, int(C));
}

template <class R>
ScoreBias<R> Model<R>::score_bias(const R* cum) const {
  return {slopes_.empty() ? nullptr : slopes_.data(), scheme_.forget ? cum : nullptr};
}

template <class R>
const R* Model<R>::losses() const {
  return acts_->losses;
}

template <class R>
const R* Model<R>::logits() const {
  return acts_->logits;
}

template <class R>
std::size_t Model<R>::arena_floats() const {
  return acts_->mem.size();
}

template class Model<float>;
template class Model<double>;

}  // namespace routelab::nn
