#include "runs/experiment.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "io/csv_read.h"
#include "io/output.h"
#include "io/parse.h"
#include "io/run_lock.h"
#include "io/table.h"
#include "nn/scheme.h"
#include "runs/eval.h"
#include "runs/memory.h"
#include "runs/passkey.h"
#include "runs/run_dir.h"
#include "runs/train.h"

namespace routelab::runs {

namespace fs = std::filesystem;

namespace {

// A swept value as run names and CSV cells write it: text bare, numbers as
// TOML reads them back (fmt's shortest form).
std::string value_text(const toml::node& n) {
  if (auto s = n.value_exact<std::string>()) return *s;
  if (auto b = n.value_exact<bool>()) return *b ? "true" : "false";
  if (auto i = n.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = n.value_exact<double>()) return fmt::format("{}", *d);
  return "?";
}

// Keys a sweep may not vary: the schemes and seeds lists do, and the
// bookkeeping intervals do not change a run.
bool unsweepable(std::string_view key) {
  return key == "scheme" || key == "seed" || key == "checkpoint_every" || key == "log_every";
}

// The sections whose keys a sweep may vary: [data] too, so one experiment
// can hold the same schemes on a second corpus.
constexpr const char* kSweptSections[] = {"model", "train", "data"};

// "model", "train" or "data" for a key a sweep may vary; empty otherwise.
std::string sweep_section(const std::string& key) { return unsweepable(key) ? "" : config_section(key); }

std::string sweepable_keys() {
  std::string out;
  for (const char* section : kSweptSections)
    for (const auto& [k, v] : *default_run_table()[section].as_table())
      if (!unsweepable(k.str())) out += (out.empty() ? "" : ", ") + std::string(k.str());
  return out;
}

std::string config_value(const RunConfig& c, const std::string& key) {
  const toml::table t = toml::parse(to_toml(c));
  return value_text(*t[sweep_section(key)][key].node());
}

bool point_reads(const RunConfig& c, const std::string& key) {
  const std::string section = sweep_section(key);
  if (section == "data") return data::task_reads(c.task.name, key);
  return section != "model" || nn::scheme_reads(c.model, key);
}

std::vector<std::string> read_schemes(const toml::node& v, const std::string& where) {
  const toml::array* a = v.as_array();
  if (!a || a->empty()) throw ConfigError(fmt::format("{} schemes must be a list of names", where));
  std::vector<std::string> out;
  for (const auto& s : *a) {
    const auto name = s.value<std::string>();
    if (!name || !nn::find_scheme(*name))
      throw ConfigError(
          fmt::format("{} schemes: '{}' is unknown; accepted: {}", where, name.value_or("?"), nn::scheme_names()));
    if (std::find(out.begin(), out.end(), *name) != out.end())
      throw ConfigError(fmt::format("{} schemes lists {} twice", where, *name));
    out.push_back(*name);
  }
  return out;
}

std::vector<uint64_t> read_seeds(const toml::node& v, const std::string& where) {
  const toml::array* a = v.as_array();
  if (!a || a->empty()) throw ConfigError(fmt::format("{} seeds must be a list of integers", where));
  std::vector<uint64_t> out;
  for (const auto& s : *a) {
    const auto seed = s.value_exact<int64_t>();
    if (!seed || *seed < 0 || *seed > (int64_t(1) << 62))
      throw ConfigError(fmt::format("{} seeds must be integers in [0, 2^62]", where));
    if (std::find(out.begin(), out.end(), uint64_t(*seed)) != out.end())
      throw ConfigError(fmt::format("{} seeds lists {} twice", where, *seed));
    out.push_back(uint64_t(*seed));
  }
  return out;
}

// One cross of schemes, seeds and swept values.
struct Arm {
  std::string where;  // "FILE: [experiment]" or "FILE: [[experiment.arms]] 2"
  std::vector<std::string> schemes;
  std::vector<uint64_t> seeds;
  std::vector<std::pair<std::string, std::vector<const toml::node*>>> sweep;
};

void read_sweep(Arm& arm, const toml::node& v) {
  const toml::table* t = v.as_table();
  if (!t || t->empty())
    throw ConfigError(fmt::format("{} sweep must be a table of key = [values...]; accepted keys: {}", arm.where,
                                  sweepable_keys()));
  for (const auto& [k, values] : *t) {
    const std::string key(k.str());
    if (sweep_section(key).empty())
      throw ConfigError(fmt::format("{} sweep: '{}' is not a key a sweep can vary{}; accepted: {}", arm.where, key,
                                    key == "scheme" || key == "seed" ? " (list them in schemes and seeds)" : "",
                                    sweepable_keys()));
    const toml::array* a = values.as_array();
    if (!a || a->empty())
      throw ConfigError(fmt::format("{} sweep: {} must be a non-empty list of values", arm.where, key));
    std::vector<const toml::node*> list;
    std::set<std::string> seen;
    for (const auto& x : *a) {
      if (!seen.insert(value_text(x)).second)
        throw ConfigError(fmt::format("{} sweep: {} lists {} twice", arm.where, key, value_text(x)));
      list.push_back(&x);
    }
    arm.sweep.emplace_back(key, std::move(list));
  }
}

Arm read_arm(const toml::table& x, const std::string& where, const Arm* defaults, bool top) {
  Arm arm;
  arm.where = where;
  if (defaults) arm.schemes = defaults->schemes, arm.seeds = defaults->seeds;
  for (const auto& [k, v] : x) {
    const std::string key(k.str());
    if (key == "schemes")
      arm.schemes = read_schemes(v, where);
    else if (key == "seeds")
      arm.seeds = read_seeds(v, where);
    else if (key == "sweep")
      read_sweep(arm, v);
    else if (!top)
      throw ConfigError(fmt::format("{}: unknown key {}; accepted: schemes, seeds, sweep", where, key));
  }
  return arm;
}

// The runs of one arm, seeds outermost, each swept key varied only where the
// point reads it; a run already listed (same directory, same configuration)
// is not listed again. Two points of other configurations whose folders
// would share a name (two corpora in folders of one name) are refused: one
// would vanish from the CSVs.
void add_points(ExperimentConfig& e, const toml::table& file, const Arm& arm, std::size_t arm_index,
                const std::string& path, std::map<std::string, std::size_t>& dirs) {
  const std::size_t K = arm.sweep.size();
  std::size_t combos = 1;
  for (const auto& [key, values] : arm.sweep) combos *= values.size();
  std::vector<bool> ever_read(K, false);
  for (uint64_t seed : arm.seeds)
    for (const auto& scheme : arm.schemes)
      for (std::size_t combo = 0; combo < combos; ++combo) {
        std::vector<std::size_t> pick(K);  // the last key varies fastest
        for (std::size_t c = combo, k = K; k-- > 0;) pick[k] = c % arm.sweep[k].second.size(), c /= arm.sweep[k].second.size();
        // The point with the keys in `use` set to their swept values.
        auto build = [&](const std::vector<bool>& use) {
          toml::table t = file;
          std::string named;
          for (std::size_t k = 0; k < K; ++k) {
            const auto& [key, values] = arm.sweep[k];
            if (!use[k]) continue;
            const std::string section = sweep_section(key);
            if (!t[section].as_table()) t.insert_or_assign(section, toml::table{});
            values[pick[k]]->visit([&](const auto& node) { t[section].as_table()->insert_or_assign(key, node); });
            named += fmt::format("{}{} = {}", named.empty() ? "" : ", ", key, value_text(*values[pick[k]]));
          }
          if (!t["model"].as_table()) t.insert_or_assign("model", toml::table{});
          if (!t["train"].as_table()) t.insert_or_assign("train", toml::table{});
          t["model"].as_table()->insert_or_assign("scheme", scheme);
          t["train"].as_table()->insert_or_assign("seed", int64_t(seed));
          const std::string where = named.empty() ? path : fmt::format("{} ({} point {})", path, arm.where.substr(path.size() + 2), named);
          return parse_run_config(t, where, {"experiment"});
        };
        std::vector<bool> use(K, true);
        RunConfig c = build(use);
        // A key the point does not read goes back to the base value; that
        // can change what the point reads (learned_sigma under learned_init).
        for (std::size_t round = 0; round <= K; ++round) {
          std::vector<bool> reads(K);
          for (std::size_t k = 0; k < K; ++k) reads[k] = use[k] && point_reads(c, arm.sweep[k].first);
          if (reads == use) break;
          use = reads;
          c = build(use);
        }
        ExperimentPoint p;
        p.config = c;
        p.arm = arm_index;
        std::string name = scheme;
        for (std::size_t k = 0; k < K; ++k) {
          if (!use[k]) continue;
          ever_read[k] = true;
          const std::string& key = arm.sweep[k].first;
          const std::string v = config_value(c, key);
          // A path (the corpus) names the run by its last part: data/gcide -> gcide.
          if (v != config_value(e.base, key)) name += fmt::format("-{}={}", key, fs::path(v).filename().string());
        }
        // Every swept column, this arm's or not, says what the run used.
        for (const auto& key : e.swept_keys) p.swept_values.push_back(point_reads(c, key) ? config_value(c, key) : "");
        p.dir = (fs::path(e.out) / fmt::format("{}-s{}", name, seed)).string();
        const auto [at, fresh] = dirs.emplace(p.dir, e.points.size());
        if (fresh) {
          e.points.push_back(std::move(p));
        } else if (const ExperimentPoint& same = e.points[at->second]; !(same.config == p.config)) {
          const nlohmann::json a = to_json(same.config), b = to_json(p.config);
          std::string differ;
          for (const char* section : {"model", "train", "data"})
            for (const auto& [k, v] : b[section].items())
              if (!a[section].contains(k) || a[section][k] != v)
                differ += fmt::format("{}{} = {} and {}", differ.empty() ? "" : ", ", k,
                                      a[section].contains(k) ? a[section][k].dump() : "(none)", v.dump());
          throw ConfigError(fmt::format("{}: two runs of other configurations ({}) would share the folder {}; a "
                                        "run folder names a swept path by its last part, so give the paths "
                                        "distinct last parts",
                                        path, differ, p.dir));
        }
      }
  for (std::size_t k = 0; k < K; ++k)
    if (!ever_read[k]) {
      std::string schemes;
      for (const auto& s : arm.schemes) schemes += (schemes.empty() ? "" : ", ") + s;
      throw ConfigError(fmt::format("{} sweep: {} is read by none of the schemes {} (at these values); sweep it "
                                    "with a scheme that reads it",
                                    arm.where, arm.sweep[k].first, schemes));
    }
}

}  // namespace

ExperimentConfig load_experiment_config(const std::string& path) {
  toml::table t;
  try {
    require_config_file(path);
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: not valid TOML: {}", path, b.line, b.column, e.description()));
  }
  ExperimentConfig e;
  e.base = parse_run_config(t, path, {"experiment"});
  const toml::table* x = t["experiment"].as_table();
  if (!x) throw ConfigError(fmt::format("{}: needs an [experiment] table (schemes, seeds, lengths, out, csv)", path));
  const std::string top_where = path + ": [experiment]";
  const Arm top = read_arm(*x, top_where, nullptr, true);
  std::vector<Arm> arms;
  if (!top.schemes.empty()) arms.push_back(top);
  for (const auto& [k, v] : *x) {
    const std::string key(k.str());
    if (key == "schemes" || key == "seeds" || key == "sweep") {
      continue;
    } else if (key == "arms") {
      const toml::array* a = v.as_array();
      if (!a || a->empty() || !a->is_array_of_tables())
        throw ConfigError(fmt::format("{} arms must be tables ([[experiment.arms]]) of schemes, seeds, sweep", top_where));
      for (std::size_t i = 0; i < a->size(); ++i)
        arms.push_back(read_arm(*(*a)[i].as_table(), fmt::format("{}: [[experiment.arms]] {}", path, i + 1), &top, false));
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
    } else if (key == "task_p" || key == "task_distances") {
      const toml::array* a = v.as_array();
      bool ok = a && !a->empty();
      for (std::size_t i = 0; ok && i < a->size(); ++i) {
        const toml::node& n = *a->get(i);
        if (key == "task_p" && n.value<double>()) e.task_plan.p.push_back(*n.value<double>());
        else if (key == "task_distances" && n.value_exact<int64_t>()) e.task_plan.distances.push_back(*n.value_exact<int64_t>());
        else ok = false;
      }
      if (!ok)
        throw ConfigError(fmt::format("{}: [experiment] {} must be a non-empty list of {}", path, key,
                                      key == "task_p" ? "numbers" : "integers (bytes)"));
    } else if (key == "task_reads" || key == "task_distance_reads") {
      const auto n = v.value_exact<int64_t>();
      if (!n || *n < 1 || *n > 1000000)
        throw ConfigError(fmt::format("{}: [experiment] {} must be an integer in [1, 1000000]", path, key));
      (key == "task_reads" ? e.task_plan.reads : e.task_plan.distance_reads) = int(*n);
    } else if (key == "lengths" || key == "out" || key == "csv" || key == "passkey_lengths") {
      const auto s = v.value_exact<std::string>();
      if (!s) throw ConfigError(fmt::format("{}: [experiment] {} must be text", path, key));
      (key == "lengths" ? e.lengths : key == "out" ? e.out : key == "csv" ? e.csv : e.passkey_lengths) = *s;
    } else {
      throw ConfigError(
          fmt::format("{}: unknown key [experiment] {}; accepted: schemes, seeds, sweep, arms, lengths, out, csv, "
                      "passkey_trials, passkey_depths, passkey_lengths, task_p, task_distances, task_reads, "
                      "task_distance_reads",
                      path, key));
    }
  }
  // Passkey keys that ask nothing are a mistake, not a default.
  for (const char* key : {"passkey_lengths", "passkey_depths"})
    if (x->contains(key) && e.passkey_trials == 0)
      throw ConfigError(fmt::format("{}: [experiment] {} is set but passkey_trials is 0 (or absent), so no passkey is "
                                    "asked; set passkey_trials, or remove {}",
                                    path, key, key));
  if (arms.empty() || e.out.empty() || e.csv.empty())
    throw ConfigError(fmt::format("{}: [experiment] needs schemes (or [[experiment.arms]]), seeds, out and csv", path));
  if (!top.sweep.empty() && top.schemes.empty())
    throw ConfigError(fmt::format("{} sweep needs schemes beside it (an arm's sweep goes in its own table)", top_where));
  for (const auto& arm : arms) {
    if (arm.schemes.empty() || arm.seeds.empty())
      throw ConfigError(fmt::format("{} needs schemes and seeds (its own or [experiment]'s)", arm.where));
    for (const auto& s : arm.schemes)
      if (std::find(e.schemes.begin(), e.schemes.end(), s) == e.schemes.end()) e.schemes.push_back(s);
    for (uint64_t s : arm.seeds)
      if (std::find(e.seeds.begin(), e.seeds.end(), s) == e.seeds.end()) e.seeds.push_back(s);
    for (const auto& [key, values] : arm.sweep)
      if (std::find(e.swept_keys.begin(), e.swept_keys.end(), key) == e.swept_keys.end()) e.swept_keys.push_back(key);
  }
  std::map<std::string, std::size_t> dirs;  // a run's folder -> its point
  for (std::size_t a = 0; a < arms.size(); ++a) add_points(e, t, arms[a], a, path, dirs);
  // Seeds outermost across arms too.
  auto seed_rank = [&](const ExperimentPoint& p) {
    return std::find(e.seeds.begin(), e.seeds.end(), p.config.train.seed) - e.seeds.begin();
  };
  std::stable_sort(e.points.begin(), e.points.end(),
                   [&](const ExperimentPoint& a, const ExperimentPoint& b) { return seed_rank(a) < seed_rank(b); });
  e.task = e.base.is_task();
  for (const auto& p : e.points)
    if (p.config.is_task() != e.task)
      throw ConfigError(fmt::format("{}: {} trains on {} while the experiment's base trains on {}; one experiment is "
                                    "all corpus runs or all task runs (their CSVs differ)",
                                    path, p.dir, p.config.is_task() ? "a task" : "a corpus",
                                    e.task ? "a task" : "a corpus"));
  const bool task_keys = x->contains("task_p") || x->contains("task_distances") || x->contains("task_reads") ||
                         x->contains("task_distance_reads");
  if (!e.task && task_keys)
    throw ConfigError(fmt::format("{}: [experiment] task_* keys ask a task's sets; this experiment trains on a corpus "
                                  "(set [data] task)",
                                  path));
  if (e.task) {
    if (e.passkey_trials > 0)
      throw ConfigError(fmt::format("{}: [experiment] passkey_trials: passkeys are planted in corpus text; a task "
                                    "experiment has none (set it to 0)",
                                    path));
    if (x->contains("lengths")) e.task_plan.lengths = e.lengths;
    e.lengths = e.task_plan.lengths;
    // Every set of every run is checked before any work.
    for (const auto& p : e.points) task_sets(p.config, e.task_plan, fmt::format("{}: [experiment] task_", path));
  }
  if (e.passkey_lengths.empty()) e.passkey_lengths = e.lengths;
  for (const auto& p : e.points)
    require_memory(training_bytes(p.config.model, p.config.train.batch, p.config.model.context),
                   fmt::format("{}: {}'s training", path, p.dir));
  for (const auto& p : e.points) {
    auto lengths_of = [&](const std::string& key, const std::string& text) {
      try {
        return parse_lengths(text, p.config.model.context);
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
  }
  return e;
}

std::string loss_path(const std::string& eval_csv) { return csv_with_suffix(eval_csv, "-loss.csv"); }


namespace {

// "scheme,rest" -> "scheme,v1,...,vK,rest" on every line of a CSV body (or
// header): the swept keys' columns after the scheme.
std::string with_swept(const std::string& lines, const std::vector<std::string>& cells) {
  if (cells.empty()) return lines;
  std::string extra;
  for (const auto& c : cells) extra += c + ",";
  std::string out;
  std::size_t at = 0;
  while (at < lines.size()) {
    std::size_t nl = lines.find('\n', at);
    if (nl == std::string::npos) nl = lines.size();
    const std::string line = lines.substr(at, nl - at);
    const std::size_t comma = line.find(',');
    out += line.substr(0, comma + 1) + extra + line.substr(comma + 1) + "\n";
    at = nl + 1;
  }
  return out;
}

// A point's rows are those whose first cells are its key: scheme, the swept
// values, seed.
std::vector<std::string> point_key(const ExperimentPoint& p) {
  std::vector<std::string> key = {p.config.model.scheme};
  key.insert(key.end(), p.swept_values.begin(), p.swept_values.end());
  key.push_back(std::to_string(p.config.train.seed));
  return key;
}

// The rows of an existing experiment CSV, for the points a selection keeps
// (`flag` names the selection in refusals), each checked as the experiment
// writes its rows.
struct KeptRows {
  std::string path, what, flag;
  CsvTable table;
  // Empty where it has none.
  std::string rows_of(const ExperimentPoint& p) const {
    const std::vector<std::string> key = point_key(p);
    std::string out;
    for (const auto& row : table.rows)
      if (std::equal(key.begin(), key.end(), row.begin())) out += csv_line(row);
    return out;
  }
  std::string required_rows_of(const ExperimentPoint& p) const {
    std::string out = rows_of(p);
    if (out.empty())
      throw ConfigError(fmt::format("{}: {} ({}) has no rows for {}, so it cannot be kept; run it too, or "
                                    "run without {}",
                                    flag, path, what, p.dir, flag));
    return out;
  }
};

// `text_columns`: the header's cells that are not numbers (the scheme, the
// swept values, a task set's names).
KeptRows read_kept(const std::string& path, const std::string& header, const std::vector<std::string>& text_columns,
                   const std::string& what, const std::string& flag) {
  if (!fs::is_regular_file(path))
    throw ConfigError(fmt::format("{} keeps the other runs' rows from {} ({}), which does not exist; run "
                                  "without {} first",
                                  flag, path, what, flag));
  const std::string text = read_text_file(path);
  if (!text.starts_with(header))
    throw ConfigError(fmt::format("{}: {} ({}) does not start with this experiment's header {}", flag, path, what,
                                  header.substr(0, header.size() - 1)));
  KeptRows k{path, what, flag, {}};
  try {
    k.table = parse_csv(text, path);
    require_number_cells(k.table, text_columns, path);
  } catch (const CsvError& e) {
    throw ConfigError(fmt::format("{}: {} ({}): {}; its rows cannot be kept", flag, path, what, e.what()));
  }
  return k;
}

// A run's own CSVs, in its directory.
std::string point_eval_csv(const ExperimentPoint& p) { return (fs::path(p.dir) / "eval.csv").string(); }
std::string point_passkey_csv(const ExperimentPoint& p) { return (fs::path(p.dir) / "passkey.csv").string(); }

// Whether eval_csv holds a finished evaluation at these lengths (its sidecar
// is written last).
bool evaluated_at(const std::string& eval_csv, const std::string& lengths) {
  const auto side = nlohmann::json::parse(read_text_file(eval_csv + ".json"), nullptr, false);
  return !side.is_discarded() && side.value("lengths_text", "") == lengths;
}

// Whether eval_csv holds a finished task evaluation that asked `plan`.
bool task_evaluated_as(const std::string& eval_csv, const TaskEvalPlan& plan) {
  const auto side = nlohmann::json::parse(read_text_file(eval_csv + ".json"), nullptr, false);
  return !side.is_discarded() && side.contains("task_plan") && side["task_plan"] == to_json(plan);
}

// What one run adds to the combined CSVs (its rows with the swept columns).
struct PointRows {
  std::string eval, positions, passkey, loss;
  double train_seconds = 0;  // this call's
};

// One run's pass through the workflow: train it (unless its checkpoint has
// every step), evaluate it (unless a finished evaluation at the experiment's
// lengths is there), ask it for passkeys (unless the same questions were
// asked); then read back its rows and its loss curve. With finished_only it
// does none of the three: a run not already through all of them gives
// nullopt.
std::optional<PointRows> run_point(const ExperimentConfig& e, const ExperimentPoint& p, bool progress,
                                   const nn::BackendFactory& backend, bool finished_only) {
  const RunConfig& c = p.config;
  const std::string& dir = p.dir;
  PointRows out;
  bool trained = false;
  if (fs::exists(checkpoint_path(dir))) {
    const Checkpoint ck = load_checkpoint(checkpoint_path(dir));
    require_same_config(ck, c, checkpoint_path(dir));
    trained = ck.step == c.train.steps;
  }
  const std::string eval_csv = point_eval_csv(p);
  const std::string pk = point_passkey_csv(p);
  const bool evaluated = trained && (e.task ? task_evaluated_as(eval_csv, e.task_plan) : evaluated_at(eval_csv, e.lengths));
  // Kept only when it asked the same questions.
  const auto asked_the_same = [&] {
    const auto side = nlohmann::json::parse(read_text_file(pk + ".json"), nullptr, false);
    return !side.is_discarded() && side.value("trials", 0) == e.passkey_trials &&
           side.value("lengths_text", "") == e.passkey_lengths && side.contains("depths") &&
           side["depths"].get<std::vector<double>>() == e.passkey_depths;
  };
  const bool passkey_done = e.passkey_trials == 0 || (trained && asked_the_same());
  if (finished_only && !(evaluated && passkey_done)) return std::nullopt;
  if (!trained) {
    if (progress) fmt::print(stderr, "experiment: training {}\n", dir);
    out.train_seconds = train_run(c, {dir, true, progress, backend}).wall_seconds;
  }
  if (!evaluated && e.task) evaluate_task_run(dir, e.task_plan, eval_csv, progress, backend);
  else if (!evaluated) evaluate_run(dir, e.lengths, eval_csv, progress, backend);
  out.eval = with_swept(csv_body(read_text_file(eval_csv)), p.swept_values);
  if (!e.task) out.positions = with_swept(csv_body(read_text_file(positions_path(eval_csv))), p.swept_values);
  out.loss = with_swept(loss_curve_rows(read_text_file(train_log_path(dir)), c.model.scheme, c.train.seed),
                        p.swept_values);
  if (e.passkey_trials > 0) {
    if (!passkey_done)
      passkey_run(dir, e.passkey_lengths, e.passkey_depths, e.passkey_trials, 1, pk, progress, backend);
    out.passkey = with_swept(csv_body(read_text_file(pk)), p.swept_values);
  }
  return out;
}

}  // namespace

std::vector<std::size_t> training_order(const ExperimentConfig& e) {
  std::vector<std::size_t> order(e.points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // The points are seeds outermost; a stable sort by arm keeps that order
  // within each arm.
  if (e.by_arm)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return e.points[a].arm < e.points[b].arm; });
  return order;
}

std::string experiment_listing(const ExperimentConfig& e) {
  std::string out;
  for (const std::size_t i : training_order(e)) {
    const ExperimentPoint& p = e.points[i];
    std::string values;
    for (std::size_t k = 0; k < e.swept_keys.size(); ++k)
      if (!p.swept_values[k].empty()) values += fmt::format(" {}={}", e.swept_keys[k], p.swept_values[k]);
    std::string state = "to train";
    if (fs::exists(checkpoint_path(p.dir))) {
      const Checkpoint ck = load_checkpoint(checkpoint_path(p.dir));
      require_same_config(ck, p.config, checkpoint_path(p.dir));
      const bool evaluated = e.task ? task_evaluated_as(point_eval_csv(p), e.task_plan)
                                    : evaluated_at(point_eval_csv(p), e.lengths);
      state = ck.step < p.config.train.steps ? fmt::format("step {} of {}", ck.step, p.config.train.steps)
              : evaluated                    ? "done"
                                             : "trained";
    }
    out += fmt::format("{} {} seed={}{}: {}\n", p.dir, p.config.model.scheme, p.config.train.seed, values, state);
  }
  return out;
}

void run_experiment(const ExperimentConfig& e, bool progress, const nn::BackendFactory& backend,
                    const RunSelection& select) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string>& only = select.only;
  const bool finished_only = select.finished_only, new_runs = select.new_runs;
  if (finished_only && !only.empty())
    throw ConfigError("--finished and --only do not go together: --finished trains nothing, --only retrains");
  if (new_runs && !only.empty())
    throw ConfigError("--new and --only do not go together: --new takes the runs the CSVs lack, --only the "
                      "schemes it names");
  for (std::size_t i = 0; i < only.size(); ++i) {
    if (std::find(e.schemes.begin(), e.schemes.end(), only[i]) == e.schemes.end())
    {
      std::string names;
      for (const auto& s : e.schemes) names += (names.empty() ? "" : ", ") + s;
      throw ConfigError(fmt::format("--only: '{}' is not a scheme of this experiment; its schemes: {}", only[i], names));
    }
    if (std::find(only.begin(), only.begin() + i, only[i]) != only.begin() + i)
      throw ConfigError(fmt::format("--only lists '{}' twice", only[i]));
  }
  // One experiment at a time in its folders; --finished only reads the runs.
  std::unique_ptr<RunLock> out_lock;
  if (!finished_only) out_lock = lock_run(e.out, "[experiment] out");
  // The kept rows are read, and every kept point found in them, before any
  // run trains.
  const std::vector<std::string>& keys = e.swept_keys;
  const bool keeps = !only.empty() || new_runs;
  const std::string flag = new_runs ? "--new" : "--only";
  const std::string eval_header = e.task ? task_csv_header() : eval_csv_header();
  std::vector<KeptRows> kept;
  std::optional<KeptRows> kept_loss;  // older experiments have no -loss.csv
  if (keeps) {
    std::vector<std::string> text = {"scheme"};
    text.insert(text.end(), keys.begin(), keys.end());
    std::vector<std::string> eval_text = text;
    if (e.task) eval_text.insert(eval_text.end(), {"task", "set"});
    kept.push_back(read_kept(e.csv, with_swept(eval_header, keys), eval_text, "[experiment] csv", flag));
    if (!e.task)
      kept.push_back(read_kept(positions_path(e.csv), with_swept(positions_csv_header(), keys), text,
                               "its -positions.csv", flag));
    if (e.passkey_trials > 0)
      kept.push_back(
          read_kept(passkey_path(e.csv), with_swept(passkey_csv_header(), keys), text, "its -passkey.csv", flag));
    if (fs::exists(loss_path(e.csv)))
      kept_loss =
          read_kept(loss_path(e.csv), with_swept(loss_curve_header(e.task), keys), text, "its -loss.csv", flag);
  }
  // Per point, whether this call takes it through the workflow, and if not,
  // its kept rows of each CSV (eval, positions, passkey).
  std::vector<bool> reruns(e.points.size(), true);
  std::vector<std::vector<std::string>> kept_rows(e.points.size());
  for (std::size_t i = 0; keeps && i < e.points.size(); ++i) {
    const ExperimentPoint& p = e.points[i];
    reruns[i] = new_runs ? kept[0].rows_of(p).empty()
                         : std::find(only.begin(), only.end(), p.config.model.scheme) != only.end();
    if (!reruns[i])
      for (const KeptRows& k : kept) kept_rows[i].push_back(k.required_rows_of(p));
  }
  // No `routelab train` in a run this call takes through the workflow, from
  // before any work to the end; --finished only reads the runs.
  std::vector<std::unique_ptr<RunLock>> run_locks;
  for (std::size_t i = 0; i < e.points.size() && !finished_only; ++i)
    if (reruns[i]) run_locks.push_back(lock_run(e.points[i].dir, "[experiment] out's run"));
  // Every length each run taken through the workflow is asked at must fit
  // its validation stream, and its evaluation the memory, before any trains.
  if (!finished_only && !e.task) {
    std::map<std::string, std::size_t> val_bytes;  // corpus -> its validation stream's bytes
    for (std::size_t i = 0; i < e.points.size(); ++i) {
      if (!reruns[i]) continue;
      const ExperimentPoint& p = e.points[i];
      const auto [at, fresh] = val_bytes.emplace(p.config.corpus, 0);
      if (fresh) at->second = data::load_corpus(p.config.corpus).val.size();
      require_lengths_fit(p.config, parse_lengths(e.lengths, p.config.model.context), at->second,
                          "[experiment] lengths", p.dir, backend);
      if (e.passkey_trials > 0)
        require_lengths_fit(p.config, parse_lengths(e.passkey_lengths, p.config.model.context), at->second,
                            "[experiment] passkey_lengths", p.dir, backend);
    }
  }
  // The combined CSVs are checked before any run trains; their folder is
  // made first (it is part of the experiment's tree).
  const fs::path csv_dir = fs::path(e.csv).parent_path();
  if (!csv_dir.empty()) fs::create_directories(csv_dir);
  OutputFiles files("experiment");
  files.output(e.csv, "[experiment] csv");
  if (!e.task) files.output(positions_path(e.csv), "[experiment] csv's -positions.csv");
  if (e.passkey_trials > 0) files.output(passkey_path(e.csv), "[experiment] csv's -passkey.csv");
  files.output(loss_path(e.csv), "[experiment] csv's -loss.csv");
  files.output(e.csv + ".json", "[experiment] csv's sidecar");
  // Each run through the workflow in the experiment's order; its rows are
  // gathered below in the points' order, whatever the order of the work.
  std::vector<std::optional<PointRows>> done(e.points.size());
  for (const std::size_t i : training_order(e)) {
    if (!reruns[i]) continue;
    done[i] = run_point(e, e.points[i], progress, backend, finished_only);
  }
  std::string rows, pos_rows, passkey_rows, loss_rows;
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < e.points.size(); ++i) {
    const ExperimentPoint& p = e.points[i];
    const RunConfig& c = p.config;
    const std::string& dir = p.dir;
    nlohmann::json values = nlohmann::json::object();
    for (std::size_t k = 0; k < e.swept_keys.size(); ++k) values[e.swept_keys[k]] = p.swept_values[k];
    if (!reruns[i]) {
      const std::vector<std::string>& k = kept_rows[i];
      rows += k[0];
      if (!e.task) pos_rows += k[1];
      if (e.passkey_trials > 0) passkey_rows += k[2];
      // A kept run's loss curve from its own log, where its folder still
      // holds it, else as the existing -loss.csv has it (if at all).
      if (fs::exists(train_log_path(dir)))
        loss_rows += with_swept(loss_curve_rows(read_text_file(train_log_path(dir)), c.model.scheme, c.train.seed),
                                p.swept_values);
      else if (kept_loss)
        loss_rows += kept_loss->rows_of(p);
      runs.push_back({{"run", dir}, {"scheme", c.model.scheme}, {"seed", c.train.seed}, {"swept", values},
                      {"rows_kept_from_previous_csv", true}});
      continue;
    }
    const std::optional<PointRows>& r = done[i];
    if (!r) {
      runs.push_back({{"run", dir}, {"scheme", c.model.scheme}, {"seed", c.train.seed}, {"swept", values},
                      {"unfinished", true}});
      continue;
    }
    rows += r->eval;
    pos_rows += r->positions;
    passkey_rows += r->passkey;
    loss_rows += r->loss;
    runs.push_back({{"run", dir},
                    {"scheme", c.model.scheme},
                    {"seed", c.train.seed},
                    {"swept", values},
                    {"train_seconds_this_call", r->train_seconds}});
  }
  if (!e.task) files.set(positions_path(e.csv), with_swept(positions_csv_header(), keys) + pos_rows);
  if (e.passkey_trials > 0) files.set(passkey_path(e.csv), with_swept(passkey_csv_header(), keys) + passkey_rows);
  files.set(e.csv, with_swept(eval_header, keys) + rows);
  files.set(loss_path(e.csv), with_swept(loss_curve_header(e.task), keys) + loss_rows);
  nlohmann::json cfg = {{"command", "experiment"}, {"config", to_json(e.base)}, {"schemes", e.schemes},
                        {"seeds", e.seeds},         {"swept_keys", keys},       {"lengths", e.lengths},
                        {"task_plan", e.task ? to_json(e.task_plan) : nlohmann::json()},
                        {"only", only},             {"new_runs", new_runs},
                        {"finished_only", finished_only},
                        {"runs", runs}};
  files.set(e.csv + ".json",
            sidecar_text(e.csv, cfg, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  files.commit();
}

}  // namespace routelab::runs
