// The transformer's commands: train, eval, experiment. Refusals (a bad
// config, corpus, checkpoint or run directory) are exceptions that main()
// turns into one line and exit status 2.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <omp.h>

#include "app/commands.h"
#include "base/threads.h"
#include "cuda/device.h"
#include "io/output.h"
#include "io/parse.h"
#include "io/user_paths.h"
#include "nn/backend.h"
#include "runs/config.h"
#include "runs/experiment.h"
#include "runs/export.h"
#include "runs/passkey.h"
#include "runs/probe.h"
#include "runs/task_eval.h"
#include "runs/train.h"
#include "sims/sim.h"
#include "stats/distributed.h"

#ifdef ROUTELAB_WITH_CUDA
#include "cuda/backend.h"
#endif

namespace routelab {

namespace {

namespace fs = std::filesystem;

void set_threads(int threads) { use_threads(threads); }

// --threads N: 1 to kMaxThreads (more cannot be made on any machine this
// runs on, and OpenMP's failure to make them is no message).
void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "OpenMP threads (default: the cores other processes leave free)")
      ->check(integer_in(1, kMaxThreads));
}

// A path option given as '' is refused rather than read as "the default".
void require_named_if_given(const CLI::App& app, const char* flag, const std::string& value) {
  if (app.count(flag) && value.empty()) throw runs::ConfigError(std::string(flag) + ": an empty path; name a file");
}

// --tf32 beside --device.
void add_tf32_flag(CLI::App& app, bool& tf32) {
  app.add_flag("--tf32", tf32, "TF32 tensor-core matmuls (--device cuda only; default fp32)");
}

// --device and --tf32, refused before anything is read or written: --tf32
// without cuda, cuda without a CUDA build or device. Each refusal is a
// cuda::DeviceError: one line, exit status 2.
void require_model_device(const std::string& device, bool tf32) {
  if (device != "cuda" && tf32)
    throw cuda::DeviceError("--tf32: TF32 matmuls need --device cuda (the CPU computes in fp32)");
  if (device == "cuda") cuda::require_cuda_device();
}

// The loops' backend (empty: the CPU), after require_model_device.
nn::BackendFactory model_backend(const std::string& device, bool tf32) {
  if (device != "cuda") return {};
#ifdef ROUTELAB_WITH_CUDA
  return cuda::cuda_backend_factory(tf32);
#else
  cuda::require_cuda_device();  // a build without CUDA refuses here
  return {};
#endif
}

// "0.98,0.1" or "2,8,32": comma-separated numbers (integers for an integral
// I), none empty; "" is the empty list. ConfigError naming `flag` otherwise.
template <class I>
std::vector<I> parse_number_list(const std::string& text, const char* flag) {
  std::vector<I> out;
  if (text.empty()) return out;
  const auto items = split_list(text);
  bool ok = items.has_value();
  for (const auto& item : items.value_or(std::vector<std::string>{})) {
    std::optional<I> v;
    if constexpr (std::is_integral_v<I>) {
      if (const auto x = parse_integer(item)) v = I(*x);
    } else {
      v = parse_finite(item);
    }
    if (!v) ok = false;
    if (!ok) break;
    out.push_back(*v);
  }
  if (!ok)
    throw runs::ConfigError(fmt::format("{}: '{}' is not accepted; comma-separated {}, no empty item", flag, text,
                                        std::is_integral_v<I> ? "integers" : "numbers"));
  return out;
}

}  // namespace

int cmd_train(const std::vector<std::string>& args) {
  CLI::App app{"train a byte-level transformer (one scheme, one seed) from a TOML config", "routelab train"};
  std::string config, out, device = "cpu";
  bool resume = false, quiet = false, tf32 = false;
  int threads = 0;
  app.add_option("--config", config, "TOML file: [model], [train], [data] (see experiments/)")->required();
  app.add_option("--out", out, "run directory (default runs/<config name>)");
  app.add_flag("--resume", resume, "continue the run in --out from its last checkpoint");
  add_threads_option(app, threads);
  app.add_flag("--quiet", quiet, "no progress line");
  add_device_option(app, device);
  add_tf32_flag(app, tf32);
  if (int s = parse_subcommand(app, args, "train"); s >= 0) return s;
  require_model_device(device, tf32);
  set_threads(threads);
  const runs::RunConfig c = runs::load_run_config(config);
  const nn::BackendFactory backend = model_backend(device, tf32);
  require_named_if_given(app, "--out", out);
  if (out.empty()) out = (fs::path("runs") / fs::path(config).stem()).string();
  note_user_path("--out", out);
  note_user_path("--config's [data] corpus", c.corpus);
  const runs::TrainSummary s = runs::train_run(c, {out, resume, !quiet, backend});
  if (!quiet && dist::is_root())
    fmt::print(stderr, "train: {} steps{} in {:.1f} s, final loss {:.4f}; run in {}\n", s.steps - s.start_step,
               s.start_step ? fmt::format(" (resumed at {})", s.start_step) : "", s.wall_seconds, s.final_loss, out);
  return 0;
}

int cmd_eval(const std::vector<std::string>& args) {
  CLI::App app{"bits per byte of a trained run on the validation stream at each length; for a run of [data] task, "
               "its error rate on generated sets (lengths, p, distances)",
               "routelab eval"};
  std::string run, lengths = "1x,2x,4x,8x,16x,32x,64x", out, losses, device = "cpu";
  std::string p_text, distances_text;
  runs::TaskEvalPlan plan;
  long long seed = 1;
  bool quiet = false, tf32 = false;
  int threads = 0;
  app.add_option("--run", run, "run directory written by routelab train")->required();
  app.add_option("--lengths", lengths,
                 "window lengths: multiples of the training length (4x) or integers (default 1x,...,64x; a task "
                 "run's: 1x,2x,4x,8x,16x)");
  app.add_option("--out", out, "CSV (default RUN/eval.csv); positions go to FILE-positions.csv");
  app.add_option("--losses", losses,
                 "also write every scored position's loss to this CSV (eval_len,window,position,nats)");
  app.add_option("--p", p_text, "task runs (flip-flop): further FFL(p) sets at the training length, e.g. 0.98,0.1");
  app.add_option("--distances", distances_text,
                 "task runs: distance sets, the read's source exactly D bytes back, e.g. 2,8,32,128");
  app.add_option("--reads", plan.reads, "task runs: reads a length set aims at (default 2000)")
      ->check(integer_in(1, 1000000));
  app.add_option("--distance-reads", plan.distance_reads, "task runs: sequences per distance set (default 500)")
      ->check(integer_in(1, 1000000));
  app.add_option("--seed", seed, "task runs: draws the sets' sequences (default 1)")
      ->check(integer_in(0, 1LL << 62, "[0, 2^62]"));
  add_threads_option(app, threads);
  app.add_flag("--quiet", quiet, "no progress lines");
  add_device_option(app, device);
  add_tf32_flag(app, tf32);
  if (int s = parse_subcommand(app, args, "eval"); s >= 0) return s;
  require_model_device(device, tf32);
  set_threads(threads);
  const nn::BackendFactory backend = model_backend(device, tf32);
  require_named_if_given(app, "--out", out);
  require_named_if_given(app, "--losses", losses);
  if (out.empty()) out = (fs::path(run) / "eval.csv").string();
  const bool task = runs::load_run_dir_config(run).is_task();
  for (const char* flag : {"--p", "--distances", "--reads", "--distance-reads", "--seed"})
    if (!task && app.count(flag))
      throw runs::ConfigError(fmt::format("{}: {} is a run trained on a corpus; {} asks a task run's sets", flag, run,
                                          flag));
  if (task && app.count("--losses"))
    throw runs::ConfigError(fmt::format("--losses: {} is a task run; its reads are scored in the CSV", run));
  if (!task) {
    const std::string rows = runs::evaluate_run(run, lengths, out, !quiet, backend, losses);
    std::fputs((runs::eval_csv_header() + rows).c_str(), stdout);
    return 0;
  }
  if (app.count("--lengths")) plan.lengths = lengths;
  plan.p = parse_number_list<double>(p_text, "--p");
  plan.distances = parse_number_list<int64_t>(distances_text, "--distances");
  plan.seed = uint64_t(seed);
  const std::string rows = runs::evaluate_task_run(run, plan, out, !quiet, backend);
  std::fputs((runs::task_csv_header() + rows).c_str(), stdout);
  return 0;
}

int cmd_export(const std::vector<std::string>& args) {
  CLI::App app{"write a trained run's weights as a safetensors file (names and shapes: docs/export.md)",
               "routelab export"};
  std::string run, out;
  app.add_option("--run", run, "run directory written by routelab train")->required();
  app.add_option("--out", out, "FILE.safetensors")->required();
  if (int s = parse_subcommand(app, args, "export"); s >= 0) return s;
  runs::export_run(run, out);
  return 0;
}

int cmd_passkey(const std::vector<std::string>& args) {
  CLI::App app{"passkey retrieval: a key planted at each depth of each window length, asked for at the end",
               "routelab passkey"};
  std::string run, lengths = "1x,2x,4x,8x,16x,32x,64x", out;
  std::string depths_text = "0,0.25,0.5,0.75,1";
  int trials = 20, threads = 0;
  long long seed = 1;
  bool quiet = false, tf32 = false;
  std::string device = "cpu";
  app.add_option("--run", run, "run directory written by routelab train")->required();
  app.add_option("--lengths", lengths, "window lengths: multiples of the training length (4x) or integers");
  app.add_option("--depths", depths_text,
                 "where the key sits, comma-separated fractions of the filler (0 = start, 1 = end)");
  app.add_option("--trials", trials, "keys per length and depth")->check(integer_in(1, runs::kMaxPasskeyTrials));
  app.add_option("--seed", seed, "draws the keys and the filler offsets")
      ->check(integer_in(0, 1LL << 62, "[0, 2^62]"));
  app.add_option("--out", out, "CSV (default RUN/passkey.csv)");
  add_threads_option(app, threads);
  app.add_flag("--quiet", quiet, "no progress lines");
  add_device_option(app, device);
  add_tf32_flag(app, tf32);
  if (int s = parse_subcommand(app, args, "passkey"); s >= 0) return s;
  require_model_device(device, tf32);
  set_threads(threads);
  require_named_if_given(app, "--out", out);
  if (out.empty()) out = (fs::path(run) / "passkey.csv").string();
  std::vector<double> depths;
  const auto items = split_list(depths_text);
  for (const auto& item : items.value_or(std::vector<std::string>{})) {
    const auto d = parse_finite(item);
    if (!d || *d < 0 || *d > 1) depths.clear(), depths_text.clear();
    if (depths_text.empty()) break;
    depths.push_back(*d);
  }
  if (!items || depths.empty())
    throw runs::ConfigError(fmt::format("--depths: '{}' is not accepted; comma-separated fractions in [0, 1], no empty "
                                        "item", app.get_option("--depths")->as<std::string>()));
  std::fputs(runs::passkey_run(run, lengths, depths, trials, uint64_t(seed), out, !quiet, model_backend(device, tf32))
                 .c_str(),
             stdout);
  return 0;
}

int cmd_probe(const std::vector<std::string>& args) {
  CLI::App app{"look inside trained runs: far mass, far-weight norm, entropy and logit range of every attention "
               "row against Proposition 3's bound, and the step angles' gaps and mixing windows",
               "routelab probe"};
  runs::ProbeOptions o;
  bool quiet = false;
  int threads = 0;
  long long window = 0;
  app.add_option("--run", o.runs, "run directories written by routelab train (one or more)")->required();
  app.add_option("--lengths", o.lengths,
                 "window lengths: multiples of the training length (4x) or integers (default 1x,...,64x)");
  app.add_option("--window", window, "near window W: keys more than W back are far (default: training length / 4)")
      ->check(integer_in(1, 1LL << 40));
  app.add_option("--max-windows", o.max_windows,
                 "evaluation windows probed per length, the first ones (default 4: 64x of 128 in about a minute)")
      ->check(integer_in(1, runs::kMaxProbeWindows));
  app.add_option("--eps", o.eps, "mixing windows: the distance where |E e^{i Theta}| falls below eps (default 0.05)");
  app.add_option("--csv", o.csv, "CSV (default RUN/probe.csv for one run); angles go to FILE-angles.csv");
  app.add_flag("--update", o.update,
               "merge into the existing CSVs: these runs' rows replace theirs (or follow the rest), every other "
               "run's rows are kept; the files must come from a probe with the same --lengths, --max-windows and "
               "--eps (an older probe's rows get the columns added since empty)");
  add_threads_option(app, threads);
  app.add_flag("--quiet", quiet, "no progress lines");
  if (int s = parse_subcommand(app, args, "probe"); s >= 0) return s;
  set_threads(threads);
  o.window = window;
  o.progress = !quiet;
  require_named_if_given(app, "--csv", o.csv);
  if (o.csv.empty()) {
    if (o.runs.size() > 1) throw runs::ConfigError("--csv: name the output file when probing several runs");
    o.csv = (fs::path(o.runs[0]) / "probe.csv").string();
  }
  std::fputs(runs::probe_runs(o).c_str(), stdout);
  return 0;
}

int cmd_experiment(const std::vector<std::string>& args) {
  CLI::App app{"train every scheme and seed of an experiment, evaluate each, gather one CSV and a figure",
               "routelab experiment"};
  std::string config, device = "cpu";
  bool quiet = false, no_plot = false, tf32 = false, list = false, by_arm = false;
  int threads = 0;
  runs::RunSelection select;
  app.add_option("config", config, "experiment TOML (e.g. experiments/extrapolation-cpu.toml)")->required();
  app.add_option("--only", select.only,
                 "SCHEME[,SCHEME...]: train and evaluate only these schemes' runs; every other run's rows are kept "
                 "from the experiment's existing CSVs")
      ->delimiter(',');
  app.add_flag("--new", select.new_runs,
               "train and evaluate only the runs the experiment's existing CSV has no rows for (seeds or arms added "
               "since); every other run's rows are kept from the existing CSVs, so its folder need not exist");
  app.add_flag("--list", list, "print every run (directory, scheme, seed, swept values, state) and stop");
  app.add_flag("--finished", select.finished_only,
               "train and evaluate nothing: write the CSVs from the runs already done (results so far); with "
               "--new, the existing CSVs' rows and those of the new runs already done");
  app.add_flag("--by-arm", by_arm,
               "take the runs arm by arm (each [[experiment.arms]]'s seeds before the next arm's) rather than seed "
               "by seed; the CSVs are the same");
  add_threads_option(app, threads);
  app.add_flag("--no-plot", no_plot, "write the CSVs only");
  app.add_flag("--quiet", quiet, "no progress lines");
  add_device_option(app, device);
  add_tf32_flag(app, tf32);
  if (int s = parse_subcommand(app, args, "experiment"); s >= 0) return s;
  require_model_device(device, tf32);
  set_threads(threads);
  runs::ExperimentConfig e = runs::load_experiment_config(config);
  e.by_arm = by_arm;
  if (list) {
    std::fputs(runs::experiment_listing(e).c_str(), stdout);
    return 0;
  }
  note_user_path("[experiment] out", e.out);
  note_user_path("[experiment] csv", e.csv);
  runs::run_experiment(e, !quiet, model_backend(device, tf32), select);
  if (no_plot) return 0;
  // The figure comes from plots/, which reads the CSV and never recomputes.
  const char* py = std::getenv("PY");
  const std::string interpreter = py ? py : (fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
  const std::string stem = e.csv.ends_with(".csv") ? e.csv.substr(0, e.csv.size() - 4) : e.csv;
  // plots/ of the checkout: under the working directory, or beside the build
  // folder that holds this binary.
  std::string script = e.task ? "plots/tasks.py" : "plots/extrapolation.py";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!fs::exists(script) && !ec && fs::exists(exe.parent_path().parent_path() / script))
    script = (exe.parent_path().parent_path() / script).string();
  const std::string cmd =
      e.task ? fmt::format("\"{}\" \"{}\" \"{}\" --out \"{}\"", interpreter, script, e.csv, stem)
             : fmt::format("\"{}\" \"{}\" \"{}\" --positions \"{}\" --out \"{}\"", interpreter, script, e.csv,
                           runs::positions_path(e.csv), stem);
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "routelab: error: experiment: the CSVs are written, but the plot failed: %s\n", cmd.c_str());
    return kInternalError;
  }
  return 0;
}

}  // namespace routelab
