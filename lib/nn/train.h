// One training run: random windows of the training stream, AdamW, warmup and
// cosine decay, gradient clipping; a checkpoint every checkpoint_every steps
// and at the end. Batches and random angles are functions of (seed, step), so
// a run resumed from any checkpoint reaches the same final weights as one that
// never stopped.
// A run directory holds config.toml, checkpoint.bin and train.csv
// (step, loss, lr, grad_norm, tokens_per_s, elapsed_s).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/backend.h"
#include "nn/config.h"

namespace routelab::nn {

// A run directory that cannot be used as asked (exists without --resume, or
// holds another configuration): one line, exit status 2.
struct RunDirError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  std::string run_dir;
  bool resume = false;
  bool progress = true;  // a progress line on stderr
  // Where the model trains (nn/backend.h); empty: the CPU.
  BackendFactory backend = nullptr;
  // Called after every step with (steps done, steps configured, the step's
  // loss); it may throw to stop training (the Python module's Ctrl-C): the
  // run keeps its last checkpoint and resumes from it.
  std::function<void(int done, int steps, double loss)> on_step = nullptr;
};

struct TrainSummary {
  int start_step = 0;  // 0, or the checkpoint's step when resumed
  int steps = 0;
  double final_loss = 0;
  double wall_seconds = 0;
};

// The training windows: element b of step s starts at a uniform offset drawn
// from the stream (seed, batch_stream(s, b)). tokens/targets are B x T and
// hold elements first_b .. first_b + B - 1 (one rank's share of the batch).
void training_batch(const std::vector<uint8_t>& stream, int T, int first_b, int B, uint64_t seed, int step,
                    int* tokens, int* targets);

TrainSummary train_run(const RunConfig& c, const TrainOptions& opt);

// A finished run's final weights (RunDirError if not finished).
std::string checkpoint_path(const std::string& run_dir);
std::string config_path(const std::string& run_dir);
RunConfig load_run_dir_config(const std::string& run_dir);

}  // namespace routelab::nn
