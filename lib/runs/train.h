// One training run: random windows of the training stream, AdamW, warmup and
// cosine decay, gradient clipping; a checkpoint every checkpoint_every steps
// and at the end. Batches and random angles are functions of (seed, step), so
// a run resumed from any checkpoint reaches the same final weights as one that
// never stopped.
// It writes the run directory (runs/run_dir.h): config.toml, checkpoint.bin
// and train.csv (step, loss, lr, grad_norm, tokens_per_s, elapsed_s; a task
// run also read_error after loss: the logged step's batch, scored before its
// update).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/task.h"
#include "nn/backend.h"
#include "runs/config.h"
#include "runs/run_dir.h"

namespace routelab::runs {

struct TrainOptions {
  std::string run_dir;
  bool resume = false;
  bool progress = true;  // a progress line on stderr
  // Where the model trains (nn/backend.h); empty: the CPU.
  nn::BackendFactory backend = nullptr;
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
// With passkey_fraction > 0 the same stream then says whether the element is
// instead a passkey sample of length T (filler from `stream`, depth uniform
// in [0, 1]); the offset is drawn first, so 0 gives the plain batches' bytes.
void training_batch(const std::vector<uint8_t>& stream, int T, int first_b, int B, uint64_t seed, int step,
                    int* tokens, int* targets, double passkey_fraction = 0);

// The same for a run of [data] task: element b of step s is a fresh sequence
// of the task, read from its start (kTaskStart), drawn from the stream
// (seed, batch_stream(s, b)), so no read's source lies before the window.
// Returns each element's reads (positions in its window), so the log can
// score the batch before the model learns from it: every batch is fresh, so
// its read error is the in-distribution error of the model at that step.
std::vector<std::vector<data::TaskRead>> task_training_batch(const data::TaskConfig& task, int T, int first_b, int B,
                                                             uint64_t seed, int step, int* tokens, int* targets);

TrainSummary train_run(const RunConfig& c, const TrainOptions& opt);

// DIR/train.csv, the run's log.
std::string train_log_path(const std::string& dir);

// The training loss of one run in blocks of kLossBlock steps: the mean of the
// losses its train.csv logged inside each block (the timing columns vary
// between machines, the losses do not), so convergence can be judged from a
// committed CSV. Columns: scheme, seed, step (the block's last), loss, and
// for a task run read_error (the mean of the block's logged read errors). An
// empty log gives no rows.
inline constexpr int kLossBlock = 100;
std::string loss_curve_header(bool task = false);
std::string loss_curve_rows(const std::string& train_csv, const std::string& scheme, uint64_t seed);

}  // namespace routelab::runs
