#include "groups/family.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/core.h>

#include "io/parse.h"

namespace routelab {

namespace {

const std::string& value_of(const Params& p, const std::string& flag) {
  auto it = p.find(flag);
  if (it == p.end()) throw BadInput(flag, "a value is required");
  return it->second;
}

double parse_double(const std::string& flag, const std::string& text) {
  const auto v = parse_finite(text);
  if (!v) throw BadInput(flag, fmt::format("'{}' is not a finite number", text));
  return *v;
}

}  // namespace

bool has_param(const Params& p, const std::string& flag) { return p.count(flag) > 0; }

double param_double(const Params& p, const std::string& flag) { return parse_double(flag, value_of(p, flag)); }

long long param_int(const Params& p, const std::string& flag) {
  const std::string& text = value_of(p, flag);
  const auto v = parse_integer(text);
  if (!v) throw BadInput(flag, fmt::format("'{}' is not an integer (or does not fit 64 bits)", text));
  return *v;
}

std::vector<double> param_double_list(const Params& p, const std::string& flag) {
  const auto items = split_list(value_of(p, flag));
  if (!items) throw BadInput(flag, fmt::format("'{}' is not accepted; a comma list of numbers with no empty item",
                                               value_of(p, flag)));
  std::vector<double> out;
  for (const auto& item : *items) out.push_back(parse_double(flag, item));
  return out;
}

long long require_int(const Params& p, const std::string& flag, long long lo, long long hi,
                      const std::string& accepts) {
  const auto v = parse_integer(value_of(p, flag));
  if (!v || *v < lo || *v > hi) throw BadInput(flag, fmt::format("'{}' is not accepted; {}", value_of(p, flag), accepts));
  return *v;
}

double require_double(const Params& p, const std::string& flag, double lo, double hi, bool open_lo,
                      const std::string& accepts) {
  double v;
  try {
    v = param_double(p, flag);
  } catch (const BadInput&) {
    throw BadInput(flag, fmt::format("'{}' is not accepted; {}", value_of(p, flag), accepts));
  }
  if (v < lo || v > hi || (open_lo && v == lo))
    throw BadInput(flag, fmt::format("{} is not accepted; {}", value_of(p, flag), accepts));
  return v;
}

const std::vector<FlagSpec>& family_flags() {
  static const std::vector<FlagSpec> flags = {
      {"family", "householder", "step law (see `routelab families`)"},
      {"d", "8", "dimension"},
      {"a", "1", "half-width of the uniform angle increment U[-a, a] (so2, givens, skewexp)"},
      {"omega", "0", "deterministic drift added to every so2 angle increment"},
      {"rope-base", "", "so2: per-block half-widths a_b = base^(-2b/d) instead of --a"},
      {"normals", "sphere", "householder/dithered normals: sphere, coordinate or gaussian"},
      {"aniso", "4", "householder/dithered gaussian normals: standard deviations spread geometrically over [1, K]"},
      {"theta", "1.5707963267948966", "axis3: fixed rotation angle in (0, pi)"},
      {"lambdas", "0.3,1,2.5", "skewexp: eigenvalue magnitudes of A (d = 2 x count); sweep sets with ';'"},
      {"tau", "0.5", "heat/dithered: Brownian time (generator Laplacian/2, metric tr(X^T Y)/2)"},
      {"heat-h", "0.005", "heat/dithered: geodesic-walk step for d >= 4"},
      {"kappa", "1", "fisher: A = kappa I"},
      {"r", "1.5", "lieball: radius of the ball in so(d), in the metric tr(X^T Y)/2"},
      {"density", "uniform", "lieball: uniform or bump (smooth, compactly supported)"},
      {"group", "so", "haar: o or so"},
      {"sign", "minus", "dithered: minus (reflection x heat step) or mixed (reflection w.p. 1/2)"},
  };
  return flags;
}

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> list = {
      {.name = "so2",
       .summary = "B = d/2 SO(2) blocks, angle increments omega + U[-a_b, a_b] (Example 1)",
       .flags = {"d", "a", "omega", "rope-base"}, .det_class = "+1", .make = make_so2, .paper_label = "Example 1"},
      {.name = "givens", .summary = "rotation by U[-a, a] in a uniformly chosen coordinate plane (Example 3)",
       .flags = {"d", "a"}, .det_class = "+1", .make = make_givens, .paper_label = "Example 3"},
      {.name = "householder", .summary = "reflection I - 2 v v^T, v from --normals (Example 2, Remark 3)",
       .flags = {"d", "normals", "aniso"}, .det_class = "-1", .make = make_householder, .paper_label = "Example 2",
       .moments_label = "Proposition 2 / Remark 3", .no_mixing_label = "Remark 3"},
      {.name = "axis3", .summary = "d = 3B, each 3D block rotated by --theta about a uniform axis (Example 4)",
       .flags = {"d", "theta"}, .det_class = "+1", .make = make_axis3, .paper_label = "Example 4", .default_d = 3},
      {.name = "skewexp", .summary = "exp(eps A), eps ~ U[-a, a], A skew with eigenvalues +-i lambda_j (Example 5)",
       .flags = {"d", "a", "lambdas"}, .det_class = "+1", .make = make_skewexp, .paper_label = "Example 5",
       .default_d = 6},
      {.name = "heat", .summary = "Brownian motion on SO(d) at time --tau (heat kernel)",
       .flags = {"d", "tau", "heat-h"}, .det_class = "+1", .make = make_heat, .paper_label = "Heat kernel moments"},
      {.name = "fisher", .summary = "Matrix-Fisher on SO(d), A = kappa I", .flags = {"d", "kappa"}, .det_class = "+1",
       .make = make_fisher, .paper_label = "Matrix-Fisher example", .default_d = 3},
      {.name = "lieball", .summary = "exp(X), X with compactly supported density in a ball of radius --r in so(d)",
       .flags = {"d", "r", "density"}, .det_class = "+1", .make = make_lieball, .paper_label = "Lie-ball example",
       .default_d = 3},
      {.name = "haar", .summary = "Haar on O(d) or SO(d) (QR of a Gaussian with the sign fix)",
       .flags = {"d", "group"}, .det_class = "mixed or +1", .make = make_haar, .paper_label = "Sampler S1 (Haar)"},
      {.name = "dithered", .summary = "reflection L_t times heat step G_t (Example 6)",
       .flags = {"d", "normals", "aniso", "tau", "heat-h", "sign"}, .det_class = "-1 or mixed", .make = make_dithered,
       .paper_label = "Example 6"},
      {.name = "nonnormal", .summary = "d = 3: a fixed rotation w.p. 1/2, else H(e_1); E[M] not normal (Theorem 3)",
       .flags = {"d"}, .det_class = "mixed", .make = make_nonnormal, .paper_label = "Theorem 3", .default_d = 3},
  };
  return list;
}

const FamilyInfo& family_info(const std::string& name) {
  std::string names;
  for (const auto& f : families()) {
    if (f.name == name) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  throw BadInput("family", fmt::format("unknown family '{}'; accepts {}", name, names));
}

Params default_params(const FamilyInfo& f) {
  Params p;
  for (const auto& spec : family_flags()) p[spec.name] = spec.default_value;
  p["family"] = f.name;
  if (f.default_d) p["d"] = std::to_string(f.default_d);
  return p;
}

std::string gpu_family_names() {
  std::string names;
  for (const auto& f : families())
    if (make_step_law(default_params(f))->kernel()) names += (names.empty() ? "" : ", ") + f.name;
  return names;
}

std::unique_ptr<StepLaw> make_step_law(const Params& p) {
  auto it = p.find("family");
  if (it == p.end()) throw BadInput("family", "a family name is required");
  return family_info(it->second).make(p);
}

}  // namespace routelab
