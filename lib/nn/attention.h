// Causal multi-head attention with positional transport.
// Layouts: qkv (B, T, 3C) as the projection writes it; per-head tensors
// q, k, v, o (B, H, T, hd); rotations cs (B, T, hd/2, 2) = (cos, sin) of the
// scheme's angles; merged output y (B, T, C). Pair j of a head is the
// coordinates (2j, 2j+1).
// One attention code path for training and evaluation: key tiles are streamed
// with an online softmax (flash attention), keeping only each row's
// log-sum-exp, so memory grows linearly with length; backward recomputes the
// probabilities from q, k and the log-sum-exp.
#pragma once

#include <cstdint>

namespace routelab::nn {

struct AttentionShape {
  int B, T, H, hd;
  int64_t C() const { return int64_t(H) * hd; }
};

// q, k (and v when rotate_v) = R(theta_t) times the head slices of qkv; cs null
// means no rotation.
template <class R>
void split_heads_forward(R* q, R* k, R* v, const R* qkv, const R* cs, bool rotate_v, AttentionShape s);
// Adds d qkv, and d loss / d theta into dtheta (when not null).
template <class R>
void split_heads_backward(R* dqkv, double* dtheta, const R* dq, const R* dk, const R* dv, const R* q, const R* k,
                          const R* v, const R* cs, bool rotate_v, AttentionShape s);

// y_t = R(-theta_t) o_t per head when cs is given (values were transported),
// else the heads side by side.
template <class R>
void merge_heads_forward(R* y, const R* o, const R* cs, AttentionShape s);
template <class R>
void merge_heads_backward(R* d_o, double* dtheta, const R* dy, const R* y, const R* cs, AttentionShape s);

// Biases added to the scores (each optional): ALiBi's -slope_h (i - j), and
// the forget gate's cum_i - cum_j with cum (B, H, T) the running sum of
// log f_t (Forgetting Transformer).
template <class R>
struct ScoreBias {
  const double* slopes = nullptr;
  const R* cum = nullptr;
};

// A model's bias, CPU or GPU alike: ALiBi's slopes where it has them (an empty
// `slopes`, a std::vector or a device buffer, means none), the forget gate's
// cumulative log-gates `cum` when the scheme has the gate.
template <class R, class Slopes>
ScoreBias<R> model_score_bias(const Slopes& slopes, bool forget, const R* cum) {
  return {slopes.size() ? slopes.data() : nullptr, forget ? cum : nullptr};
}

// o = softmax(q k^T / sqrt(hd) + bias, causal) v. lse (B, H, T) keeps each
// row's log-sum-exp.
template <class R>
void attention_forward(R* o, R* lse, const R* q, const R* k, const R* v, ScoreBias<R> bias, AttentionShape s);
// dcum (B, H, T) gets d loss / d cum when bias.cum is given.
template <class R>
void attention_backward(R* dq, R* dk, R* dv, R* dcum, const R* d_o, const R* o, const R* lse, const R* q,
                        const R* k, const R* v, ScoreBias<R> bias, AttentionShape s);

}  // namespace routelab::nn
