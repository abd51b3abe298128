// A training run's state on disk: configuration, step, parameters and the
// optimizer's moments. One file, written whole or not at all, so a run killed
// at any moment leaves the previous checkpoint intact.
// Layout: the line "routelab-checkpoint 2", one line of JSON (configuration,
// step, parameter count), params, m and v as raw float32, then a newline and
// the sha256 (64 hex digits) of everything before it: a changed byte anywhere
// is "damaged", never a silently other run. Version 1 (the sha256 of the
// weights in the header) still loads; every load checks the sizes against the
// file before allocating and the step against the configured steps.
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
// `file_sha256`, if given, receives the sha256 of the file as read (what
// export records), so a caller that needs both reads the file once.
Checkpoint load_checkpoint(const std::string& path, std::string* file_sha256 = nullptr);
// Throws CheckpointError naming the first field where `ck` and `c` differ, or
// when `ck` holds another number of parameters than `c` lays out.
void require_same_config(const Checkpoint& ck, const RunConfig& c, const std::string& path);

}  // namespace routelab::nn
