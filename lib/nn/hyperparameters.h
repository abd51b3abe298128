// What a model and its optimiser are built from: the decoder's shape and
// positional scheme (ModelConfig) and the training hyperparameters that
// AdamW, its schedule and the training loop read (TrainConfig). Plain values
// with their defaults; reading them from TOML and refusing bad ones is the run
// workflow's (runs/config.h).
#pragma once

#include <cstdint>
#include <string>

namespace routelab::nn {

// The most layers a run's configuration may ask for (runs/config.cpp): the
// initialisation's streams (nn/streams.h) stay apart up to it.
inline constexpr int kMaxLayers = 256;

struct ModelConfig {
  int vocab = 256;  // bytes
  int d_model = 128;
  int heads = 4;
  int layers = 4;
  int mlp_ratio = 4;
  int context = 128;  // the training length
  std::string scheme = "rope";
  // Multiplies f_b = rope_base^(-2b/d_head): the half-width of the random
  // increments and of the learned tables' uniform initialisation.
  double angle_scale = 1.0;
  double rope_base = 10000.0;
  // The learned table's start. "normal" (the default, the paper's own code):
  // every entry ~ N(0, learned_sigma^2), whatever f_b, so each block starts
  // with beta = e^{-sigma^2/2}; "uniform": U(-angle_scale f_b, angle_scale
  // f_b), beta = sin(h)/h at h = angle_scale f_b (the default before issue
  // 14); "rope": every entry angle_scale f_b, so the scheme starts as RoPE.
  std::string learned_init = "normal";
  // rad: the normal table's spread, and the spread over tokens of the
  // projected schemes' increments at the start.
  double learned_sigma = 1.0;
  // One angle table for all layers (the paper's code) or one per layer.
  bool learned_shared = false;
  // Householder schemes' step size (nn/householder.h): "path", PaTH's learned
  // beta = 2 sigmoid(.) in (0, 2); "reflection", beta = 2 (orthogonal steps).
  std::string householder_beta = "path";

  int head_dim() const { return d_model / heads; }
  bool operator==(const ModelConfig&) const = default;
};

struct TrainConfig {
  int batch = 16;
  int steps = 1500;
  double lr = 1e-3;
  double min_lr_ratio = 0.1;  // the cosine decays to lr * min_lr_ratio
  int warmup = 100;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // global-norm clip; 0 turns it off
  // The share of training windows replaced by a passkey retrieval sample of
  // the training length (nn/passkey.h): data in which far context pays.
  double passkey_fraction = 0;
  // Draws the initial weights, the random angles and, unless data_seed is
  // set, the training batches.
  uint64_t seed = 1;
  // The training batches' stream alone (their offsets and passkey samples);
  // 0 takes seed's. With it a run keeps its initial weights and angles and
  // changes only the order of its data, or the reverse, so seed-to-seed
  // spread can be split between the two.
  uint64_t data_seed = 0;
  uint64_t batch_seed() const { return data_seed ? data_seed : seed; }
  int checkpoint_every = 100;
  int log_every = 10;
  bool operator==(const TrainConfig&) const = default;
};

}  // namespace routelab::nn
