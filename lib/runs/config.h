// The configuration of one training run, read from TOML (the first step of
// the run workflow, lib/runs/; the values and their defaults are
// nn/hyperparameters.h's):
//   [model]  d_model, heads, layers, mlp_ratio, context, scheme, angle_scale,
//            rope_base, learned_init, learned_sigma, learned_shared,
//            householder_beta
//   [train]  batch, steps, lr, min_lr_ratio, warmup, weight_decay, beta1,
//            beta2, eps, grad_clip, passkey_fraction, seed, data_seed,
//            checkpoint_every, log_every
//   [data]   corpus, task, flipflop_p, recall_keys, recall_values,
//            recall_query (data/task.h: a generated task instead of the corpus)
// Every key has a default; an unknown key or table, a value of the wrong type
// or out of range is a ConfigError naming it and what is accepted.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/task.h"
#include "nn/hyperparameters.h"

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace routelab::runs {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunConfig {
  nn::ModelConfig model;
  nn::TrainConfig train;
  std::string corpus = "data/brown";
  // A task (task.name not empty) replaces the corpus: every batch element is
  // a fresh sequence of the task, read from its start.
  data::TaskConfig task;
  bool is_task() const { return !task.name.empty(); }
  bool operator==(const RunConfig&) const = default;
};

// `where` names the source in messages (a file name).
RunConfig parse_run_config(const toml::table& t, const std::string& where,
                           const std::vector<std::string>& extra_tables = {});
RunConfig load_run_config(const std::string& path);
// The same from TOML text; `where` names it in messages (the Python module's
// routelab.train passes a dict's TOML as "config").
RunConfig parse_run_config_text(const std::string& text, const std::string& where);
// ConfigError unless `path` names an existing regular file.
void require_config_file(const std::string& path);
// Raises ConfigError for combinations no model can have (heads not dividing
// d_model, an odd head dimension under a rotary scheme, ...).
void validate(const RunConfig& c, const std::string& where);

std::string to_toml(const RunConfig& c);
nlohmann::json to_json(const RunConfig& c);
// The inverse of to_json (a sidecar's or checkpoint's "config"), read by the
// same rules as a TOML file: an unknown key, a wrong type or an impossible
// combination is a ConfigError naming `where`. A key it lacks (written before
// the key existed) keeps its default.
RunConfig from_json(const nlohmann::json& j, const std::string& where);
// to_toml writes every key, so the table of the defaults is the one list of
// the keys a run has.
const toml::table& default_run_table();
// "model", "train" or "data": the table that holds `key`; empty for none.
std::string config_section(const std::string& key);
// `c` with keys set from their text, as run names and experiment CSV cells
// write them ("256", "data/gcide", "true"), each typed as to_json types it.
RunConfig with_keys(const RunConfig& c, const std::vector<std::pair<std::string, std::string>>& keys,
                    const std::string& where);

}  // namespace routelab::runs
