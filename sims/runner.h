// Runs one simulation over a sweep: expands comma lists into parameter points,
// runs each point, and assembles one tidy table (the CSV contract: README, "Running a simulation").
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/table.h"
#include "sims/sim.h"

namespace routelab {

struct RunRequest {
  std::string sim;
  std::map<std::string, std::string> given;  // flag (no dashes) -> text as typed
  long long samples = -1;                    // -1: the simulation's default
  uint64_t seed = 1;
  int threads = 1;         // parse_sim_args defaults it to every core
  std::string out;         // CSV path; empty: stdout
  int shard = -1, shards = 0;  // --shard K/N: run points p with p % N == K, write a partial
  bool progress = false;  // one line per point on stderr
  bool gpu = false;       // --device cuda (the sim must have a GPU path)
  // Called after each point that ran (done of total, counting this shard's
  // points only); it may throw to stop the sweep (the Python module's Ctrl-C).
  std::function<void(std::size_t done, std::size_t total)> on_point = nullptr;
};

// Parses "--flag value" / "--flag=value" pairs after `routelab sim NAME`.
// Throws BadInput naming the flag.
RunRequest parse_sim_args(const std::string& sim, const std::vector<std::string>& args);

// Flags whose single value is itself a comma list (--lambdas); their sweeps
// use ';'.
bool list_valued(const std::string& flag);

// One family's parameter point as `routelab sim` builds it: the family's
// flags at their defaults, then `given` (flag -> text, one value each); a
// flag the family does not read is refused (BadInput naming it and the
// flags the family takes), as in a sweep. The Python module's step_law.
Params family_point(const std::string& family, const std::vector<std::pair<std::string, std::string>>& given = {});

// The parameter points of a request, in sweep order.
std::vector<Params> expand_points(const RunRequest& req);

// The table's measured columns (estimate, stderr, ci_low, ci_high, theory)
// as the doubles computed, one per row in row order, NaN where the cell is
// empty. The CSV prints each in its shortest round-trip text, so parsing a
// cell gives the same bits; the Python module hands these to NumPy as they
// are instead of parsing them back.
using MeasuredColumns = std::vector<std::pair<std::string, std::vector<double>>>;

// Runs every point; throws BadInput before any work if a point is invalid.
// `measured`, when given, gets the measured columns.
Table run_sim(const RunRequest& req, nlohmann::json* config = nullptr, MeasuredColumns* measured = nullptr);

// run_sim with the request's outputs: --out FILE and its sidecar are checked
// before any work (io/output.h) and written whole after it, by rank 0. What
// `routelab sim` and the Python module's routelab.sim both run.
Table run_sim_to_outputs(const RunRequest& req, MeasuredColumns* measured = nullptr);

// `routelab merge`: combines the partial CSVs of `--shard K/N` runs (each
// with its sidecar) into the bytes a single run would have written. Throws
// BadInput("merge", ...) when the partials do not belong together or do not
// cover every shard exactly once.
std::string merge_partials(const std::vector<std::string>& paths, nlohmann::json* config);

// Text for `routelab sim NAME --help`.
std::string sim_help(const Sim& sim);

}  // namespace routelab
