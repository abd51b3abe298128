// The registry of step-law families: their command-line flags, their
// validation, and one factory each. `routelab families` prints this table.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "groups/step_law.h"

namespace routelab {

// Bad user input: names the flag and what it accepts. The CLI prints
// "routelab: --flag: accepts" on one line and exits with status 2.
struct BadInput : std::runtime_error {
  BadInput(const std::string& flag, const std::string& accepts)
      : std::runtime_error("--" + flag + ": " + accepts), flag(flag) {}
  std::string flag;
};

// One parameter point: flag name (without dashes) -> value text. A flag that
// does not apply to the point's family is absent.
using Params = std::map<std::string, std::string>;

double param_double(const Params& p, const std::string& flag);
long long param_int(const Params& p, const std::string& flag);
std::vector<double> param_double_list(const Params& p, const std::string& flag);
bool has_param(const Params& p, const std::string& flag);

// Checks used by every factory; each throws BadInput naming the flag and
// `accepts`, which should state the range. An integer in [lo, hi] (text that
// is not one, or does not fit 64 bits, is refused the same way).
long long require_int(const Params& p, const std::string& flag, long long lo, long long hi,
                      const std::string& accepts);
// The largest dimension a step law accepts: a d x d matrix of doubles is
// 128 MiB there.
constexpr long long kMaxDimension = 4096;
double require_double(const Params& p, const std::string& flag, double lo, double hi, bool open_lo,
                      const std::string& accepts);

struct FlagSpec {
  std::string name;           // without dashes
  std::string default_value;  // "" = no default
  std::string help;
};

// A family's row in the one registry (families()): everything sims, app and
// tests need to know of it, so none of them switches on its name.
struct FamilyInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> flags;  // the family flags it reads, "d" included
  std::string det_class;           // for the table
  std::function<std::unique_ptr<StepLaw>(const Params&)> make;
  std::string paper_label;         // the result its spectral gap checks (spectral-gap's `result`)
  int default_d = 0;               // d for `routelab families` when the flag default does not fit (0: it does)
  // haar-mixing's labels: the result its trace moments check, and the one a
  // law of this family that cannot mix (haar_limit() == no) is a control of.
  std::string moments_label = "Theorem 4";
  std::string no_mixing_label = "Theorem 4";
};

// Every family flag with its default ("family" itself included).
const std::vector<FlagSpec>& family_flags();
const std::vector<FamilyInfo>& families();
const FamilyInfo& family_info(const std::string& name);  // throws BadInput("family", ...)
// Every family flag at its default, "family" = f.name, and d = f.default_d
// where it is set: the law `routelab families` describes.
Params default_params(const FamilyInfo& f);
// "so2, givens, ...": the families whose default law has a GPU path
// (StepLaw::kernel()), for refusals.
std::string gpu_family_names();

// Builds the law for one parameter point (p["family"] names it).
std::unique_ptr<StepLaw> make_step_law(const Params& p);

// Each family's factory, defined beside the family.
std::unique_ptr<StepLaw> make_so2(const Params& p);
std::unique_ptr<StepLaw> make_givens(const Params& p);
std::unique_ptr<StepLaw> make_householder(const Params& p);
std::unique_ptr<StepLaw> make_axis3(const Params& p);
std::unique_ptr<StepLaw> make_skewexp(const Params& p);
std::unique_ptr<StepLaw> make_heat(const Params& p);
std::unique_ptr<StepLaw> make_fisher(const Params& p);
std::unique_ptr<StepLaw> make_lieball(const Params& p);
std::unique_ptr<StepLaw> make_haar(const Params& p);
std::unique_ptr<StepLaw> make_dithered(const Params& p);
std::unique_ptr<StepLaw> make_nonnormal(const Params& p);

}  // namespace routelab
