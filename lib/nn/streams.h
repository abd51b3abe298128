// Stream ids of the transformer's random draws. The two top bits say what a
// stream is for, so initialisation, batches and angles never share numbers.
#pragma once

#include <cstdint>

namespace routelab::nn {

inline uint64_t init_stream(uint64_t tensor) { return (uint64_t(1) << 62) | tensor; }
// Batch element b of training step `step`.
inline uint64_t batch_stream(uint64_t step, uint64_t b) { return (uint64_t(2) << 62) | (step << 16) | b; }
// The passkey trial (nn/passkey.h) of training batch element b at `step`:
// above every evaluation trial number, so no key asked in evaluation was
// planted in training.
inline uint64_t training_passkey_trial(uint64_t step, uint64_t b) { return (uint64_t(1) << 60) | (step << 16) | b; }
// Random angles of one forward pass, layer and batch element.
inline uint64_t random_angle_stream(uint64_t pass, uint64_t layer, uint64_t b) {
  return (uint64_t(3) << 62) | (pass << 24) | (layer << 16) | b;
}

}  // namespace routelab::nn
