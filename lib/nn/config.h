// The configuration of one training run, read from TOML:
//   [model]  d_model, heads, layers, mlp_ratio, context, scheme, angle_scale,
//            rope_base, learned_init, learned_sigma, learned_shared,
//            householder_beta
//   [train]  batch, steps, lr, min_lr_ratio, warmup, weight_decay, beta1,
//            beta2, eps, grad_clip, seed, checkpoint_every, log_every
//   [data]   corpus
// Every key has a default; an unknown key or table, a value of the wrong type
// or out of range is a ConfigError naming it and what is accepted.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace routelab::nn {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
  uint64_t seed = 1;
  int checkpoint_every = 100;
  int log_every = 10;
  bool operator==(const TrainConfig&) const = default;
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
  std::string corpus = "data/brown";
  bool operator==(const RunConfig&) const = default;
};

// `where` names the source in messages (a file name).
RunConfig parse_run_config(const toml::table& t, const std::string& where,
                           const std::vector<std::string>& extra_tables = {});
RunConfig load_run_config(const std::string& path);
// The same from TOML text; `where` names it in messages (the Python module's
// routelab.train passes a dict's TOML as "config").
RunConfig parse_run_config_text(const std::string& text, const std::string& where);
// ConfigError unless `path` names an existing regular file.
void require_config_file(const std::string& path);
// Raises ConfigError for combinations no model can have (heads not dividing
// d_model, an odd head dimension under a rotary scheme, ...).
void validate(const RunConfig& c, const std::string& where);

std::string to_toml(const RunConfig& c);
nlohmann::json to_json(const RunConfig& c);

}  // namespace routelab::nn
