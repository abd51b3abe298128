// Stream ids of the transformer's random draws. The two top bits say what a
// stream is for, so initialisation, batches and angles never share numbers.
#pragma once

#include <cstdint>

namespace routelab::nn {

inline uint64_t init_stream(uint64_t id) { return (uint64_t(1) << 62) | id; }
// Initialisation (issue 52: the two used to meet from 78 layers on): a
// learned angle table of layer l (the shared table: l = 0) draws
// table_init_stream(l), ids 1000 .. 1000 + kMaxLayers - 1; parameter tensor i
// (param_layout's order) draws tensor_init_stream(i), id i below 1000, so
// every model of fewer tensors starts as it always did, and from 2^32 + i
// after, past every table's.
inline constexpr uint64_t kTableStreams = 1000;
inline uint64_t table_init_stream(uint64_t layer) { return init_stream(kTableStreams + layer); }
inline uint64_t tensor_init_stream(uint64_t i) {
  return init_stream(i < kTableStreams ? i : (uint64_t(1) << 32) + i);
}
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
