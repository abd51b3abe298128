#include "runs/task_eval.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "io/output.h"
#include "io/table.h"
#include "runs/eval.h"
#include "runs/memory.h"
#include "runs/run_dir.h"
#include "stats/intervals.h"

namespace routelab::runs {

namespace {

// Random angles of task passes: apart from training (steps), evaluation
// (2^36) and passkeys (2^37); a set's passes at set_hash * 2^14 above it.
constexpr uint64_t kTaskPass = uint64_t(3) << 36;
constexpr uint64_t kMaxTaskPasses = uint64_t(1) << 14;

// FNV-1a of the set's name, 20 bits for the passes and 32 for the streams.
uint64_t set_hash(const TaskSet& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s.name()) h = (h ^ ch) * 1099511628211ull;
  return h ^ (h >> 32);
}

// The window of a distance set at training length T (task_eval.h).
int64_t distance_window(int64_t D, int64_t T, int unit) {
  if (D <= T - T / 4) return T;
  const int64_t w = D + T / 4;
  return (w + unit - 1) / unit * unit;
}

}  // namespace

std::string TaskSet::name() const {
  std::string n = task.name;
  if (task.name == "flipflop") n += fmt::format(" p={}", task.p);
  else n += fmt::format(" keys={} values={} query={}", task.keys, task.values, task.query);
  n += fmt::format(" window={}", window);
  if (distance) n += fmt::format(" distance={}", distance);
  return n;
}

std::vector<TaskSet> task_sets(const RunConfig& c, const TaskEvalPlan& plan, const std::string& flag) {
  if (!c.is_task()) throw ConfigError("task sets need a run of [data] task");
  const int64_t T = c.model.context;
  const int unit = data::task_unit(c.task);
  const int64_t min_window = data::task_min_window(c.task);
  if (plan.reads < 1 || plan.distance_reads < 1)
    throw ConfigError(fmt::format("{}reads: at least 1 read per set", flag));
  std::vector<int64_t> lengths;
  try {
    lengths = parse_lengths(plan.lengths, T);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("{}lengths: {}", flag, e.what()));
  }
  std::vector<TaskSet> sets;
  auto add = [&](TaskSet s) {
    for (const auto& o : sets)
      if (o.name() == s.name()) throw ConfigError(fmt::format("{}: the set '{}' is asked twice", flag, s.name()));
    const int batch = eval_batch(s.window);
    if (uint64_t((s.sequences + batch - 1) / batch) >= kMaxTaskPasses)
      throw ConfigError(fmt::format("{}reads: the set '{}' would take {} sequences; accepted: at most {} passes of {}",
                                    flag, s.name(), s.sequences, kMaxTaskPasses - 1, batch));
    require_memory(evaluation_bytes(c.model, s.window), fmt::format("evaluating the set '{}'", s.name()));
    sets.push_back(std::move(s));
  };
  auto law_set = [&](const data::TaskConfig& task, int64_t L) {
    const double expected = data::expected_reads(task, L);
    add({"length", task, L, 0, int(std::max(1.0, std::ceil(plan.reads / expected)))});
  };
  for (int64_t L : lengths) {
    if (L % unit != 0 || L < min_window)
      throw ConfigError(fmt::format("{}lengths: {} does not fit task {}; accepted: multiples of {} bytes, at least {}",
                                    flag, L, c.task.name, unit, min_window));
    law_set(c.task, L);
  }
  if (!plan.p.empty() && c.task.name != "flipflop")
    throw ConfigError(fmt::format("{}p: further p values are flip-flop's; this run's task is {}", flag, c.task.name));
  for (double p : plan.p) {
    if (!(p >= 0 && p < 1)) throw ConfigError(fmt::format("{}p: {} is not accepted; a number in [0, 1)", flag, p));
    data::TaskConfig task = c.task;
    task.p = p;
    law_set(task, T);
  }
  for (int64_t D : plan.distances) {
    const int64_t window = distance_window(D, T, unit);
    if (!data::task_distance_fits(c.task, D, window))
      throw ConfigError(fmt::format("{}distances: {} is not accepted for task {}; multiples of {} bytes, at least {}",
                                    flag, D, c.task.name, unit, unit));
    add({"distance", c.task, window, D, plan.distance_reads});
  }
  return sets;
}

std::vector<data::TaskSequence> task_set_sequences(const TaskSet& set, uint64_t seed, int first, int count) {
  const uint64_t hash = set_hash(set);
  std::vector<data::TaskSequence> out;
  for (int i = first; i < first + count; ++i)
    out.push_back(data::task_sequence(set.task, set.window, seed, ((hash & 0xffffffffull) << 28) | uint64_t(i),
                                      set.distance));
  return out;
}

TaskSetPasses task_set_passes(const TaskSet& set) {
  return {eval_batch(set.window), kTaskPass + (set_hash(set) & 0xfffff) * kMaxTaskPasses};
}

TaskSetResult evaluate_task_set(nn::ModelBackend& model, int vocab, const TaskSet& set, uint64_t seed,
                                const std::function<void()>& after_pass) {
  const auto [batch, first_pass] = task_set_passes(set);
  const int64_t L = set.window;
  TaskSetResult r;
  double nats = 0;
  std::vector<int> tokens, targets;
  for (int s0 = 0, pass = 0; s0 < set.sequences; s0 += batch, ++pass) {
    const int B = std::min(batch, set.sequences - s0);
    tokens.resize(std::size_t(B) * L);
    targets.resize(tokens.size());
    const std::vector<data::TaskSequence> seqs = task_set_sequences(set, seed, s0, B);
    for (int b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t) {
        tokens[b * L + t] = seqs[b].bytes[t];
        targets[b * L + t] = seqs[b].bytes[t + 1];
      }
    model.forward(tokens.data(), targets.data(), B, int(L), first_pass + uint64_t(pass), false, 0);
    const float* logits = model.logits();
    const float* losses = model.losses();
    for (int b = 0; b < B; ++b)
      for (const data::TaskRead& read : seqs[b].reads) {
        ++r.reads;
        r.errors += !data::read_is_right(seqs[b], read, logits + (b * L + read.at) * vocab, vocab);
        nats += losses[b * L + read.at];
      }
    if (after_pass) after_pass();
  }
  r.read_bits = r.reads ? nats / double(r.reads) / std::log(2.0) : 0;
  return r;
}

std::string task_csv_header() {
  return "scheme,seed,train_len,task,set,p,eval_len,distance,sequences,reads,errors,error_rate,ci_low,ci_high,"
         "read_bits\n";
}

nlohmann::json to_json(const TaskEvalPlan& plan) {
  return {{"lengths", plan.lengths}, {"p", plan.p}, {"distances", plan.distances}, {"reads", plan.reads},
          {"distance_reads", plan.distance_reads}, {"seed", plan.seed}};
}

std::string evaluate_task_run(const std::string& run_dir, const TaskEvalPlan& plan, const std::string& csv,
                              bool progress, const nn::BackendFactory& backend) {
  const auto start = std::chrono::steady_clock::now();
  const RunConfig c = load_run_dir_config(run_dir);  // a missing run is named before its outputs
  if (!c.is_task())
    throw ConfigError(fmt::format("{} was trained on the corpus {}, not a task: evaluate it with --lengths alone",
                                  run_dir, c.corpus));
  const std::vector<TaskSet> sets = task_sets(c, plan, "--");
  const auto locks = lock_runs_written({run_dir}, {csv});
  OutputFiles files("eval");
  files.input(config_path(run_dir));
  files.input(checkpoint_path(run_dir));
  files.output(csv, "--out");
  files.output(csv + ".json", "the sidecar (--out FILE.json)");
  TrainedRun run = load_trained_run(run_dir, plan.lengths, backend);
  const std::unique_ptr<nn::ModelBackend> model = trained_run_backend(run, backend);
  std::string rows;
  nlohmann::json per_set = nlohmann::json::array();
  for (const TaskSet& s : sets) {
    const auto t0 = std::chrono::steady_clock::now();
    const TaskSetResult r = evaluate_task_set(*model, c.model.vocab, s, plan.seed);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Two-sided 95% Clopper-Pearson limits on the error rate.
    const double rate = r.reads ? double(r.errors) / double(r.reads) : 0;
    rows += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c.model.scheme, c.train.seed,
                        c.model.context, s.task.name, s.kind, s.task.name == "flipflop" ? format_number(s.task.p) : "",
                        s.window, s.distance ? std::to_string(s.distance) : "", s.sequences, r.reads, r.errors,
                        format_number(rate), format_number(clopper_pearson_lower(r.errors, r.reads, 0.025)),
                        format_number(clopper_pearson_upper(r.errors, r.reads, 0.025)), format_number(r.read_bits));
    per_set.push_back({{"set", s.name()}, {"sequences", s.sequences}, {"seconds", secs}});
    if (progress)
      fmt::print(stderr, "eval {} {}: error {:.4f} over {} reads\n", run_dir, s.name(), rate, r.reads);
  }
  files.set(csv, task_csv_header() + rows);
  const nlohmann::json side = {
      {"command", "eval"},
      {"run", run_dir},
      {"checkpoint_step", run.step},
      {"device", model->device()},
      {"config", to_json(c)},
      {"task_plan", to_json(plan)},
      {"protocol",
       {{"sequences", "generated from the stream (seed, set hash << 28 | sequence), read from their start"},
        {"scored", "every read of a length set; the last read of a distance set"},
        {"error", "the model's most likely next byte at a read is not the answer"},
        {"interval", "two-sided 95% Clopper-Pearson"},
        {"distance_windows", "the training length while D <= 3/4 of it, else D plus a quarter of it"}}},
      {"sets", per_set}};
  files.set(csv + ".json",
            sidecar_text(csv, side, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  files.commit();
  return rows;
}

}  // namespace routelab::runs
