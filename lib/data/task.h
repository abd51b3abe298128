// Synthetic tasks whose answer is deterministic and depends on one earlier
// token among many look-alikes: the regime where far context is the answer,
// so the paper's mechanism (far tokens suppressed by a score gap while the
// near target is carried intact) can be told from a model that forgets.
// A task is a data source beside the corpora ([data] task): training draws a
// fresh sequence, read from its start, for every batch element from the
// stream (seed, batch stream); evaluation sets are generated the same way,
// never stored, and named by their parameters. The scorer lives here beside
// the generators: which positions count (`reads`) and what is right (the
// next byte).
//   flipflop      flip-flop language modelling, FFL(p) (Liu et al., NeurIPS
//                 2023, "Exposing Attention Glitches with Flip-Flop Language
//                 Modeling"): data/flipflop.h
//   latest_value  latest-value recall: keys assigned again and again, a query
//                 answered by the key's latest value (N-back with N = 1, after
//                 Zoology's associative recall): data/latest_value.h
// Every sequence starts with kTaskStart, so position t of a window of T
// predicts byte t + 1 and every target is a task byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace routelab::data {

inline constexpr uint8_t kTaskStart = '^';

// [data] task and its parameters (runs/config.h reads and checks them).
struct TaskConfig {
  std::string name;      // "" (no task: the corpus), "flipflop" or "latest_value"
  double p = 0.8;        // flipflop: the probability of an ignore instruction
  int keys = 16;         // latest_value: keys (data/latest_value.h), at most 16
  int values = 10;       // latest_value: values, the digits 0 .. values - 1
  double query = 0.25;   // latest_value: the probability that an item is a query
  bool operator==(const TaskConfig&) const = default;
};

// "flipflop, latest_value"
std::string task_names();
bool is_task(const std::string& name);
// Whether a run of task `name` ("" for the corpus) reads [data] `key`
// (flipflop_p, recall_keys, ...): a key it does not read does not make
// another run (checkpoints, sweeps).
bool task_reads(const std::string& name, const std::string& key);

// A read: token position `at` of the sequence, whose next byte is the answer;
// `distance` bytes back from `at` lies the byte the answer was copied from
// (flip-flop: the latest `w`; latest value: the key's latest assignment).
struct TaskRead {
  int64_t at;
  int64_t distance;
};

struct TaskSequence {
  std::vector<uint8_t> bytes;  // n bytes, bytes[0] = kTaskStart
  std::vector<TaskRead> reads;
};

// The step between sequence lengths a task can fill (flipflop: instruction-
// bit pairs, 2; latest_value: any, 1) and the shortest window (4 and 3): a
// window of T bytes is a sequence of T + 1 (kTaskStart first).
int task_unit(const TaskConfig& t);
int64_t task_min_window(const TaskConfig& t);
// The distances a distance set may ask at window T: multiples of the unit
// from the unit to T - 2 (the source must fit after kTaskStart).
bool task_distance_fits(const TaskConfig& t, int64_t distance, int64_t window);

// A sequence of window + 1 bytes from the stream (seed, stream): the task's
// own law when distance = 0. With distance D > 0 the sequence ends in a read
// whose source sits exactly D bytes before it, with only look-alike-free
// filler between (flip-flop: ignores; latest value: items of other keys),
// the task's law before it; only that last read is scored. Throws
// std::invalid_argument for a window or distance that does not fit.
TaskSequence task_sequence(const TaskConfig& t, int64_t window, uint64_t seed, uint64_t stream,
                           int64_t distance = 0);

// `count` sequences of the task's law at `window`, drawn from the streams
// first_stream, first_stream + 1, ..., each cut to its first `window` bytes
// and laid end to end, and the last sequence's final byte after them: a
// stream that consecutive windows of `window` bytes (runs/eval.h) read as
// the sequences themselves, for what reads a stream (the probe).
std::vector<uint8_t> task_stream(const TaskConfig& t, int64_t window, int64_t count, uint64_t seed,
                                 uint64_t first_stream);

// The expected number of reads in one sequence of the task's law at `window`
// (distance sets have one): how many sequences an evaluation needs.
double expected_reads(const TaskConfig& t, int64_t window);

// Whether the model's most likely next byte at read r (logits: the row of
// position r.at, `vocab` wide) is the answer.
bool read_is_right(const TaskSequence& s, const TaskRead& r, const float* logits_row, int vocab);

}  // namespace routelab::data
