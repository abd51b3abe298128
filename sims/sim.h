// The simulation contract (README, "Running a simulation"): a simulation is a name, its own flags,
// and a function from one parameter point to tidy rows. The runner expands
// comma lists into parameter points, runs each, and writes one CSV.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "groups/family.h"

namespace routelab {

struct SimFlag {
  std::string name;
  std::string default_value;
  std::string help;
  // A series flag is one list consumed whole by the simulation (e.g. the
  // walk lengths --n 1,2,4 read off one walk); any other flag's comma list
  // is swept, one parameter point per value.
  bool series = false;
};

// How a row's estimate is tested against `theory` (docs/theory.md#statistical-protocol).
enum class Kind { exact, upper, lower, trend };
// pass, fail, or none (a reported value, or a check that cannot decide here).
enum class Verdict { pass, fail, none };
const char* to_string(Kind k);     // "exact", "upper", "lower", "trend": the CSV's kind column
const char* to_string(Verdict v);  // "pass", "fail", "none": the CSV's verdict column
inline Verdict verdict_of(bool ok) { return ok ? Verdict::pass : Verdict::fail; }
std::ostream& operator<<(std::ostream& os, Kind k);
std::ostream& operator<<(std::ostream& os, Verdict v);

// One measured quantity at one parameter point.
struct SimRow {
  std::string result;    // the paper's label, e.g. "Example 2"
  std::string quantity;  // what `estimate` measures
  std::vector<std::pair<std::string, std::string>> cells;  // per-row parameter values, e.g. {"n", "8"}
  double estimate = 0;
  double stderr_ = std::numeric_limits<double>::quiet_NaN();
  double ci_low = std::numeric_limits<double>::quiet_NaN();
  double ci_high = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> theory;
  // exact, upper, lower: a test against `theory` at a z (the helpers below).
  // trend: a reported value. Its verdict is none, except where the sim
  // decides from a rule it documents at the row (haar_mixing's
  // first_n_indistinguishable_from_haar, random_variant's
  // blocks_carrying_gap), which gives pass or fail.
  Kind kind = Kind::trend;
  Verdict verdict = Verdict::none;
};

// The most OpenMP threads any command accepts.
constexpr int kMaxThreads = 1024;

struct SimContext {
  uint64_t seed = 1;
  int threads = 1;
  long long samples = 0;
  long long point = 0;  // index of the parameter point in the sweep
  // --device cuda: the sim makes its per-sample quantities on the GPU
  // (sims/device_walks.h) and reduces them as on the CPU.
  bool gpu = false;
};

// One row group of `routelab verify`: a simulation run at fixed flags.
struct SimCheck {
  std::string name;  // short label for the table
  std::map<std::string, std::string> flags;
  long long samples;        // default size
  long long quick_samples;  // --quick
};

struct Sim {
  std::string name;
  std::string summary;
  std::vector<SimFlag> flags;  // the simulation's own flags
  bool uses_family = true;     // reads the step-law flags
  long long default_samples = 100000;
  std::function<std::vector<SimRow>(const Params&, const SimContext&)> run;
  std::vector<SimCheck> checks;  // what `routelab verify` runs
  int order = 0;                 // position in listings and in verify
  // Checks one point's own flags (throws BadInput) so a bad value anywhere in a
  // sweep is refused before any point runs; family flags are checked anyway.
  std::function<void(const Params&)> validate = nullptr;
  // Set for the sims with a GPU path: "" when a point can run on the GPU,
  // otherwise why not (one line). Unset: --device cuda is refused.
  std::function<std::string(const Params&)> gpu_refusal = nullptr;
};

// Each sims/*.cpp registers its simulation from a static initializer
// (`const bool registered_<file> = register_sim(...)`), so adding a
// simulation is adding a file. The sims are an object library, so none is
// dropped at link; the name carries the file's because the build compiles
// several sims in one unit.
bool register_sim(Sim sim);
// The registered simulations, by `order`.
const std::vector<Sim>& all_sims();
const Sim& find_sim(const std::string& name);  // throws BadInput("sim", ...)

// Stream id of sample i at point p; `purpose` separates independent uses
// within one sample. A draw depends only on (seed, this id, counter).
inline uint64_t sample_stream(long long point, long long i, unsigned purpose = 0) {
  return (uint64_t(purpose) << 56) | (uint64_t(point) << 40) | uint64_t(i);
}

// Helpers shared by the simulations.
// A comma list of walk lengths, each an integer in [1, 100000].
std::vector<long long> parse_walk_lengths(const Params& p, const std::string& flag);
// The standard error of a statistic that has none (a max over z-scores).
constexpr double kNoStderr = std::numeric_limits<double>::quiet_NaN();
// Row for an EXACT check of a mean against a closed form at level z.
SimRow exact_row(std::string result, std::string quantity, double estimate, double se, std::optional<double> theory,
                 double z);
// Row for a one-sided check: kind "upper" passes iff estimate - z se <= bound.
SimRow upper_row(std::string result, std::string quantity, double estimate, double se, double bound, double z);
// kind "lower" passes iff estimate + z se >= bound.
SimRow lower_row(std::string result, std::string quantity, double estimate, double se, double bound, double z);

// One-sided Clopper-Pearson row for a tail probability (docs/theory.md#statistical-protocol): x of n
// trials exceeded; kind "upper", ci = [lower, upper] at level 1 - 3e-7,
// pass iff the lower limit <= bound. With negative_control the claim
// "probability <= bound" is expected to be refuted: pass iff the lower limit > bound.
SimRow tail_bound_row(std::string result, std::string quantity, long long x, long long n, double bound,
                      bool negative_control = false);
// A reported value (kind "trend", verdict none): a mean with its standard
// error, or a statistic with kNoStderr; theory, when given, is shown beside it.
// A sim that decides a trend row by its own rule sets the verdict itself.
SimRow trend_row(std::string result, std::string quantity, double estimate, double se, std::optional<double> theory);

// The checks of each simulation on a given law; the planted-error tests call
// them with a law whose closed form is deliberately wrong.
std::vector<SimRow> spectral_gap_rows(const StepLaw& law, const SimContext& ctx);
std::vector<SimRow> moment_decay_rows(const StepLaw& law, const std::vector<long long>& ns,
                                      const std::vector<double>& epss, const SimContext& ctx);
std::vector<SimRow> haar_mixing_rows(const StepLaw& law, std::vector<long long> ns, const SimContext& ctx);

}  // namespace routelab
