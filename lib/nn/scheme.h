// Positional schemes: where a position's transport comes from.
//   nope                 nothing
//   rope                 theta_{t,b} = t f_b, f_b = rope_base^(-2b/d_head)
//   random_qk/_qkv       theta_t = running sum of psi_{s,b} ~ U(-s f_b, s f_b),
//                        per layer, shared by its heads, fresh at every pass
//   learned_qk/_qkv      theta_t = running sum of table[x_s][b] over s <= t,
//                        one learned 256 x d_head/2 table per layer (or one
//                        for all layers: [model] learned_shared)
//   projected_qk/_qkv    theta_t = running sum of psi_s = W_psi xhat_s + b_psi
//                        over s <= t, xhat_s the attention block's normalised
//                        input, W_psi: d_model -> d_head/2 per layer: the
//                        increment read from the hidden state, not the byte
//   alibi                a bias -m_h (i - j) on the scores, standard slopes
//   learned_qkv_alibi,   accumulated rotation plus ALiBi's biases (far-mass
//   random_qkv_alibi     control by distance)
//   learned_qkv_forget   accumulated rotation plus a forget gate's bias
//                        (far-mass control by the data; nn/forget_gate.h)
//   householder_qk/_qkv  PaTH: s_ij = k_j^T H_{j+1} ... H_i q_i / sqrt(hd),
//                        H_t = I - beta_t w_t w_t^T, w_t = unit(W x_t + b)
//                        per layer and head (nn/householder.h); _qkv also
//                        carries v_j to i by H_i ... H_{j+1}. [model]
//                        householder_beta = "path" (default, PaTH's own):
//                        beta_t = 2 sigmoid(u_h . x_t + c_h), orthogonal only
//                        at 0 and 2, a contraction along w_t in between;
//                        "reflection": beta = 2, pure reflections, the case
//                        the paper's theorems cover.
//   path_qk/_qkv         PaTH's own directions, as flash-linear-attention's
//                        PaTHAttention makes them (fla/layers/path_attn.py,
//                        low-rank w, use_w_shortconv): z_t = W2 W1 x_t
//                        (W1: d_model -> r, W2: r -> d_model, no biases,
//                        r = min(32, d_model): fla's 32, smaller only when
//                        d_model is), then a causal depthwise convolution of
//                        3 taps per channel, no bias, and SiLU
//                        (nn/short_conv.h), then each head's slice made a
//                        unit vector; beta and the transport as householder_*
//                        (householder_beta too). So w_t sees x_{t-2}, x_{t-1}
//                        and x_t. Why it matters: with one layer the key of a
//                        bit written after a `w` cannot know the `w` precedes
//                        it (k_j reads x_j alone), and neither can a step made
//                        from x_t alone; the convolution lets the step at the
//                        bit see the instruction before it, so the route from
//                        the latest write to the read can mark it (the
//                        flip-flop task, issue 51). householder_qk/_qkv keep
//                        w_t = unit(W x_t + b): the committed runs used them.
//   path_qk_forget       PaTH-FoX: path_qk's transport plus the forget gate's
//                        bias cum_i - cum_j on the transported scores
//                        (nn/forget_gate.h; fla's PaTHAttention with
//                        use_forget_gate).
//   fox                  NoPE with the forget gate's bias (the Forgetting
//                        Transformer, the "FoX" row of PaTH's tables): no
//                        angles, scores q.k / sqrt(hd) + cum_i - cum_j.
// The rotary schemes rotate q and k by theta; the _qkv ones (and rope_qkv)
// also rotate value j by +theta_j and the weighted sum for query i by
// -theta_i, so values travel by the same route as scores.
// Running sums are kept in double and wrapped to [-pi, pi] before sin and cos,
// so 64x the training length loses no precision.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/hyperparameters.h"

namespace routelab::nn {

enum class AngleKind { none, rope, random, learned, projected };

struct SchemeInfo {
  std::string name;
  AngleKind angles;
  bool values;  // values are transported too (QKV)
  bool alibi;
  bool forget = false;  // a data-dependent forget gate biases the scores
  bool householder = false;  // PaTH's Householder steps transport q (and v)
  // The steps' directions by PaTH's own layer (low rank, short convolution)
  // rather than one projection of x_t.
  bool path_w = false;
};

// PaTH's low-rank direction projection: fla's rank 32, or d_model when that
// is smaller (a rank above d_model adds parameters and nothing else).
constexpr int kPathRank = 32;
int path_rank(const ModelConfig& m);
// Taps of the convolution over the directions (fla's conv_size).
constexpr int kPathConvTaps = 3;

const std::vector<SchemeInfo>& all_schemes();
const SchemeInfo* find_scheme(const std::string& name);  // nullptr if unknown
std::string scheme_names();                              // "nope, rope, ..."

// Whether a model of configuration m reads [model] `key` (a sweep runs a key
// that a point does not read once, not once per value): angle_scale and
// rope_base shape random angles, RoPE (rope_base) and the uniform and rope
// learned starts; learned_init and learned_shared the learned tables;
// learned_sigma the normal start and projected angles; householder_beta the
// Householder schemes. The sizes (d_model, heads, ...) are read by every model.
bool scheme_reads(const ModelConfig& m, const std::string& key);

// The angle kind's name as routelab.torch's Scheme spells it ("none", "rope", ...).
const char* angle_kind_name(AngleKind k);

// The angle frequencies f_b, b < d_head / 2.
std::vector<double> angle_frequencies(const ModelConfig& m);
// The per-block rates a scheme's angle source reads, the same on the CPU
// (make_angle_source) and the GPU (cuda::Model): f_b for RoPE and the learned
// and projected kinds, the half widths s f_b (s = angle_scale) for random ones.
std::vector<double> angle_rates(const ModelConfig& m);
// ALiBi's head slopes (Press et al.): a geometric sequence from 2^(-8/H) for a
// power-of-two H, interleaved from the next power of two otherwise.
std::vector<double> alibi_slopes(int heads);

// One layer's angles for a batch: theta[(b T + t) nb + j], nb = d_head / 2.
template <class R>
class AngleSource {
 public:
  virtual ~AngleSource() = default;
  // Learned table entries (0 for fixed, random and projected angles).
  virtual std::size_t table_size() const { return 0; }
  virtual void init_table(R* table, uint64_t seed, int layer) const {}
  // Whether theta has a gradient (learned and projected angles).
  virtual bool trained() const { return false; }
  // `pass` names the forward pass: random angles are drawn from the stream
  // (seed, pass, layer, first_b + b), so the same pass gives the same angles,
  // and a rank holding elements first_b.. of a data-parallel batch draws what
  // one process would. `increments` is the layer's table (learned angles) or
  // its per-position increments psi[(b T + t) nb + j] (projected angles).
  virtual void angles(double* theta, const int* tokens, int B, int T, int layer, uint64_t pass,
                      const R* increments, int first_b) const = 0;
  // dincrements += d loss / d increments, given d loss / d theta.
  virtual void angles_backward(R* dincrements, const double* dtheta, const int* tokens, int B, int T) const {}
};

// The spread (rad) at which a block's step angle starts, for the learned and
// projected schemes, and the first harmonic |E e^{i psi_b}| it gives block b
// of frequency f_b (Example 1 for the uniform, the normal's characteristic
// function e^{-sigma^2/2} for the normal, 1 for the RoPE start). Projected
// increments start as N(0, sigma^2) over tokens (see init_params).
double initial_block_beta(const ModelConfig& m, double f_b);

// nullptr for schemes without angles (nope, alibi).
template <class R>
std::unique_ptr<AngleSource<R>> make_angle_source(const ModelConfig& m, uint64_t seed);

}  // namespace routelab::nn
