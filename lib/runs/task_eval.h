// Evaluation of a run trained on a task ([data] task, data/task.h): the error
// rate over the task's reads (the model's most likely next byte at each read,
// against the answer), with two-sided 95% Clopper-Pearson limits, on
// generated sets named by their parameters:
//   length    the task's own law at each window length (1x, 2x, ... of the
//             training length): the latest source stays near while the
//             stale look-alikes before it grow with length, the far set of
//             Section 4's lower bound. For flip-flop, further p values
//             (sparse FFL(0.98), dense FFL(0.1)) at the training length.
//   distance  one scored read per sequence whose source sits exactly D
//             bytes before it, look-alike-free filler between: near-signal
//             preservation against distance (a transport whose mixing window
//             is shorter than D should lose the target). Windows are the
//             training length while D <= 3/4 of it, else D plus a quarter of
//             it, so every sequence keeps some of the law before the source.
// Every set is drawn from the stream (seed, set hash << 28 | sequence), so
// every run is asked the same sequences, and its random angles from passes of
// its own: the same run, set and seed give the same bytes at any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/task.h"
#include "nn/backend.h"
#include "runs/config.h"

namespace routelab::runs {

struct TaskSet {
  std::string kind;     // "length" or "distance"
  data::TaskConfig task;  // the training task with this set's parameters (flip-flop's p)
  int64_t window = 0;
  int64_t distance = 0;  // 0 for a length set
  int sequences = 0;
  // "flipflop p=0.98 window=512" or "latest_value window=512 distance=64":
  // what the set's sequences are drawn from.
  std::string name() const;
};

struct TaskSetResult {
  int64_t reads = 0, errors = 0;
  double read_bits = 0;  // mean -log2 p(answer) over the reads
};

// What a task evaluation asks: `routelab eval`'s flags and [experiment]'s keys.
struct TaskEvalPlan {
  std::string lengths = "1x,2x,4x,8x,16x";  // the law at each window length
  std::vector<double> p;                     // flip-flop: further p at the training length
  std::vector<int64_t> distances;            // distance sets
  int reads = 2000;           // reads a length set aims at (sequences = reads / expected reads)
  int distance_reads = 500;   // sequences (one read each) per distance set
  uint64_t seed = 1;          // draws the sets' sequences
  bool operator==(const TaskEvalPlan&) const = default;
};

// The sets `plan` asks of a run of configuration c, every one checked before
// any work (ConfigError naming the flag or key and what is accepted; `flag`
// prefixes the names: "--" for the CLI, "[experiment] task_" for a file).
std::vector<TaskSet> task_sets(const RunConfig& c, const TaskEvalPlan& plan, const std::string& flag);

// Sequences first .. first + count - 1 of a set: exactly what
// evaluate_task_set scores (the Python module hands them to PyTorch models).
std::vector<data::TaskSequence> task_set_sequences(const TaskSet& set, uint64_t seed, int first, int count);

// The forward passes evaluate_task_set makes over a set: `batch` sequences
// each (the last one fewer), pass i drawing its random angles with pass id
// first_pass + i, so a PyTorch model scored pass by pass sees the CLI's angles.
struct TaskSetPasses {
  int batch = 0;
  uint64_t first_pass = 0;
};
TaskSetPasses task_set_passes(const TaskSet& set);

TaskSetResult evaluate_task_set(nn::ModelBackend& model, int vocab, const TaskSet& set, uint64_t seed,
                                const std::function<void()>& after_pass = nullptr);

std::string task_csv_header();
// The plan as an evaluation sidecar records it (an experiment keeps a run's
// task evaluation only when it asked the same).
nlohmann::json to_json(const TaskEvalPlan& plan);

// Evaluates a trained task run on every set of `plan`, writing csv and its
// sidecar (as evaluate_run does for a corpus run). Returns the rows.
std::string evaluate_task_run(const std::string& run_dir, const TaskEvalPlan& plan, const std::string& csv,
                              bool progress, const nn::BackendFactory& backend = {});

}  // namespace routelab::runs
