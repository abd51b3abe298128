#include "nn/experiment.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "data/brown.h"
#include "io/table.h"
#include "nn/checkpoint.h"
#include "nn/eval.h"
#include "nn/model.h"
#include "nn/passkey.h"
#include "nn/train.h"

namespace routelab::nn {

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The rows of a CSV without its header line.
std::string body(const std::string& csv) {
  const auto nl = csv.find('\n');
  return nl == std::string::npos ? "" : csv.substr(nl + 1);
}

}  // namespace

ExperimentConfig load_experiment_config(const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: not valid TOML: {}", path, b.line, b.column, e.description()));
  }
  ExperimentConfig e;
  e.base = parse_run_config(t, path, {"experiment"});
  const toml::table* x = t["experiment"].as_table();
  if (!x) throw ConfigError(fmt::format("{}: needs an [experiment] table (schemes, seeds, lengths, out, csv)", path));
  for (const auto& [k, v] : *x) {
    const std::string key(k.str());
    if (key == "schemes") {
      const toml::array* a = v.as_array();
      if (!a || a->empty()) throw ConfigError(fmt::format("{}: [experiment] schemes must be a list of names", path));
      for (const auto& s : *a) {
        const auto name = s.value<std::string>();
        if (!name || !find_scheme(*name))
          throw ConfigError(fmt::format("{}: [experiment] schemes: '{}' is unknown; accepted: {}", path,
                                        name.value_or("?"), scheme_names()));
        e.schemes.push_back(*name);
      }
    } else if (key == "seeds") {
      const toml::array* a = v.as_array();
      if (!a || a->empty()) throw ConfigError(fmt::format("{}: [experiment] seeds must be a list of integers", path));
      for (const auto& s : *a) {
        const auto seed = s.value_exact<int64_t>();
        if (!seed || *seed < 0)
          throw ConfigError(fmt::format("{}: [experiment] seeds must be non-negative integers", path));
        e.seeds.push_back(uint64_t(*seed));
      }
    } else if (key == "passkey_trials") {
      const auto n = v.value_exact<int64_t>();
      if (!n || *n < 0 || *n > 100000)
        throw ConfigError(fmt::format("{}: [experiment] passkey_trials must be an integer in [0, 100000]", path));
      e.passkey_trials = int(*n);
    } else if (key == "passkey_depths") {
      const toml::array* a = v.as_array();
      e.passkey_depths.clear();
      if (a)
        for (const auto& d : *a) {
          const auto x = d.value<double>();
          if (!x || *x < 0 || *x > 1) a = nullptr;
          if (!a) break;
          e.passkey_depths.push_back(*x);
        }
      if (!a || e.passkey_depths.empty())
        throw ConfigError(fmt::format("{}: [experiment] passkey_depths must be a list of fractions in [0, 1]", path));
    } else if (key == "lengths" || key == "out" || key == "csv" || key == "passkey_lengths") {
      const auto s = v.value_exact<std::string>();
      if (!s) throw ConfigError(fmt::format("{}: [experiment] {} must be text", path, key));
      (key == "lengths" ? e.lengths : key == "out" ? e.out : key == "csv" ? e.csv : e.passkey_lengths) = *s;
    } else {
      throw ConfigError(
          fmt::format("{}: unknown key [experiment] {}; accepted: schemes, seeds, lengths, out, csv, "
                      "passkey_trials, passkey_depths, passkey_lengths",
                      path, key));
    }
  }
  if (e.schemes.empty() || e.seeds.empty() || e.out.empty() || e.csv.empty())
    throw ConfigError(fmt::format("{}: [experiment] needs schemes, seeds, out and csv", path));
  if (e.passkey_lengths.empty()) e.passkey_lengths = e.lengths;
  auto lengths_of = [&](const std::string& key, const std::string& text) {
    try {
      return parse_lengths(text, e.base.model.context);
    } catch (const std::invalid_argument& err) {
      throw ConfigError(fmt::format("{}: [experiment] {}: {}", path, key, err.what()));
    }
  };
  lengths_of("lengths", e.lengths);
  if (e.passkey_trials > 0)
    for (int64_t L : lengths_of("passkey_lengths", e.passkey_lengths))
      if (L < passkey_min_length())
        throw ConfigError(fmt::format("{}: [experiment] passkey_lengths: {} is too short for passkey windows (at "
                                      "least {}); set passkey_trials = 0 or lengthen",
                                      path, L, passkey_min_length()));
  for (const auto& s : e.schemes) {
    RunConfig c = e.base;
    c.model.scheme = s;
    validate(c, path);
  }
  return e;
}

std::string eval_csv_header() { return "scheme,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl\n"; }
std::string positions_csv_header() { return "scheme,seed,train_len,eval_len,pos_lo,pos_hi,tokens,bits_per_byte\n"; }

std::string csv_with_suffix(const std::string& csv, const std::string& suffix) {
  return (csv.ends_with(".csv") ? csv.substr(0, csv.size() - 4) : csv) + suffix;
}

std::string positions_path(const std::string& eval_csv) { return csv_with_suffix(eval_csv, "-positions.csv"); }
std::string passkey_path(const std::string& eval_csv) { return csv_with_suffix(eval_csv, "-passkey.csv"); }

TrainedRun load_trained_run(const std::string& run_dir, const std::string& lengths_text) {
  TrainedRun r;
  r.config = load_run_dir_config(run_dir);
  try {
    r.lengths = parse_lengths(lengths_text, r.config.model.context);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--lengths: ") + e.what());
  }
  if (!fs::exists(checkpoint_path(run_dir)))
    throw RunDirError(fmt::format("{} holds no checkpoint yet; train it first (routelab train --resume)", run_dir));
  const Checkpoint ck = load_checkpoint(checkpoint_path(run_dir));
  require_same_config(ck, r.config, checkpoint_path(run_dir));
  r.step = ck.step;
  r.corpus = data::load_corpus(r.config.corpus);
  r.model = std::make_unique<Model<float>>(r.config.model, r.config.train.seed);
  r.model->params = ck.params;
  return r;
}

std::unique_ptr<ModelBackend> trained_run_backend(TrainedRun& run, const BackendFactory& backend) {
  if (!backend) return std::make_unique<CpuBackend>(*run.model);
  std::unique_ptr<ModelBackend> model = backend(run.config.model, run.config.train.seed);
  model->set_params(run.model->params);
  return model;
}

std::string evaluate_run(const std::string& run_dir, const std::string& lengths_text, const std::string& eval_csv,
                         bool progress, const BackendFactory& backend) {
  const auto start = std::chrono::steady_clock::now();
  TrainedRun run = load_trained_run(run_dir, lengths_text);
  const RunConfig& c = run.config;
  const data::Corpus& corpus = run.corpus;
  const std::unique_ptr<ModelBackend> device_model = trained_run_backend(run, backend);
  ModelBackend& model = *device_model;
  const std::vector<int64_t>& lengths = run.lengths;
  std::string rows, pos_rows;
  nlohmann::json per_length = nlohmann::json::array();
  for (int64_t L : lengths) {
    const auto t0 = std::chrono::steady_clock::now();
    const EvalResult r = evaluate(model, corpus.val, L);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string key = fmt::format("{},{},{},{}", c.model.scheme, c.train.seed, c.model.context, L);
    rows += fmt::format("{},{},{},{},{}\n", key, r.windows, r.tokens, format_number(r.bits_per_byte),
                        format_number(r.ppl));
    for (const auto& b : r.bins)
      pos_rows += fmt::format("{},{},{},{},{}\n", key, b.lo, b.hi, b.tokens, format_number(b.bits_per_byte));
    per_length.push_back({{"eval_len", L}, {"windows", r.windows}, {"windows_per_pass", r.batch},
                          {"seconds", secs}, {"tokens_per_s", double(r.tokens) / secs}});
    if (progress)
      fmt::print(stderr, "eval {} L={}: {:.4f} bits/byte, {} windows, {:.0f} tok/s\n", run_dir, L, r.bits_per_byte,
                 r.windows, double(r.tokens) / secs);
  }
  write_file_atomic(positions_path(eval_csv), positions_csv_header() + pos_rows);
  write_file_atomic(eval_csv, eval_csv_header() + rows);
  const nlohmann::json side = {
      {"command", "eval"},
      {"run", run_dir},
      {"checkpoint_step", run.step},
      {"device", model.device()},
      {"config", to_json(c)},
      {"protocol",
       {{"stream", "validation"},
        {"windows", "consecutive, non-overlapping: window w holds bytes [w L, w L + L) and predicts bytes "
                    "[w L + 1, w L + L]"},
        {"stride", "L"},
        {"scored", "every position of every window (L per window)"},
        {"positions_csv", positions_path(eval_csv)},
        {"position_bins", "[0,1), [1,2), [2,4), ... [L/2, L)"},
        {"random_angles", "drawn afresh per forward pass (pass ids from 2^36)"}}},
      {"lengths_text", lengths_text},
      {"lengths", per_length}};
  write_sidecar(eval_csv, side, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return rows;
}

void run_experiment(const ExperimentConfig& e, bool progress, const BackendFactory& backend) {
  const auto start = std::chrono::steady_clock::now();
  std::string rows, pos_rows, passkey_rows;
  nlohmann::json runs = nlohmann::json::array();
  // Seeds outermost: an experiment stopped early has every scheme at the
  // first seeds rather than every seed of the first schemes.
  for (uint64_t seed : e.seeds)
    for (const auto& scheme : e.schemes) {
      RunConfig c = e.base;
      c.model.scheme = scheme;
      c.train.seed = seed;
      const std::string dir = (fs::path(e.out) / fmt::format("{}-s{}", scheme, seed)).string();
      bool trained = false;
      if (fs::exists(checkpoint_path(dir))) {
        const Checkpoint ck = load_checkpoint(checkpoint_path(dir));
        require_same_config(ck, c, checkpoint_path(dir));
        trained = ck.step == c.train.steps;
      }
      double train_s = 0;
      if (!trained) {
        if (progress) fmt::print(stderr, "experiment: training {}\n", dir);
        train_s = train_run(c, {dir, true, progress, backend}).wall_seconds;
      }
      const std::string eval_csv = (fs::path(dir) / "eval.csv").string();
      // A finished evaluation at the same lengths is kept.
      bool evaluated = false;
      if (trained && fs::exists(eval_csv + ".json")) {
        const auto side = nlohmann::json::parse(slurp(eval_csv + ".json"), nullptr, false);
        evaluated = !side.is_discarded() && side.value("lengths_text", "") == e.lengths;
      }
      if (!evaluated) {
        evaluate_run(dir, e.lengths, eval_csv, progress, backend);
      }
      rows += body(slurp(eval_csv));
      pos_rows += body(slurp(positions_path(eval_csv)));
      if (e.passkey_trials > 0) {
        const std::string pk = (fs::path(dir) / "passkey.csv").string();
        // Kept only when it asked the same questions.
        const auto side = nlohmann::json::parse(slurp(pk + ".json"), nullptr, false);
        const bool same = !side.is_discarded() && side.value("trials", 0) == e.passkey_trials &&
                          side.value("lengths_text", "") == e.passkey_lengths && side.contains("depths") &&
                          side["depths"].get<std::vector<double>>() == e.passkey_depths;
        if (!trained || !same)
          passkey_run(dir, e.passkey_lengths, e.passkey_depths, e.passkey_trials, 1, pk, progress, backend);
        passkey_rows += body(slurp(pk));
      }
      runs.push_back({{"run", dir}, {"train_seconds_this_call", train_s}});
    }
  const fs::path csv_dir = fs::path(e.csv).parent_path();
  if (!csv_dir.empty()) fs::create_directories(csv_dir);
  write_file_atomic(positions_path(e.csv), positions_csv_header() + pos_rows);
  if (e.passkey_trials > 0)
    write_file_atomic(passkey_path(e.csv), passkey_csv_header() + passkey_rows);
  write_file_atomic(e.csv, eval_csv_header() + rows);
  nlohmann::json cfg = {{"command", "experiment"}, {"config", to_json(e.base)}, {"schemes", e.schemes},
                        {"seeds", e.seeds},         {"lengths", e.lengths},      {"runs", runs}};
  write_sidecar(e.csv, cfg, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace routelab::nn
