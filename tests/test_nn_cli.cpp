// routelab train / eval / experiment as a user meets them: a killed run
// resumes to the same bytes, evaluation writes its CSVs and protocol, and
// every refusal is one line, exit status 2, nothing overwritten.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "io/sha256.h"
#include "runs/run_dir.h"

namespace {

using namespace routelab::testing;

// The step of a run directory's checkpoint (0 if none yet).
int checkpoint_step(const fs::path& run) {
  const std::string ck = slurp(run / "checkpoint.bin");
  const auto at = ck.find("\"step\":");
  return at == std::string::npos ? 0 : std::stoi(ck.substr(at + 7));
}

// Starts `routelab ARGS...` and SIGKILLs it `ms` milliseconds after its
// checkpoint in `run` first shows a step past `after` (or when it ends).
void run_and_kill(const std::vector<std::string>& args, const fs::path& run, int after, int ms) {
  const std::string& bin = routelab_binary();
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stderr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (checkpoint_step(run) > after) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

TEST(nn_cli, killed_runs_resume_to_the_same_final_weights) {
  TempDir tmp;
  const int steps = 1500;
  spit(tmp / "c.toml", tiny_config("random_qkv", steps, 7));
  const auto whole = run_routelab("train --config c.toml --out whole --quiet --threads 1", tmp.path, tmp.path);
  ASSERT_EQ(whole.status, 0) << whole.err;
  const std::string cfg = (tmp / "c.toml").string(), out = (tmp / "killed").string();
  // Killed twice, a few milliseconds past a checkpoint (so mid-step), and
  // resumed each time, on another thread count.
  run_and_kill({"train", "--config", cfg, "--out", out, "--quiet", "--threads", "2"}, tmp / "killed", 100, 3);
  EXPECT_LT(checkpoint_step(tmp / "killed"), steps);
  run_and_kill({"train", "--config", cfg, "--out", out, "--quiet", "--resume", "--threads", "1"}, tmp / "killed",
               checkpoint_step(tmp / "killed") + 100, 2);
  EXPECT_LT(checkpoint_step(tmp / "killed"), steps);
  const auto resumed = run_routelab("train --config c.toml --out killed --quiet --resume --threads 1", tmp.path,
                                    tmp.path);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const std::string a = slurp(tmp / "whole/checkpoint.bin"), b = slurp(tmp / "killed/checkpoint.bin");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "a resumed run ended on other weights than an uninterrupted one";
  // The log has one row per logged step, none twice.
  EXPECT_EQ(count_lines(slurp(tmp / "killed/train.csv")), 1 + steps / 5);
}

// A tiny run of `scheme` trained for `steps` in tmp/run (config tmp/c.toml).
void train_tiny_run(const TempDir& tmp, const std::string& scheme, int steps) {
  spit(tmp / "c.toml", tiny_config(scheme, steps, 10));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
}

// [train] data_seed draws the batches and nothing else: equal to seed it is
// the default; otherwise it changes the run, and a run of another seed with
// the same batches still differs (seed draws the weights and angles).
TEST(nn_cli, data_seed_changes_the_batches_and_only_them) {
  TempDir tmp;
  const auto losses = [&](const std::string& name, const std::string& train_keys) {
    std::string c = tiny_config("random_qk", 10, 10);
    c.replace(c.find("[train]\n"), 8, "[train]\n" + train_keys);
    spit(tmp / (name + ".toml"), c);
    const auto r = run_routelab("train --config " + name + ".toml --out " + name + " --quiet", tmp.path, tmp.path);
    EXPECT_EQ(r.status, 0) << r.err;
    // step, loss, lr and grad_norm; the timings differ from run to run.
    std::string out;
    std::istringstream in(slurp(tmp / name / "train.csv"));
    for (std::string line; std::getline(in, line);) {
      std::size_t cut = 0;
      for (int k = 0; k < 4 && cut != std::string::npos; ++k) cut = line.find(',', cut + 1);
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  const std::string seed1 = losses("a", "");
  EXPECT_EQ(count_lines(seed1), 3) << seed1;
  EXPECT_EQ(losses("b", "data_seed = 1\n"), seed1);
  const std::string other_batches = losses("c", "data_seed = 2\n");
  EXPECT_NE(other_batches, seed1);
  EXPECT_NE(losses("d", "seed = 2\n"), other_batches);
}

TEST(nn_cli, eval_writes_bits_per_byte_positions_and_protocol) {
  TempDir tmp;
  train_tiny_run(tmp, "learned_qkv", 20);
  const auto r = run_routelab("eval --run run --lengths 1x,4x,64 --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string csv = slurp(tmp / "run/eval.csv");
  EXPECT_EQ(csv, r.out);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "scheme,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl");
  EXPECT_EQ(count_lines(csv), 4);
  EXPECT_NE(csv.find("\nlearned_qkv,1,16,64,"), std::string::npos);
  const std::string pos = slurp(tmp / "run/eval-positions.csv");
  EXPECT_EQ(pos.substr(0, pos.find('\n')), "scheme,seed,train_len,eval_len,pos_lo,pos_hi,tokens,bits_per_byte");
  EXPECT_EQ(count_lines(pos), 1 + 5 + 7 + 7);  // log2 bins of 16, 64, 64
  const auto side = nlohmann::json::parse(slurp(tmp / "run/eval.csv.json"));
  EXPECT_EQ(side["protocol"]["stride"], "L");
  EXPECT_EQ(side["checkpoint_step"], 20);
  // Random angles or not, the same run evaluates to the same bytes.
  ASSERT_EQ(run_routelab("eval --run run --lengths 1x,4x,64 --quiet --out again.csv", tmp.path, tmp.path).status, 0);
  EXPECT_EQ(slurp(tmp / "again.csv"), csv);
}

TEST(nn_cli, quick_experiment_gathers_every_scheme_and_length) {
  TempDir tmp;
  spit(tmp / "e.toml", "[experiment]\nschemes = [\"rope\", \"alibi\"]\nseeds = [1, 2]\nlengths = \"8x,16x\"\n"
                       "out = \"runs\"\ncsv = \"out/x.csv\"\npasskey_trials = 2\npasskey_depths = [0.5]\n"
                       "passkey_lengths = \"16x\"\n" +
                           tiny_config("nope", 10, 5));
  const auto r = run_routelab("experiment e.toml --no-plot --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(slurp(tmp / "out/x.csv")), 1 + 2 * 2 * 2);
  EXPECT_TRUE(fs::exists(tmp / "out/x-positions.csv"));
  EXPECT_EQ(count_lines(slurp(tmp / "out/x-passkey.csv")), 1 + 2 * 2 * 1);  // passkey at 16x only
  EXPECT_TRUE(fs::exists(tmp / "runs/alibi-s2/checkpoint.bin"));
  // A second call finds everything done and gives the same CSV.
  const std::string first = slurp(tmp / "out/x.csv");
  ASSERT_EQ(run_routelab("experiment e.toml --no-plot --quiet", tmp.path, tmp.path).status, 0);
  EXPECT_EQ(slurp(tmp / "out/x.csv"), first);
  // Passkey windows shorter than a key's frame are refused by name.
  spit(tmp / "short.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nlengths = \"16x\"\nout = \"r2\"\n"
                           "csv = \"out2/x.csv\"\npasskey_trials = 2\npasskey_lengths = \"1x\"\n" +
                               tiny_config("nope", 10, 5));
  expect_refusal(run_routelab("experiment short.toml --no-plot --quiet", tmp.path, tmp.path),
                 "passkey_lengths: 16 is too short for passkey windows");
  EXPECT_FALSE(fs::exists(tmp / "out2"));

  // --only reruns one scheme and keeps the other's rows byte for byte, even
  // with its runs gone; the rerun scheme's rows come back the same (same
  // seeds, same bytes).
  const std::string first_pos = slurp(tmp / "out/x-positions.csv"), first_pk = slurp(tmp / "out/x-passkey.csv"),
                    first_loss = slurp(tmp / "out/x-loss.csv");
  fs::remove_all(tmp / "runs/rope-s1");
  fs::remove_all(tmp / "runs/rope-s2");
  fs::remove_all(tmp / "runs/alibi-s2");
  const auto o = run_routelab("experiment e.toml --no-plot --quiet --only alibi", tmp.path, tmp.path);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_FALSE(fs::exists(tmp / "runs/rope-s1"));
  EXPECT_TRUE(fs::exists(tmp / "runs/alibi-s2/checkpoint.bin"));
  EXPECT_EQ(slurp(tmp / "out/x.csv"), first);
  EXPECT_EQ(slurp(tmp / "out/x-positions.csv"), first_pos);
  EXPECT_EQ(slurp(tmp / "out/x-passkey.csv"), first_pk);
  // The removed rope runs' loss curves come from the existing -loss.csv.
  EXPECT_EQ(slurp(tmp / "out/x-loss.csv"), first_loss);
  EXPECT_EQ(nlohmann::json::parse(slurp(tmp / "out/x.csv.json"))["only"], nlohmann::json::array({"alibi"}));
  // Refusals come before any work and leave the CSVs as they were.
  expect_refusal(run_routelab("experiment e.toml --no-plot --quiet --only nope", tmp.path, tmp.path),
                 "--only: 'nope' is not a scheme of this experiment; its schemes: rope, alibi");
  expect_refusal(run_routelab("experiment e.toml --no-plot --quiet --only alibi,alibi", tmp.path, tmp.path),
                 "--only lists 'alibi' twice");
  std::string damaged = first;
  damaged.erase(damaged.find("\nrope,2,"));
  spit(tmp / "out/x.csv", damaged + "\n");
  expect_refusal(run_routelab("experiment e.toml --no-plot --quiet --only alibi", tmp.path, tmp.path),
                 "has no rows for runs/rope-s2");
  EXPECT_EQ(slurp(tmp / "out/x.csv"), damaged + "\n");
  spit(tmp / "o.toml", "[experiment]\nschemes = [\"rope\", \"alibi\"]\nseeds = [1]\nlengths = \"8x\"\n"
                       "out = \"runs\"\ncsv = \"none/x.csv\"\n" + tiny_config("nope", 10, 5));
  expect_refusal(run_routelab("experiment o.toml --no-plot --quiet --only alibi", tmp.path, tmp.path),
                 "which does not exist; run without --only first");
  EXPECT_FALSE(fs::exists(tmp / "none"));
}

// [experiment.sweep] and [[experiment.arms]]: one run per point a key
// changes, named by the values that differ from the base config, one CSV
// column per swept key (empty where the scheme does not read it), and every
// bad sweep refused before anything is written.
TEST(nn_cli, sweeps_run_each_point_once_and_name_it_by_its_values) {
  TempDir tmp;
  const std::string head = "[experiment]\nseeds = [1]\nlengths = \"1x,2x\"\nout = \"runs\"\ncsv = \"out/x.csv\"\n";
  const std::string sweep = "schemes = [\"rope\", \"learned_qk\"]\n[experiment.sweep]\nlearned_init = [\"normal\", "
                            "\"uniform\"]\nlearned_sigma = [0.5, 1]\n";
  const std::string arm = "[[experiment.arms]]\nschemes = [\"learned_qk\"]\nseeds = [2]\nsweep = { learned_shared = "
                          "[true] }\n";
  spit(tmp / "e.toml", head + sweep + arm + tiny_config("nope", 6, 3));
  const auto r = run_routelab("experiment e.toml --no-plot --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  // rope reads neither key: once. learned_qk: normal at 0.5 and 1, uniform
  // once (it does not read sigma); the arm's shared table at seed 2.
  std::vector<std::string> dirs;
  for (const auto& d : fs::directory_iterator(tmp / "runs")) dirs.push_back(d.path().filename().string());
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(dirs, (std::vector<std::string>{"learned_qk-learned_init=uniform-s1", "learned_qk-learned_shared=true-s2",
                                            "learned_qk-learned_sigma=0.5-s1", "learned_qk-s1", "rope-s1"}));
  const std::string csv = slurp(tmp / "out/x.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "scheme,learned_init,learned_sigma,learned_shared,seed,train_len,eval_len,"
                                            "windows,tokens,bits_per_byte,ppl");
  EXPECT_EQ(count_lines(csv), 1 + 5 * 2);
  EXPECT_NE(csv.find("\nrope,,,,1,16,16,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nlearned_qk,uniform,,false,1,16,32,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nlearned_qk,normal,0.5,false,1,16,16,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nlearned_qk,normal,1,true,2,16,16,"), std::string::npos) << csv;
  const std::string positions = slurp(tmp / "out/x-positions.csv");
  EXPECT_EQ(positions.substr(0, positions.find(',', positions.find(',', positions.find(',') + 1) + 1)),
            "scheme,learned_init,learned_sigma");
  // Seeds outermost across arms: seed 2's run is the last.
  const auto side = nlohmann::json::parse(slurp(tmp / "out/x.csv.json"));
  EXPECT_EQ(side["runs"].back()["run"], "runs/learned_qk-learned_shared=true-s2");
  EXPECT_EQ(side["swept_keys"], (std::vector<std::string>{"learned_init", "learned_sigma", "learned_shared"}));

  const std::pair<std::string, std::string> bad[] = {
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlearned_sigmaa = [1]\n", "'learned_sigmaa' is not a key"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlearned_sigma = []\n", "non-empty list"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlearned_sigma = [1, 1.0]\n", "lists 1 twice"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlearned_sigma = [0.1, -1]\n",
       "learned_sigma must be a number in (0, 1000]"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlearned_init = [\"zero\"]\n", "learned_init must be one of"},
      {"schemes = [\"rope\", \"alibi\"]\n[experiment.sweep]\nlearned_sigma = [0.1, 1]\n",
       "learned_sigma is read by none of the schemes rope, alibi"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nseed = [1, 2]\n", "list them in schemes and seeds"},
      {"schemes = [\"learned_qk\"]\n[experiment.sweep]\nlr = 0.1\n", "lr must be a non-empty list"},
      {"[[experiment.arms]]\nschemes = [\"rope\"]\nswep = { lr = [1] }\n", "unknown key swep"},
      {"[[experiment.arms]]\nschemes = [\"rope\"]\nsweep = { householder_beta = [\"reflection\"] }\n",
       "householder_beta is read by none of the schemes rope"},
  };
  for (const auto& [text, says] : bad) {
    spit(tmp / "bad.toml", "[experiment]\nseeds = [1]\nlengths = \"1x\"\nout = \"badruns\"\ncsv = \"badout/x.csv\"\n" +
                               text + tiny_config("nope", 6, 3));
    expect_refusal(run_routelab("experiment bad.toml --no-plot --quiet", tmp.path, tmp.path), says);
    EXPECT_FALSE(fs::exists(tmp / "badruns")) << says;
    EXPECT_FALSE(fs::exists(tmp / "badout")) << says;
  }
}

// --by-arm takes each arm's seeds before the next arm (--list shows that
// order, and so does the training), and writes the same CSVs byte for byte.
TEST(nn_cli, experiment_by_arm_changes_the_order_of_the_work_not_the_csvs) {
  TempDir tmp;
  const std::string file = "[experiment]\nschemes = [\"rope\"]\nseeds = [1, 2]\nlengths = \"1x,2x\"\n"
                           "out = \"runs\"\ncsv = \"out/x.csv\"\n[[experiment.arms]]\nschemes = [\"alibi\"]\n" +
                           tiny_config("nope", 4, 2);
  const auto dirs_in_order = [](const std::string& text, const std::string& prefix) {
    std::vector<std::string> out;
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1))
      out.push_back(text.substr(at + prefix.size(), text.find_first_of(" :\n", at + prefix.size()) - at - prefix.size()));
    return out;
  };
  const std::vector<std::string> seed_major = {"rope-s1", "alibi-s1", "rope-s2", "alibi-s2"};
  const std::vector<std::string> arm_major = {"rope-s1", "rope-s2", "alibi-s1", "alibi-s2"};
  std::string csvs[2];
  for (int by_arm = 0; by_arm < 2; ++by_arm) {
    const fs::path dir = tmp / (by_arm ? "arm" : "seed");
    fs::create_directories(dir);
    spit(dir / "e.toml", file);
    const std::string flag = by_arm ? " --by-arm" : "";
    const auto list = run_routelab("experiment e.toml --list" + flag, dir.string(), dir.string());
    ASSERT_EQ(list.status, 0) << list.err;
    EXPECT_EQ(dirs_in_order(list.out, "runs/"), by_arm ? arm_major : seed_major) << list.out;
    const auto r = run_routelab("experiment e.toml --no-plot" + flag, dir.string(), dir.string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(dirs_in_order(r.err, "experiment: training runs/"), by_arm ? arm_major : seed_major) << r.err;
    for (const char* f : {"out/x.csv", "out/x-positions.csv", "out/x-loss.csv"}) csvs[by_arm] += slurp(dir / f);
    const auto side = nlohmann::json::parse(slurp(dir / "out/x.csv.json"));
    EXPECT_EQ(side["runs"][1]["run"], "runs/alibi-s1");
  }
  EXPECT_EQ(csvs[0], csvs[1]);
  EXPECT_EQ(count_lines(slurp(tmp / "seed/out/x.csv")), 1 + 4 * 2);
}

// --new tops up an experiment whose runs' folders are gone (a fresh clone
// has the CSVs, not the runs): it trains only the runs the CSV has no rows
// for and keeps the others' rows, loss curves included, from the existing
// CSVs, so the result is byte for byte what the whole experiment gives.
TEST(nn_cli, experiment_new_trains_only_the_runs_the_csv_lacks) {
  TempDir tmp;
  const auto file = [](const std::string& seeds, const std::string& csv) {
    return "[experiment]\nschemes = [\"rope\"]\nseeds = " + seeds + "\nlengths = \"1x,16x\"\nout = \"runs\"\n" +
           "csv = \"" + csv + "\"\npasskey_trials = 2\npasskey_depths = [0.5]\npasskey_lengths = \"16x\"\n" +
           "[[experiment.arms]]\nschemes = [\"alibi\"]\nseeds = [1]\n" + tiny_config("nope", 4, 2);
  };
  const char* outputs[] = {"out/x.csv", "out/x-positions.csv", "out/x-passkey.csv", "out/x-loss.csv"};
  const auto csvs = [&](const fs::path& dir) {
    std::string all;
    for (const char* f : outputs) all += slurp(dir / f);
    return all;
  };
  const fs::path whole = tmp / "whole", top = tmp / "top";
  fs::create_directories(whole);
  fs::create_directories(top);
  spit(whole / "e.toml", file("[1, 2]", "out/x.csv"));
  ASSERT_EQ(run_routelab("experiment e.toml --no-plot --quiet", whole.string(), whole.string()).status, 0);
  spit(top / "e.toml", file("[1]", "out/x.csv"));
  ASSERT_EQ(run_routelab("experiment e.toml --no-plot --quiet", top.string(), top.string()).status, 0);
  EXPECT_NE(csvs(top), csvs(whole));
  // Seed 2 joins the file after the runs' folders are gone.
  fs::remove_all(top / "runs");
  fs::copy(top / "out", top / "out-seed1");
  spit(top / "e.toml", file("[1, 2]", "out/x.csv"));
  const auto r = run_routelab("experiment e.toml --no-plot --new", top.string(), top.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("experiment: training runs/rope-s2\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("experiment: training runs/rope-s1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("experiment: training runs/alibi-s1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(top / "runs/rope-s1"));
  EXPECT_EQ(csvs(top), csvs(whole));
  EXPECT_EQ(count_lines(slurp(top / "out/x-loss.csv")), 1 + 3);
  const auto side = nlohmann::json::parse(slurp(top / "out/x.csv.json"));
  EXPECT_EQ(side["new_runs"], true);
  EXPECT_EQ(side["runs"][0]["run"], "runs/rope-s1");
  EXPECT_EQ(side["runs"][0]["rows_kept_from_previous_csv"], true);
  EXPECT_FALSE(side["runs"][2].contains("rows_kept_from_previous_csv"));
  // Nothing left to add: nothing trains, and the CSVs stay as they are.
  const auto again = run_routelab("experiment e.toml --no-plot --new", top.string(), top.string());
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.err.find("experiment: training"), std::string::npos) << again.err;
  EXPECT_EQ(csvs(top), csvs(whole));
  // Refusals come before any work.
  expect_refusal(run_routelab("experiment e.toml --no-plot --new --only rope", top.string(), top.string()),
                 "--new and --only do not go together");
  spit(top / "o.toml", file("[1]", "none/x.csv"));
  expect_refusal(run_routelab("experiment o.toml --no-plot --new", top.string(), top.string()),
                 "which does not exist; run without --new first");
  EXPECT_FALSE(fs::exists(top / "none"));
  EXPECT_EQ(csvs(top), csvs(whole));
  // --new --finished, the results so far: from seed 1's CSVs, with seeds 2
  // and 3 in the file and only seed 2 trained, the CSVs gain seed 2's rows
  // and nothing trains; seed 3 is left for a later --new.
  fs::remove_all(top / "out");
  fs::copy(top / "out-seed1", top / "out");
  spit(top / "e.toml", file("[1, 2, 3]", "out/x.csv"));
  const auto so_far = run_routelab("experiment e.toml --no-plot --new --finished", top.string(), top.string());
  ASSERT_EQ(so_far.status, 0) << so_far.err;
  EXPECT_EQ(so_far.err.find("experiment: training"), std::string::npos) << so_far.err;
  EXPECT_FALSE(fs::exists(top / "runs/rope-s3"));
  EXPECT_EQ(csvs(top), csvs(whole));
  const auto side3 = nlohmann::json::parse(slurp(top / "out/x.csv.json"));
  int unfinished = 0;
  for (const auto& run : side3["runs"]) unfinished += run.value("unfinished", false);
  EXPECT_EQ(side3["runs"].back()["run"], "runs/rope-s3");
  EXPECT_EQ(side3["runs"].back()["unfinished"], true);
  EXPECT_EQ(unfinished, 1);
}

// [data] corpus is sweepable: the same schemes on a second corpus, the run
// named by the folder's last part (a path would nest directories), the CSV
// cell the path as given.
TEST(nn_cli, a_sweep_over_the_corpus_names_runs_by_the_folder) {
  TempDir tmp;
  fs::create_directories(tmp / "data");
  fs::copy(kSlice, tmp / "data/second");
  spit(tmp / "e.toml", "[experiment]\nseeds = [1]\nlengths = \"1x\"\nout = \"runs\"\ncsv = \"out/x.csv\"\n"
                       "[[experiment.arms]]\nschemes = [\"rope\"]\nsweep = { corpus = [\"data/second\"] }\n" +
                           tiny_config("nope", 4, 2));
  const auto r = run_routelab("experiment e.toml --no-plot --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(tmp / "runs/rope-corpus=second-s1/config.toml"));
  const std::string csv = slurp(tmp / "out/x.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "scheme,corpus,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl");
  EXPECT_NE(csv.find("\nrope,data/second,1,16,16,"), std::string::npos) << csv;
  EXPECT_NE(slurp(tmp / "runs/rope-corpus=second-s1/config.toml").find("corpus = 'data/second'"),
            std::string::npos);
}

// --finished: the rows of the runs already done, nothing trained.
TEST(nn_cli, experiment_finished_gathers_the_runs_done_so_far) {
  TempDir tmp;
  const std::string head = "seeds = [1]\nlengths = \"1x,2x\"\nout = \"runs\"\ncsv = \"out/x.csv\"\n";
  spit(tmp / "one.toml", "[experiment]\nschemes = [\"rope\"]\n" + head + tiny_config("nope", 4, 2));
  ASSERT_EQ(run_routelab("experiment one.toml --no-plot --quiet", tmp.path, tmp.path).status, 0);
  const std::string rope_rows = slurp(tmp / "out/x.csv");
  spit(tmp / "two.toml", "[experiment]\nschemes = [\"rope\", \"alibi\"]\n" + head + tiny_config("nope", 4, 2));
  const auto r = run_routelab("experiment two.toml --no-plot --quiet --finished", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "out/x.csv"), rope_rows);
  EXPECT_FALSE(fs::exists(tmp / "runs/alibi-s1"));
  const auto side = nlohmann::json::parse(slurp(tmp / "out/x.csv.json"));
  EXPECT_EQ(side["runs"][1]["run"], "runs/alibi-s1");
  EXPECT_EQ(side["runs"][1]["unfinished"], true);
  // The loss curve in blocks of 100 steps: the 4 steps of rope-s1 (log_every
  // 5 logs none but the last) are one block.
  const std::string loss = slurp(tmp / "out/x-loss.csv");
  EXPECT_EQ(loss.substr(0, loss.find('\n')), "scheme,seed,step,loss");
  EXPECT_EQ(count_lines(loss), 2) << loss;
  EXPECT_EQ(loss.find("\nrope,1,100,"), loss.find('\n')) << loss;
  expect_refusal(run_routelab("experiment two.toml --no-plot --finished --only alibi", tmp.path, tmp.path),
                 "--finished and --only do not go together");
}

TEST(nn_cli, passkey_writes_one_row_per_length_and_depth) {
  TempDir tmp;
  train_tiny_run(tmp, "learned_qkv_forget", 10);
  const auto r = run_routelab("passkey --run run --lengths 8x,128 --depths 0,1 --trials 3 --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "scheme,seed,train_len,eval_len,depth,trials,accuracy,digit_accuracy,key_bits_per_byte");
  EXPECT_EQ(count_lines(r.out), 1 + 2 * 2);
  EXPECT_EQ(slurp(tmp / "run/passkey.csv"), r.out);
  expect_refusal(run_routelab("passkey --run run --lengths 1x", tmp.path, tmp.path), "too short for a passkey");
  expect_refusal(run_routelab("passkey --run run --lengths 128 --depths 2", tmp.path, tmp.path), "[0, 1]");
  expect_refusal(run_routelab("passkey --run run --lengths 128 --depths 0,,1", tmp.path, tmp.path), "no empty item");
  // Lengths past the validation stream are bad input everywhere (eval and
  // passkey used to exit 1), and an empty --out is not "the default".
  for (const char* cmd : {"eval", "passkey", "probe"})
    expect_refusal(run_routelab(std::string(cmd) + " --run run --lengths 100000", tmp.path, tmp.path),
                   "longer than the validation stream");
  expect_refusal(run_routelab("eval --run run --lengths 1x --out ''", tmp.path, tmp.path), "--out: an empty path");
  expect_refusal(run_routelab("probe --run run --lengths 1x --csv ''", tmp.path, tmp.path), "--csv: an empty path");
}

TEST(nn_cli, bad_configs_are_refused_before_any_file_is_written) {
  TempDir tmp;
  const std::pair<std::string, std::string> cases[] = {
      {tiny_config("rope", 5, 5) + "[extra]\nx = 1\n", "unknown table or key 'extra'"},
      {"[model]\nlayerz = 2\n", "unknown key [model] layerz"},
      {"[model]\nscheme = \"xpos\"\n", "scheme 'xpos' is unknown; accepted: nope, rope"},
      {"[model]\nd_model = 30\nheads = 4\n", "does not divide d_model"},
      {"[model]\nd_model = 12\nheads = 2\nscheme = \"random_qk\"\nmlp_ratio = 1\n[model.x]\n", "unknown key"},
      {"[model]\nd_model = 18\nheads = 2\nscheme = \"rope_qkv\"\n", "must be even (it is 9)"},
      {"[model\n", "not valid TOML"},
      {"[train]\nbeta1 = 1\n", "[train] beta1 must be a number in [0, 1)"},
      {"[train]\nbeta2 = 1.0\n", "[train] beta2 must be a number in [0, 1)"},
  };
  for (const auto& [text, says] : cases) {
    spit(tmp / "bad.toml", text);
    expect_refusal(run_routelab("train --config bad.toml --out run", tmp.path, tmp.path), says);
    EXPECT_FALSE(fs::exists(tmp / "run")) << says;
  }
  expect_refusal(run_routelab("eval --run nowhere", tmp.path, tmp.path), "not a run directory");
  // A folder or a missing file given as the config is named as such, not
  // read as an empty config (which then blamed the corpus).
  fs::create_directories(tmp / "folder");
  expect_refusal(run_routelab("train --config folder --out run", tmp.path, tmp.path), "not a regular file");
  expect_refusal(run_routelab("train --config nothing.toml --out run", tmp.path, tmp.path), "no such file");
  expect_refusal(run_routelab("experiment folder", tmp.path, tmp.path), "not a regular file");
  expect_refusal(run_routelab("train --config bad.toml --threads 0", tmp.path, tmp.path),
                 "is not accepted; an integer in [1, 1024]");
  EXPECT_FALSE(fs::exists(tmp / "run"));
  // Repeated seeds or schemes would train once and write every row twice.
  for (const std::string& list : {std::string("schemes = [\"rope\", \"rope\"]\nseeds = [1]\n"),
                                  std::string("schemes = [\"rope\"]\nseeds = [1, 2, 1]\n")}) {
    spit(tmp / "e.toml", "[experiment]\n" + list + "out = \"r\"\ncsv = \"o/x.csv\"\n" + tiny_config("rope", 5, 5));
    expect_refusal(run_routelab("experiment e.toml --no-plot", tmp.path, tmp.path), "twice");
    EXPECT_FALSE(fs::exists(tmp / "r"));
  }
}

TEST(nn_cli, missing_or_damaged_corpus_says_how_to_fix_it) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 5, 5, (tmp / "nocorpus").string()));
  expect_refusal(run_routelab("train --config c.toml --out run", tmp.path, tmp.path), "fetch-corpus.sh");
  EXPECT_FALSE(fs::exists(tmp / "run"));
  fs::copy(kSlice, tmp / "damaged", fs::copy_options::recursive);
  std::string text = slurp(tmp / "damaged/val.txt");
  text[100] ^= 1;
  spit(tmp / "damaged/val.txt", text);
  spit(tmp / "d.toml", tiny_config("rope", 5, 5, (tmp / "damaged").string()));
  expect_refusal(run_routelab("train --config d.toml --out run", tmp.path, tmp.path), "damaged");
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

TEST(nn_cli, a_run_directory_is_never_overwritten) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 10, 5));
  spit(tmp / "other.toml", tiny_config("alibi", 10, 5));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  const std::string before = slurp(tmp / "run/checkpoint.bin");
  expect_refusal(run_routelab("train --config c.toml --out run", tmp.path, tmp.path), "pass --resume");
  expect_refusal(run_routelab("train --config other.toml --out run --resume", tmp.path, tmp.path),
                 "written for another configuration: [model] scheme = \"rope\", not \"alibi\"");
  expect_refusal(run_routelab("eval --run run --lengths 2y", tmp.path, tmp.path), "--lengths: '2y'");
  EXPECT_EQ(slurp(tmp / "run/checkpoint.bin"), before);
  EXPECT_FALSE(fs::exists(tmp / "run/eval.csv"));
  // A damaged checkpoint is named as such: a flipped weight byte, a flipped
  // header byte, the step edited (it used to resume silently elsewhere), the
  // parameter count edited (it used to be allocated), a cut file.
  const std::size_t header = before.find('\n', before.find('\n') + 1);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string ck = before;
    const auto at = ck.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at < header) ck.replace(at, from.size(), to);
    return ck;
  };
  std::string flipped = before;
  flipped[flipped.size() - 100] ^= 1;
  std::string flipped_header = before;
  flipped_header[header - 5] ^= 1;
  for (const std::string& ck : {flipped, flipped_header, edited("\"step\":10", "\"step\":-3"),
                                edited("\"step\":10", "\"step\":5"), before.substr(0, before.size() - 30),
                                edited("\"params\":", "\"params\":9")}) {
    spit(tmp / "run/checkpoint.bin", ck);
    expect_refusal(run_routelab("eval --run run --lengths 1x", tmp.path, tmp.path), "is damaged");
    expect_refusal(run_routelab("train --config c.toml --out run --resume", tmp.path, tmp.path), "is damaged");
  }
}

// Version 1 checkpoints (the sha256 of the weights in the header) still load;
// their step and sizes are checked.
TEST(nn_cli, version_1_checkpoints_load_with_their_header_checked) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 10, 5));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  const std::string v2 = slurp(tmp / "run/checkpoint.bin");
  const std::size_t l1 = v2.find('\n'), l2 = v2.find('\n', l1 + 1);
  const std::string payload = v2.substr(l2 + 1, v2.size() - 65 - l2 - 1);
  nlohmann::json header = nlohmann::json::parse(v2.substr(l1 + 1, l2 - l1 - 1));
  header["sha256"] = routelab::sha256_hex(payload.data(), payload.size());
  auto v1 = [&](const nlohmann::json& h) { return "routelab-checkpoint 1\n" + h.dump() + "\n" + payload; };
  spit(tmp / "run/checkpoint.bin", v1(header));
  const auto r = run_routelab("eval --run run --lengths 1x --quiet", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json bad = header;
  bad["step"] = 11;  // past the configured 10 steps
  spit(tmp / "run/checkpoint.bin", v1(bad));
  expect_refusal(run_routelab("eval --run run --lengths 1x", tmp.path, tmp.path), "step 11 is outside [0, 10]");
}

// The largest weight difference between two runs' final checkpoints, relative
// to the largest weight.
double weight_gap(const fs::path& a, const fs::path& b) {
  const auto x = routelab::runs::load_checkpoint(a.string()).params;
  const auto y = routelab::runs::load_checkpoint(b.string()).params;
  EXPECT_EQ(x.size(), y.size());
  double gap = 0, scale = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    gap = std::max(gap, double(std::abs(x[i] - y[i])));
    scale = std::max(scale, double(std::abs(x[i])));
  }
  return gap / scale;
}

int routelab_lines(const std::string& err) {
  int n = 0;
  for (std::size_t at = err.find("routelab:"); at != std::string::npos; at = err.find("routelab:", at + 1))
    n += at == 0 || err[at - 1] == '\n';
  return n;
}

// Data-parallel training: two ranks, each with half of every batch, reach one
// process's weights up to float rounding (the gradient sums run in another
// order). Random angles make sure each rank draws its own elements' angles.
TEST(nn_cli, mpirun_two_ranks_reach_the_single_process_weights) {
#ifndef ROUTELAB_MPIEXEC
  GTEST_SKIP() << "built without MPI (install libopenmpi-dev and reconfigure)";
#else
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("random_qkv", 30, 10));
  spit(tmp / "half.toml", std::regex_replace(tiny_config("random_qkv", 30, 10), std::regex("batch = 4"), "batch = 2"));
  const std::string mpirun = std::string("cd '") + tmp.path.string() +
                             "' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + ROUTELAB_MPIEXEC +
                             " -np 2 --oversubscribe " + routelab_binary() + " ";
  ASSERT_EQ(run_routelab("train --config c.toml --out one --threads 1 --quiet", tmp.path, tmp.path).status, 0);
  ASSERT_EQ(std::system((mpirun + "train --config c.toml --out two --threads 1 --quiet 2>err").c_str()), 0)
      << slurp(tmp / "err");
  ASSERT_EQ(run_routelab("train --config half.toml --out half --threads 1 --quiet", tmp.path, tmp.path).status, 0);
  // Float rounding after 30 Adam steps stays below 1e-4 of the largest
  // weight; a run that saw only half of each batch (what a rank that skipped
  // the all-reduce would train on) lands far outside it.
  const double gap = weight_gap(tmp / "one/checkpoint.bin", tmp / "two/checkpoint.bin");
  EXPECT_LT(gap, 1e-4);
  EXPECT_GT(weight_gap(tmp / "one/checkpoint.bin", tmp / "half/checkpoint.bin"), 100 * std::max(gap, 1e-6));
  EXPECT_EQ(slurp(tmp / "one/train.csv").substr(0, 40), slurp(tmp / "two/train.csv").substr(0, 40));
  // A batch that does not split over the ranks, and the commands that do not
  // split at all, are refused in one line.
  spit(tmp / "odd.toml", std::regex_replace(tiny_config("rope", 5, 5), std::regex("batch = 4"), "batch = 3"));
  EXPECT_EQ(WEXITSTATUS(std::system((mpirun + "train --config odd.toml --out odd --quiet 2>err").c_str())), 2);
  // One line from routelab (mpirun adds its own report of the exit status).
  EXPECT_EQ(routelab_lines(slurp(tmp / "err")), 1) << slurp(tmp / "err");
  EXPECT_NE(slurp(tmp / "err").find("does not split over 2 MPI ranks"), std::string::npos) << slurp(tmp / "err");
  EXPECT_FALSE(fs::exists(tmp / "odd"));
  EXPECT_EQ(WEXITSTATUS(std::system((mpirun + "eval --run one --lengths 1x 2>err").c_str())), 2);
  EXPECT_NE(slurp(tmp / "err").find("runs as one process"), std::string::npos) << slurp(tmp / "err");
  EXPECT_EQ(routelab_lines(slurp(tmp / "err")), 1) << slurp(tmp / "err");
  EXPECT_FALSE(fs::exists(tmp / "one/eval.csv"));
#endif
}

}  // namespace

namespace {

using namespace routelab::testing;

// A model no machine here can hold is refused before anything is allocated
// or written (it used to end in std::bad_alloc and exit status 1).
TEST(nn_cli, impossible_sizes_are_refused_before_allocating) {
  TempDir tmp;
  spit(tmp / "big.toml", "[model]\nd_model = 8192\nheads = 64\nlayers = 256\ncontext = 4096\n[train]\nbatch = 64\n"
                         "[data]\ncorpus = \"" + kSlice + "\"\n");
  expect_refusal(run_routelab("train --config big.toml --out run", tmp.path, tmp.path), "GiB this machine has available");
  EXPECT_FALSE(fs::exists(tmp / "run"));
  spit(tmp / "e.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nout = \"r\"\ncsv = \"o/x.csv\"\n" +
                           slurp(tmp / "big.toml"));
  expect_refusal(run_routelab("experiment e.toml --no-plot", tmp.path, tmp.path), "GiB this machine has available");
  EXPECT_FALSE(fs::exists(tmp / "r"));
  EXPECT_FALSE(fs::exists(tmp / "o"));
}

}  // namespace
