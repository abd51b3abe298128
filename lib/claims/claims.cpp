#include "claims/claims.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <boost/math/distributions/students_t.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "io/csv_read.h"
#include "io/parse.h"
#include "io/table.h"
#include "nn/scheme.h"
#include "runs/config.h"
#include "runs/probe.h"

namespace routelab::claims {

std::optional<double> SettingReadings::at(const std::string& scheme, uint64_t seed, int64_t ratio) const {
  const auto s = bpb.find(scheme);
  if (s == bpb.end()) return std::nullopt;
  const auto k = s->second.find(seed);
  if (k == s->second.end()) return std::nullopt;
  const auto r = k->second.find(ratio);
  if (r == k->second.end()) return std::nullopt;
  return r->second;
}

std::vector<uint64_t> SettingReadings::seeds(const std::string& scheme) const {
  std::vector<uint64_t> out;
  const auto s = bpb.find(scheme);
  if (s != bpb.end())
    for (const auto& [seed, _] : s->second) out.push_back(seed);
  return out;
}

std::optional<RunWindow> SettingReadings::window(const std::string& scheme, uint64_t seed) const {
  if (const auto s = windows.find(scheme); s != windows.end())
    if (const auto w = s->second.find(seed); w != s->second.end()) return w->second;
  if (const auto c = config_windows.find(scheme); c != config_windows.end()) return c->second;
  return std::nullopt;
}

namespace {

// ---------------------------------------------------------------------------
// The rules' arithmetic

constexpr int64_t kLongest = 64;  // "long" and "extreme" lengths: 64x the training length

std::string bits(double x) { return fmt::format("{:.3f}", x); }
std::string signed_bits(double x) { return fmt::format("{:+.3f}", x); }

// bpb(ratio) - bpb(1x) in one seed.
std::optional<double> rise(const SettingReadings& s, const std::string& scheme, uint64_t seed, int64_t ratio) {
  const auto a = s.at(scheme, seed, 1), b = s.at(scheme, seed, ratio);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

// The largest rise from 1x at any length in (1x, up_to]; needs 1x and up_to.
std::optional<double> max_rise(const SettingReadings& s, const std::string& scheme, uint64_t seed, int64_t up_to) {
  if (!rise(s, scheme, seed, up_to)) return std::nullopt;
  double m = -INFINITY;
  for (int64_t r = 2; r <= up_to; r *= 2)
    if (const auto x = rise(s, scheme, seed, r)) m = std::max(m, *x);
  return m;
}

// One subject per scheme present: margin(seed) from `f`, seeds where it has a value.
template <class F>
std::vector<SubjectMargins> per_scheme(const SettingReadings& s, const std::vector<std::string>& schemes, F f) {
  std::vector<SubjectMargins> out;
  for (const auto& scheme : schemes) {
    SubjectMargins m{scheme, {}};
    for (uint64_t seed : s.seeds(scheme))
      if (auto x = f(scheme, seed)) m.seeds.push_back({seed, x->first, x->second});
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

using Margin = std::optional<std::pair<double, std::string>>;

const std::vector<std::string> kRotationOnly = {"rope",       "rope_qkv",     "random_qk",     "random_qkv",
                                                "learned_qk", "learned_qkv",  "projected_qk",  "projected_qkv",
                                                "householder_qk", "householder_qkv"};

// Random accumulated angles beat RoPE at long lengths: at 64x, the better of
// rope and rope_qkv minus the random scheme, in the same seed.
std::vector<SubjectMargins> random_beats_rope(const SettingReadings& s) {
  return per_scheme(s, {"random_qk", "random_qkv"}, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto random = s.at(scheme, seed, kLongest);
    const auto rope = s.at("rope", seed, kLongest), rope_qkv = s.at("rope_qkv", seed, kLongest);
    if (!random || (!rope && !rope_qkv)) return std::nullopt;
    const double best = std::min(rope.value_or(INFINITY), rope_qkv.value_or(INFINITY));
    std::string numbers = fmt::format("{} {}", scheme, bits(*random));
    if (rope) numbers += ", rope " + bits(*rope);
    if (rope_qkv) numbers += ", rope_qkv " + bits(*rope_qkv);
    return std::pair{best - *random, numbers + " at 64x"};
  });
}

// Learned accumulated angles stay near their training-length bits through
// 16x: no length in (1x, 16x] more than kNearBits above 1x.
std::vector<SubjectMargins> learned_near_through_16x(const SettingReadings& s) {
  return per_scheme(s, {"learned_qk", "learned_qkv"}, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto m = max_rise(s, scheme, seed, 16);
    if (!m) return std::nullopt;
    return std::pair{kNearBits - *m, fmt::format("1x {}, largest rise to 16x {}", bits(*s.at(scheme, seed, 1)),
                                                 signed_bits(*m))};
  });
}

// Rotating V too makes the far contributions combine incoherently, so QKV
// should degrade less: the rise from 1x to 64x of _qk minus that of _qkv.
std::vector<SubjectMargins> qkv_rises_less(const SettingReadings& s) {
  const std::pair<const char*, const char*> families[] = {{"rope", "rope_qkv"},
                                                          {"random_qk", "random_qkv"},
                                                          {"learned_qk", "learned_qkv"},
                                                          {"projected_qk", "projected_qkv"},
                                                          {"householder_qk", "householder_qkv"}};
  std::vector<SubjectMargins> out;
  for (const auto& [qk, qkv] : families) {
    std::string family = qkv;
    family = family.substr(0, family.size() - 4);  // rope, random, learned, ...
    SubjectMargins m{family, {}};
    for (uint64_t seed : s.seeds(qkv)) {
      const auto r_qk = rise(s, qk, seed, kLongest), r_qkv = rise(s, qkv, seed, kLongest);
      if (!r_qk || !r_qkv) continue;
      std::string numbers = fmt::format("rise to 64x qk {} qkv {}", signed_bits(*r_qk), signed_bits(*r_qkv));
      const auto m_qk = rise(s, qk, seed, 16), m_qkv = rise(s, qkv, seed, 16);
      if (m_qk && m_qkv) numbers += fmt::format("; to 16x qk {} qkv {}", signed_bits(*m_qk), signed_bits(*m_qkv));
      numbers += fmt::format("; level at 64x qk {} qkv {}", bits(*s.at(qk, seed, kLongest)),
                             bits(*s.at(qkv, seed, kLongest)));
      m.seeds.push_back({seed, *r_qk - *r_qkv, numbers});
    }
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

// Rotation-only schemes degrade at extreme lengths: the rise from 1x to 64x
// is more than kNearBits (not "near").
std::vector<SubjectMargins> rotation_only_degrades(const SettingReadings& s) {
  return per_scheme(s, kRotationOnly, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto r = rise(s, scheme, seed, kLongest);
    if (!r) return std::nullopt;
    return std::pair{*r - kNearBits, fmt::format("rise 1x to 64x {}", signed_bits(*r))};
  });
}

// Flat: no length up to 64x more than kNearBits above 1x.
std::vector<SubjectMargins> flat(const SettingReadings& s, const std::vector<std::string>& schemes) {
  return per_scheme(s, schemes, [&](const std::string& scheme, uint64_t seed) -> Margin {
    const auto m = max_rise(s, scheme, seed, kLongest);
    if (!m) return std::nullopt;
    return std::pair{kNearBits - *m, fmt::format("1x {}, largest rise to 64x {}", bits(*s.at(scheme, seed, 1)),
                                                 signed_bits(*m))};
  });
}
std::vector<SubjectMargins> alibi_flat(const SettingReadings& s) { return flat(s, {"alibi"}); }
std::vector<SubjectMargins> far_mass_control_flat(const SettingReadings& s) {
  return flat(s, {"learned_qkv_forget", "learned_qkv_alibi", "random_qkv_alibi"});
}

// Section 3 (B.2): once the training length covers the mixing window, longer
// contexts add only routes from the decorrelated regime training saw; the
// paper calls that necessary, not sufficient, for extrapolation. So a run
// whose window exceeds its training length must not stay near 1x: its
// largest rise up to 16x is at least kNearBits. Runs whose window fits are
// not judged (the theory lets them go either way).
std::vector<SubjectMargins> window_beyond_training_degrades(const SettingReadings& s) {
  std::set<std::string> schemes;
  for (const auto& [scheme, _] : s.windows) schemes.insert(scheme);
  for (const auto& [scheme, _] : s.config_windows) schemes.insert(scheme);
  std::vector<SubjectMargins> out;
  for (const auto& scheme : schemes) {
    // The stylized model rotates and nothing else: a distance bias or a
    // forget gate suppresses far routes whatever their transport.
    if (std::find(kRotationOnly.begin(), kRotationOnly.end(), scheme) == kRotationOnly.end()) continue;
    std::set<uint64_t> seeds;
    if (const auto probed = s.windows.find(scheme); probed != s.windows.end())
      for (const auto& [seed, _] : probed->second) seeds.insert(seed);
    if (s.config_windows.count(scheme))
      for (uint64_t seed : s.seeds(scheme)) seeds.insert(seed);
    SubjectMargins m{scheme, {}};
    for (uint64_t seed : seeds) {
      const RunWindow w = *s.window(scheme, seed);
      if (w.window >= 0 && w.window <= w.train_len) continue;
      const auto r = max_rise(s, scheme, seed, 16);
      if (!r) continue;
      const std::string window = w.window < 0 ? "never" : fmt::format("{:.3g} T", double(w.window) / double(w.train_len));
      m.seeds.push_back({seed, *r - kNearBits,
                         fmt::format("window {}{}, largest rise to 16x {}", window, w.from_law ? " (its law)" : "",
                                     signed_bits(*r))});
    }
    if (!m.seeds.empty()) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

const std::vector<Claim>& all_claims() {
  static const std::vector<Claim> claims = {
      {"random_beats_rope", "random accumulated angles beat RoPE at long lengths",
       "at 64x, min(rope, rope_qkv) minus the random scheme's bits per byte, same seed, is > 0", random_beats_rope},
      {"learned_near_16x", "learned accumulated angles stay near their training-length perplexity through 16x",
       "every length from 2x to 16x is less than 0.1 bits above 1x", learned_near_through_16x},
      {"qkv_rises_less", "rotating Q, K and V beats rotating Q and K (value rotation reduces the rise with length)",
       "the rise from 1x to 64x of the _qk scheme minus that of the _qkv scheme, same seed, is > 0", qkv_rises_less},
      {"rotation_degrades", "rotation-only schemes degrade at extreme lengths",
       "the rise from 1x to 64x is more than 0.1 bits", rotation_only_degrades},
      {"alibi_flat", "ALiBi stays flat", "every length from 2x to 64x is less than 0.1 bits above 1x", alibi_flat},
      {"far_mass_control_flat",
       "accumulated rotation with far-mass control (forget gate, ALiBi biases) stays flat (beyond the paper)",
       "every length from 2x to 64x is less than 0.1 bits above 1x", far_mass_control_flat},
      {"window_beyond_t_degrades",
       "a run whose mixing window exceeds its training length does not stay near 1x (the window inside the training "
       "length is necessary for extrapolation, Section 3)",
       "for every rotation-only run whose layers' median mixing window (eps 0.05; probed, or from its law for "
       "RoPE and random angles) exceeds the training length, some length from 2x to 16x is at least 0.1 bits "
       "above 1x",
       window_beyond_training_degrades},
  };
  return claims;
}

const char* verdict_name(Verdict v) { return v == Verdict::yes ? "yes" : v == Verdict::no ? "no" : "marginal"; }

ClaimResult judge(const std::vector<SeedMargin>& margins) {
  ClaimResult r;
  r.seeds = margins;
  const std::size_t n = margins.size();
  if (n == 0) return r;
  double sum = 0;
  for (const auto& m : margins) sum += m.margin;
  r.mean = sum / double(n);
  r.lo = r.hi = r.mean;
  if (n >= 2) {
    double ss = 0;
    for (const auto& m : margins) ss += (m.margin - r.mean) * (m.margin - r.mean);
    r.sd = std::sqrt(ss / double(n - 1));
    const double t = boost::math::quantile(boost::math::students_t(double(n - 1)), 0.975);
    r.lo = r.mean - t * r.sd / std::sqrt(double(n));
    r.hi = r.mean + t * r.sd / std::sqrt(double(n));
  }
  for (const auto& m : margins) r.agree += (m.margin > 0) == (r.mean > 0) && m.margin != 0;
  r.verdict = r.lo > 0 ? Verdict::yes : r.hi < 0 ? Verdict::no : Verdict::marginal;
  if (n == 1) r.verdict = r.mean > 0 ? Verdict::yes : r.mean < 0 ? Verdict::no : Verdict::marginal;
  return r;
}

// ---------------------------------------------------------------------------
// Reading the CSVs

namespace {

// `accepted` says what the flag takes, for the refusal.
std::string slurp_or_refuse(const std::string& path, const std::string& what,
                            const char* accepted = "pass experiment CSVs, each with its FILE.json") {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ClaimsError(fmt::format("claims: cannot read {} ({}); {}", path, what, accepted));
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string json_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_unsigned()) return std::to_string(v.get<unsigned long long>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

// Keys that do not make a setting: the run's identity and bookkeeping.
bool identity_key(const std::string& k) {
  return k == "scheme" || k == "seed" || k == "checkpoint_every" || k == "log_every" || k == "vocab";
}

using Config = std::map<std::string, std::string>;

// A run's configuration as key -> text, the keys that make its setting.
Config flat(const runs::RunConfig& c) {
  const nlohmann::json j = runs::to_json(c);
  Config out;
  for (const char* section : {"model", "train", "data"})
    for (const auto& [k, v] : j[section].items())
      if (!identity_key(k)) out[k] = json_text(v);
  return out;
}

// A sidecar's configuration, read as a config file is; a key it lacks
// (written before the key existed) has the value it had then, routelab's
// default.
runs::RunConfig run_config(const nlohmann::json& config, const std::string& where) {
  for (const char* section : {"model", "train", "data"})
    if (!config.contains(section) || !config[section].is_object())
      throw ClaimsError(fmt::format("claims: {}'s config has no [{}]; is it an experiment's sidecar?", where, section));
  try {
    return runs::from_json(config, where);
  } catch (const runs::ConfigError& e) {
    throw ClaimsError(fmt::format("claims: {}", e.what()));
  }
}

// A key the scheme does not read (learned_init for rope) names no setting:
// runs that differ only there are the same model.
std::string setting_label(const runs::RunConfig& run, const Config& reference) {
  std::string label;
  for (const auto& [k, v] : flat(run)) {
    const auto r = reference.find(k);
    if ((r != reference.end() && r->second == v) || !nn::scheme_reads(run.model, k)) continue;
    // A corpus is named by its folder: data/gcide -> gcide.
    const std::string shown = k == "corpus" ? v.substr(v.find_last_of('/') + 1) : v;
    label += (label.empty() ? "" : " ") + k + "=" + shown;
  }
  return label.empty() ? "default" : label;
}

}  // namespace

namespace {

SettingReadings& setting_named(std::vector<SettingReadings>& settings, const std::string& label) {
  auto it = std::find_if(settings.begin(), settings.end(), [&](const auto& s) { return s.setting == label; });
  if (it == settings.end()) it = settings.insert(settings.end(), SettingReadings{label, {}, {}, {}});
  return *it;
}

// A JSON field of the wanted type, or nothing (absent or another type).
template <class T>
std::optional<T> field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

constexpr const char* kProbeInputs = "--windows takes probe CSVs, each with FILE.json and FILE-angles.csv";

// One run of a probe's sidecar.
struct ProbedRun {
  std::string dir;
  runs::RunConfig config;
};

// Each probed run's window into its setting.
void read_windows(std::vector<SettingReadings>& settings, const std::string& probe_csv, const Config& reference) {
  const auto side = nlohmann::json::parse(slurp_or_refuse(probe_csv + ".json", "its sidecar", kProbeInputs), nullptr, false);
  if (side.is_discarded() || field<std::string>(side, "command") != "probe" || !side.contains("runs") ||
      !side["runs"].is_array())
    throw ClaimsError(fmt::format("claims: {}.json is not a probe's sidecar (`routelab probe --csv`)", probe_csv));
  std::vector<ProbedRun> probed;
  for (const auto& run : side["runs"]) {
    const auto dir = field<std::string>(run, "run");
    const nlohmann::json config = run.is_object() && run.contains("config") ? run["config"] : nlohmann::json();
    const auto model = config.is_object() && config.contains("model") ? config["model"] : nlohmann::json();
    const auto train = config.is_object() && config.contains("train") ? config["train"] : nlohmann::json();
    // Named, not defaulted: from_json would fill a missing key with the default.
    if (!dir || !field<std::string>(model, "scheme") || !field<uint64_t>(train, "seed") ||
        !field<int64_t>(model, "context"))
      throw ClaimsError(fmt::format("claims: {}.json: every run needs its directory (run) and a config with "
                                    "[model] scheme and context and [train] seed",
                                    probe_csv));
    probed.push_back({*dir, run_config(config, probe_csv)});
  }
  const std::string angles_path = runs::probe_angles_path(probe_csv);
  const CsvTable t = parse_csv(slurp_or_refuse(angles_path, "the probe's angles CSV", kProbeInputs), angles_path);
  // Rows name their run; angles CSVs written before the run column existed
  // name it by scheme and seed, unique within one probe.
  const int c_run = t.column("run"), c_scheme = t.column("scheme"), c_seed = t.column("seed"),
            c_layer = t.column("layer"), c_median = t.column("layer_window_median");
  if ((c_run < 0 && (c_scheme < 0 || c_seed < 0)) || c_layer < 0 || c_median < 0)
    throw ClaimsError(fmt::format("claims: {} lacks a column of run (or scheme and seed), layer, "
                                  "layer_window_median; is it a probe's angles CSV?",
                                  angles_path));
  const auto row_key = [&](const std::vector<std::string>& row) {
    return c_run >= 0 ? row[c_run] : row[c_scheme] + " seed " + row[c_seed];
  };
  const auto run_key = [&](const ProbedRun& r) {
    return c_run >= 0 ? r.dir : r.config.model.scheme + " seed " + std::to_string(r.config.train.seed);
  };
  std::map<std::string, int> runs_per_key;
  for (const auto& run : probed)
    if (++runs_per_key[run_key(run)] > 1)
      throw ClaimsError(fmt::format("claims: {} has no run column and {}.json probes two runs of {}; probe them again",
                                    angles_path, probe_csv, run_key(run)));
  std::map<std::string, std::map<int64_t, long long>> layer_windows;  // run -> layer -> window
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    const auto layer = parse_integer(row[c_layer]);
    const auto w = row[c_median] == "inf" ? std::optional<long long>(-1) : parse_integer(row[c_median]);
    if (!layer || !w || *w < -1)
      throw ClaimsError(fmt::format("claims: {} row {}: layer and layer_window_median must be integers (or inf)",
                                    angles_path, i + 1));
    layer_windows[row_key(row)][*layer] = *w;
  }
  for (const auto& run : probed) {
    const auto layers = layer_windows.find(run_key(run));
    if (layers == layer_windows.end()) continue;  // a scheme with neither angles nor reflections
    std::vector<long long> w;
    for (const auto& [_, x] : layers->second) w.push_back(x);
    const std::string& scheme = run.config.model.scheme;
    const uint64_t seed = run.config.train.seed;
    const RunWindow rw{run.config.model.context, runs::window_lower_median(w)};
    SettingReadings& s = setting_named(settings, setting_label(run.config, reference));
    if (const auto have = s.windows[scheme].find(seed);
        have != s.windows[scheme].end() &&
        (have->second.window != rw.window || have->second.train_len != rw.train_len))
      throw ClaimsError(fmt::format("claims: {} seed {} ({}) has window {} in an earlier probe CSV and {} in {}",
                                    scheme, seed, s.setting, have->second.window, rw.window, probe_csv));
    s.windows[scheme][seed] = rw;
  }
}

}  // namespace

std::vector<SettingReadings> read_settings(const std::vector<std::string>& csvs,
                                           const std::vector<std::string>& probe_csvs) {
  if (csvs.empty()) throw ClaimsError("claims: name at least one experiment CSV");
  std::vector<SettingReadings> settings;
  std::map<std::string, std::map<std::tuple<std::string, uint64_t, int64_t>, std::string>> source;
  std::optional<Config> reference;
  for (const auto& path : csvs) {
    const CsvTable t = parse_csv(slurp_or_refuse(path, "the CSV"), path);
    const auto side = nlohmann::json::parse(slurp_or_refuse(path + ".json", "its sidecar"), nullptr, false);
    if (side.is_discarded() || !side.contains("config"))
      throw ClaimsError(fmt::format("claims: {}.json is not an experiment's sidecar (no config)", path));
    const runs::RunConfig base = run_config(side["config"], path);
    if (!reference) reference = flat(base);
    std::vector<std::string> swept;
    if (side.contains("swept_keys"))
      for (const auto& k : side["swept_keys"]) {
        if (!k.is_string()) throw ClaimsError(fmt::format("claims: {}.json: swept_keys must be names", path));
        swept.push_back(k.get<std::string>());
      }
    const int c_scheme = t.column("scheme"), c_seed = t.column("seed"), c_train = t.column("train_len"),
              c_eval = t.column("eval_len"), c_bpb = t.column("bits_per_byte");
    if (c_scheme < 0 || c_seed < 0 || c_train < 0 || c_eval < 0 || c_bpb < 0)
      throw ClaimsError(fmt::format("claims: {} lacks a column of scheme, seed, train_len, eval_len, bits_per_byte; "
                                 "is it an experiment's eval CSV?",
                                 path));
    if (t.rows.empty())
      throw ClaimsError(fmt::format("claims: {} holds a header and no rows; pass an experiment CSV with results", path));
    std::vector<int> c_swept;
    for (const auto& k : swept) {
      c_swept.push_back(t.column(k));
      if (c_swept.back() < 0) throw ClaimsError(fmt::format("claims: {} has no column {}, a swept key of its sidecar", path, k));
    }
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      const auto& row = t.rows[i];
      const auto seed = parse_unsigned(row[c_seed]);
      const auto T = parse_integer(row[c_train]), L = parse_integer(row[c_eval]);
      const auto b = parse_finite(row[c_bpb]);
      if (!seed || !T || !L || !b || *T <= 0 || *L <= 0)
        throw ClaimsError(fmt::format("claims: {} row {}: seed, train_len, eval_len and bits_per_byte must be numbers",
                                   path, i + 1));
      if (*L % *T != 0) continue;  // a length that is no multiple of the training length
      const std::string& scheme = row[c_scheme];
      // The run's own configuration: the base with its swept cells and scheme.
      std::vector<std::pair<std::string, std::string>> keys = {{"scheme", scheme}};
      for (std::size_t k = 0; k < swept.size(); ++k)
        if (!row[c_swept[k]].empty()) keys.emplace_back(swept[k], row[c_swept[k]]);
      runs::RunConfig run;
      try {
        run = runs::with_keys(base, keys, fmt::format("{} row {}", path, i + 1));
      } catch (const runs::ConfigError& e) {
        throw ClaimsError(fmt::format("claims: {}", e.what()));
      }
      const std::string label = setting_label(run, *reference);
      SettingReadings& setting = setting_named(settings, label);
      const int64_t ratio = *L / *T;
      auto& cell = setting.bpb[scheme][*seed];
      const auto key = std::tuple{scheme, *seed, ratio};
      if (const auto have = cell.find(ratio); have != cell.end() && have->second != *b)
        throw ClaimsError(fmt::format("claims: {} seed {} at {}x ({}) reads {} in {} and {} in {}", scheme, *seed, ratio,
                                   label, format_number(have->second), source[label][key], format_number(*b), path));
      cell[ratio] = *b;
      source[label][key] = path;
      if (!setting.config_windows.count(scheme))
        if (const auto w = runs::law_window(run.model, runs::ProbeOptions{}.eps))
          setting.config_windows[scheme] = {*T, *w, true};
    }
  }
  // A seed without a length its scheme's other seeds have would be judged
  // on the rest as if complete (a margin moves, the seed still counts).
  for (const SettingReadings& s : settings)
    for (const auto& [scheme, seeds] : s.bpb) {
      std::set<int64_t> ratios;
      for (const auto& [seed, cells] : seeds)
        for (const auto& [ratio, _] : cells) ratios.insert(ratio);
      for (const auto& [seed, cells] : seeds)
        for (int64_t ratio : ratios)
          if (!cells.count(ratio))
            throw ClaimsError(fmt::format(
                "claims: {} seed {} ({}) has no row at {}x in {}, and its other seeds have one; a seed is judged "
                "whole or not at all: finish its run (routelab experiment) or leave its rows out",
                scheme, seed, s.setting, ratio, source.at(s.setting).at(std::tuple{scheme, seed, cells.begin()->first})));
    }
  for (const auto& p : probe_csvs) read_windows(settings, p, *reference);
  // The default setting first, then in order of appearance.
  std::stable_partition(settings.begin(), settings.end(), [](const auto& s) { return s.setting == "default"; });
  return settings;
}

std::vector<ClaimResult> evaluate_claims(const std::vector<SettingReadings>& settings,
                                         const std::vector<Claim>& claims) {
  std::vector<ClaimResult> out;
  for (const Claim& claim : claims) {
    std::map<std::string, double> default_sd;  // subject -> s.d. of its margins at the default setting
    for (const SettingReadings& s : settings)
      for (const SubjectMargins& m : claim.margins(s)) {
        ClaimResult r = judge(m.seeds);
        r.claim = claim.id;
        r.subject = m.subject;
        r.setting = s.setting;
        if (s.setting == "default" && m.seeds.size() >= 2) default_sd[m.subject] = r.sd;
        if (const auto d = default_sd.find(m.subject); d != default_sd.end()) {
          r.default_sd = d->second;
          r.near_flip = std::abs(r.mean) < 2 * d->second;
        }
        out.push_back(std::move(r));
      }
  }
  if (out.empty())
    throw ClaimsError("claims: no claim can be judged from these CSVs: no setting holds the schemes and lengths any "
                      "rule reads (1x and 16x or 64x of the schemes it names; `routelab claims --help`)");
  return out;
}

// ---------------------------------------------------------------------------
// Output

namespace {

std::string joined(const std::vector<SeedMargin>& seeds, std::string (*f)(const SeedMargin&), const char* sep) {
  std::string out;
  for (const auto& s : seeds) out += (out.empty() ? "" : sep) + f(s);
  return out;
}

std::string seed_list(const ClaimResult& r) {
  return joined(r.seeds, [](const SeedMargin& s) { return std::to_string(s.seed); }, ";");
}

std::string fixed(double x) { return fmt::format("{:+.3f}", x); }

}  // namespace

std::string claims_csv(const std::vector<ClaimResult>& results) {
  std::string out =
      "claim,subject,setting,seeds,n,margin_mean,margin_lo,margin_hi,agree,verdict,default_sd,near_flip,margins,"
      "numbers\n";
  for (const auto& r : results)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.claim, r.subject, csv_field(r.setting),
                       seed_list(r), r.seeds.size(), format_number(r.mean), format_number(r.lo), format_number(r.hi),
                       r.agree, verdict_name(r.verdict), format_number(r.default_sd),
                       r.default_sd ? (r.near_flip ? "true" : "false") : "",
                       joined(r.seeds, [](const SeedMargin& s) { return format_number(s.margin); }, ";"),
                       csv_field(joined(r.seeds,
                                        [](const SeedMargin& s) {
                                          return "seed " + std::to_string(s.seed) + ": " + s.numbers;
                                        },
                                        "; ")));
  return out;
}

std::string claims_table(const std::vector<ClaimResult>& results) {
  std::string out = fmt::format("{:<24} {:<19} {:<28} {:>5} {:<9} {:>7} {:<18} {:>5}  {}\n", "claim", "subject",
                                "setting", "seeds", "verdict", "margin", "95% interval", "agree", "near flip");
  for (const auto& r : results)
    out += fmt::format("{:<24} {:<19} {:<28} {:>5} {:<9} {:>7} {:<18} {:>5}  {}\n", r.claim, r.subject, r.setting,
                       r.seeds.size(), verdict_name(r.verdict), fixed(r.mean),
                       r.seeds.size() >= 2 ? fmt::format("[{}, {}]", fixed(r.lo), fixed(r.hi)) : "(one seed)",
                       fmt::format("{}/{}", r.agree, r.seeds.size()),
                       !r.default_sd ? "?" : r.near_flip ? "yes" : "no");
  return out;
}

std::string claims_markdown(const std::vector<ClaimResult>& results) {
  std::vector<std::string> settings;
  for (const auto& r : results)
    if (std::find(settings.begin(), settings.end(), r.setting) == settings.end()) settings.push_back(r.setting);
  std::string out = "| claim | subject |";
  for (const auto& s : settings) out += " " + s + " |";
  out += "\n|---|---|";
  for (std::size_t i = 0; i < settings.size(); ++i) out += "---|";
  out += "\n";
  std::string last_claim;
  std::vector<std::pair<std::string, std::string>> rows_seen;
  for (const auto& r : results) {
    if (std::find(rows_seen.begin(), rows_seen.end(), std::pair{r.claim, r.subject}) != rows_seen.end()) continue;
    rows_seen.push_back({r.claim, r.subject});
    out += "| " + (r.claim == last_claim ? std::string() : "`" + r.claim + "`") + " | " + r.subject + " |";
    last_claim = r.claim;
    for (const auto& s : settings) {
      const auto it = std::find_if(results.begin(), results.end(), [&](const ClaimResult& x) {
        return x.claim == r.claim && x.subject == r.subject && x.setting == s;
      });
      if (it == results.end()) {
        out += " |";
        continue;
      }
      const std::size_t n = it->seeds.size();
      std::string cell = it->verdict == Verdict::marginal ? "marginal" : "**" + std::string(verdict_name(it->verdict)) + "**";
      cell += " " + fixed(it->mean);
      cell += n >= 2 ? fmt::format(" [{}, {}] {}/{}", fixed(it->lo), fixed(it->hi), it->agree, n) : " (1 seed)";
      if (it->near_flip) cell += " †";
      out += " " + cell + " |";
    }
    out += "\n";
  }
  out += "\nMargins in bits per byte, positive where the claim holds; mean over seeds, 95% t interval, seeds that "
         "agree. marginal: the interval covers 0. †: within twice the default setting's seed s.d. of flipping.\n\n";
  for (const Claim& c : all_claims()) out += fmt::format("- `{}`: {}. Rule: {}.\n", c.id, c.wording, c.rule);
  return out;
}

}  // namespace routelab::claims
