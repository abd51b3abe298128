// The run workflow's pieces on their own (lib/runs/), in its order: the
// configuration and its TOML, the run directory's checkpoint comparisons,
// the training batches, evaluation windows and lengths, passkey samples; and
// the hooks of long evaluation work (runs/eval.h WorkHooks), what the Python
// module's progress callbacks and Ctrl-C stand on: evaluate, passkey and the
// probe call after_pass once per forward pass and after_unit once per unit,
// and a hook that throws stops the work between passes with no file written.
// Whole runs through the command line: tests/test_nn_cli.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "cli_helpers.h"
#include "model_configs.h"
#include "nn/model.h"
#include "runs/config.h"
#include "runs/eval.h"
#include "runs/memory.h"
#include "runs/passkey.h"
#include "runs/probe.h"
#include "runs/run_dir.h"
#include "runs/train.h"

namespace {

using namespace routelab;
using namespace routelab::runs;
using namespace routelab::testing;

RunConfig parse_config_text(const std::string& text) {
  return parse_run_config(toml::parse(text), "test.toml");
}

TEST(runs_config, refuses_what_no_model_can_be) {
  EXPECT_NO_THROW(parse_config_text("[model]\nscheme = \"alibi\"\n"));
  const std::pair<const char*, const char*> cases[] = {
      {"[model]\nwidth = 3\n", "unknown key [model] width"},
      {"[optimizer]\nlr = 1\n", "unknown table or key 'optimizer'"},
      {"[model]\nscheme = \"xpos\"\n", "scheme 'xpos' is unknown"},
      {"[model]\nd_model = 130\nheads = 4\n", "heads = 4 does not divide d_model = 130"},
      {"[model]\nd_model = 12\nheads = 4\nscheme = \"rope\"\n", "must be even (it is 3)"},
      {"[train]\nlr = -1\n", "[train] lr must be"},
      {"[train]\nsteps = 2.5\n", "[train] steps must be an integer"},
      {"[model]\nhouseholder_beta = \"half\"\n", "householder_beta must be \"path\" or \"reflection\""},
      {"[model]\nlearned_init = \"zero\"\n", "learned_init must be one of \"normal\", \"uniform\", \"rope\""},
      {"[model]\nlearned_sigma = 0\n", "learned_sigma must be a number in (0, 1000]"},
      {"[model]\nlearned_sigma = -0.5\n", "learned_sigma must be a number in (0, 1000]"},
      {"[model]\nlearned_sigma = nan\n", "learned_sigma must be a number in (0, 1000]"},
      {"[model]\nlearned_sigma = inf\n", "learned_sigma must be a number in (0, 1000]"},
      {"[model]\nlearned_sigma = \"1\"\n", "learned_sigma must be a number in (0, 1000]"},
      {"[model]\nlearned_shared = 1\n", "learned_shared must be true or false"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_config_text(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  // An odd head dimension is fine where nothing rotates.
  EXPECT_NO_THROW(parse_config_text("[model]\nd_model = 12\nheads = 4\nscheme = \"alibi\"\n"));
}

TEST(runs_config, round_trips_through_its_own_toml) {
  RunConfig c = parse_config_text("[model]\nscheme = \"learned_qkv\"\nangle_scale = 0.25\n[train]\nseed = 7\n");
  EXPECT_EQ(parse_config_text(to_toml(c)), c);
  c = parse_config_text("[model]\nscheme = \"householder_qkv\"\nhouseholder_beta = \"reflection\"\n");
  EXPECT_EQ(parse_config_text(to_toml(c)), c);
  c = parse_config_text("[model]\nscheme = \"learned_qk\"\nlearned_sigma = 0.03\nlearned_shared = true\n");
  EXPECT_EQ(parse_config_text(to_toml(c)), c);
  c = parse_config_text("[train]\nseed = 3\ndata_seed = 5\n");
  EXPECT_EQ(parse_config_text(to_toml(c)), c);
  EXPECT_EQ(c.train.batch_seed(), 5u);
  EXPECT_EQ(parse_config_text("[train]\nseed = 3\n").train.batch_seed(), 3u);  // 0, the default, takes seed's
  EXPECT_EQ(c.model.learned_init, "normal");  // the default since issue 14
}


// A sidecar's "config" reads back as the run it describes, by the TOML rules:
// a key it lacks has its default, anything TOML would refuse is refused.
TEST(runs_config, reads_back_from_its_own_json) {
  RunConfig c = parse_config_text(
      "[model]\nscheme = \"learned_qk\"\nlearned_sigma = 0.03\nd_model = 256\nheads = 8\n[train]\nseed = 7\n"
      "lr = 0.002\n[data]\ncorpus = \"data/gcide\"\n");
  EXPECT_EQ(from_json(to_json(c), "sidecar"), c);
  nlohmann::json old = to_json(c);
  old["train"].erase("passkey_fraction");  // a sidecar from before the key existed
  old["train"].erase("data_seed");
  EXPECT_EQ(from_json(old, "sidecar"), c);
  const auto refused = [](nlohmann::json j, const char* want) {
    try {
      from_json(j, "x.json");
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = to_json(c);
  j["model"]["width"] = 3;
  refused(j, "x.json: unknown key [model] width");
  j = to_json(c);
  j["model"]["vocab"] = 512;
  refused(j, "[model] vocab must be 256");
  j = to_json(c);
  j["model"]["heads"] = 3;
  refused(j, "heads = 3 does not divide d_model = 256");
  j = to_json(c);
  j["train"]["steps"] = "many";
  refused(j, "[train] steps must be an integer");
  refused(nlohmann::json::array(), "must be an object of tables");

  // Keys set from their text, as experiment CSV cells write them.
  const RunConfig d = with_keys(c, {{"heads", "4"}, {"d_model", "128"}, {"corpus", "data/brown"}, {"lr", "0.001"},
                                    {"learned_shared", "true"}, {"scheme", "rope"}},
                                "row 1");
  EXPECT_EQ(d.model.heads, 4);
  EXPECT_EQ(d.model.d_model, 128);
  EXPECT_EQ(d.corpus, "data/brown");
  EXPECT_EQ(d.train.lr, 0.001);
  EXPECT_TRUE(d.model.learned_shared);
  EXPECT_EQ(d.model.scheme, "rope");
  EXPECT_EQ(d.train.seed, 7u);
  const std::pair<std::vector<std::pair<std::string, std::string>>, const char*> bad[] = {
      {{{"heads", "8.5"}}, "row 1: [model] heads = '8.5' is not an integer"},
      {{{"lr", "fast"}}, "[train] lr = 'fast' is not a number"},
      {{{"learned_shared", "1"}}, "learned_shared = '1' is not true or false"},
      {{{"width", "3"}}, "width is not a key of [model], [train] or [data]"},
      {{{"heads", "3"}}, "heads = 3 does not divide d_model = 256"},
  };
  for (const auto& [keys, want] : bad) {
    try {
      with_keys(c, keys, "row 1");
      ADD_FAILURE() << "accepted: " << keys[0].first;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(config_section("context"), "model");
  EXPECT_EQ(config_section("warmup"), "train");
  EXPECT_EQ(config_section("corpus"), "data");
  EXPECT_EQ(config_section("vocab"), "");
}
// default_run_table is the one list of a run's keys: each key of each section
// maps back to that section (no key in two sections), and with_keys accepts
// its default's own text back unchanged.
TEST(runs_config, every_default_key_maps_back_to_its_section) {
  const RunConfig d;
  const nlohmann::json dj = to_json(d);
  std::size_t keys = 0;
  for (const auto& [section, table] : default_run_table()) {
    ASSERT_TRUE(table.is_table()) << section.str();
    for (const auto& [key, value] : *table.as_table()) {
      const std::string k(key.str());
      EXPECT_EQ(config_section(k), section.str()) << k;
      const nlohmann::json& v = dj.at(std::string(section.str())).at(k);
      const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      EXPECT_EQ(to_json(with_keys(d, {{k, text}}, "row 1")), dj) << k << " = " << text;
      ++keys;
    }
  }
  EXPECT_GT(keys, 20u);
}
// A checkpoint of `c` as training writes it: its configuration and as many
// weights as it has.
Checkpoint checkpoint_of(const RunConfig& c) {
  Checkpoint ck;
  ck.config = to_json(c);
  ck.params.resize(nn::param_count(c.model));
  return ck;
}

// A checkpoint from before learned_sigma and learned_shared existed had their
// defaults; a changed key is refused.
TEST(runs_run_dir, checkpoints_compare_the_learned_starts) {
  const RunConfig normal = parse_config_text("[model]\nscheme = \"learned_qk\"\nlearned_init = \"uniform\"\n");
  Checkpoint ck = checkpoint_of(normal);
  ck.config["model"].erase("learned_sigma");
  ck.config["model"].erase("learned_shared");
  EXPECT_NO_THROW(require_same_config(ck, normal, "ck"));
  EXPECT_THROW(require_same_config(ck, parse_config_text("[model]\nscheme = \"learned_qk\"\n"), "ck"), CheckpointError);
  EXPECT_THROW(require_same_config(ck, parse_config_text("[model]\nscheme = \"learned_qk\"\nlearned_init = "
                                                  "\"uniform\"\nlearned_shared = true\n"),
                                   "ck"),
               CheckpointError);
}

// Resuming compares householder_beta like every weight-changing key; a
// checkpoint from before the key existed had the default, "path".
TEST(runs_run_dir, checkpoints_compare_householder_beta) {
  RunConfig path = parse_config_text("[model]\nscheme = \"householder_qk\"\n");
  RunConfig reflection = parse_config_text("[model]\nscheme = \"householder_qk\"\nhouseholder_beta = \"reflection\"\n");
  Checkpoint ck = checkpoint_of(path);
  EXPECT_NO_THROW(require_same_config(ck, path, "ck"));
  try {
    require_same_config(ck, reflection, "ck");
    ADD_FAILURE() << "a checkpoint of beta \"path\" resumed as \"reflection\"";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("householder_beta"), std::string::npos) << e.what();
  }
  ck.config["model"].erase("householder_beta");
  EXPECT_NO_THROW(require_same_config(ck, path, "ck"));
  EXPECT_THROW(require_same_config(ck, reflection, "ck"), CheckpointError);
}

// A checkpoint from before data_seed existed drew its batches from seed (0,
// the default); another data stream is refused.
TEST(runs_run_dir, checkpoints_compare_data_seed) {
  const RunConfig c = parse_config_text("[model]\nscheme = \"rope\"\n");
  Checkpoint ck = checkpoint_of(c);
  ck.config["train"].erase("data_seed");
  EXPECT_NO_THROW(require_same_config(ck, c, "ck"));
  EXPECT_THROW(require_same_config(ck, parse_config_text("[model]\nscheme = \"rope\"\n[train]\ndata_seed = 2\n"),
                                   "ck"),
               CheckpointError);
}

// The same configuration with another number of weights (a truncated or
// foreign file) is refused wherever a checkpoint is loaded.
TEST(runs_run_dir, checkpoints_hold_their_configurations_parameters) {
  const RunConfig c = parse_config_text("[model]\nscheme = \"rope\"\n");
  Checkpoint ck = checkpoint_of(c);
  ck.params.pop_back();
  try {
    require_same_config(ck, c, "ck");
    ADD_FAILURE() << "a checkpoint one parameter short was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("parameters"), std::string::npos) << e.what();
  }
}

TEST(runs_train, batches_are_a_function_of_seed_and_step) {
  std::vector<uint8_t> stream(1000);
  for (std::size_t i = 0; i < stream.size(); ++i) stream[i] = uint8_t(i % 251);
  const int T = 16, B = 4;
  std::vector<int> a(B * T), at(B * T), b(B * T), bt(B * T);
  training_batch(stream, T, 0, B, 5, 10, a.data(), at.data());
  training_batch(stream, T, 0, B, 5, 10, b.data(), bt.data());
  EXPECT_EQ(a, b);
  training_batch(stream, T, 0, B, 5, 11, b.data(), bt.data());
  EXPECT_NE(a, b);
  for (int i = 0; i < B * T; ++i) EXPECT_EQ(at[i], (a[i] + 1) % 251);  // targets are the next bytes
  // The last two elements alone, as the second of two ranks draws them.
  std::vector<int> half(2 * T), halft(2 * T);
  training_batch(stream, T, 2, 2, 5, 10, half.data(), halft.data());
  EXPECT_TRUE(std::equal(half.begin(), half.end(), a.begin() + 2 * T));
}

TEST(runs_train, passkey_fraction_replaces_that_share_of_windows) {
  std::vector<uint8_t> stream(5000);
  for (std::size_t i = 0; i < stream.size(); ++i) stream[i] = uint8_t('a' + i % 26);
  const int T = 128, B = 64;
  std::vector<int> plain(B * T), plaint(B * T), mixed(B * T), mixedt(B * T);
  training_batch(stream, T, 0, B, 7, 3, plain.data(), plaint.data());
  training_batch(stream, T, 0, B, 7, 3, mixed.data(), mixedt.data(), 0.0);
  EXPECT_EQ(plain, mixed);
  training_batch(stream, T, 0, B, 7, 3, mixed.data(), mixedt.data(), 0.5);
  const std::string question = " What is the pass key? The pass key is ";
  int samples = 0;
  std::set<std::string> keys;
  for (int b = 0; b < B; ++b) {
    std::string text;
    for (int t = 0; t < T; ++t) text += char(mixed[b * T + t]);
    text += char(mixedt[b * T + T - 1]);
    if (std::equal(mixed.begin() + b * T, mixed.begin() + (b + 1) * T, plain.begin() + b * T)) continue;
    ++samples;
    const std::string key = text.substr(text.size() - 5);
    ASSERT_EQ(text.substr(text.size() - 5 - question.size(), question.size()), question) << text;
    EXPECT_NE(text.find(" The pass key is " + key + ". Remember it. "), std::string::npos) << text;
    keys.insert(key);
  }
  // Binomial(64, 1/2): 32 +- 4 s.d. (4 x 4).
  EXPECT_GE(samples, 16);
  EXPECT_LE(samples, 48);
  EXPECT_GE(keys.size(), std::size_t(samples - 2));  // keys differ between elements
  // No training key is one evaluation asks with the same seed (trials 0..).
  for (uint64_t trial = 0; trial < 20; ++trial) {
    const auto e = passkey_sample(stream, T, 0.5, 7, trial);
    EXPECT_EQ(keys.count(std::string(e.end() - 5, e.end())), 0u) << trial;
  }
}

TEST(runs_eval, windows_tile_the_stream_and_bins_cover_every_position) {
  nn::Model<float> model(routelab::testing::small_model_config("nope", 4, 130), 1);
  std::vector<uint8_t> stream(1000, 'a');
  const EvalResult r = evaluate(model, stream, 100);
  EXPECT_EQ(r.windows, 9);  // 9 x 100 inputs need 901 bytes; 10 would need 1001
  EXPECT_EQ(r.tokens, 900);
  int64_t covered = 0;
  for (const auto& b : r.bins) covered += b.tokens;
  EXPECT_EQ(covered, r.tokens);
  EXPECT_EQ(r.bins.front().lo, 0);
  EXPECT_EQ(r.bins.back().hi, 100);
  EXPECT_NEAR(r.ppl, std::exp(r.bits_per_byte * std::log(2.0)), 1e-9 * r.ppl);
}

TEST(runs_eval, lengths_parse_as_multiples_or_integers) {
  EXPECT_EQ(parse_lengths("1x,4x,300", 128), (std::vector<int64_t>{128, 512, 300}));
  for (const char* bad : {"", "0x", "x", "4y", "1x,,2x", "-3", "2.5x"})
    EXPECT_THROW(parse_lengths(bad, 128), std::invalid_argument) << bad;
}

TEST(runs_passkey, the_key_sits_at_its_depth_and_is_asked_for_at_the_end) {
  std::vector<uint8_t> text(5000);
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = uint8_t('a' + i % 26);
  for (double depth : {0.0, 0.5, 1.0}) {
    const auto s = passkey_sample(text, 300, depth, 4, 7);
    ASSERT_EQ(s.size(), 301u);
    const std::string str(s.begin(), s.end());
    const std::string key = str.substr(str.size() - 5);
    for (char c : key) EXPECT_TRUE(c >= '0' && c <= '9') << str;
    const auto needle = str.find(" The pass key is " + key + ". Remember it. ");
    ASSERT_NE(needle, std::string::npos) << str;
    const auto question = str.rfind(" What is the pass key? The pass key is " + key);
    EXPECT_EQ(question + 44, str.size());
    // Depth is the share of filler before the needle.
    const double filler = double(question) - 37;  // the needle is 37 bytes
    EXPECT_NEAR(double(needle) / filler, depth, 0.01) << str;
    EXPECT_EQ(s, passkey_sample(text, 300, depth, 4, 7));
    EXPECT_NE(s, passkey_sample(text, 300, depth, 4, 8));
  }
  EXPECT_THROW(passkey_sample(text, 60, 0.5, 4, 7), std::invalid_argument);
}

struct HookStop : std::runtime_error {
  HookStop() : std::runtime_error("stopped by a hook") {}
};

// Counts the calls; after_pass throws HookStop on call `stop_at` (0: never).
struct CountedHooks {
  int passes = 0, stop_at = 0;
  std::vector<std::pair<std::size_t, std::size_t>> units;
  WorkHooks hooks() {
    return {[this] {
              if (++passes == stop_at) throw HookStop();
            },
            [this](std::size_t done, std::size_t total) { units.push_back({done, total}); }};
  }
};

int forward_passes(int64_t items, int64_t L) { return int((items + eval_batch(L) - 1) / eval_batch(L)); }

// One tiny trained run for the suite (no test is running yet, so no TempDir).
class RunHooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("routelab_" + std::to_string(::getpid()) + "_run_hooks");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    spit(dir_ / "c.toml", tiny_config("learned_qkv", 5, 5));
    ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", dir_, dir_).status, 0);
    run_ = (dir_ / "run").string();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path dir_;
  static std::string run_;
};
fs::path RunHooks::dir_;
std::string RunHooks::run_;

TEST_F(RunHooks, evaluate_calls_after_pass_once_per_forward_pass) {
  TrainedRun run = load_trained_run(run_, "1024");
  const auto model = trained_run_backend(run, {});
  CountedHooks c;
  const EvalResult r = evaluate(*model, run.corpus.val, 1024, nullptr, c.hooks().after_pass);
  ASSERT_GT(forward_passes(r.windows, 1024), 1);  // several passes, so "once per pass" is seen
  EXPECT_EQ(c.passes, forward_passes(r.windows, 1024));
  CountedHooks stop;
  stop.stop_at = 1;
  EXPECT_THROW(evaluate(*model, run.corpus.val, 1024, nullptr, stop.hooks().after_pass), HookStop);
  EXPECT_EQ(stop.passes, 1);
}

TEST_F(RunHooks, passkey_calls_its_hooks_and_a_throw_writes_nothing) {
  TempDir out;
  const int trials = eval_batch(1024) + 1;  // two passes per length and depth
  CountedHooks c;
  passkey_run(run_, "1024", {0, 1}, trials, 1, (out / "pk.csv").string(), false, {}, c.hooks());
  EXPECT_EQ(c.passes, 2 * forward_passes(trials, 1024));
  EXPECT_EQ(c.units, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 2}, {2, 2}}));
  ASSERT_TRUE(fs::exists(out / "pk.csv"));
  // Stopped inside the second unit, after its first pass.
  TempDir stopped("_stopped");
  CountedHooks stop;
  stop.stop_at = forward_passes(trials, 1024) + 1;
  EXPECT_THROW(passkey_run(run_, "1024", {0, 1}, trials, 1, (stopped / "pk.csv").string(), false, {}, stop.hooks()),
               HookStop);
  EXPECT_EQ(stop.units.size(), 1u);
  EXPECT_TRUE(snapshot(stopped.path).empty());
}

TEST_F(RunHooks, probe_calls_its_hooks_and_a_throw_writes_nothing) {
  TempDir out;
  ProbeOptions o;
  o.runs = {run_};
  o.lengths = "1x,1024";
  o.window = 4;
  o.max_windows = 2 * eval_batch(1024);  // two passes at 1024
  o.csv = (out / "probe.csv").string();
  CountedHooks c;
  o.hooks = c.hooks();
  probe_runs(o);
  // Per length min(max_windows, windows) windows; the phase statistics read every window of the training
  // length 16.
  const int64_t val = int64_t(load_trained_run(run_, "1x").corpus.val.size()) - 1;
  const int lengths_passes = forward_passes(std::min<int64_t>(o.max_windows, val / 16), 16) +
                             forward_passes(std::min<int64_t>(o.max_windows, val / 1024), 1024);
  ASSERT_GT(forward_passes(val / 16, 16), 1);
  EXPECT_EQ(c.passes, lengths_passes + forward_passes(val / 16, 16));
  EXPECT_EQ(c.units, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 3}, {2, 3}, {3, 3}}));
  ASSERT_TRUE(fs::exists(out / "probe.csv"));
  // Stopped in the 1024 length's passes, and again in the phase statistics: nothing written either time.
  for (int stop_at : {2, lengths_passes + 1}) {
    TempDir stopped("_stopped_" + std::to_string(stop_at));
    CountedHooks stop;
    stop.stop_at = stop_at;
    o.hooks = stop.hooks();
    o.csv = (stopped / "probe.csv").string();
    EXPECT_THROW(probe_runs(o), HookStop);
    EXPECT_TRUE(snapshot(stopped.path).empty()) << stop_at;
  }
}

}  // namespace
