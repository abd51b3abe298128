// Fuzzing every reader of outside data (issue 16): TOML run and experiment
// configs (and, on their own, an experiment's sweep and arms tables), sim
// flags, checkpoints, the corpus folder, shard partials with their sidecars,
// safetensors exports with their metadata (issue 38), and the claims'
// experiment CSVs, probe angles and their sidecars (issue 35). A seeded random-mutation loop starts from a valid input and
// flips, inserts, deletes, duplicates and truncates bytes; each reader must
// then either succeed or refuse with one of the errors the CLI turns into one
// line and exit status 2 (BadInput, ConfigError, CheckpointError, CorpusError,
// RunDirError, OutputError, SafetensorsError, ClaimsError, CsvError). Any other exception, a crash or a hang is a
// finding. Each reader runs for ROUTELAB_FUZZ_SECONDS (default 1; longer by
// hand) and the test prints its executions.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "claims/claims.h"
#include "claims/task_claims.h"
#include "cli_helpers.h"
#include "io/csv_read.h"
#include "data/brown.h"
#include "groups/family.h"
#include "io/output.h"
#include "io/safetensors.h"
#include "nn/model.h"
#include "runs/config.h"
#include "runs/experiment.h"
#include "runs/export.h"
#include "runs/run_dir.h"
#include "runs/task_eval.h"
#include "runs/train.h"
#include "rng/stream.h"
#include "sims/runner.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

double fuzz_seconds() {
  const char* s = std::getenv("ROUTELAB_FUZZ_SECONDS");
  return s ? std::atof(s) : 1.0;
}

// One random edit of `x`: flip a bit, set a byte, insert or delete a run,
// duplicate a slice, or truncate; bytes are drawn partly from the input
// itself and from characters that matter to the formats.
std::string mutate(std::string x, Stream& s) {
  static const std::string special = "0123456789-+.eE,\"[]{}=:\n \t\\x00nulltruefalseinfnan";
  const int edits = 1 + int(s.below(4));
  for (int e = 0; e < edits; ++e) {
    const std::size_t n = x.size();
    const std::size_t at = n ? std::size_t(s.below(n)) : 0;
    switch (s.below(7)) {
      case 0:
        if (n) x[at] = char(x[at] ^ (1 << s.below(8)));
        break;
      case 1:
        if (n) x[at] = special[s.below(special.size())];
        break;
      case 2:
        x.insert(at, 1 + s.below(8), special[s.below(special.size())]);
        break;
      case 3:
        if (n) x.erase(at, 1 + s.below(16));
        break;
      case 4:
        if (n) x.insert(at, x.substr(s.below(n), 1 + s.below(32)));
        break;
      case 5:
        x.resize(n ? std::size_t(s.below(n)) : 0);
        break;
      default:
        if (n) x[at] = char(s.below(256));
        break;
    }
  }
  return x;
}

// Runs `reader` on mutations of `seed_input` for the time budget; fails on any
// exception outside the documented refusals. Returns the executions.
long long fuzz(const char* name, const std::string& seed_input, const std::function<void(const std::string&)>& reader,
               uint64_t seed) {
  // The starting point itself is accepted, so the mutations explore from a
  // valid input rather than from a refusal.
  try {
    reader(seed_input);
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": the unmutated input is refused: " << e.what();
    return 0;
  }
  Stream s(seed, 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(fuzz_seconds());
  long long runs = 0, refused = 0;
  while (std::chrono::steady_clock::now() < end) {
    const std::string input = mutate(seed_input, s);
    ++runs;
    try {
      reader(input);
    } catch (const BadInput&) {
      ++refused;
    } catch (const runs::ConfigError&) {
      ++refused;
    } catch (const runs::CheckpointError&) {
      ++refused;
    } catch (const data::CorpusError&) {
      ++refused;
    } catch (const runs::RunDirError&) {
      ++refused;
    } catch (const OutputError&) {
      ++refused;
    } catch (const SafetensorsError&) {
      ++refused;
    } catch (const claims::ClaimsError&) {
      ++refused;
    } catch (const CsvError&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": execution " << runs << " threw " << typeid(e).name() << ": " << e.what()
                    << "\ninput:\n"
                    << input;
      return runs;
    }
  }
  std::printf("fuzz %-12s %lld executions, %lld refused, %lld accepted\n", name, runs, refused, runs - refused);
  return runs;
}

// Several files fuzzed as one input: joined by a separator byte, and split
// back (a mutation may drop separators: the last files are then empty).
constexpr char kPartSeparator = '\x1f';
std::string join_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(1, kPartSeparator) : "") + parts[i];
  return out;
}
void spit_parts(const std::string& text, const std::vector<fs::path>& files) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::size_t next = i + 1 < files.size() ? text.find(kPartSeparator, at) : std::string::npos;
    spit(files[i], at > text.size() ? "" : text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next == std::string::npos ? text.size() + 1 : next + 1;
  }
}

TEST(Fuzz, RunAndExperimentConfigs) {
  TempDir tmp;
  const std::string base = tiny_config("learned_qkv", 10, 5);
  const std::string experiment = "[experiment]\nschemes = [\"rope\", \"learned_qk\"]\nseeds = [1, 2]\nlengths = "
                                 "\"1x,2x\"\nout = \"r\"\ncsv = \"o/x.csv\"\npasskey_trials = 2\npasskey_lengths = \"8x\"\n"
                                 "[experiment.sweep]\nlearned_sigma = [0.5, 1]\n"
                                 "[[experiment.arms]]\nschemes = [\"projected_qkv\"]\nsweep = { lr = [0.001] }\n" +
                                 base;
  const fs::path file = tmp / "c.toml";
  EXPECT_GT(fuzz("run config", base, [&](const std::string& text) {
              spit(file, text);
              runs::load_run_config(file.string());
            }, 1), 0);
  EXPECT_GT(fuzz("experiment", experiment, [&](const std::string& text) {
              spit(file, text);
              runs::load_experiment_config(file.string());
            }, 2), 0);
}

// The sweep and arms tables alone are mutated (the rest of the file stays
// valid), so that edits land in them rather than anywhere in a long file; the
// listing expands every point and names its run.
TEST(Fuzz, ExperimentSweepAndArms) {
  TempDir tmp;
  const std::string head = "[experiment]\nschemes = [\"rope\", \"learned_qk\"]\nseeds = [1, 2]\nlengths = \"1x\"\n"
                           "out = \"" + (tmp / "r").string() + "\"\ncsv = \"o/x.csv\"\n";
  const std::string tables = "[experiment.sweep]\nlearned_sigma = [0.5, 1]\nlr = [0.001, 0.002]\n"
                             "[[experiment.arms]]\nschemes = [\"projected_qkv\"]\nseeds = [3]\n"
                             "sweep = { lr = [0.001], heads = [1, 2] }\n"
                             "[[experiment.arms]]\nschemes = [\"alibi\"]\n";
  const std::string base = tiny_config("nope", 10, 5);
  const fs::path file = tmp / "e.toml";
  EXPECT_GT(fuzz("sweep/arms", tables, [&](const std::string& text) {
              spit(file, head + text + base);
              runs::experiment_listing(runs::load_experiment_config(file.string()));
            }, 9), 0);
}

// An export read back: the header (offsets, shapes, dtypes), every tensor's
// values, and the metadata's JSON values. The header is mutated, the data
// kept, so that edits land where the reader decides.
TEST(Fuzz, SafetensorsExport) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("learned_qkv", 10, 5));
  const runs::RunConfig c = runs::load_run_config((tmp / "c.toml").string());
  std::vector<float> params(nn::param_count(c.model));
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = float(i % 97) / 97.0f;
  const std::string file = runs::export_safetensors(c, 10, std::string(64, 'a'), params);
  const std::size_t data_start = parse_safetensors(file).data_start;
  EXPECT_GT(fuzz("safetensors", file.substr(0, data_start), [&](const std::string& header) {
              const std::string bytes = header + file.substr(data_start);
              const SafetensorsHeader h = parse_safetensors(bytes);
              for (const auto& t : h.tensors) safetensors_values(bytes, h, t.name);
              for (const auto& [key, value] : h.metadata) {
                const nlohmann::json parsed = nlohmann::json::parse(value, nullptr, false);
                static_cast<void>(parsed);
              }
            }, 10), 0);
}

// What `routelab claims` reads: an experiment's CSV and sidecar, a probe's
// angles CSV and sidecar, mutated as one text (parts split at \x1f), judged
// with every claim.
TEST(Fuzz, ClaimsInputs) {
  TempDir tmp;
  std::string csv = "scheme,context,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl\n";
  for (const char* scheme : {"rope", "random_qk", "random_qkv", "learned_qk", "learned_qkv", "alibi"})
    for (int seed = 1; seed <= 2; ++seed)
      for (int r : {1, 2, 4, 8, 16, 32, 64})
        csv += std::string(scheme) + ",128," + std::to_string(seed) + ",128," + std::to_string(128 * r) + ",3,900," +
               std::to_string(2.3 + 0.01 * r + 0.001 * seed) + ",5\n";
  const std::string config = R"({"model": {"d_model": 128, "context": 128, "scheme": "rope"}, "train": {"seed": 1, )"
                             R"("steps": 1500}, "data": {"corpus": "data/brown"}})";
  const std::string side = R"({"config": )" + config + R"(, "swept_keys": ["context"]})";
  std::string runs;
  for (const char* scheme : {"random_qk", "rope"})
    runs += std::string(runs.empty() ? "" : ", ") + R"({"run": ")" + scheme + R"(", "config": )" +
            std::string(config).replace(config.find("\"rope\""), 6, std::string("\"") + scheme + "\"") + "}";
  const std::string probe_side = R"({"command": "probe", "runs": [)" + runs + "]}";
  const std::string angles = "run,layer,block,layer_window_median\nrandom_qk,0,0,500\nrandom_qk,1,0,inf\nrope,0,0,inf\n";
  EXPECT_GT(fuzz("claims", join_parts({csv, side, angles, probe_side}), [&](const std::string& text) {
              spit_parts(text, {tmp / "e.csv", tmp / "e.csv.json", tmp / "p-angles.csv", tmp / "p.csv.json"});
              const auto settings = claims::read_settings({(tmp / "e.csv").string()}, {(tmp / "p.csv").string()});
              const auto results = claims::evaluate_claims(settings);
              static_cast<void>(claims::claims_csv(results) + claims::claims_markdown(results));
            }, 11), 0);
}

// The task claims' inputs (issue 51): a task CSV, its sidecar, a probe's
// angles and its sidecar, with a learned and a chance-level run so every rule
// reads rows.
TEST(Fuzz, TaskClaimsInputs) {
  TempDir tmp;
  std::string csv = routelab::runs::task_csv_header();
  for (const char* scheme : {"rope", "rope_qkv", "fox"})
    for (int seed = 1; seed <= 2; ++seed) {
      const std::string head = std::string(scheme) + "," + std::to_string(seed) + ",64,flipflop,";
      for (int r : {1, 2, 4})
        csv += head + "length,0.8," + std::to_string(64 * r) + ",,4,200," + std::to_string(10 * r) + ",0.1,0,1,\n";
      csv += head + "length,0.98,64,,4,200,90,0.45,0,1,\n";
      for (int d : {2, 4, 8, 16, 32})
        csv += head + "distance,0.8,64," + std::to_string(d) + ",40,40," + std::to_string(d > 8 ? 20 : 0) +
               ",0.5,0,1,\n";
    }
  const auto config = [](const char* scheme, int seed) {
    return std::string(R"({"model": {"d_model": 32, "context": 64, "scheme": ")") + scheme +
           R"("}, "train": {"seed": )" + std::to_string(seed) +
           R"(, "steps": 10}, "data": {"task": "flipflop", "flipflop_p": 0.8}})";
  };
  const std::string side = R"({"config": )" + config("rope", 1) + "}";
  const std::string probe_side = R"({"command": "probe", "runs": [{"run": "a", "config": )" + config("rope_qkv", 1) +
                                 R"(}, {"run": "b", "config": )" + config("rope", 2) + "}]}";
  const std::string angles = "run,layer,block,layer_window_median\na,0,0,12\na,0,1,12\nb,0,0,inf\n";
  EXPECT_GT(fuzz("task-claims", join_parts({csv, side, angles, probe_side}), [&](const std::string& text) {
              spit_parts(text, {tmp / "t.csv", tmp / "t.csv.json", tmp / "p-angles.csv", tmp / "p.csv.json"});
              const auto settings = claims::read_task_settings((tmp / "t.csv").string(), {(tmp / "p.csv").string()});
              const auto results = claims::evaluate_task_claims(settings);
              static_cast<void>(claims::claims_csv(results) + claims::task_claims_markdown(results));
            }, 12), 0);
}

TEST(Fuzz, SimFlags) {
  const std::vector<std::string> seed_args = {"--family", "householder,so2", "--d", "4,6", "--a", "0.5", "--n",
                                              "1,5",      "--samples",       "100", "--seed", "3", "--shard", "0/2"};
  std::string joined;
  for (const auto& a : seed_args) joined += a + "\x1f";
  EXPECT_GT(fuzz("sim flags", joined, [&](const std::string& text) {
              std::vector<std::string> args;
              std::size_t at = 0;
              for (std::size_t next; (next = text.find('\x1f', at)) != std::string::npos; at = next + 1)
                args.push_back(text.substr(at, next - at));
              const RunRequest req = parse_sim_args("moment-decay", args);
              expand_points(req);
            }, 3), 0);
}

TEST(Fuzz, Checkpoints) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 4, 2));
  runs::train_run(runs::load_run_config((tmp / "c.toml").string()), {(tmp / "run").string(), false, false});
  const std::string valid = slurp(tmp / "run/checkpoint.bin");
  const fs::path file = tmp / "ck.bin";
  EXPECT_GT(fuzz("checkpoint", valid, [&](const std::string& bytes) {
              spit(file, bytes);
              runs::load_checkpoint(file.string());
            }, 4), 0);
}

TEST(Fuzz, CorpusFolder) {
  TempDir tmp;
  for (const char* f : {"train.txt", "val.txt", "SHA256SUMS"})
    fs::copy_file(fs::path(kSlice) / f, tmp / f);
  const std::string sums = slurp(tmp / "SHA256SUMS"), val = slurp(tmp / "val.txt");
  // The sums file is small and structured: mutate it; and the text itself.
  EXPECT_GT(fuzz("corpus sums", sums, [&](const std::string& text) {
              spit(tmp / "SHA256SUMS", text);
              data::load_corpus(tmp.path);
            }, 5), 0);
  spit(tmp / "SHA256SUMS", sums);
  EXPECT_GT(fuzz("corpus text", val.substr(0, 4000), [&](const std::string& text) {
              spit(tmp / "val.txt", text + val.substr(4000));
              data::load_corpus(tmp.path);
            }, 6), 0);
}

TEST(Fuzz, ShardPartials) {
  TempDir tmp;
  const std::string sweep = "sim spectral-gap --family so2,givens --d 2,4 --samples 200";
  ASSERT_EQ(run_routelab(sweep + " --shard 0/2 --out a.csv", tmp.path, tmp.path).status, 0);
  ASSERT_EQ(run_routelab(sweep + " --shard 1/2 --out b.csv", tmp.path, tmp.path).status, 0);
  const std::string csv = slurp(tmp / "a.csv"), side = slurp(tmp / "a.csv.json");
  const std::vector<std::string> paths = {(tmp / "x.csv").string(), (tmp / "b.csv").string()};
  EXPECT_GT(fuzz("partial csv", csv, [&](const std::string& text) {
              spit(tmp / "x.csv", text);
              spit(tmp / "x.csv.json", side);
              merge_partials(paths, nullptr);
            }, 7), 0);
  EXPECT_GT(fuzz("sidecar", side, [&](const std::string& text) {
              spit(tmp / "x.csv", csv);
              spit(tmp / "x.csv.json", text);
              merge_partials(paths, nullptr);
            }, 8), 0);
}

}  // namespace
