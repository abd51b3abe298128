// Runs of [data] task (lib/runs/: config, training batches, task_eval) on
// their own, and through the command line as a user meets them: the task's
// keys and refusals, fresh sequences per batch element read from their start,
// evaluation sets checked before work and scored by the task's rule (an
// oracle model gets every read right, a constant one errs at the rate the
// law predicts), and the same bytes at any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "cli_helpers.h"
#include "data/flipflop.h"
#include "data/latest_value.h"
#include "nn/backend.h"
#include "runs/config.h"
#include "runs/task_eval.h"
#include "runs/train.h"
#include "stats/intervals.h"

namespace {

using namespace routelab;
using namespace routelab::runs;
using namespace routelab::testing;

RunConfig task_config(const std::string& extra) {
  return parse_run_config(toml::parse("[model]\nd_model = 16\nheads = 2\nlayers = 1\ncontext = 32\n" + extra),
                          "test.toml");
}

TEST(task_runs, config_reads_the_task_and_refuses_what_cannot_be) {
  const RunConfig c = task_config("[data]\ntask = \"flipflop\"\nflipflop_p = 0.9\n");
  EXPECT_TRUE(c.is_task());
  EXPECT_EQ(c.task.name, "flipflop");
  EXPECT_EQ(c.task.p, 0.9);
  EXPECT_EQ(parse_run_config_text(to_toml(c), "again"), c);  // round trip
  EXPECT_EQ(from_json(to_json(c), "json"), c);
  const std::pair<const char*, const char*> cases[] = {
      {"[data]\ntask = \"copy\"\n", "task 'copy' is unknown"},
      {"[data]\ntask = \"flipflop\"\nflipflop_p = 1\n", "flipflop_p must be a number in [0, 1)"},
      {"[data]\ntask = \"latest_value\"\nrecall_keys = 17\n", "recall_keys must be an integer in [1, 16]"},
      {"[data]\ntask = \"latest_value\"\nrecall_values = 11\n", "recall_values must be an integer in [1, 10]"},
      {"[data]\ntask = \"latest_value\"\nrecall_query = 0\n", "recall_query must be a number in (0, 1)"},
      {"[model]\ncontext = 2\n[data]\ntask = \"latest_value\"\n", "context = 2 does not fit task latest_value"},
      {"[model]\ncontext = 33\n[data]\ntask = \"flipflop\"\n", "context = 33 does not fit task flipflop"},
      {"[train]\npasskey_fraction = 0.5\n[data]\ntask = \"flipflop\"\n", "a run of [data] task flipflop has none"},
  };
  for (const auto& [text, want] : cases) {
    const std::string t = std::string("[model]\nd_model = 16\nheads = 2\ncontext = 64\n") + text;
    try {
      // The second [model] of the context case overrides nothing: a TOML
      // table may not repeat, so those cases carry their own.
      parse_run_config(toml::parse(std::string(text).starts_with("[model]") ? text : t), "t.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(task_runs, training_batches_are_fresh_sequences_from_their_start) {
  const data::TaskConfig task{.name = "flipflop", .p = 0.8};
  const int T = 32, B = 3;
  std::vector<int> tok(B * T), tgt(B * T), tok2(B * T), tgt2(B * T);
  const auto reads = task_training_batch(task, T, 0, B, 7, 4, tok.data(), tgt.data());
  ASSERT_EQ(reads.size(), std::size_t(B));
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(tok[b * T], data::kTaskStart);
    EXPECT_EQ(tok[b * T + 1], data::kFlipWrite);
    for (int t = 0; t + 1 < T; ++t) EXPECT_EQ(tgt[b * T + t], tok[b * T + t + 1]);
    for (const auto& r : reads[b]) EXPECT_EQ(tok[b * T + r.at], data::kFlipRead);
  }
  // Element 1 of a rank holding elements 1.. is element 1 of the whole batch.
  const auto reads2 = task_training_batch(task, T, 1, 1, 7, 4, tok2.data(), tgt2.data());
  EXPECT_TRUE(std::equal(tok2.begin(), tok2.begin() + T, tok.begin() + T));
  // Another step, other sequences.
  task_training_batch(task, T, 0, B, 7, 5, tok2.data(), tgt2.data());
  EXPECT_NE(tok, tok2);
}

TaskEvalPlan plan_of(std::string lengths, std::vector<double> p = {}, std::vector<int64_t> distances = {}) {
  TaskEvalPlan plan;
  plan.lengths = std::move(lengths);
  plan.p = std::move(p);
  plan.distances = std::move(distances);
  return plan;
}

TEST(task_runs, sets_are_checked_before_any_work) {
  const RunConfig c = task_config("[data]\ntask = \"flipflop\"\n");
  TaskEvalPlan plan;
  plan.lengths = "1x,2x";
  plan.p = {0.98};
  plan.distances = {2, 30, 64};
  const auto sets = task_sets(c, plan, "--");
  ASSERT_EQ(sets.size(), 6u);
  EXPECT_EQ(sets[0].window, 32);
  EXPECT_EQ(sets[1].window, 64);
  EXPECT_EQ(sets[2].task.p, 0.98);
  EXPECT_EQ(sets[3].window, 32);  // D = 2 fits the training length
  EXPECT_EQ(sets[4].window, 38);  // D = 30 > 3/4 T: D + T/4
  EXPECT_EQ(sets[5].window, 72);
  // Length sets aim at `reads` reads.
  EXPECT_EQ(sets[0].sequences, int(std::ceil(plan.reads / data::expected_reads(c.task, 32))));
  const std::pair<TaskEvalPlan, const char*> bad[] = {
      {plan_of("1x,33"), "--lengths: 33 does not fit task flipflop"},
      {plan_of("1x", {1.0}), "--p: 1 is not accepted"},
      {plan_of("1x", {}, {3}), "--distances: 3 is not accepted"},
      {plan_of("1x", {}, {0}), "--distances: 0 is not accepted"},
      {plan_of("1x,1x"), "is asked twice"},
      {plan_of("1y"), "--lengths: '1y' is not a length"},
  };
  for (const auto& [p, want] : bad) {
    try {
      task_sets(c, p, "--");
      ADD_FAILURE() << want;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  const RunConfig lv = task_config("[data]\ntask = \"latest_value\"\n");
  EXPECT_THROW(task_sets(lv, plan_of("1x", {0.5}), "--"), ConfigError);  // p is flip-flop's
}

// A model that reads the flip-flop rule off its input: at every read it puts
// all its mass on the latest write's bit (oracle), or on '0' always.
class RuleModel final : public nn::ModelBackend {
 public:
  explicit RuleModel(bool oracle) : oracle_(oracle) {}
  std::string device() const override { return "cpu"; }
  std::size_t param_count() const override { return 0; }
  double forward(const int* tokens, const int*, int B, int T, uint64_t, bool, int) override {
    logits_.assign(std::size_t(B) * T * 256, 0.0f);
    losses_.assign(std::size_t(B) * T, 0.0f);
    for (int b = 0; b < B; ++b) {
      int bit = '0';
      for (int t = 0; t < T; ++t) {
        const int x = tokens[b * T + t];
        if (t > 0 && tokens[b * T + t - 1] == data::kFlipWrite) bit = x;
        logits_[(std::size_t(b) * T + t) * 256 + (oracle_ ? bit : '0')] = 1.0f;
      }
    }
    return 0;
  }
  void backward() override {}
  const float* losses() override { return losses_.data(); }
  const float* logits() override { return logits_.data(); }
  void mean_grads_over_ranks() override {}
  double grad_norm() override { return 0; }
  void adamw_update(const nn::TrainConfig&, double, double, int) override {}
  void set_params(const std::vector<float>&) override {}
  void set_optimizer(const nn::AdamW&) override {}
  std::vector<float> params() override { return {}; }
  nn::AdamW optimizer() override { return nn::AdamW(0); }

 private:
  bool oracle_;
  std::vector<float> logits_, losses_;
};

TEST(task_runs, evaluation_scores_reads_by_the_rule) {
  const RunConfig c = task_config("[data]\ntask = \"flipflop\"\n");
  TaskEvalPlan plan = plan_of("1x,4x", {}, {8, 24});
  plan.reads = 4000, plan.distance_reads = 400;
  const auto sets = task_sets(c, plan, "--");
  for (const auto& s : sets) {
    RuleModel oracle(true), zeros(false);
    const TaskSetResult right = evaluate_task_set(oracle, 256, s, 1);
    EXPECT_EQ(right.errors, 0) << s.name();
    EXPECT_GE(right.reads, s.kind == "distance" ? s.sequences : 1) << s.name();
    // Always '0' is wrong exactly when the bit is 1: half the reads.
    const TaskSetResult half = evaluate_task_set(zeros, 256, s, 1);
    EXPECT_GE(clopper_pearson_upper(half.errors, half.reads, kTailAlpha), 0.5) << s.name();
    EXPECT_LE(clopper_pearson_lower(half.errors, half.reads, kTailAlpha), 0.5) << s.name();
    // The same set, the same sequences.
    EXPECT_EQ(evaluate_task_set(zeros, 256, s, 1).errors, half.errors);
  }
}

TEST(task_runs, train_eval_and_experiment_from_the_command_line) {
  TempDir tmp;
  spit(tmp / "ff.toml",
       "[model]\nd_model = 16\nheads = 2\nlayers = 1\ncontext = 32\nscheme = \"learned_qkv\"\n"
       "[train]\nbatch = 4\nsteps = 20\nwarmup = 2\ncheckpoint_every = 10\nlog_every = 5\n"
       "[data]\ntask = \"flipflop\"\n");
  CliResult r = run_routelab("train --config ff.toml --out run --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string log = slurp(tmp / "run/train.csv");
  EXPECT_TRUE(log.starts_with("step,loss,read_error,lr,")) << log;
  const std::string eval = "eval --run run --lengths 1x,2x --p 0.98 --distances 2,16,40 --reads 100 "
                           "--distance-reads 50 --quiet";
  r = run_routelab(eval + " --threads 1 --out a.csv", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(slurp(tmp / "a.csv")), 7);
  EXPECT_TRUE(slurp(tmp / "a.csv").starts_with(task_csv_header()));
  r = run_routelab(eval + " --threads 2 --out b.csv", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "a.csv"), slurp(tmp / "b.csv"));  // the same bytes at any thread count
  // Refusals: one line, exit 2, nothing written.
  const auto before = snapshot(tmp.path);
  for (const char* bad : {"eval --run run --distances 3 --out c.csv", "eval --run run --p 0.5,x --out c.csv",
                          "eval --run run --losses l.csv --out c.csv", "passkey --run run --out c.csv"}) {
    r = run_routelab(bad, tmp.path, tmp.path);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << bad << ": " << r.err;
  }
  EXPECT_EQ(snapshot(tmp.path), before);
  // An experiment of the task: its CSV and loss curve with read_error.
  spit(tmp / "exp.toml", slurp(tmp / "ff.toml") +
                             "[experiment]\nschemes = [\"rope\", \"alibi\"]\nseeds = [1]\nlengths = \"1x,2x\"\n"
                             "out = \"runs\"\ncsv = \"out/ff.csv\"\ntask_distances = [4, 8]\ntask_reads = 50\n"
                             "task_distance_reads = 20\n");
  // (the run table's [data] comes before [experiment] in the text above)
  r = run_routelab("experiment exp.toml --no-plot --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(slurp(tmp / "out/ff.csv")), 1 + 2 * 4);
  EXPECT_TRUE(slurp(tmp / "out/ff-loss.csv").starts_with("scheme,seed,step,loss,read_error\n"));
  EXPECT_FALSE(fs::exists(tmp / "out/ff-positions.csv"));
  r = run_routelab("experiment exp.toml --list", tmp.path, tmp.path);
  EXPECT_NE(r.out.find("runs/alibi-s1 alibi seed=1: done"), std::string::npos) << r.out;
  // A task experiment refuses corpus-only keys before any work.
  spit(tmp / "pk.toml", slurp(tmp / "exp.toml") + "passkey_trials = 2\n");
  r = run_routelab("experiment pk.toml --no-plot", tmp.path, tmp.path);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("a task experiment has none"), std::string::npos) << r.err;
}

}  // namespace
