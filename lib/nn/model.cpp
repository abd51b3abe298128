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
#include "nn/short_conv.h"
#include "nn/model_pass.h"
#include "nn/streams.h"
#include "rng/stream.h"

namespace routelab::nn {

namespace {

const ParamTensor* lookup(const std::vector<ParamTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

// The tensor's offset, or -1 where the scheme has no such tensor.
std::size_t find_offset(const std::vector<ParamTensor>& ts, const std::string& name) {
  const ParamTensor* t = lookup(ts, name);
  return t ? t->offset : std::size_t(-1);
}

}  // namespace

const ParamTensor& find_tensor(const std::vector<ParamTensor>& ts, const std::string& name) {
  if (const ParamTensor* t = lookup(ts, name)) return *t;
  throw std::out_of_range("no parameter tensor " + name);
}

std::size_t param_count(const std::vector<ParamTensor>& layout) {
  return layout.back().offset + layout.back().size();
}

std::size_t param_count(const ModelConfig& m) { return param_count(param_layout(m)); }

namespace {

// "qkvw" of "layer3.qkvw", or the whole name of a tensor outside the layers.
std::string leaf_name(const std::string& name) { return name.substr(name.find('.') + 1); }

// Layer l of "layer<l>.angles"; 0 for the shared table "angles".
int table_layer(const std::string& name) { return name == "angles" ? 0 : std::stoi(name.substr(5)); }

}  // namespace

std::optional<uint64_t> init_stream_of(const std::vector<ParamTensor>& t, std::size_t i) {
  const std::string leaf = leaf_name(t[i].name);
  if (leaf == "angles") return table_init_stream(uint64_t(table_layer(t[i].name)));
  if (leaf == "psiw" || (t[i].decay && leaf != "ln1w" && leaf != "ln2w" && t[i].name != "lnfw"))
    return tensor_init_stream(i);
  return std::nullopt;
}

LayerParams layer_params(const std::vector<ParamTensor>& ts, int l) {
  const std::string p = "layer" + std::to_string(l) + ".";
  auto o = [&](const char* n) { return find_offset(ts, p + n); };
  const std::size_t shared_angles = find_offset(ts, "angles");
  return {o("ln1w"), o("ln1b"),  o("qkvw"), o("qkvb"),    o("attprojw"), o("attprojb"), o("ln2w"),
          o("ln2b"), o("fcw"),   o("fcb"),  o("fcprojw"), o("fcprojb"),
          shared_angles != std::size_t(-1) ? shared_angles : o("angles"),
          o("fgw"),  o("fgb"),   o("hhw"),  o("hhb"),     o("hhu"),      o("hhc"),      o("psiw"),
          o("psib"), o("hhw1"),  o("hhw2"), o("hhconv")};
}

ParamOffsets param_offsets(const std::vector<ParamTensor>& ts, int layers) {
  ParamOffsets at{find_tensor(ts, "wte").offset, find_tensor(ts, "lnfw").offset, find_tensor(ts, "lnfb").offset, {}};
  for (int l = 0; l < layers; ++l) at.layers.push_back(layer_params(ts, l));
  return at;
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
  const bool path_w = scheme && scheme->path_w;
  const int64_t r = path_rank(m);
  std::vector<ParamTensor> ts;
  std::size_t at = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    const std::size_t size = std::size_t(element_count(shape));
    ts.push_back({std::move(name), at, decay, std::move(shape)});
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
    if (householder && !path_w) add(p + "hhw", {C, C}, true), add(p + "hhb", {C}, false);
    // PaTH's own directions: W1 (r, C), W2 (C, r) and the convolution's
    // kernel (C, taps), Conv1d's (C, 1, taps) without its middle axis; no
    // biases, as fla's. All start N(0, 0.02) (decayed weights): that is
    // fla's PaTH model's own start (its _init_weights draws every nn.Linear
    // and nn.Conv1d weight from N(0, initializer_range = 0.02), replacing
    // PyTorch's uniform defaults) and GPT-2's, the rest of this model's.
    if (path_w)
      add(p + "hhw1", {r, C}, true), add(p + "hhw2", {C, r}, true), add(p + "hhconv", {C, kPathConvTaps}, true);
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
  const std::size_t path_w = scheme && scheme->path_w ? 1 : 0;
  const std::size_t r = std::size_t(path_rank(m));
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
    place(L.hlow, path_w * N * r), place(L.hproj, path_w * N * C), place(L.hconv, path_w * N * C);
  }
  return total;
}

// x[0..n) = 0, in parallel: the training step's gradients are tens of
// megabytes.
template <class R>
void zero_in_parallel(R* x, std::size_t n) {
  constexpr std::size_t kChunk = std::size_t(1) << 16;
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < (n + kChunk - 1) / kChunk; ++c)
    std::fill(x + c * kChunk, x + std::min(n, (c + 1) * kChunk), R(0));
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
  offsets_ = param_offsets(tensors_, config.layers);
  params.assign(param_count(tensors_), R(0));
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
    const std::string leaf = leaf_name(t.name);
    const std::optional<uint64_t> stream = init_stream_of(tensors_, i);
    if (leaf == "angles") {
      // A shared table ("angles") starts as layer 0's would; the angle
      // source draws it from table_init_stream(layer), *stream.
      angles_->init_table(p, seed_, table_layer(t.name));
    } else if (leaf == "psiw") {
      // xhat has C coordinates of unit mean square, so psi_b = w_b . xhat
      // spreads over tokens with s.d. |w_b| ~ sigma: at the start each block's
      // increments have the normal table's law N(0, sigma^2).
      Stream s(seed_, *stream);
      const double sd = config_.learned_sigma / std::sqrt(double(config_.d_model));
      for (std::size_t j = 0; j < t.size(); ++j) p[j] = R(sd * s.normal());
    } else if (leaf == "ln1w" || leaf == "ln2w" || t.name == "lnfw") {
      std::fill(p, p + t.size(), R(1));
    } else if (t.decay) {
      Stream s(seed_, *stream);
      const double sd = (leaf == "attprojw" || leaf == "fcprojw") ? resid_std : 0.02;
      for (std::size_t j = 0; j < t.size(); ++j) p[j] = R(sd * s.normal());
    } else {
      std::fill(p, p + t.size(), R(0));
    }
  }
}

// model_pass.h's Ops on the CPU: the layer functions of nn/, the scheme's
// AngleSource, PaTH's blocked transport with its per-layer cache, and the
// probe's observers.
template <class R>
struct CpuOps {
  using Layer = typename ActivationLayout<R>::Layer;
  const ModelConfig& m;
  const SchemeInfo& scheme;
  AngleSource<R>* angles;
  std::vector<double>& theta;  // forward: the layer's angles; backward: d loss / d theta
  const std::vector<double>& slopes;  // ALiBi's, empty otherwise
  const R* P;
  const int* tokens;
  int B, T;
  uint64_t pass;
  int first_b;
  std::vector<std::shared_ptr<HouseholderCache<R>>>* hh_cache;  // null: nothing kept for backward
  const typename Model<R>::AttentionObserver* observer;
  const typename Model<R>::AngleObserver* angle_observer;

  ScoreBias<R> score_bias(const R* cum) const {
    return model_score_bias(slopes, scheme.forget, cum);
  }

  ROUTELAB_PASS_LAYERS(nn)
  template <class... A> void matmul_forward(A&&... a) { nn::matmul_forward(std::forward<A>(a)...); }
  template <class... A> void matmul_backward(A&&... a) { nn::matmul_backward(std::forward<A>(a)...); }

  void layer_angles(Layer& L, const LayerParams& lp, int l) {
    const int nb = m.head_dim() / 2;
    const R* increments = scheme.angles == AngleKind::projected ? L.psi
                          : lp.angles == std::size_t(-1)         ? nullptr
                                                                 : P + lp.angles;
    angles->angles(theta.data(), tokens, B, T, l, pass, increments, first_b);
    if (*angle_observer) (*angle_observer)(l, theta.data(), B, T, nb);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < theta.size(); ++i) {
      L.cs[2 * i] = R(std::cos(theta[i]));
      L.cs[2 * i + 1] = R(std::sin(theta[i]));
    }
  }
  void watch_attention(int l, const Layer& L, AttentionShape shape) {
    if (*observer)
      (*observer)(l, L.q, L.k, score_bias(L.cum), scheme.householder ? L.hw : nullptr,
                  scheme.householder ? L.hbeta : nullptr, shape);
  }
  void householder_attention_forward(Layer& L, int l, AttentionShape shape) {
    nn::householder_attention_forward(L.o, L.q, L.k, L.v, L.hw, L.hbeta, scheme.values, shape,
                                      HouseholderPath::blocked, 0, hh_cache ? (*hh_cache)[l].get() : nullptr,
                                      scheme.forget ? L.cum : nullptr);
  }
  void householder_attention_backward(Layer& D, const Layer& L, int l, AttentionShape shape) {
    nn::householder_attention_backward(D.q, D.k, D.v, D.hw, D.hbeta, D.o, L.q, L.k, L.v, L.hw, L.hbeta,
                                       scheme.values, shape, HouseholderPath::blocked, 0, (*hh_cache)[l].get(),
                                       scheme.forget ? L.cum : nullptr, D.cum);
  }
  void zero_dtheta() { std::fill(theta.begin(), theta.end(), 0.0); }
  void angles_backward(R* dincrements, const double* dtheta) {
    angles->angles_backward(dincrements, dtheta, tokens, B, T);
  }
};

template <class R>
double Model<R>::forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                         int first_b) {
  const ModelConfig& m = config_;
  const int64_t N = int64_t(B) * T, V = m.vocab;
  const int nb = m.head_dim() / 2;
  require_in_vocabulary(tokens, targets, N, int(V));
  Arena& a = *acts_;
  a.allocate(m, B, T, !train);
  tokens_.assign(tokens, tokens + N);
  targets_.assign(targets, targets + N);
  B_ = B, T_ = T;
  if (angles_) theta_.resize(std::size_t(N) * nb);
  CpuOps<R> ops{.m = m, .scheme = scheme_, .angles = angles_.get(), .theta = theta_, .slopes = slopes_,
                .P = params.data(), .tokens = tokens, .B = B, .T = T, .pass = pass, .first_b = first_b,
                .hh_cache = train ? &hh_cache_ : nullptr, .observer = &observer_, .angle_observer = &angle_observer_};
  model_forward(ops, m, scheme_, offsets_, a, params.data(), tokens, targets, B, T);
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
  const int64_t N = int64_t(B) * T;
  Arena& g = *grad_acts_;
  g.allocate(m, B, T, false);
  // Every layer adds into its gradients but cross-entropy, which writes the
  // logits' (the arena's largest buffer): the rest starts at zero.
  const std::size_t logits_at = std::size_t(g.logits - g.mem.data()), logits_size = std::size_t(N) * m.vocab;
  zero_in_parallel(g.mem.data(), logits_at);
  zero_in_parallel(g.logits + logits_size, g.mem.size() - logits_at - logits_size);
  zero_in_parallel(grads.data(), grads.size());
  const bool trained_angles = angles_ && angles_->trained();
  if (trained_angles) dtheta_.assign(std::size_t(N) * (m.head_dim() / 2), 0.0);
  CpuOps<R> ops{.m = m, .scheme = scheme_, .angles = angles_.get(), .theta = dtheta_, .slopes = slopes_,
                .P = params.data(), .tokens = tokens_.data(), .B = B, .T = T, .pass = 0, .first_b = 0,
                .hh_cache = &hh_cache_, .observer = &observer_, .angle_observer = &angle_observer_};
  model_backward(ops, m, scheme_, offsets_, a, g, params.data(), grads.data(), trained_angles ? dtheta_.data() : nullptr,
                 tokens_.data(), targets_.data(), B, T);
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
