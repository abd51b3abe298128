// The byte-level decoder: token embedding (tied with the output), L blocks of
// pre-LayerNorm causal attention and a GELU MLP, a final LayerNorm. No
// learned absolute positions: position enters only through the scheme.
// Parameters live in one flat buffer (gradients in another of the same
// layout), activations in one arena.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/shape.h"
#include "nn/host_vector.h"

#include "nn/attention.h"
#include "nn/hyperparameters.h"
#include "nn/householder.h"
#include "nn/scheme.h"

namespace routelab::nn {

struct ParamTensor {
  std::string name;  // "wte", "layer0.qkvw", ..., "lnfb"
  std::size_t offset;
  bool decay;                  // AdamW weight decay applies (weight matrices only)
  std::vector<int64_t> shape;  // as the forward reads the floats, row-major; weights (out, in): y = x W^T + b
  std::size_t size() const { return std::size_t(element_count(shape)); }
};

// Every parameter tensor in buffer order, with its shape (see model.cpp for
// each one's meaning). C = d_model, F = mlp_ratio C, V = vocab, H = heads,
// nb = d_head / 2, r = path_rank (nn/scheme.h).
std::vector<ParamTensor> param_layout(const ModelConfig& m);
// The number of parameters param_layout lays out.
std::size_t param_count(const ModelConfig& m);
// The stream tensor i of the layout `t` (param_layout's) draws its initial
// values from (nn/streams.h): a learned angle table its layer's, a weight
// matrix or the projected angles' W_psi its own; nullopt for the tensors set
// to 0 or 1. What Model's initialisation reads.
std::optional<uint64_t> init_stream_of(const std::vector<ParamTensor>& t, std::size_t i);
// The same from a layout already made.
std::size_t param_count(const std::vector<ParamTensor>& layout);
// The tensor called `name`; throws std::out_of_range if the model has none.
const ParamTensor& find_tensor(const std::vector<ParamTensor>& tensors, const std::string& name);

// Offsets of one layer's tensors in the parameter buffer; size_t(-1) for a
// tensor the scheme does not have (angles, fg*, hh*, psi*). Under
// learned_shared every layer's `angles` is the one table "angles".
struct LayerParams {
  std::size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, angles, fgw, fgb,
      hhw, hhb, hhu, hhc, psiw, psib, hhw1, hhw2, hhconv;
};
LayerParams layer_params(const std::vector<ParamTensor>& tensors, int layer);

// Every offset the pass (nn/model_pass.h) reads, resolved once when a model
// is built rather than looked up by name on every step.
struct ParamOffsets {
  std::size_t wte, lnfw, lnfb;
  std::vector<LayerParams> layers;
};
ParamOffsets param_offsets(const std::vector<ParamTensor>& tensors, int layers);

// Throws std::invalid_argument unless every token and target (n each) is in
// [0, vocab).
void require_in_vocabulary(const int* tokens, const int* targets, int64_t n, int vocab);

// Where every activation of one forward pass over B x T positions lives in one
// arena of R, as pointers into it. In a shared arena (evaluation) every layer
// uses the same buffers. The pointers are only computed, never followed, so
// the CUDA model (cuda/model.h) lays out its device arena with the same code.
// Shapes below: N = B T positions, C = d_model, F = mlp_ratio C, V = vocab,
// H = heads, hd = d_head, nb = hd / 2. Scheme-only buffers have size 0 in a
// model of another scheme.
template <class R>
struct ActivationLayout {
  struct Layer {
    R *ln1, *ln1_mean, *ln1_rstd;  // (N, C) LayerNorm of the block input; its mean and 1/std (N)
    R *qkv;                        // (N, 3C) the fused projection
    R *q, *k, *v;                  // (B, H, T, hd) split into heads, q and k (and v under _qkv) rotated
    R *o, *lse;                    // (B, H, T, hd) each head's output; (B, H, T) each row's log-sum-exp
    R *atty, *attproj, *res2;      // (N, C) heads merged (and rotated back under _qkv); projected; residual
    R *ln2, *ln2_mean, *ln2_rstd;  // (N, C) LayerNorm before the MLP; (N) mean and 1/std
    R *fch, *fch_gelu, *fcproj;    // (N, F) MLP in, after GELU; (N, C) MLP out
    R *res3;                       // (N, C) the block's output
    R *cs;                         // (N, nb, 2) cos and sin of the accumulated angles
    R *fz, *cum;                   // forget gate: (N, H) logits; (B, H, T) running sums of log f
    R *hz, *hw;                    // Householder: (N, C) directions before normalising; (B, H, T, hd) unit w
    R *hr, *hbeta;                 // Householder: (N, H) beta logits (PaTH's beta); (B, H, T) beta
    R *psi;                        // projected angles: (N, nb) the increments W_psi xhat + b_psi
    // PaTH's directions (path_*): (N, r) W1 xhat; (N, C) W2 of that, the
    // convolution's input; (N, C) the convolution before SiLU (hz after it).
    R *hlow, *hproj, *hconv;
  };
  R *encoded;                  // (N, C) token embeddings
  R *lnf, *lnf_mean, *lnf_rstd;  // (N, C) final LayerNorm; (N) mean and 1/std
  R *logits, *losses;          // (N, V) logits; (N) per-position cross-entropy (nats)
  std::vector<Layer> layers;
  // The floats an arena for (m, B, T, shared) needs.
  static std::size_t size(const ModelConfig& m, int B, int T, bool shared);
  // Points every buffer into the arena starting at `base` (size() floats).
  void place(R* base, const ModelConfig& m, int B, int T, bool shared);
};

template <class R>
class Model {
 public:
  // `seed` draws the initial weights and the random angles.
  Model(const ModelConfig& config, uint64_t seed);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  HostVector<R> params, grads;

  // GPT-2's initialisation: N(0, 0.02), residual projections scaled by
  // 1/sqrt(2 L), LayerNorm weights 1, biases 0, angle tables by the scheme.
  void init_params();

  // Mean cross-entropy (nats) over B x T positions; tokens and targets are
  // B x T. `pass` names the forward pass for random angles. `train` keeps
  // every layer's activations for backward(); otherwise the layers share one
  // set of buffers and only the per-position losses are kept. `first_b` is
  // the global index of element 0 when this is one rank's share of a batch.
  double forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train = true,
                 int first_b = 0);
  // grads = d (mean loss) / d params, for the last training forward.
  void backward();
  // Per-position losses (nats) of the last forward, B x T.
  const R* losses() const;
  // Logits of the last forward, B x T x vocab.
  const R* logits() const;
  // Floats held by the activation arena of the last forward (memory grows
  // linearly in B x T; evaluation shares one buffer set across layers).
  std::size_t arena_floats() const;

  // Sees every layer's q and k (B, H, T, hd), rotated by the scheme, the
  // score bias, and under Householder transport its steps w (B, H, T, hd) and
  // beta (B, H, T) (null otherwise), just before attention (routelab probe).
  // Evaluation shares one arena across layers, so an observer must read them
  // during the call.
  using AttentionObserver = std::function<void(int layer, const R* q, const R* k, ScoreBias<R> bias, const R* hh_w,
                                               const R* hh_beta, AttentionShape shape)>;
  void set_attention_observer(AttentionObserver f) { observer_ = std::move(f); }
  // Sees every layer's accumulated angles theta (B, T, d_head/2), wrapped to
  // [-pi, pi], as the rotary schemes compute them (routelab probe).
  using AngleObserver = std::function<void(int layer, const double* theta, int B, int T, int nb)>;
  void set_angle_observer(AngleObserver f) { angle_observer_ = std::move(f); }

 private:
  struct Arena;
  ModelConfig config_;
  uint64_t seed_;
  SchemeInfo scheme_;
  std::vector<ParamTensor> tensors_;
  ParamOffsets offsets_;
  std::unique_ptr<AngleSource<R>> angles_;
  std::vector<double> slopes_;  // ALiBi, empty otherwise
  std::unique_ptr<Arena> acts_, grad_acts_;
  std::vector<int> tokens_, targets_;
  std::vector<double> theta_, dtheta_;
  int B_ = 0, T_ = 0;
  AttentionObserver observer_;
  AngleObserver angle_observer_;
  // Householder schemes: each layer's blocked chunk products from the last
  // training forward, for its backward (nn/householder.h).
  std::vector<std::shared_ptr<HouseholderCache<R>>> hh_cache_;
};

}  // namespace routelab::nn
