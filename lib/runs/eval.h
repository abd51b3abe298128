// Evaluation far past the training length: the validation stream cut into
// consecutive non-overlapping windows of L bytes (window w predicts bytes
// w L + 1 .. w L + L from the L before them), every position scored. Reports
// bits per byte and perplexity, and the loss by position inside the window in
// log2 bins [0, 1), [1, 2), [2, 4), ..., so a break at some distance shows.
// Attention streams over key tiles, and layers share one set of buffers, so
// memory grows linearly in L.
// A trained run (load_trained_run: its configuration, checked checkpoint,
// model and corpus) is where evaluation, passkey retrieval (runs/passkey.h)
// and the probe (runs/probe.h) start; evaluate_run writes `routelab eval`'s
// CSVs and sidecar.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/brown.h"
#include "nn/backend.h"
#include "nn/model.h"
#include "runs/config.h"
#include "runs/run_dir.h"

namespace routelab::runs {

struct PositionBin {
  int64_t lo, hi;  // positions [lo, hi) of a window
  int64_t tokens;
  double bits_per_byte;
};

struct EvalResult {
  int64_t eval_len = 0, windows = 0, tokens = 0;
  double bits_per_byte = 0, ppl = 0;
  std::vector<PositionBin> bins;
  int batch = 0;  // windows per forward pass
};

// Random angles of evaluation pass i use pass id kEvalPass + i, apart from
// every training step's.
inline constexpr uint64_t kEvalPass = uint64_t(1) << 36;

// What long evaluation work calls from its loop, so that a caller can report
// progress and stop it (the Python module's progress callbacks and Ctrl-C):
// after_pass after every forward pass, after_unit(done, total) after each
// of its units (passkey_run: a length and depth; probe_runs: a run at one
// length, and its phase statistics). Either may throw to stop the work; a
// command that writes files has then written nothing.
struct WorkHooks {
  std::function<void()> after_pass = nullptr;
  std::function<void(std::size_t done, std::size_t total)> after_unit = nullptr;
};

// `losses`, when given, gets every scored position's loss (nats) appended,
// window by window, position by position (routelab eval --losses).
// after_pass, when given, is called after each forward pass (WorkHooks).
EvalResult evaluate(nn::ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L,
                    std::vector<float>* losses = nullptr, const std::function<void()>& after_pass = nullptr);
// The same on a CPU model the caller holds.
EvalResult evaluate(nn::Model<float>& model, const std::vector<uint8_t>& stream, int64_t L);

// The model over the first `windows` windows of L bytes as evaluate() runs
// them (eval_batch(L) per forward pass, pass ids kEvalPass + pass, so the same
// random angles); after each pass, done(w0, B) for windows [w0, w0 + B).
void forward_windows(nn::ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done);
void forward_windows(nn::Model<float>& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done);

// "1x,2x,64x" (multiples of the training length) or plain lengths "128,512".
// Throws std::invalid_argument naming the bad item.
std::vector<int64_t> parse_lengths(const std::string& text, int64_t train_len);

// The eval CSVs' columns, shared by `routelab eval` and experiments.
std::string eval_csv_header();
std::string positions_csv_header();
// FILE.csv -> FILE<suffix> (FILE-positions.csv for suffix "-positions.csv").
std::string csv_with_suffix(const std::string& csv, const std::string& suffix);
// FILE.csv -> FILE-positions.csv
std::string positions_path(const std::string& eval_csv);

// A trained run ready to evaluate: its configuration, checkpointed weights
// loaded into a model, its corpus, and the lengths asked for (refused with a
// ConfigError naming --lengths).
struct TrainedRun {
  RunConfig config;
  int step = 0;  // the checkpoint's
  data::Corpus corpus;
  std::unique_ptr<nn::Model<float>> model;
  std::vector<int64_t> lengths;
};
// `backend` (empty: the CPU) is where its evaluation will run: the memory
// each length takes is checked there.
TrainedRun load_trained_run(const std::string& run_dir, const std::string& lengths_text,
                            const nn::BackendFactory& backend = {});
// Refuses (ConfigError opening with `flag`, the lengths' source: "--lengths",
// "FILE: [experiment] lengths") every length that the validation stream of
// `run_dir` (val_bytes long; a corpus run's) cannot fill (a window of L bytes
// predicts L + 1), or whose evaluation does not fit in memory on `backend`.
// What load_trained_run checks, and experiments before any run trains.
void require_lengths_fit(const RunConfig& c, const std::vector<int64_t>& lengths, std::size_t val_bytes,
                         const std::string& flag, const std::string& run_dir, const nn::BackendFactory& backend = {});
// The run's model where `backend` puts it (empty: the CPU, driving run.model).
std::unique_ptr<nn::ModelBackend> trained_run_backend(TrainedRun& run, const nn::BackendFactory& backend);

// Evaluates a trained run at `lengths`, writing eval_csv, its -positions CSV
// and the sidecar. Returns the rows written (without header).
// `backend` says where the model runs (empty: the CPU). A non-empty
// `losses_csv` also gets every scored position's loss:
// eval_len,window,position,nats, one row per position (nats as float32
// computed them, 9 significant digits).
std::string evaluate_run(const std::string& run_dir, const std::string& lengths, const std::string& eval_csv,
                         bool progress, const nn::BackendFactory& backend = {}, const std::string& losses_csv = "");

}  // namespace routelab::runs
