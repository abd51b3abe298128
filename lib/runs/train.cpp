#include "runs/train.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/core.h>

#include "base/threads.h"
#include "data/brown.h"
#include "io/csv_read.h"
#include "io/parse.h"
#include "io/run_lock.h"
#include "io/table.h"
#include "nn/adamw.h"
#include "nn/backend.h"
#include "nn/model.h"
#include "data/passkey_sample.h"
#include "nn/streams.h"
#include "rng/stream.h"
#include "runs/memory.h"
#include "runs/run_dir.h"
#include "stats/distributed.h"

namespace routelab::runs {

namespace fs = std::filesystem;

std::string train_log_path(const std::string& dir) { return (fs::path(dir) / "train.csv").string(); }

std::string loss_curve_header(bool task) { return task ? "scheme,seed,step,loss,read_error\n" : "scheme,seed,step,loss\n"; }
std::string loss_curve_rows(const std::string& train_csv, const std::string& scheme, uint64_t seed) {
  if (train_csv.empty()) return "";
  const CsvTable log = parse_csv(train_csv, "train.csv");
  const int c_step = log.column("step"), c_loss = log.column("loss");
  const int c_read = log.column("read_error");
  const bool task = c_read >= 0;
  std::string out;
  double sum = 0, read_sum = 0;
  int n = 0, block = 1;
  auto flush = [&] {
    if (n > 0)
      out += fmt::format("{},{},{},{}{}\n", scheme, seed, block * kLossBlock, format_number(sum / n),
                         task ? "," + format_number(read_sum / n) : "");
    sum = 0, read_sum = 0, n = 0;
  };
  for (const auto& row : log.rows) {
    const auto step = parse_integer(row[c_step]);
    const auto loss = parse_finite(row[c_loss]);
    const auto read = task ? parse_finite(row[c_read]) : std::optional<double>(0);
    if (!step || !loss || !read) continue;
    while (*step > block * kLossBlock) flush(), ++block;
    sum += *loss, read_sum += *read, ++n;
  }
  flush();
  return out;
}


namespace {

constexpr const char* kLogHeader = "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n";
constexpr const char* kTaskLogHeader = "step,loss,read_error,lr,grad_norm,tokens_per_s,elapsed_s\n";

// The rows of an earlier train.csv up to `step` (they end with '\n'), and
// the elapsed seconds of the last of them. A log that is not the one this
// run writes (another header, a row cut or with a cell that is no number,
// a file that ends inside a row, steps that do not increase) is refused: resuming over it would drop or
// keep rows silently. A missing log starts again at `step`.
std::pair<std::string, double> log_rows_up_to(const std::string& dir, const std::string& header, int step) {
  const std::string path = train_log_path(dir);
  if (!fs::exists(path)) return {"", 0};
  const std::string text = read_text_file(path);
  auto damaged = [&](const std::string& why) {
    return RunDirError(fmt::format("--resume: the log {} is damaged ({}); its checkpoint is whole: restore the log, "
                                   "or move it aside to resume with a log that starts at step {}",
                                   path, why, step));
  };
  if (!text.starts_with(header)) throw damaged("its header is not " + header.substr(0, header.size() - 1));
  // Every row is written whole, line break included: a file that ends
  // without one was cut.
  if (!text.ends_with('\n')) throw damaged("it ends inside a row: the file was cut");
  CsvTable log;
  try {
    log = parse_csv(text, path);
  } catch (const CsvError& e) {
    throw damaged(e.what());
  }
  std::string rows;
  double elapsed = 0;
  long long last = 0;
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const auto& row = log.rows[i];
    const auto at = parse_integer(row[0]);
    for (std::size_t c = 1; c < row.size(); ++c)
      if (!parse_finite(row[c])) throw damaged(fmt::format("row {}: '{}' is not a number", i + 1, row[c]));
    if (!at || *at <= last) throw damaged(fmt::format("row {}: its step '{}' does not follow {}", i + 1, row[0], last));
    last = *at;
    if (*at > step) continue;  // logged past the checkpoint, which was not written
    rows += csv_line(row);
    elapsed = *parse_finite(row.back());
  }
  return {rows, elapsed};
}

std::string format_duration(double s) {
  const long t = long(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// Checkpoint and config equality ignore bookkeeping that leaves weights alone.
bool same_run(const RunConfig& a, const RunConfig& b) {
  RunConfig x = a, y = b;
  x.train.checkpoint_every = y.train.checkpoint_every;
  x.train.log_every = y.train.log_every;
  x.corpus = y.corpus;
  // Parameters the run's task does not read.
  if (!data::task_reads(x.task.name, "flipflop_p")) x.task.p = y.task.p;
  if (!data::task_reads(x.task.name, "recall_keys"))
    x.task.keys = y.task.keys, x.task.values = y.task.values, x.task.query = y.task.query;
  return x == y;
}

}  // namespace

void training_batch(const std::vector<uint8_t>& stream, int T, int first_b, int B, uint64_t seed, int step,
                    int* tokens, int* targets, double passkey_fraction) {
  const uint64_t span = stream.size() - uint64_t(T);  // offsets 0 .. size - T - 1
  for (int b = 0; b < B; ++b) {
    Stream s(seed, nn::batch_stream(uint64_t(step), uint64_t(first_b + b)));
    const uint64_t off = s.below(span);
    const uint8_t* window = stream.data() + off;
    std::vector<uint8_t> sample;
    if (passkey_fraction > 0 && s.uniform() < passkey_fraction) {
      const double depth = s.uniform();
      sample = data::passkey_sample(stream, T, depth, seed,
                                    nn::training_passkey_trial(uint64_t(step), uint64_t(first_b + b)));
      window = sample.data();
    }
    for (int t = 0; t < T; ++t) {
      tokens[int64_t(b) * T + t] = window[t];
      targets[int64_t(b) * T + t] = window[t + 1];
    }
  }
}

std::vector<std::vector<data::TaskRead>> task_training_batch(const data::TaskConfig& task, int T, int first_b, int B,
                                                             uint64_t seed, int step, int* tokens, int* targets) {
  std::vector<std::vector<data::TaskRead>> reads(B);
  for (int b = 0; b < B; ++b) {
    const data::TaskSequence s =
        data::task_sequence(task, T, seed, nn::batch_stream(uint64_t(step), uint64_t(first_b + b)));
    for (int t = 0; t < T; ++t) {
      tokens[int64_t(b) * T + t] = s.bytes[t];
      targets[int64_t(b) * T + t] = s.bytes[t + 1];
    }
    reads[b] = s.reads;
  }
  return reads;
}

TrainSummary train_run(const RunConfig& c, const TrainOptions& opt) {
  const auto start_time = std::chrono::steady_clock::now();
  const std::string& dir = opt.run_dir;
  // Everything that can refuse the run is checked before anything is written.
  if (dir.empty()) throw ConfigError("--out: an empty path; name the run directory");
  if (fs::exists(dir) && !fs::is_directory(dir)) throw RunDirError(fmt::format("--out {} is a file, not a directory", dir));
  // One process at a time in the folder, whichever front end asks.
  const auto lock = lock_run(dir, "--out");
  const bool occupied = fs::exists(dir) && !holds_only_a_lock(dir);  // the caller may hold its lock (io/run_lock.h)
  if (occupied && !opt.resume)
    throw RunDirError(
        fmt::format("--out {} already holds a run; pass --resume to continue it, or choose another --out", dir));
  bool have_checkpoint = false;
  Checkpoint ck;
  if (occupied) {
    if (fs::exists(checkpoint_path(dir))) {
      ck = load_checkpoint(checkpoint_path(dir));
      require_same_config(ck, c, checkpoint_path(dir));
      have_checkpoint = true;
    } else if (fs::exists(config_path(dir)) && !same_run(load_run_config(config_path(dir)), c)) {
      throw RunDirError(fmt::format("{} holds a run of another configuration; start a new run directory", dir));
    }
  }
  // A task generates its data; a corpus is read (and checked) from its folder.
  const data::Corpus corpus = c.is_task() ? data::Corpus{} : data::load_corpus(c.corpus);
  const int T = c.model.context, B = c.train.batch;
  // Data parallel under mpirun: rank r takes elements r B/n .. (r+1) B/n - 1 of
  // every batch, and the mean of the ranks' gradients is the batch's gradient.
  const int ranks = dist::size();
  if (B % ranks != 0)
    throw ConfigError(fmt::format("train.batch = {} does not split over {} MPI ranks; use a batch divisible by {}", B,
                                  ranks, ranks));
  const int local_B = B / ranks, first_b = dist::rank() * local_B;
  const bool root = dist::is_root();
  if (!c.is_task() && corpus.train.size() < std::size_t(T) + 2)
    throw data::CorpusError(fmt::format("corpus {}: the training stream ({} bytes) is shorter than one window of {}",
                                        c.corpus, corpus.train.size(), T + 1));

  // The model and its optimiser, on the CPU or the device the caller chose
  // (built before anything is written: a device that refuses leaves no trace).
  require_memory(training_bytes(c.model, local_B, T), fmt::format("training (a batch of {} x {} bytes)", local_B, T),
                 opt.backend);
  const nn::BackendFactory make_model = opt.backend ? opt.backend : nn::cpu_backend_factory();
  const std::unique_ptr<nn::ModelBackend> model = make_model(c.model, c.train.seed);
  const char* log_header = c.is_task() ? kTaskLogHeader : kLogHeader;
  TrainSummary summary;
  std::string log_rows;
  double elapsed_before = 0;
  if (have_checkpoint) std::tie(log_rows, elapsed_before) = log_rows_up_to(dir, log_header, ck.step);
  // Every rank has read the run directory before the root writes to it.
  dist::barrier();
  if (have_checkpoint) {
    model->set_params(ck.params);
    model->set_optimizer(ck.opt);
    summary.start_step = ck.step;
  }
  // config.toml is written with the first checkpoint, beside it: a run that
  // stops (or fails: out of memory) before then leaves its folder as it was.
  bool config_written = false;
  const bool progress = opt.progress && root;
  const bool tty = progress && isatty(2);
  std::vector<int> tokens(std::size_t(local_B) * T), targets(tokens.size());
  std::vector<std::vector<data::TaskRead>> reads;
  double last_loss = 0, last_report = 0;
  // The thread count, unless the caller fixed it, follows the cores other
  // processes leave free (base/threads.h); the first call measures them.
  adapt_threads();
  const auto loop_start = std::chrono::steady_clock::now();
  for (int step = summary.start_step; step < c.train.steps; ++step) {
    adapt_threads();
    const auto t0 = std::chrono::steady_clock::now();
    if (c.is_task())
      reads = task_training_batch(c.task, T, first_b, local_B, c.train.batch_seed(), step, tokens.data(),
                                  targets.data());
    else
      training_batch(corpus.train, T, first_b, local_B, c.train.batch_seed(), step, tokens.data(), targets.data(),
                     c.train.passkey_fraction);
    last_loss = model->forward(tokens.data(), targets.data(), local_B, T, uint64_t(step), true, first_b);
    const int done = step + 1;
    const bool logged = done % c.train.log_every == 0 || done == c.train.steps;
    // The batch's reads, scored before the update (train.h); summed over ranks.
    double read_error = 0;
    if (c.is_task() && logged) {
      const float* logits = model->logits();
      double counts[2] = {0, 0};  // errors, reads
      for (int b = 0; b < local_B; ++b)
        for (const data::TaskRead& r : reads[b]) {
          const float* row = logits + (int64_t(b) * T + r.at) * c.model.vocab;
          counts[0] += int(std::max_element(row, row + c.model.vocab) - row) != targets[int64_t(b) * T + r.at];
          counts[1] += 1;
        }
      const double errors = dist::mean_over_ranks(counts[0]), total = dist::mean_over_ranks(counts[1]);
      read_error = total > 0 ? errors / total : 0;
    }
    model->backward();
    model->mean_grads_over_ranks();
    last_loss = dist::mean_over_ranks(last_loss);
    const double norm = model->grad_norm();
    const double scale = (c.train.grad_clip > 0 && norm > c.train.grad_clip) ? c.train.grad_clip / norm : 1.0;
    const double lr = nn::learning_rate(c.train, step);
    model->adamw_update(c.train, lr, scale, step + 1);
    const auto t1 = std::chrono::steady_clock::now();
    const double step_s = std::chrono::duration<double>(t1 - t0).count();
    const double run_s = std::chrono::duration<double>(t1 - loop_start).count();
    if (logged)
      log_rows += fmt::format("{},{}{},{},{},{},{}\n", done, format_number(last_loss),
                              c.is_task() ? "," + format_number(read_error) : "", format_number(lr),
                              format_number(norm), format_number(B * T / step_s),
                              format_number(elapsed_before + run_s));
    if (progress && (tty || run_s - last_report > 30 || done == c.train.steps)) {
      last_report = run_s;
      const double rate = (done - summary.start_step) / run_s;
      fmt::print(stderr, "{}step {}/{}  loss {:.4f}  {:.0f} tok/s  {} left{}", tty ? "\r" : "", done, c.train.steps,
                 last_loss, B * T * rate, format_duration((c.train.steps - done) / rate),
                 tty && done != c.train.steps ? "   " : "\n");
    }
    if (root && (done % c.train.checkpoint_every == 0 || done == c.train.steps)) {
      if (!config_written) write_file_atomic(config_path(dir), to_toml(c));
      config_written = true;
      // The log first: rows past the checkpoint are dropped on resume.
      write_file_atomic(train_log_path(dir), log_header + log_rows);
      save_checkpoint(checkpoint_path(dir), c, done, model->params(), model->optimizer());
    }
    if (opt.on_step) opt.on_step(done, c.train.steps, last_loss);
  }
  summary.steps = c.train.steps;
  summary.final_loss = last_loss;
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  return summary;
}

}  // namespace routelab::runs
