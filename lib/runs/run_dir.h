// A run directory: config.toml (the run's configuration, runs/config.h),
// checkpoint.bin and train.csv (runs/train.h), and what every later step of
// the workflow reads from it.
//
// The checkpoint: a training run's state on disk: configuration, step,
// parameters and the optimizer's moments. One file, written whole or not at
// all, so a run killed at any moment leaves the previous checkpoint intact.
// Layout: the line "routelab-checkpoint 2", one line of JSON (configuration,
// step, parameter count), params, m and v as raw float32, then a newline and
// the sha256 (64 hex digits) of everything before it: a changed byte anywhere
// is "damaged", never a silently other run. Version 1 (the sha256 of the
// weights in the header) still loads; every load checks the sizes against the
// file before allocating and the step against the configured steps.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/run_lock.h"
#include "nn/adamw.h"
#include "runs/config.h"

namespace routelab::runs {

// A run directory that cannot be used as asked (exists without --resume, or
// holds another configuration, or no checkpoint yet): one line, exit status 2.
struct RunDirError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The run folder's lock (io/run_lock.h), as every function of the workflow
// that writes into a run takes it before it reads or writes anything there:
// training its folder, and evaluation, passkeys, the probe and export when
// an output lies in a run. `what` names the flag in the refusal ("--out").
// Under mpirun rank 0 takes it and tells the others, so that a refusal stops
// every rank (a collective call).
std::unique_ptr<RunLock> lock_run(const std::string& dir, const std::string& what);
// The locks of those of `runs` that one of `outputs` lies in (by resolved
// path), each named "--run"; reading a run takes none.
std::vector<std::unique_ptr<RunLock>> lock_runs_written(const std::vector<std::string>& runs,
                                                        const std::vector<std::string>& outputs);

// A run folder as it resolves (absolute, links and "." taken away), so that
// `run`, `./run` and a link to it are one run wherever runs are matched.
std::string run_identity(const std::string& run_dir);

std::string checkpoint_path(const std::string& run_dir);
std::string config_path(const std::string& run_dir);
// The run's configuration (RunDirError when run_dir holds no config.toml).
RunConfig load_run_dir_config(const std::string& run_dir);

// Unreadable, damaged, or from another configuration: one line naming the
// file and what is wrong.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Checkpoint {
  nlohmann::json config;  // to_json(RunConfig) of the run that wrote it
  int step = 0;           // steps completed
  std::vector<float> params;
  nn::AdamW opt;
};

void save_checkpoint(const std::string& path, const RunConfig& c, int step, const std::vector<float>& params,
                     const nn::AdamW& opt);
// `file_sha256`, if given, receives the sha256 of the file as read (what
// export records), so a caller that needs both reads the file once.
Checkpoint load_checkpoint(const std::string& path, std::string* file_sha256 = nullptr);
// Throws CheckpointError naming the first field where `ck` and `c` differ, or
// when `ck` holds another number of parameters than `c` lays out.
void require_same_config(const Checkpoint& ck, const RunConfig& c, const std::string& path);
// The checkpoint of run_dir, whose configuration is c: refused (RunDirError,
// CheckpointError) when there is none yet, or when it is damaged, of another
// configuration, or holds another number of parameters than c's model.
// `file_sha256` as load_checkpoint's.
Checkpoint load_run_checkpoint(const std::string& run_dir, const RunConfig& c, std::string* file_sha256 = nullptr);

}  // namespace routelab::runs
