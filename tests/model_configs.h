// The small transformer the model tests run (CPU layers and the GPU model):
// d_model 32, two layers, MLP ratio 2; heads and context as each test needs.
#pragma once

#include <string>

#include "nn/hyperparameters.h"

namespace routelab::testing {

inline nn::ModelConfig small_model_config(const std::string& scheme, int heads, int context) {
  nn::ModelConfig m;
  m.d_model = 32;
  m.heads = heads;
  m.layers = 2;
  m.mlp_ratio = 2;
  m.context = context;
  m.scheme = scheme;
  return m;
}

}  // namespace routelab::testing
