// A training run's state on disk: configuration, step, parameters and the
// optimizer's moments. One file, written whole or not at all, so a run killed
// at any moment leaves the previous checkpoint intact.
// Layout: the line "routelab-checkpoint 1", one line of JSON (configuration,
// step, sizes, sha256 of the payload), then params, m and v as raw float32.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "nn/adamw.h"
#include "nn/config.h"

namespace routelab::nn {

// Unreadable, damaged, or from another configuration: one line naming the
// file and what is wrong.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Checkpoint {
  nlohmann::json config;  // to_json(RunConfig) of the run that wrote it
  int step = 0;           // steps completed
  std::vector<float> params;
  AdamW opt;
};

void save_checkpoint(const std::string& path, const RunConfig& c, int step, const std::vector<float>& params,
                     const AdamW& opt);
Checkpoint load_checkpoint(const std::string& path);
// Throws CheckpointError naming the first field where `ck` and `c` differ.
void require_same_config(const Checkpoint& ck, const RunConfig& c, const std::string& path);

}  // namespace routelab::nn
