// The decoder's forward and backward pass, written once for both backends.
// nn::Model (nn/model.cpp) and cuda::Model (cuda/model.cpp) each hold their
// buffers and call these with their own `Ops`: the layer calls of one
// backend, with the signatures of nn/layers.h, nn/attention.h,
// nn/forget_gate.h and nn/householder.h (the GPU's forward to the kernels of
// cuda/*.h, adding its cuBLAS handle and matmul math). What the backends do
// differently is an Ops member named for it: how a layer's angles are made
// and back-propagated, how Householder attention keeps what its backward
// needs, and what may watch the pass. So a scheme is added here once, and the
// GPU path, which no device has yet run, runs the CPU path's sequence of
// calls.
//
// Ops provides, for buffers of R:
//   encoder_forward/backward, layernorm_forward/backward, matmul_forward/
//   backward, forget_gate_forward/backward, householder_steps_forward/
//   backward, short_conv_forward/backward (nn/short_conv.h),
//   split_heads_forward/backward, attention_forward/backward,
//   merge_heads_forward/backward, residual_forward/backward, gelu_forward/
//   backward, crossentropy_forward/backward: as the CPU functions (all but
//   the matmuls by ROUTELAB_PASS_LAYERS below);
//   score_bias(cum): the scheme's ScoreBias;
//   layer_angles(L, lp, l): layer l's (cos, sin) into L.cs (projected angles
//     from L.psi, which the pass has computed);
//   watch_attention(l, L, shape): sees q, k and the steps before attention;
//   householder_attention_forward(L, l, shape) / _backward(D, L, l, shape)
//     (with the forget gate's L.cum, and D.cum its gradient, under a gate);
//   zero_dtheta(), angles_backward(dincrements, dtheta): d loss / d the
//     layer's increments (table rows or psi) from d loss / d theta.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "nn/model.h"

// The layer calls an Ops forwards unchanged to its backend's free functions
// of the same name in namespace `ns` (nn on the CPU, cuda on the GPU): every
// call the pass makes but the matmuls, which the GPU forwards with its cuBLAS
// handle and math. One list, so a layer added to the pass is added to both.
#define ROUTELAB_PASS_LAYER(ns, name) \
  template <class... A>               \
  void name(A&&... a) {               \
    ns::name(std::forward<A>(a)...);  \
  }
#define ROUTELAB_PASS_LAYERS(ns)                                                                         \
  ROUTELAB_PASS_LAYER(ns, encoder_forward) ROUTELAB_PASS_LAYER(ns, encoder_backward)                     \
  ROUTELAB_PASS_LAYER(ns, layernorm_forward) ROUTELAB_PASS_LAYER(ns, layernorm_backward)                 \
  ROUTELAB_PASS_LAYER(ns, gelu_forward) ROUTELAB_PASS_LAYER(ns, gelu_backward)                           \
  ROUTELAB_PASS_LAYER(ns, residual_forward) ROUTELAB_PASS_LAYER(ns, residual_backward)                   \
  ROUTELAB_PASS_LAYER(ns, crossentropy_forward) ROUTELAB_PASS_LAYER(ns, crossentropy_backward)           \
  ROUTELAB_PASS_LAYER(ns, forget_gate_forward) ROUTELAB_PASS_LAYER(ns, forget_gate_backward)             \
  ROUTELAB_PASS_LAYER(ns, split_heads_forward) ROUTELAB_PASS_LAYER(ns, split_heads_backward)             \
  ROUTELAB_PASS_LAYER(ns, merge_heads_forward) ROUTELAB_PASS_LAYER(ns, merge_heads_backward)             \
  ROUTELAB_PASS_LAYER(ns, attention_forward) ROUTELAB_PASS_LAYER(ns, attention_backward)                 \
  ROUTELAB_PASS_LAYER(ns, householder_steps_forward) ROUTELAB_PASS_LAYER(ns, householder_steps_backward)     \
  ROUTELAB_PASS_LAYER(ns, short_conv_forward) ROUTELAB_PASS_LAYER(ns, short_conv_backward)

namespace routelab::nn {

// Fills a (the activations) for B x T positions; tokens and targets where
// the backend reads them (host or device).
template <class R, class Ops>
void model_forward(Ops& ops, const ModelConfig& m, const SchemeInfo& scheme, const ParamOffsets& at,
                   ActivationLayout<R>& a, const R* P, const int* tokens, const int* targets, int B, int T) {
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const AttentionShape shape{B, T, m.heads, m.head_dim()};
  const bool rotary = scheme.angles != AngleKind::none;
  const bool path_beta = m.householder_beta == "path";
  const int r = path_rank(m);
  const std::size_t wte = at.wte, lnfw = at.lnfw, lnfb = at.lnfb;

  ops.encoder_forward(a.encoded, tokens, P + wte, N, int(C));
  const R* residual = a.encoded;
  for (int l = 0; l < m.layers; ++l) {
    const LayerParams& lp = at.layers[l];
    auto& L = a.layers[l];
    ops.layernorm_forward(L.ln1, L.ln1_mean, L.ln1_rstd, residual, P + lp.ln1w, P + lp.ln1b, N, int(C));
    ops.matmul_forward(L.qkv, L.ln1, P + lp.qkvw, P + lp.qkvb, N, int(C), int(3 * C));
    if (scheme.forget) {
      ops.matmul_forward(L.fz, L.ln1, P + lp.fgw, P + lp.fgb, N, int(C), m.heads);
      ops.forget_gate_forward(L.cum, L.fz, B, T, m.heads);
    }
    if (scheme.angles == AngleKind::projected)  // the increments psi = W_psi ln1 + b_psi
      ops.matmul_forward(L.psi, L.ln1, P + lp.psiw, P + lp.psib, N, int(C), m.head_dim() / 2);
    if (rotary) ops.layer_angles(L, lp, l);
    if (scheme.householder) {
      if (scheme.path_w) {  // z = silu(conv(W2 W1 ln1)), PaTH's own directions
        ops.matmul_forward(L.hlow, L.ln1, P + lp.hhw1, static_cast<const R*>(nullptr), N, int(C), r);
        ops.matmul_forward(L.hproj, L.hlow, P + lp.hhw2, static_cast<const R*>(nullptr), N, r, int(C));
        ops.short_conv_forward(L.hz, L.hconv, L.hproj, P + lp.hhconv, B, T, int(C), kPathConvTaps);
      } else {
        ops.matmul_forward(L.hz, L.ln1, P + lp.hhw, P + lp.hhb, N, int(C), int(C));
      }
      if (path_beta) ops.matmul_forward(L.hr, L.ln1, P + lp.hhu, P + lp.hhc, N, int(C), m.heads);
      ops.householder_steps_forward(L.hw, L.hbeta, L.hz, path_beta ? L.hr : nullptr, shape);
    }
    const R* cs = rotary ? L.cs : nullptr;
    ops.split_heads_forward(L.q, L.k, L.v, L.qkv, cs, scheme.values, shape);
    ops.watch_attention(l, L, shape);
    if (scheme.householder)
      ops.householder_attention_forward(L, l, shape);
    else
      ops.attention_forward(L.o, L.lse, L.q, L.k, L.v, ops.score_bias(L.cum), shape);
    ops.merge_heads_forward(L.atty, L.o, scheme.values ? cs : nullptr, shape);
    ops.matmul_forward(L.attproj, L.atty, P + lp.attprojw, P + lp.attprojb, N, int(C), int(C));
    ops.residual_forward(L.res2, residual, L.attproj, N * C);
    ops.layernorm_forward(L.ln2, L.ln2_mean, L.ln2_rstd, L.res2, P + lp.ln2w, P + lp.ln2b, N, int(C));
    ops.matmul_forward(L.fch, L.ln2, P + lp.fcw, P + lp.fcb, N, int(C), int(F));
    ops.gelu_forward(L.fch_gelu, L.fch, N * F);
    ops.matmul_forward(L.fcproj, L.fch_gelu, P + lp.fcprojw, P + lp.fcprojb, N, int(F), int(C));
    ops.residual_forward(L.res3, L.res2, L.fcproj, N * C);
    residual = L.res3;
  }
  ops.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, residual, P + lnfw, P + lnfb, N, int(C));
  ops.matmul_forward(a.logits, a.lnf, P + wte, static_cast<const R*>(nullptr), N, int(C), int(V));
  ops.crossentropy_forward(a.losses, a.logits, targets, N, int(V));
}

// G += d (mean loss) / d params into zeroed grads, given the training
// forward's activations a and zeroed activation gradients g.
template <class R, class Ops>
void model_backward(Ops& ops, const ModelConfig& m, const SchemeInfo& scheme, const ParamOffsets& at,
                    ActivationLayout<R>& a, ActivationLayout<R>& g, const R* P, R* G, double* dtheta,
                    const int* tokens, const int* targets, int B, int T) {
  const int64_t N = int64_t(B) * T, C = m.d_model, F = int64_t(m.mlp_ratio) * C, V = m.vocab;
  const int nb = m.head_dim() / 2;
  const AttentionShape shape{B, T, m.heads, m.head_dim()};
  const bool rotary = scheme.angles != AngleKind::none;
  const bool projected = scheme.angles == AngleKind::projected;
  const bool path_beta = m.householder_beta == "path";
  const int r = path_rank(m);

  const std::size_t wte = at.wte, lnfw = at.lnfw, lnfb = at.lnfb;
  ops.crossentropy_backward(g.logits, a.logits, targets, R(1.0 / double(N)), N, int(V));
  ops.matmul_backward(g.lnf, G + wte, static_cast<R*>(nullptr), g.logits, a.lnf, P + wte, N, int(C), int(V));
  const R* last = a.layers[m.layers - 1].res3;
  R* dlast = g.layers[m.layers - 1].res3;
  ops.layernorm_backward(dlast, G + lnfw, G + lnfb, g.lnf, last, P + lnfw, a.lnf_mean, a.lnf_rstd, N, int(C));
  for (int l = m.layers - 1; l >= 0; --l) {
    const LayerParams& lp = at.layers[l];
    auto& L = a.layers[l];
    auto& D = g.layers[l];
    const R* residual = l == 0 ? a.encoded : a.layers[l - 1].res3;
    R* dresidual = l == 0 ? g.encoded : g.layers[l - 1].res3;
    const R* cs = rotary ? L.cs : nullptr;
    ops.residual_backward(D.res2, D.fcproj, D.res3, N * C);
    ops.matmul_backward(D.fch_gelu, G + lp.fcprojw, G + lp.fcprojb, D.fcproj, L.fch_gelu, P + lp.fcprojw, N, int(F),
                        int(C));
    ops.gelu_backward(D.fch, L.fch, D.fch_gelu, N * F);
    ops.matmul_backward(D.ln2, G + lp.fcw, G + lp.fcb, D.fch, L.ln2, P + lp.fcw, N, int(C), int(F));
    ops.layernorm_backward(D.res2, G + lp.ln2w, G + lp.ln2b, D.ln2, L.res2, P + lp.ln2w, L.ln2_mean, L.ln2_rstd, N,
                           int(C));
    ops.residual_backward(dresidual, D.attproj, D.res2, N * C);
    ops.matmul_backward(D.atty, G + lp.attprojw, G + lp.attprojb, D.attproj, L.atty, P + lp.attprojw, N, int(C),
                        int(C));
    if (dtheta) ops.zero_dtheta();
    ops.merge_heads_backward(D.o, dtheta, D.atty, L.atty, scheme.values ? cs : nullptr, shape);
    if (scheme.householder) {
      ops.householder_attention_backward(D, L, l, shape);
      ops.householder_steps_backward(D.hz, path_beta ? D.hr : nullptr, D.hw, D.hbeta, L.hz, L.hbeta, shape);
      if (scheme.path_w) {
        ops.short_conv_backward(D.hproj, G + lp.hhconv, D.hz, L.hconv, L.hproj, P + lp.hhconv, B, T, int(C),
                                kPathConvTaps);
        ops.matmul_backward(D.hlow, G + lp.hhw2, static_cast<R*>(nullptr), D.hproj, L.hlow, P + lp.hhw2, N, r,
                            int(C));
        ops.matmul_backward(D.ln1, G + lp.hhw1, static_cast<R*>(nullptr), D.hlow, L.ln1, P + lp.hhw1, N, int(C), r);
      } else {
        ops.matmul_backward(D.ln1, G + lp.hhw, G + lp.hhb, D.hz, L.ln1, P + lp.hhw, N, int(C), int(C));
      }
      if (path_beta)
        ops.matmul_backward(D.ln1, G + lp.hhu, G + lp.hhc, D.hr, L.ln1, P + lp.hhu, N, int(C), m.heads);
    } else {
      ops.attention_backward(D.q, D.k, D.v, D.cum, D.o, L.o, L.lse, L.q, L.k, L.v, ops.score_bias(L.cum), shape);
    }
    if (scheme.forget) {
      ops.forget_gate_backward(D.fz, D.cum, L.fz, B, T, m.heads);
      ops.matmul_backward(D.ln1, G + lp.fgw, G + lp.fgb, D.fz, L.ln1, P + lp.fgw, N, int(C), m.heads);
    }
    ops.split_heads_backward(D.qkv, dtheta, D.q, D.k, D.v, L.q, L.k, L.v, cs, scheme.values, shape);
    if (dtheta && projected) {
      ops.angles_backward(D.psi, dtheta);
      ops.matmul_backward(D.ln1, G + lp.psiw, G + lp.psib, D.psi, L.ln1, P + lp.psiw, N, int(C), nb);
    } else if (dtheta) {
      ops.angles_backward(G + lp.angles, dtheta);
    }
    ops.matmul_backward(D.ln1, G + lp.qkvw, G + lp.qkvb, D.qkv, L.ln1, P + lp.qkvw, N, int(C), int(3 * C));
    ops.layernorm_backward(dresidual, G + lp.ln1w, G + lp.ln1b, D.ln1, residual, P + lp.ln1w, L.ln1_mean,
                           L.ln1_rstd, N, int(C));
  }
  ops.encoder_backward(G + wte, g.encoded, tokens, N, int(C));
}

}  // namespace routelab::nn
