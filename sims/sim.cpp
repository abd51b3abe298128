#include "sims/sim.h"

#include "stats/intervals.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace routelab {

namespace {
std::vector<Sim>& registry() {
  static std::vector<Sim> sims;
  return sims;
}
}  // namespace

bool register_sim(Sim sim) {
  auto& r = registry();
  r.insert(std::upper_bound(r.begin(), r.end(), sim.order, [](int o, const Sim& s) { return o < s.order; }),
           std::move(sim));
  return true;
}

const std::vector<Sim>& all_sims() { return registry(); }

const Sim& find_sim(const std::string& name) {
  std::string names;
  for (const auto& s : all_sims()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw BadInput("sim", "unknown simulation '" + name + "'; accepts " + names);
}

std::vector<long long> parse_walk_lengths(const Params& p, const std::string& flag) {
  std::vector<long long> out;
  for (double x : param_double_list(p, flag)) {
    if (x != std::floor(x) || x < 1 || x > 100000)
      throw BadInput(flag, fmt::format("{} is not accepted; a comma list of integers in [1, 100000]", x));
    out.push_back((long long)x);
  }
  return out;
}

namespace {
SimRow base_row(std::string result, std::string quantity, double estimate, double se, double z) {
  SimRow r;
  r.result = std::move(result);
  r.quantity = std::move(quantity);
  r.estimate = estimate;
  // A statistic without a standard error (a max-z) has no interval.
  r.stderr_ = se;
  r.ci_low = std::isnan(se) ? se : estimate - z * se;
  r.ci_high = std::isnan(se) ? se : estimate + z * se;
  return r;
}
// Zero-variance estimates (a deterministic entry) still get float rounding room.
double slack(double scale) { return 1e-12 * std::max(1.0, std::abs(scale)); }
double margin(double z, double se) { return std::isnan(se) ? 0.0 : z * se; }
}  // namespace

const char* to_string(Kind k) {
  switch (k) {
    case Kind::exact: return "exact";
    case Kind::upper: return "upper";
    case Kind::lower: return "lower";
    case Kind::trend: return "trend";
  }
  return "";
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::none: return "none";
  }
  return "";
}

std::ostream& operator<<(std::ostream& os, Kind k) { return os << to_string(k); }
std::ostream& operator<<(std::ostream& os, Verdict v) { return os << to_string(v); }

SimRow exact_row(std::string result, std::string quantity, double estimate, double se, std::optional<double> theory,
                 double z) {
  SimRow r = base_row(std::move(result), std::move(quantity), estimate, se, z);
  r.theory = theory;
  r.kind = Kind::exact;
  r.verdict = !theory ? Verdict::none : verdict_of(std::abs(estimate - *theory) <= margin(z, se) + slack(*theory));
  return r;
}

SimRow upper_row(std::string result, std::string quantity, double estimate, double se, double bound, double z) {
  SimRow r = base_row(std::move(result), std::move(quantity), estimate, se, z);
  r.theory = bound;
  r.kind = Kind::upper;
  r.verdict = verdict_of(estimate - margin(z, se) <= bound + slack(bound));
  return r;
}

SimRow lower_row(std::string result, std::string quantity, double estimate, double se, double bound, double z) {
  SimRow r = base_row(std::move(result), std::move(quantity), estimate, se, z);
  r.theory = bound;
  r.kind = Kind::lower;
  r.verdict = verdict_of(estimate + margin(z, se) >= bound - slack(bound));
  return r;
}

SimRow tail_bound_row(std::string result, std::string quantity, long long x, long long n, double bound,
                      bool negative_control) {
  SimRow r;
  r.result = std::move(result);
  r.quantity = std::move(quantity);
  r.estimate = double(x) / double(n);
  r.stderr_ = kNoStderr;
  r.ci_low = clopper_pearson_lower(x, n, kTailAlpha);
  r.ci_high = clopper_pearson_upper(x, n, kTailAlpha);
  r.theory = bound;
  r.kind = Kind::upper;
  const bool holds = r.ci_low <= bound;
  r.verdict = verdict_of(holds != negative_control);
  return r;
}


SimRow trend_row(std::string result, std::string quantity, double estimate, double se, std::optional<double> theory) {
  SimRow r = exact_row(std::move(result), std::move(quantity), estimate, se, theory, kZ);
  r.kind = Kind::trend;
  r.verdict = Verdict::none;
  return r;
}

}  // namespace routelab
