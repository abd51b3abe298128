// softmax-scale: Proposition 1's (B.4) scale condition. For K near scores
// >= c_near and M <= M_max far scores <= c_far (gap g = c_near - c_far),
//   lambda g >= max{0, log(M_max (1 - rho*)/(K rho*)), log(sqrt(M_max)/(K a*))}
// guarantees rho_D <= rho* and a_D <= a*. Checked three ways:
//  - exact: at the extremal configuration (near = c_near, far = c_far) the
//    bisected smallest lambda equals its closed form, which is B.4's threshold
//    when the rho term binds (the a term is a sufficient condition there, not
//    the exact one: a_D = sqrt(M) x/(K + M x) < sqrt(M) x/K);
//  - upper: that smallest lambda is <= the threshold;
//  - upper: over N random score sets in the allowed ranges, the smallest
//    lambda that meets both targets on all of them is <= the threshold.
#include "sims/softmax_scale.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "attention/far_mass.h"
#include "groups/family.h"
#include "stats/moments.h"

namespace routelab {

namespace {

bool meets_targets(const double* near, int K, const double* far, long long M, double lambda, double rho_star,
                   double a_star) {
  FarMassAccumulator acc;
  for (int j = 0; j < K; ++j) acc.add_near(lambda * near[j]);
  for (long long j = 0; j < M; ++j) acc.add_far(lambda * far[j]);
  return acc.far_mass() <= rho_star && acc.far_norm() <= a_star;
}

}  // namespace

double smallest_lambda_meeting_targets(const double* near, int K, const double* far, long long M, double rho_star,
                                       double a_star, double limit) {
  if (meets_targets(near, K, far, M, 0.0, rho_star, a_star)) return 0.0;
  double lo = 0.0, hi = 1.0;
  while (!meets_targets(near, K, far, M, hi, rho_star, a_star)) {
    lo = hi;
    hi *= 2;
    if (hi > limit) return std::numeric_limits<double>::infinity();
  }
  while (hi - lo > 1e-15 * hi) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (meets_targets(near, K, far, M, mid, rho_star, a_star) ? hi : lo) = mid;
  }
  return hi;
}

std::vector<SimRow> softmax_scale_rows(const SoftmaxScaleTheory& theory, const SoftmaxScalePoint& pt,
                                       const SimContext& ctx) {
  const double M = double(pt.M_max), K = double(pt.K), g = pt.gap;
  const double threshold = theory.required_lambda_gap(M, K, pt.rho_star, pt.a_star) / g;
  const double exact = theory.extremal_lambda_gap(M, K, pt.rho_star, pt.a_star) / g;
  // Far beyond any threshold: a lambda that does not meet the targets by then never will.
  const double limit = 1e4 * (threshold + 1.0);

  // The extremal configuration; c_near = 1 (only differences matter).
  std::vector<double> near(pt.K, 1.0), far(pt.M_max, 1.0 - g);
  const double extremal = smallest_lambda_meeting_targets(near.data(), pt.K, far.data(), pt.M_max, pt.rho_star,
                                                          pt.a_star, limit);

  // Random instances: c_far uniform in [-1, 1 - g]; each score exactly at its
  // edge one time in four, otherwise uniform over its allowed range.
  struct Scratch {
    std::vector<double> near, far;
  };
  std::vector<Scratch> scratch(ctx.threads);
  const std::vector<double> lambdas = parallel_fill(ctx.samples, 1, ctx.threads, [&](long long i, double* o, int t) {
    Scratch& sc = scratch[t];
    sc.near.resize(pt.K);
    sc.far.resize(pt.M_max);
    Stream s(ctx.seed, sample_stream(ctx.point, i));
    const double c_far = s.uniform(-1.0, 1.0 - g), c_near = c_far + g;
    for (auto& x : sc.near) x = s.uniform() < 0.25 ? c_near : s.uniform(c_near, 1.0);
    for (auto& x : sc.far) x = s.uniform() < 0.25 ? c_far : s.uniform(-1.0, c_far);
    o[0] = smallest_lambda_meeting_targets(sc.near.data(), pt.K, sc.far.data(), pt.M_max, pt.rho_star, pt.a_star,
                                           limit);
  });
  const double worst = lambdas.empty() ? 0.0 : *std::max_element(lambdas.begin(), lambdas.end());
  double mean = 0;
  for (double l : lambdas) mean += l / double(lambdas.size());

  // B.4's two terms, each as a lambda: the larger (or 0) is the threshold.
  const double for_rho = std::log(M * (1.0 - pt.rho_star) / (K * pt.rho_star)) / g;
  const double for_a = std::log(std::sqrt(M) / (K * pt.a_star)) / g;

  std::vector<SimRow> rows;
  const char* p1 = "Proposition 1 (B.4)";
  auto trend = [&](const char* quantity, double value) {
    rows.push_back(trend_row(p1, quantity, value, kNoStderr, std::nullopt));
  };
  trend("required_lambda", threshold);
  trend("required_lambda_rho_term", for_rho);
  trend("required_lambda_a_term", for_a);
  rows.push_back(exact_row(p1, "extremal_smallest_lambda", extremal, kNoStderr, exact, 0.0));
  rows.push_back(upper_row(p1, "extremal_smallest_lambda", extremal, kNoStderr, threshold, 0.0));
  rows.push_back(upper_row(p1, "random_smallest_lambda_all_instances", worst, kNoStderr, threshold, 0.0));
  trend("random_smallest_lambda_mean", mean);
  return rows;
}

namespace {

SoftmaxScalePoint parse_softmax_scale_point(const Params& p) {
  SoftmaxScalePoint pt;
  pt.K = int(require_int(p, "K", 1, 100000, "an integer in [1, 100000] (the near-set size)"));
  pt.M_max = require_int(p, "Mmax", 1, 1000000, "an integer in [1, 1000000] (the largest far-set size)");
  pt.gap = require_double(p, "gap", 0.0, 2.0, true, "a number in (0, 2] (scores lie in [-1, 1])");
  pt.a_star = require_double(p, "a-star", 0.0, 1.0, true, "a number in (0, 1] (the target far-weight norm)");
  pt.rho_star = require_double(p, "rho-star", 0.0, pt.gap / 2, true,
                               fmt::format("a number in (0, gap/2 = {}) (the target far mass; below gap/2 the targets, "
                                           "once met, stay met as lambda grows)", pt.gap / 2));
  if (pt.rho_star == pt.gap / 2)
    throw BadInput("rho-star", fmt::format("{} is not accepted; a number in (0, gap/2 = {})", pt.rho_star, pt.gap / 2));
  return pt;
}

std::vector<SimRow> run_softmax_scale(const Params& p, const SimContext& ctx) {
  return softmax_scale_rows(SoftmaxScaleTheory{}, parse_softmax_scale_point(p), ctx);
}

// Defaults: B.4's worked example (K = 1, M_max = 1000, rho* = 0.05,
// a* = 0.01: lambda g >= 9.8522, the rho term binding); a* = 0.001 makes the
// a term bind (lambda g >= 10.362) and separates the exact extremal value.
const bool registered_softmax_scale = register_sim({.name = "softmax-scale",
     .summary = "B.4's required logit scale for rho_D <= rho*, a_D <= a* against the smallest that works (Prop 1)",
     .flags = {{"K", "1", "near-set size K"},
           {"Mmax", "1000", "largest far-set size M_max"},
           {"rho-star", "0.05", "target far mass rho*, in (0, gap/2)"},
           {"a-star", "0.01", "target far-weight norm a*, in (0, 1]"},
           {"gap", "0.5", "score gap g = c_near - c_far, in (0, 2]"}},
     .uses_family = false,
     .default_samples = 2000,
     .run = run_softmax_scale,
     .checks = {{"softmax scale", {{"K", "1,4"}, {"Mmax", "1000"}, {"rho-star", "0.05"}, {"a-star", "0.01,0.001"}, {"gap", "0.5"}},
            1000, 300}},
     .order = 51,
     .validate = [](const Params& p) { parse_softmax_scale_point(p); }});

}  // namespace

}  // namespace routelab
