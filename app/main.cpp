// routelab: the command line.
//   routelab sim NAME [--flag value ...]   one simulation, tidy CSV
//   routelab verify [--quick]              every check, a table
//   routelab families                      the step laws and their closed forms
//   routelab sims                          the simulations
//   routelab merge A B ... --out FILE      combine --shard partials
//   routelab corpus prepare --from PKG --out DIR   the Brown corpus
//   routelab train --config FILE [--out RUN] [--resume]
//   routelab eval --run RUN --lengths 1x,...,64x
//   routelab export --run RUN --out FILE.safetensors   the weights for PyTorch
//   routelab passkey --run RUN --lengths ... --depths ...   retrieval accuracy
//   routelab probe --run RUN --lengths ... attention rows and angle gaps of a trained run
//   routelab experiment FILE.toml          every scheme and seed, CSV, figure
//   routelab claims CSV...                 the paper's claims judged from experiment CSVs
// Under mpirun, every rank computes its share of each sample stream and rank 0
// writes.
// Exit status: 0 done; 1 a check failed (verify); 2 bad input: one line on
// stderr naming the flag and what it accepts, no output file; 3 routelab
// could not finish for another reason (out of memory, a device or
// operating-system failure, a bug): one line "routelab: error: ...".
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <omp.h>

#include "app/commands.h"
#include "base/version.h"
#include "claims/claims.h"
#include "cuda/device.h"
#include "data/brown.h"
#include "groups/family.h"
#include "io/csv_read.h"
#include "io/output.h"
#include "io/table.h"
#include "runs/config.h"
#include "runs/run_dir.h"
#include "runs/train.h"
#include "io/user_paths.h"
#include "sims/runner.h"
#include "sims/verify.h"
#include "stats/distributed.h"

using namespace routelab;

namespace {

int bad_input(const std::string& message) {
  if (dist::is_root()) std::fprintf(stderr, "routelab: %s\n", one_line(message).c_str());
  return 2;
}

// Anything that is neither bad input nor a failed check.
int internal_error(const std::string& message) {
  if (dist::is_root()) std::fprintf(stderr, "routelab: error: %s\n", one_line(message).c_str());
  return kInternalError;
}

int cmd_sim(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::string names;
    for (const auto& s : all_sims()) names += (names.empty() ? "" : ", ") + s.name;
    return bad_input("sim: name a simulation (routelab sim NAME --help); accepts " + names);
  }
  if (args[0] == "--help" || args[0] == "-h") {
    std::string names;
    for (const auto& s : all_sims()) names += "  " + s.name + "  " + s.summary + "\n";
    std::printf("routelab sim NAME [--flag value ...] [--device cpu|cuda]\n\n%s", names.c_str());
    return 0;
  }
  const std::string name = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  // --device belongs to the command, not the simulation's parameters.
  const std::string device = take_device_flag(rest);
  for (const auto& a : rest)
    if (a == "--help" || a == "-h") {
      std::printf("%s", sim_help(find_sim(name)).c_str());
      return 0;
    }
  RunRequest req = parse_sim_args(name, rest);
  if (device == "cuda") {
    // Sims without a GPU path refuse as train and eval do; the others need a
    // device, and run_sim refuses a point whose family is not ported.
    if (!find_sim(name).gpu_refusal) require_device(device, "sim " + name);
    cuda::require_cuda_device();
    req.gpu = true;
  }
  note_user_path("--out", req.out);
  req.progress = isatty(2);
  const Table table = run_sim_to_outputs(req);
  if (dist::is_root() && req.out.empty()) std::fputs(table.to_csv().c_str(), stdout);
  return 0;
}

int cmd_families() {
  for (const auto& f : families()) {
    const Params p = default_params(f);
    std::string flags;
    for (const auto& fl : f.flags) flags += (flags.empty() ? "--" : " --") + fl;
    std::printf("%s\n  %s\n  flags: %s\n  determinant: %s\n", f.name.c_str(), f.summary.c_str(), flags.c_str(),
                f.det_class.c_str());
    try {
      std::printf("  closed forms: %s\n\n", make_step_law(p)->closed_form_text().c_str());
    } catch (const BadInput& e) {
      std::printf("  closed forms: (unavailable: %s)\n\n", e.what());
    }
  }
  return 0;
}


int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty()) {
      const std::vector<std::string> rest(args.begin() + 1, args.end());
      if (args[0] == "sim") return cmd_sim(rest);
      if (args[0] == "corpus") return cmd_corpus(rest);
      if (args[0] == "train") return cmd_train(rest);
      // Only training splits its work over ranks; the others would each do all
      // of it and race to write the same files.
      if ((args[0] == "eval" || args[0] == "passkey" || args[0] == "experiment") && dist::size() > 1)
        return bad_input(args[0] + " runs as one process; under mpirun only train splits its batch over ranks");
      if (args[0] == "eval") return cmd_eval(rest);
      if (args[0] == "export") return cmd_export(rest);
      if (args[0] == "passkey") return cmd_passkey(rest);
      if (args[0] == "probe") return cmd_probe(rest);
      if (args[0] == "experiment") return cmd_experiment(rest);
      if (args[0] == "claims") return cmd_claims(rest);
      const char* known[] = {"verify", "families", "sims", "merge"};
      if (args[0][0] != '-' && std::find(std::begin(known), std::end(known), args[0]) == std::end(known))
        return bad_input("unknown command '" + args[0] +
                         "'; accepts sim, verify, families, sims, merge, corpus, train, eval, export, passkey, probe, "
                         "experiment, claims (see routelab --help)");
    }

    CLI::App app{"routelab: numerical checks of \"Why Do Accumulated Transformations Extrapolate?\""};
    app.set_version_flag("--version", std::string(ROUTELAB_VERSION_STRING) + " (" + ROUTELAB_GIT_REV + ")");
    app.require_subcommand(1);
    auto* verify = app.add_subcommand("verify", "run every check and print a table");
    bool quick = false;
    int threads = omp_get_max_threads();
    long long seed = 1;
    std::string out;
    verify->add_flag("--quick", quick, "small sizes (under a minute on two cores)");
    verify->add_option("--threads", threads, "OpenMP threads")->check(integer_in(1, kMaxThreads));
    verify->add_option("--seed", seed, "seed")->check(integer_in(0, 1LL << 62, "[0, 2^62]"));
    verify->add_option("--out", out, "also write every row as CSV");
    app.add_subcommand("families", "list the step laws, their flags and closed forms");
    app.add_subcommand("sims", "list the simulations");
    app.add_subcommand("sim", "run one simulation (routelab sim NAME --help)");
    app.add_subcommand("corpus", "prepare the Brown corpus (routelab corpus prepare --help)");
    app.add_subcommand("train", "train a transformer from a TOML config (routelab train --help)");
    app.add_subcommand("eval", "evaluate a trained run far past its length (routelab eval --help)");
    app.add_subcommand("export", "a trained run's weights as safetensors (routelab export --help)");
    app.add_subcommand("passkey", "passkey retrieval against length and depth (routelab passkey --help)");
    app.add_subcommand("probe", "far mass and angle gaps inside trained runs (routelab probe --help)");
    app.add_subcommand("experiment", "train, evaluate and plot every scheme and seed (routelab experiment --help)");
    app.add_subcommand("claims", "the paper's claims judged from experiment CSVs (routelab claims --help)");
    auto* merge = app.add_subcommand("merge", "combine the partial CSVs of --shard K/N runs into one file");
    std::vector<std::string> partials;
    std::string merged;
    merge->add_option("partials", partials, "partial CSV files (each with its .json sidecar)")->required();
    merge->add_option("--out", merged, "the combined CSV")->required();
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      std::string msg = e.what();
      for (char& c : msg)
        if (c == '\n') c = ' ';
      return bad_input(msg + " (see routelab --help)");
    }
    note_path_options(app);
    if (app.got_subcommand("families")) return cmd_families();
    if (app.got_subcommand("merge")) {
      const auto start = std::chrono::steady_clock::now();
      OutputFiles files("merge");
      for (const auto& p : partials) files.input(p), files.input(p + ".json");
      files.output(merged, "--out");
      files.output(merged + ".json", "the sidecar --out FILE.json");
      nlohmann::json config;
      const std::string csv = merge_partials(partials, &config);
      files.set(merged, csv);
      files.set(merged + ".json",
                sidecar_text(merged, config,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
      files.commit();
      return 0;
    }
    if (app.got_subcommand("sims")) {
      for (const auto& s : all_sims()) std::printf("%-14s %s\n", s.name.c_str(), s.summary.c_str());
      return 0;
    }
    if (app.got_subcommand("verify")) {
      const auto start = std::chrono::steady_clock::now();
      OutputFiles files("verify");
      if (verify->count("--out")) files.output(out, "--out"), files.output(out + ".json", "the sidecar --out FILE.json");
      VerifyResult r = run_verify(quick, threads, uint64_t(seed), isatty(2));
      if (!dist::is_root()) return r.failures == 0 ? 0 : 1;
      if (!out.empty()) {
        files.set(out, r.rows.to_csv());
        files.set(out + ".json", sidecar_text(out, {{"command", "verify"}, {"quick", quick}, {"seed", seed},
                                                    {"threads", threads}},
                                              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
        files.commit();
      }
      std::fputs(format_verify_table(r).c_str(), stdout);
      return r.failures == 0 ? 0 : 1;
    }
  } catch (const BadInput& e) {
    return bad_input(e.what());
  } catch (const runs::ConfigError& e) {
    return bad_input(e.what());
  } catch (const data::CorpusError& e) {
    return bad_input(e.what());
  } catch (const runs::CheckpointError& e) {
    return bad_input(e.what());
  } catch (const runs::RunDirError& e) {
    return bad_input(e.what());
  } catch (const cuda::DeviceError& e) {
    return bad_input(e.what());
  } catch (const OutputError& e) {
    return bad_input(e.what());
  } catch (const CsvError& e) {
    return bad_input(e.what());
  } catch (const claims::ClaimsError& e) {
    return bad_input(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    // The one place an operating-system error on a path becomes bad input.
    const std::string line = user_path_refusal(e);
    if (!line.empty()) return bad_input(line);
    return internal_error(e.what());
  } catch (const std::bad_alloc&) {
    return internal_error("out of memory (std::bad_alloc): the work needed more memory than it could have");
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("an exception that is not a std::exception");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dist::init(&argc, &argv);
  install_cleanup_handlers();
  const int status = run(argc, argv);
  dist::finalize();
  return status;
}
