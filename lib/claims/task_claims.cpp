#include "claims/task_claims.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "io/csv_read.h"
#include "io/parse.h"
#include "io/table.h"
#include "runs/config.h"
#include "runs/probe.h"
#include "runs/task_eval.h"
#include "stats/intervals.h"

namespace routelab::claims {

namespace {

// Two-sided 95% Clopper-Pearson limits of an error rate.
double upper(const ErrorCount& c) { return clopper_pearson_upper(c.errors, c.reads, 0.025); }
double lower(const ErrorCount& c) { return clopper_pearson_lower(c.errors, c.reads, 0.025); }

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }
std::string signed_pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

const ErrorCount* length_at(const TaskReadings& s, const std::string& scheme, uint64_t seed, int64_t ratio) {
  const auto a = s.lengths.find(scheme);
  if (a == s.lengths.end()) return nullptr;
  const auto b = a->second.find(seed);
  if (b == a->second.end()) return nullptr;
  const auto c = b->second.find(ratio);
  return c == b->second.end() ? nullptr : &c->second;
}

// The longest ratio every rule reads: 16x.
constexpr int64_t kTaskLongest = 16;

std::optional<double> task_rise(const TaskReadings& s, const std::string& scheme, uint64_t seed) {
  const ErrorCount *a = length_at(s, scheme, seed, 1), *b = length_at(s, scheme, seed, kTaskLongest);
  if (!a || !b) return std::nullopt;
  return b->rate() - a->rate();
}

std::vector<uint64_t> seeds_of(const TaskReadings& s, const std::string& scheme) {
  std::vector<uint64_t> out;
  if (const auto a = s.lengths.find(scheme); a != s.lengths.end())
    for (const auto& [seed, _] : a->second) out.push_back(seed);
  return out;
}

using Margin = std::optional<std::pair<double, std::string>>;

// One subject per scheme present; seeds that learned the task only.
template <class F>
std::vector<SubjectMargins> per_learned_scheme(const TaskReadings& s, const std::vector<std::string>& schemes, F f) {
  std::vector<SubjectMargins> out;
  for (const auto& scheme : schemes) {
    SubjectMargins m{scheme, {}};
    for (uint64_t seed : seeds_of(s, scheme))
      if (s.learned(scheme, seed))
        if (auto x = f(scheme, seed)) m.seeds.push_back({seed, x->first, x->second});
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

const std::vector<std::string> kTaskRotationOnly = {"rope",         "rope_qkv",      "random_qk",      "random_qkv",
                                                    "learned_qk",   "learned_qkv",   "projected_qk",   "projected_qkv",
                                                    "householder_qk", "householder_qkv", "path_qk",    "path_qkv"};
const std::vector<std::string> kTaskControl = {"alibi", "fox", "learned_qkv_alibi", "random_qkv_alibi",
                                               "learned_qkv_forget", "path_qk_forget"};

std::vector<SubjectMargins> rotation_rises(const TaskReadings& s) {
  return per_learned_scheme(s, kTaskRotationOnly, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto r = task_rise(s, scheme, seed);
    if (!r) return std::nullopt;
    return std::pair{*r - kTaskRise, fmt::format("1x {}, rise to 16x {}", pct(length_at(s, scheme, seed, 1)->rate()),
                                                 signed_pct(*r))};
  });
}

std::vector<SubjectMargins> control_stays_flat(const TaskReadings& s) {
  return per_learned_scheme(s, kTaskControl, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto r = task_rise(s, scheme, seed);
    if (!r) return std::nullopt;
    return std::pair{kTaskRise - *r, fmt::format("1x {}, rise to 16x {}", pct(length_at(s, scheme, seed, 1)->rate()),
                                                 signed_pct(*r))};
  });
}

// The mean error over 2x .. 16x.
std::optional<double> beyond_training(const TaskReadings& s, const std::string& scheme, uint64_t seed) {
  double sum = 0;
  int n = 0;
  for (int64_t r = 2; r <= kTaskLongest; r *= 2) {
    const ErrorCount* c = length_at(s, scheme, seed, r);
    if (!c) return std::nullopt;
    sum += c->rate(), ++n;
  }
  return sum / n;
}

// RoPE at chance is a fair reference here: the claim is about error, and a
// RoPE that cannot learn the task is part of what it says.
std::vector<SubjectMargins> accumulated_beats_rope(const TaskReadings& s) {
  return per_learned_scheme(s, {"random_qk", "random_qkv", "learned_qk", "learned_qkv", "projected_qk", "projected_qkv"},
                            [&](const std::string& scheme, uint64_t seed) -> Margin {
                              const auto a = beyond_training(s, scheme, seed), rope = beyond_training(s, "rope", seed);
                              if (!a || !rope) return std::nullopt;
                              return std::pair{*rope - *a, fmt::format("mean 2x-16x {} against rope {}", pct(*a),
                                                                       pct(*rope))};
                            });
}

std::vector<SubjectMargins> qkv_rises_less(const TaskReadings& s) {
  std::vector<SubjectMargins> out;
  for (const auto& [qk, qkv] : kQkQkvPairs) {
    const std::string family = std::string(qkv).substr(0, std::string(qkv).size() - 4);
    SubjectMargins m{family, {}};
    for (uint64_t seed : seeds_of(s, qkv)) {
      if (!s.learned(qk, seed) || !s.learned(qkv, seed)) continue;
      const auto a = task_rise(s, qk, seed), b = task_rise(s, qkv, seed);
      if (!a || !b) continue;
      m.seeds.push_back({seed, *a - *b, fmt::format("rise to 16x qk {} qkv {}", signed_pct(*a), signed_pct(*b))});
    }
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

// The three shortest distances pooled: the level a read keeps near its source.
ErrorCount short_level(const std::map<int64_t, ErrorCount>& by_distance) {
  ErrorCount c;
  int n = 0;
  for (const auto& [d, e] : by_distance) {
    if (n++ == 3) break;
    c.errors += e.errors, c.reads += e.reads;
  }
  return c;
}

std::string break_text(long long x) { return x < 0 ? std::string("none") : std::to_string(x); }

std::vector<SubjectMargins> window_predicts_break(const TaskReadings& s) {
  std::vector<SubjectMargins> out;
  for (const auto& [scheme, seeds] : s.windows) {
    SubjectMargins m{scheme, {}};
    for (const auto& [seed, _] : seeds) {
      const auto r = window_reading(s, scheme, seed);
      if (!r || !r->learned) continue;
      m.seeds.push_back({seed, r->hit() ? 1.0 : -1.0,
                         fmt::format("window {}, break {} (distances to {})",
                                     *r->window < 0 ? "never" : break_text(*r->window), break_text(r->observed),
                                     r->largest_distance)});
    }
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

bool TaskReadings::learned(const std::string& scheme, uint64_t seed) const {
  const ErrorCount* c = length_at(*this, scheme, seed, 1);
  return c && c->reads > 0 && upper(*c) <= kLearnedError;
}

long long observed_break(const std::map<int64_t, ErrorCount>& by_distance) {
  const double level = upper(short_level(by_distance));
  int n = 0;
  for (const auto& [d, e] : by_distance)
    if (n++ >= 3 && e.reads > 0 && lower(e) > level) return d;
  return -1;
}

std::optional<WindowReading> window_reading(const TaskReadings& s, const std::string& scheme, uint64_t seed) {
  const auto d = s.distances.find(scheme);
  if (d == s.distances.end()) return std::nullopt;
  const auto k = d->second.find(seed);
  if (k == d->second.end() || k->second.size() < 4) return std::nullopt;
  WindowReading r;
  r.short_level = short_level(k->second);
  r.learned = upper(r.short_level) <= kLearnedError;
  r.observed = observed_break(k->second);
  r.largest_distance = k->second.rbegin()->first;
  if (const auto w = s.windows.find(scheme); w != s.windows.end())
    if (const auto x = w->second.find(seed); x != w->second.end()) r.window = x->second;
  return r;
}

std::string task_readings_csv(const std::vector<TaskReadings>& settings) {
  std::string out = "setting,scheme,seed,window,short_reads,short_errors,learned,observed_break,largest_distance,"
                    "window_rule\n";
  for (const auto& s : settings)
    for (const auto& [scheme, seeds] : s.distances)
      for (const auto& [seed, _] : seeds) {
        const auto r = window_reading(s, scheme, seed);
        if (!r) continue;
        const std::string window = !r->window ? "" : *r->window < 0 ? "inf" : std::to_string(*r->window);
        const std::string rule = !r->window || !r->learned ? "" : r->hit() ? "hit" : "miss";
        out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", csv_field(s.setting), scheme, seed, window,
                           r->short_level.reads, r->short_level.errors, r->learned ? "true" : "false",
                           r->observed < 0 ? "" : std::to_string(r->observed), r->largest_distance, rule);
      }
  return out;
}

bool window_rule_hit(long long window, long long observed, int64_t largest_distance) {
  if (window < 0 || window > largest_distance) return observed < 0;
  return observed >= 0 && 2 * observed >= window && observed <= 4 * window;
}

const std::vector<TaskClaim>& all_task_claims() {
  static const std::vector<TaskClaim> claims = {
      {"task_rotation_rises", "rotation-only transport: read error rises with length (no far-mass control)",
       "read error at 16x minus 1x is more than 2 points", rotation_rises},
      {"task_control_stays_flat", "ALiBi and the forget gate keep read error flat with length",
       "read error at 16x is less than 2 points above 1x", control_stays_flat},
      {"task_accumulated_beats_rope", "accumulated angles err less than RoPE beyond the training length",
       "RoPE's mean read error over 2x-16x minus the scheme's, same seed, is > 0", accumulated_beats_rope},
      {"task_qkv_rises_less", "value rotation reduces the rise of read error with length",
       "the rise from 1x to 16x of the _qk scheme minus that of the _qkv scheme, same seed, is > 0", qkv_rises_less},
      {"task_window_predicts_break",
       "read error leaves its short-distance level near the mixing window (Section 3, B.2)",
       "+1 where the first distance whose error is above the three shortest' (95% Clopper-Pearson limits) lies in "
       "[window/2, 4 window], or no distance is where the window is beyond the largest tested; -1 otherwise",
       window_predicts_break},
  };
  return claims;
}

std::string task_claims_markdown(const std::vector<ClaimResult>& results) {
  std::vector<ClaimRule> rules;
  for (const TaskClaim& c : all_task_claims()) rules.push_back({c.id, c.wording, c.rule});
  return claims_markdown(results, "read error (a fraction of the reads)", rules);
}

namespace {

constexpr const char* kTaskInputs = "pass a task experiment's CSV with its FILE.json";

// The cells of a task CSV's header before and after its swept columns.
struct TaskColumns {
  std::vector<std::string> swept;  // between scheme and seed
  bool ok = false;
};
TaskColumns task_columns(const std::vector<std::string>& columns) {
  const std::string want = runs::task_csv_header();
  std::vector<std::string> fixed;
  for (std::size_t at = 0; at < want.size() - 1;) {
    const std::size_t comma = std::min(want.find(',', at), want.size() - 1);
    fixed.push_back(want.substr(at, comma - at));
    at = comma + 1;
  }
  TaskColumns t;
  if (columns.size() < fixed.size() || columns[0] != "scheme") return t;
  const std::size_t k = columns.size() - fixed.size();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i >= 1 && i <= k) {
      t.swept.push_back(columns[i]);
      continue;
    }
    if (columns[i] != fixed[i == 0 ? 0 : i - k]) return t;
  }
  t.ok = true;
  return t;
}

// The setting a run's swept values name.
std::string setting_name(const std::string& task, const std::vector<std::string>& keys,
                         const std::vector<std::string>& values) {
  std::string s = task;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!values[i].empty()) s += " " + keys[i] + "=" + values[i];
  return s;
}

// A count or length cell: an integer no smaller than `least`.
int64_t integer_cell(const std::string& v, const std::string& path, const char* column, int64_t least) {
  const auto x = parse_integer(v);
  if (!x || *x < least)
    throw ClaimsError(fmt::format("claims: {}: the {} cell '{}' is not an integer of at least {}", path, column, v,
                                  least));
  return *x;
}

// A value as a task CSV's swept cell writes it (run names and cells: fmt's
// shortest form for numbers).
std::string key_text(const runs::RunConfig& c, const std::string& key) {
  const toml::table t = toml::parse(runs::to_toml(c));
  const toml::node* n = t[runs::config_section(key)][key].node();
  if (!n) return "";
  if (auto s = n->value_exact<std::string>()) return *s;
  if (auto b = n->value_exact<bool>()) return *b ? "true" : "false";
  if (auto i = n->value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = n->value_exact<double>()) return fmt::format("{}", *d);
  return "";
}

}  // namespace

bool is_task_csv(const std::string& csv) {
  std::ifstream f(csv);
  std::string header;
  if (!std::getline(f, header)) return false;
  const auto cells = split_list(header);
  return cells && task_columns(*cells).ok;
}

std::vector<TaskReadings> read_task_settings(const std::string& csv, const std::vector<std::string>& probe_csvs) {
  const CsvTable t = parse_csv(read_claims_input(csv, "a task experiment's CSV", kTaskInputs), csv);
  const TaskColumns cols = task_columns(t.columns);
  if (!cols.ok)
    throw ClaimsError(fmt::format("claims: {} is not a task experiment's CSV (its header is not {}with swept columns "
                                  "after scheme)",
                                  csv, runs::task_csv_header()));
  if (t.rows.empty())
    throw ClaimsError(fmt::format("claims: {} holds a header and no rows; pass a task experiment's CSV with results",
                                  csv));
  const auto side = nlohmann::json::parse(read_claims_input(csv + ".json", "its sidecar", kTaskInputs), nullptr, false);
  if (side.is_discarded() || !side.contains("config"))
    throw ClaimsError(fmt::format("claims: {}.json is not an experiment's sidecar", csv));
  const runs::RunConfig base = runs::from_json(side["config"], csv + ".json");
  const int c_scheme = t.column("scheme"), c_seed = t.column("seed"), c_train = t.column("train_len"),
            c_task = t.column("task"), c_set = t.column("set"), c_p = t.column("p"), c_len = t.column("eval_len"),
            c_dist = t.column("distance"), c_reads = t.column("reads"), c_errors = t.column("errors");
  std::vector<TaskReadings> settings;
  auto setting_of = [&](const std::string& name, const std::string& task, int64_t T) -> TaskReadings& {
    for (auto& s : settings)
      if (s.setting == name) return s;
    settings.push_back({name, task, T, {}, {}, {}});
    return settings.back();
  };
  const int c_p_swept = t.column("flipflop_p");
  for (const auto& row : t.rows) {
    std::vector<std::string> values;
    for (const auto& key : cols.swept) values.push_back(row[t.column(key)]);
    const int64_t T = integer_cell(row[c_train], csv, "train_len", 1);
    TaskReadings& s = setting_of(setting_name(row[c_task], cols.swept, values), row[c_task], T);
    const uint64_t seed = uint64_t(integer_cell(row[c_seed], csv, "seed", 0));
    const ErrorCount count{integer_cell(row[c_errors], csv, "errors", 0), integer_cell(row[c_reads], csv, "reads", 1)};
    if (count.errors > count.reads)
      throw ClaimsError(fmt::format("claims: {}: a row of {} seed {} counts {} errors in {} reads", csv, row[c_scheme],
                                    seed, count.errors, count.reads));
    if (row[c_set] == "distance") {
      s.distances[row[c_scheme]][seed][integer_cell(row[c_dist], csv, "distance", 1)] = count;
      continue;
    }
    // Length sets at the training law only (flip-flop's further p are the table's).
    const double trained_p = c_p_swept >= 0 && !row[c_p_swept].empty() ? parse_finite(row[c_p_swept]).value_or(-1)
                                                                        : base.task.p;
    if (row[c_task] == "flipflop" && parse_finite(row[c_p]).value_or(-1) != trained_p) continue;
    const int64_t L = integer_cell(row[c_len], csv, "eval_len", 1);
    if (L % T == 0) s.lengths[row[c_scheme]][seed][L / T] = count;
  }
  for (const TaskReadings& s : settings)
    for (const auto& [cells, what] : {std::pair{&s.lengths, "length ratio"}, std::pair{&s.distances, "distance"}})
      if (const auto m = first_incomplete_seed(*cells))
        throw ClaimsError(fmt::format("claims: {} seed {} ({}) has no row at {} {} in {}, and its other seeds have "
                                      "one; a seed is judged whole or not at all: finish its run (routelab "
                                      "experiment) or leave its rows out",
                                      m->scheme, m->seed, s.setting, what, m->key, csv));
  // Each probed run's window, into the setting its configuration names.
  for (const auto& probe : probe_csvs)
    for (const ProbedWindow& run : read_probe_windows(probe)) {
      std::vector<std::string> values;
      for (const auto& key : cols.swept) values.push_back(key_text(run.config, key));
      const std::string setting = setting_name(run.config.task.name, cols.swept, values);
      for (auto& s : settings)
        if (s.setting == setting) s.windows[run.config.model.scheme][run.config.train.seed] = run.window;
    }
  return settings;
}

std::vector<ClaimResult> evaluate_task_claims(const std::vector<TaskReadings>& settings,
                                              const std::vector<TaskClaim>& claims) {
  std::vector<ClaimResult> out;
  for (const auto& claim : claims)
    for (const auto& s : settings)
      for (const auto& m : claim.margins(s)) {
        ClaimResult r = judge(m.seeds);
        r.claim = claim.id;
        r.subject = m.subject;
        r.setting = s.setting;
        out.push_back(std::move(r));
      }
  if (out.empty())
    throw ClaimsError("claims: no task claim can be judged from these CSVs: no setting holds the schemes and lengths "
                      "any rule reads (1x and 16x of the schemes it names, or a probed window and distances; "
                      "`routelab claims --help`)");
  return out;
}

}  // namespace routelab::claims
