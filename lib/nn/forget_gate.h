// The Forgetting Transformer's gate (Lin et al., 2025): per head a scalar
// f_t = sigmoid(z_t), z_t = w_h . x_t + b_h, and the score bias
// sum_{l = j+1}^{i} log f_l = cum_i - cum_j, cum_t = sum_{l <= t} log f_l.
// Far mass is then controlled by the data: a head that forgets quickly puts
// exponentially little weight on distant keys, at any length.
#pragma once

#include <cstdint>

namespace routelab::nn {

// z (B, T, H) as the projection writes it -> cum (B, H, T). Running sums in
// double, so 64x the training length loses nothing.
template <class R>
void forget_gate_forward(R* cum, const R* z, int B, int T, int H);
// dz (B, T, H) from dcum (B, H, T): written, not added.
template <class R>
void forget_gate_backward(R* dz, const R* dcum, const R* z, int B, int T, int H);

}  // namespace routelab::nn
