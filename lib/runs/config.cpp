#include "runs/config.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "data/latest_value.h"
#include "data/passkey_sample.h"
#include "io/table.h"
#include "nn/scheme.h"

namespace routelab::runs {

namespace {

const char* const kLearnedInits = "one of \"normal\", \"uniform\", \"rope\"";

// Reads the keys of one TOML table into fields, refusing anything unknown.
class TableReader {
 public:
  TableReader(const toml::table* t, std::string where, std::string section)
      : t_(t), where_(std::move(where)), section_(std::move(section)) {}

  void integer(const char* key, int& field, long long lo, long long hi) {
    long long v = field;
    integer64(key, v, lo, hi);
    field = int(v);
  }
  void integer64(const char* key, long long& field, long long lo, long long hi) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value_exact<int64_t>();
    if (!v || *v < lo || *v > hi) fail(key, fmt::format("an integer in [{}, {}]", lo, hi));
    field = *v;
  }
  void real(const char* key, double& field, double lo, double hi, bool open_lo = false, bool open_hi = false) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value<double>();  // integers are accepted as reals
    if (!v || !(*v <= hi) || *v < lo || (open_lo && *v == lo) || (open_hi && *v == hi))
      fail(key, fmt::format("a number in {}{}, {}{}", open_lo ? "(" : "[", lo, hi, open_hi ? ")" : "]"));
    field = *v;
  }
  void boolean(const char* key, bool& field) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value_exact<bool>();
    if (!v) fail(key, "true or false");
    field = *v;
  }
  void text(const char* key, std::string& field, const std::string& accepts) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value_exact<std::string>();
    if (!v) fail(key, accepts);
    field = *v;
  }
  void finish() const {
    if (!t_) return;
    for (const auto& [k, v] : *t_)
      if (!seen_.count(std::string(k.str())))
        throw ConfigError(fmt::format("{}: unknown key [{}] {}; accepted: {}", where_, section_, k.str(), accepted()));
  }
  [[noreturn]] void fail(const char* key, const std::string& accepts) const {
    throw ConfigError(fmt::format("{}: [{}] {} must be {}", where_, section_, key, accepts));
  }

 private:
  const toml::node* take(const char* key) {
    seen_.insert(key);
    keys_.push_back(key);
    return t_ ? t_->get(key) : nullptr;
  }
  std::string accepted() const {
    std::string s;
    for (const auto& k : keys_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  const toml::table* t_;
  std::string where_, section_;
  std::set<std::string> seen_;
  std::vector<std::string> keys_;
};

const toml::table* section(const toml::table& t, const char* name, const std::string& where) {
  const toml::node* n = t.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) throw ConfigError(fmt::format("{}: [{}] must be a table", where, name));
  return n->as_table();
}

}  // namespace

RunConfig parse_run_config(const toml::table& t, const std::string& where, const std::vector<std::string>& extra) {
  std::set<std::string> known = {"model", "train", "data"};
  known.insert(extra.begin(), extra.end());
  for (const auto& [k, v] : t)
    if (!known.count(std::string(k.str()))) {
      std::string list;
      for (const auto& s : known) list += (list.empty() ? "[" : ", [") + s + "]";
      throw ConfigError(fmt::format("{}: unknown table or key '{}'; accepted: {}", where, k.str(), list));
    }
  RunConfig c;
  {
    TableReader r(section(t, "model", where), where, "model");
    r.integer("d_model", c.model.d_model, 2, 8192);
    r.integer("heads", c.model.heads, 1, 1024);
    r.integer("layers", c.model.layers, 1, nn::kMaxLayers);
    r.integer("mlp_ratio", c.model.mlp_ratio, 1, 64);
    r.integer("context", c.model.context, 1, 1 << 20);
    r.text("scheme", c.model.scheme, "one of " + nn::scheme_names());
    r.real("angle_scale", c.model.angle_scale, 0.0, 1e6);
    r.real("rope_base", c.model.rope_base, 1.0, 1e12, true);
    r.text("learned_init", c.model.learned_init, kLearnedInits);
    r.real("learned_sigma", c.model.learned_sigma, 0.0, 1e3, true);
    r.boolean("learned_shared", c.model.learned_shared);
    r.text("householder_beta", c.model.householder_beta, "\"path\" or \"reflection\"");
    r.finish();
  }
  {
    TableReader r(section(t, "train", where), where, "train");
    r.integer("batch", c.train.batch, 1, 4096);
    r.integer("steps", c.train.steps, 1, 1 << 30);
    r.real("lr", c.train.lr, 0.0, 10.0, true);
    r.real("min_lr_ratio", c.train.min_lr_ratio, 0.0, 1.0);
    r.integer("warmup", c.train.warmup, 0, 1 << 30);
    r.real("weight_decay", c.train.weight_decay, 0.0, 10.0);
    // AdamW's bias correction divides by 1 - beta^t: beta = 1 is no optimiser.
    r.real("beta1", c.train.beta1, 0.0, 1.0, false, true);
    r.real("beta2", c.train.beta2, 0.0, 1.0, false, true);
    r.real("eps", c.train.eps, 0.0, 1.0, true);
    r.real("grad_clip", c.train.grad_clip, 0.0, 1e9);
    r.real("passkey_fraction", c.train.passkey_fraction, 0.0, 1.0);
    const auto seed_key = [&](const char* key, uint64_t& value) {
      long long v = (long long)value;
      r.integer64(key, v, 0, (1LL << 62));
      value = uint64_t(v);
    };
    seed_key("seed", c.train.seed);
    seed_key("data_seed", c.train.data_seed);
    r.integer("checkpoint_every", c.train.checkpoint_every, 1, 1 << 30);
    r.integer("log_every", c.train.log_every, 1, 1 << 30);
    r.finish();
  }
  {
    TableReader r(section(t, "data", where), where, "data");
    r.text("corpus", c.corpus, "a directory path (text)");
    r.text("task", c.task.name, "\"\" (the corpus) or one of " + data::task_names());
    r.real("flipflop_p", c.task.p, 0.0, 1.0, false, true);
    r.integer("recall_keys", c.task.keys, 1, data::kMaxValueKeys);
    r.integer("recall_values", c.task.values, 1, data::kMaxValues);
    r.real("recall_query", c.task.query, 0.0, 1.0, true, true);
    r.finish();
  }
  validate(c, where);
  return c;
}

void require_config_file(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  // Any error but absence is the operating system's (io/user_paths.h names it).
  if (ec && ec != std::errc::no_such_file_or_directory) throw std::filesystem::filesystem_error("status", path, ec);
  if (!std::filesystem::exists(st)) throw ConfigError(fmt::format("{}: no such file; a TOML config file", path));
  if (!std::filesystem::is_regular_file(st))
    throw ConfigError(fmt::format("{}: not a regular file (a directory?); a TOML config file", path));
}

RunConfig parse_run_config_text(const std::string& text, const std::string& where) {
  try {
    const toml::table t = toml::parse(text, where);
    // An experiment file is a run config plus [experiment]: its base run
    // (the scheme in [model], rope by default) trains on its own.
    return parse_run_config(t, where, {"experiment"});
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: not valid TOML: {}", where, b.line, b.column, e.description()));
  }
}

RunConfig load_run_config(const std::string& path) {
  require_config_file(path);
  const auto text = read_file_bytes(path);
  if (!text) throw ConfigError(fmt::format("{}: cannot be read; a TOML config file", path));
  return parse_run_config_text(*text, path);
}

void validate(const RunConfig& c, const std::string& where) {
  const nn::ModelConfig& m = c.model;
  const nn::SchemeInfo* s = nn::find_scheme(m.scheme);
  if (!s)
    throw ConfigError(
        fmt::format("{}: [model] scheme '{}' is unknown; accepted: {}", where, m.scheme, nn::scheme_names()));
  if (m.d_model % m.heads != 0)
    throw ConfigError(fmt::format("{}: [model] heads = {} does not divide d_model = {}; heads must divide d_model",
                                  where, m.heads, m.d_model));
  if (s->angles != nn::AngleKind::none && m.head_dim() % 2 != 0)
    throw ConfigError(fmt::format("{}: [model] scheme '{}' rotates pairs of coordinates, so d_model / heads must be "
                                  "even (it is {})",
                                  where, m.scheme, m.head_dim()));
  if (m.learned_init != "normal" && m.learned_init != "uniform" && m.learned_init != "rope")
    throw ConfigError(fmt::format("{}: [model] learned_init must be {}", where, kLearnedInits));
  if (!(m.learned_sigma > 0 && m.learned_sigma <= 1e3))
    throw ConfigError(fmt::format("{}: [model] learned_sigma must be a number in (0, 1000]", where));
  if (m.householder_beta != "path" && m.householder_beta != "reflection")
    throw ConfigError(fmt::format("{}: [model] householder_beta must be \"path\" or \"reflection\"", where));
  if (c.corpus.empty()) throw ConfigError(fmt::format("{}: [data] corpus must be a directory path", where));
  if (c.is_task()) {
    if (!data::is_task(c.task.name))
      throw ConfigError(fmt::format("{}: [data] task '{}' is unknown; accepted: \"\" (the corpus) or one of {}", where,
                                    c.task.name, data::task_names()));
    const int unit = data::task_unit(c.task);
    if (m.context % unit != 0 || m.context < data::task_min_window(c.task))
      throw ConfigError(fmt::format("{}: [model] context = {} does not fit task {}: accepted: a multiple of {} bytes "
                                    "(one {}), at least {}",
                                    where, m.context, c.task.name, unit, unit == 2 ? "instruction-bit pair" : "byte",
                                    data::task_min_window(c.task)));
    if (c.train.passkey_fraction > 0)
      throw ConfigError(fmt::format("{}: [train] passkey_fraction mixes passkeys into corpus windows; a run of [data] "
                                    "task {} has none (set it to 0)",
                                    where, c.task.name));
  }
  if (c.train.passkey_fraction > 0 && m.context < data::passkey_min_length())
    throw ConfigError(fmt::format("{}: [train] passkey_fraction needs context >= {} (a passkey sample's length); "
                                  "context is {}",
                                  where, data::passkey_min_length(), m.context));
}

std::string to_toml(const RunConfig& c) {
  const auto& m = c.model;
  const auto& t = c.train;
  auto num = [](double x) { return fmt::format("{}", x); };
  std::ostringstream o;
  o << "[model]\n"
    << "d_model = " << m.d_model << "\nheads = " << m.heads << "\nlayers = " << m.layers
    << "\nmlp_ratio = " << m.mlp_ratio << "\ncontext = " << m.context << "\nscheme = \"" << m.scheme << "\""
    << "\nangle_scale = " << num(m.angle_scale) << "\nrope_base = " << num(m.rope_base) << "\nlearned_init = \""
    << m.learned_init << "\"\nlearned_sigma = " << num(m.learned_sigma)
    << "\nlearned_shared = " << (m.learned_shared ? "true" : "false") << "\nhouseholder_beta = \"" << m.householder_beta << "\"\n\n[train]\n"
    << "batch = " << t.batch << "\nsteps = " << t.steps << "\nlr = " << num(t.lr)
    << "\nmin_lr_ratio = " << num(t.min_lr_ratio) << "\nwarmup = " << t.warmup
    << "\nweight_decay = " << num(t.weight_decay) << "\nbeta1 = " << num(t.beta1) << "\nbeta2 = " << num(t.beta2)
    << "\neps = " << num(t.eps) << "\ngrad_clip = " << num(t.grad_clip)
    << "\npasskey_fraction = " << num(t.passkey_fraction) << "\nseed = " << t.seed
    << "\ndata_seed = " << t.data_seed
    << "\ncheckpoint_every = " << t.checkpoint_every << "\nlog_every = " << t.log_every << "\n\n[data]\ncorpus = "
    << toml::value<std::string>(c.corpus) << "\ntask = " << toml::value<std::string>(c.task.name)
    << "\nflipflop_p = " << num(c.task.p) << "\nrecall_keys = " << c.task.keys << "\nrecall_values = " << c.task.values
    << "\nrecall_query = " << num(c.task.query) << "\n";
  return o.str();
}

nlohmann::json to_json(const RunConfig& c) {
  const auto& m = c.model;
  const auto& t = c.train;
  return {{"model",
           {{"vocab", m.vocab}, {"d_model", m.d_model}, {"heads", m.heads}, {"layers", m.layers},
            {"mlp_ratio", m.mlp_ratio}, {"context", m.context}, {"scheme", m.scheme}, {"angle_scale", m.angle_scale},
            {"rope_base", m.rope_base}, {"learned_init", m.learned_init}, {"learned_sigma", m.learned_sigma},
            {"learned_shared", m.learned_shared},
            {"householder_beta", m.householder_beta}}},
          {"train",
           {{"batch", t.batch}, {"steps", t.steps}, {"lr", t.lr}, {"min_lr_ratio", t.min_lr_ratio},
            {"warmup", t.warmup}, {"weight_decay", t.weight_decay}, {"beta1", t.beta1}, {"beta2", t.beta2},
            {"eps", t.eps}, {"grad_clip", t.grad_clip},
            {"passkey_fraction", t.passkey_fraction}, {"seed", t.seed}, {"data_seed", t.data_seed},
            {"checkpoint_every", t.checkpoint_every},
            {"log_every", t.log_every}}},
          {"data",
           {{"corpus", c.corpus}, {"task", c.task.name}, {"flipflop_p", c.task.p}, {"recall_keys", c.task.keys},
            {"recall_values", c.task.values}, {"recall_query", c.task.query}}}};
}

RunConfig from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: a run configuration must be an object of tables", where));
  toml::table t;
  for (const auto& [section, keys] : j.items()) {
    if (!keys.is_object()) throw ConfigError(fmt::format("{}: [{}] must be a table", where, section));
    toml::table s;
    for (const auto& [k, v] : keys.items()) {
      // to_json records the byte vocabulary, which no configuration sets.
      if (section == "model" && k == "vocab") {
        if (v != nn::ModelConfig{}.vocab)
          throw ConfigError(fmt::format("{}: [model] vocab must be {} (bytes)", where, nn::ModelConfig{}.vocab));
        continue;
      }
      if (v.is_string()) s.insert(k, v.get<std::string>());
      else if (v.is_boolean()) s.insert(k, v.get<bool>());
      else if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw ConfigError(fmt::format("{}: [{}] {} = {} is out of range", where, section, k, v.dump()));
      else if (v.is_number_integer()) s.insert(k, v.get<int64_t>());
      else if (v.is_number_float()) s.insert(k, v.get<double>());
      else throw ConfigError(fmt::format("{}: [{}] {} must be a number, text or true/false", where, section, k));
    }
    t.insert(section, std::move(s));
  }
  return parse_run_config(t, where);
}

const toml::table& default_run_table() {
  static const toml::table t = toml::parse(to_toml(RunConfig{}));
  return t;
}

std::string config_section(const std::string& key) {
  for (const char* section : {"model", "train", "data"})
    if (default_run_table()[section][key]) return section;
  return "";
}

RunConfig with_keys(const RunConfig& c, const std::vector<std::pair<std::string, std::string>>& keys,
                    const std::string& where) {
  nlohmann::json j = to_json(c);
  for (const auto& [key, text] : keys) {
    const std::string section = config_section(key);
    if (section.empty()) throw ConfigError(fmt::format("{}: {} is not a key of [model], [train] or [data]", where, key));
    nlohmann::json& v = j[section][key];
    const auto refuse = [&](const char* accepted) {
      return ConfigError(fmt::format("{}: [{}] {} = '{}' is not {}", where, section, key, text, accepted));
    };
    if (v.is_string()) {
      v = text;
    } else if (v.is_boolean()) {
      if (text != "true" && text != "false") throw refuse("true or false");
      v = text == "true";
    } else if (v.is_number_integer()) {
      int64_t x = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
      if (ec != std::errc() || end != text.data() + text.size()) throw refuse("an integer");
      v = x;
    } else {
      char* end = nullptr;
      const double x = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) throw refuse("a number");
      v = x;
    }
  }
  return from_json(j, where);
}

}  // namespace routelab::runs
