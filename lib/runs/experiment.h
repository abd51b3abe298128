// A transformer experiment: train every scheme with every seed at one length,
// evaluate each far past it, gather one CSV. Read from TOML: the run tables
// ([model], [train], [data]) as for `routelab train`, plus
//   [experiment] schemes = [...], seeds = [...], lengths = "1x,...",
//                out = run directories' parent, csv = the combined CSV,
//                passkey_trials (0: none), passkey_depths = [...],
//                passkey_lengths = "1x,..." (default: lengths);
//                for runs of [data] task (runs/task_eval.h): task_p = [...]
//                (flip-flop's further p at the training length),
//                task_distances = [...], task_reads, task_distance_reads
//   [experiment.sweep] key = [values...]: any [model] or [train] key but
//                scheme and seed, each value crossed with the schemes, the
//                seeds and the other swept keys (the last key varies fastest)
//   [[experiment.arms]] schemes, seeds, sweep: further crosses of their own
//                (schemes and seeds default to [experiment]'s), for designs
//                that are not one cross: the experiment runs the union.
// A swept key that a point does not read (scheme_reads) is not varied there:
// that point runs once, its CSV cell empty. Each run lives in
// out/<scheme>[-key=value...]-s<seed>, naming the swept values that differ
// from the base config (so the base point of a sweep shares its run with the
// experiment without it), and resumes where it stopped, so an interrupted
// experiment picks up where it was. Runs go seeds outermost: stopped early,
// an experiment has every point at its first seeds. With by_arm they go arm
// by arm instead (seeds outermost within each), so an arm that adds seeds to
// one setting finishes before the next arm starts; the CSVs are the same.
#pragma once

#include <string>
#include <vector>

#include "nn/backend.h"
#include "runs/config.h"
#include "runs/task_eval.h"

namespace routelab::runs {

// One run of an experiment.
struct ExperimentPoint {
  RunConfig config;
  std::string dir;
  // One cell per ExperimentConfig::swept_keys: the value this run used, empty
  // where it does not read the key.
  std::vector<std::string> swept_values;
  std::size_t arm = 0;  // the arm that lists it first, in the file's order
};

struct ExperimentConfig {
  RunConfig base;
  std::vector<std::string> schemes;  // every scheme of every arm, in order
  std::vector<uint64_t> seeds;       // likewise
  // The CSVs' extra columns (after scheme), in order of first appearance.
  std::vector<std::string> swept_keys;
  std::vector<ExperimentPoint> points;
  std::string lengths = "1x,2x,4x,8x,16x,32x,64x";
  std::string out, csv;
  int passkey_trials = 0;  // keys per length and depth; 0 skips passkey retrieval
  // Passkey windows cost a full forward per trial, so they may stop short of
  // the perplexity lengths; empty means the same lengths.
  std::string passkey_lengths;
  std::vector<double> passkey_depths = {0, 0.25, 0.5, 0.75, 1};
  // Runs of [data] task: every point trains on the task (a sweep may not mix
  // tasks and corpora), is evaluated on these sets (`lengths` is the plan's;
  // its default for a task is 1x..16x), and the CSV is task_csv_header's,
  // with no -positions.csv and no passkeys.
  bool task = false;
  TaskEvalPlan task_plan;
  // Not read from the file (--by-arm): it orders the work, not the results.
  bool by_arm = false;
};

// Every refusal (a bad key, an empty or repeated sweep list, a value out of
// range, a swept key no scheme reads) is a ConfigError before any work.
ExperimentConfig load_experiment_config(const std::string& path);

// Indices into e.points in the order the experiment takes them: the points'
// own order (seeds outermost) or, with e.by_arm, arm by arm.
std::vector<std::size_t> training_order(const ExperimentConfig& e);

// One line per run, in the order the experiment takes them: directory,
// scheme, seed, key=value for each swept key it reads, and its state
// ("done", "trained" (not evaluated at these lengths), "step N of M", "to
// train"). Reads checkpoints' headers only.
std::string experiment_listing(const ExperimentConfig& e);

// Which runs a call takes through the workflow. By default every run; the
// others' rows are kept, byte for byte, from the experiment's existing CSVs
// (their loss curves from the run's own log where its folder still holds it,
// else from the existing -loss.csv).
struct RunSelection {
  // --only: just these schemes' runs, so one scheme can be retrained (a
  // changed default, say) without retraining the rest.
  std::vector<std::string> only;
  // --new: just the runs the existing CSV has no rows for (seeds or arms
  // added since), so a setting can be topped up where the other runs'
  // folders are gone (a fresh clone has the CSVs, not the runs).
  bool new_runs = false;
  // --finished: none; the CSVs get the rows of the runs already done (a long
  // experiment's results so far; the sidecar marks the others "unfinished").
  bool finished_only = false;
};

// Takes every selected run not yet done through one pass (train, evaluate,
// passkey retrieval; each step kept where it is already done for the same
// questions), then writes the combined CSVs.
// Training and evaluation run on `backend` (empty: the CPU); passkey retrieval
// stays on the CPU. Refused (ConfigError, before any work) when two
// selections are combined, a name in `only` is not one of the experiment's
// schemes, or the existing CSVs lack a header or rows for a kept run.
void run_experiment(const ExperimentConfig& e, bool progress, const nn::BackendFactory& backend = {},
                    const RunSelection& select = {});

}  // namespace routelab::runs
