// value-transport: what the far sources add to a query's output through the
// value path, c_i = sum_j alpha_j P_{j->i} v_j, with SO(2) blocks (docs/theory.md#conventions):
// the far transport T_D has blocks |t_b| x rotation, t_b = sum_k alpha_k Pi_{k,b}.
// Every point reports QK-only (no value transport: |t_b| = rho_D exactly)
// beside QKV (accumulated phases) on the same draws.
//   --part coherence   B.8: position-only (RoPE) q_{b,L} = |sum_k alpha_k e^{-i omega_b k}|
//                      against accumulated phases, and T_D T_D^T = diag(q_b^2 I_2).
//   --part covariance  B.9 (36): the Monte Carlo covariance of the far error under
//                      v_j = c0 G + w_j against c0^2 T_D T_D^T + sigma_w^2 a_D^2 I,
//                      entry by entry (QK-only: (c0^2 rho_D^2 + sigma_w^2 a_D^2) I).
//   --part bound       Theorem 7 (D.2) under D.1 (uniform, geometric or separate-path
//                      softmax weights, all independent of the value phases) and its
//                      covariance corollary D.4; Theorem 6 (B.10) for same-path weights.
//                      BOUND checks of an exceedance frequency against eta by
//                      Clopper-Pearson; one trial = one query with L sources.
// Defaults sit where the bounds are informative (docs/theory.md#calibration item 4): Theorem 7 with
// uniform weights is below rho only for M > (4 sqrt(log(4B/eta)) / ((1-beta)(1-beta^w)))^2
// (the far_count_M row shows both); Theorem 6 needs spread weights, lambda/sqrt(2B) <~ 0.7,
// L >= 2e4. The bound_over_rho_D rows say how far below rho_D each bound sits.
#include "sims/value_transport.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "groups/so2.h"
#include "stats/intervals.h"
#include "stats/moments.h"
#include "theory/step_gaps.h"
#include "theory/value_bounds.h"

namespace routelab {

ValueTransportTheory::ValueTransportTheory()
    : separate(theory::separate_path_bound),
      same(theory::same_path_bound),
      covariance(theory::shared_background_covariance),
      covariance_bound(theory::far_covariance_bound),
      position_only(theory::position_only_coherence) {}

ValueTransportConfig value_transport_config(const Params& p) {
  ValueTransportConfig c;
  const std::string part = p.at("part");
  if (part == "coherence") c.part = ValuePart::coherence;
  else if (part == "covariance") c.part = ValuePart::covariance;
  else if (part == "bound") c.part = ValuePart::bound;
  else throw BadInput("part", "'" + part + "' is not accepted; one of coherence, covariance, bound");

  ValueModel& m = c.model;
  m.blocks = int(require_int(p, "blocks", 1, 4096, "an integer B in [1, 4096] (d = 2B)"));
  const double base = require_double(p, "rope-base", 1.0, 1e12, true, "a base > 1, e.g. 10000");
  m.omega = rope_frequencies(2 * m.blocks, base);  // omega_b = base^{-2b/d}, RoPE's frequencies
  m.a = require_double(p, "a", 0.0, 1e6, true, "a half-width a > 0 of the value-phase increments U[-a, a]");
  m.w = require_int(p, "w", 1, 1LL << 40, "an integer w in [1, 2^40], the first far offset");
  m.L = require_int(p, "L", 1, 1LL << 40, "an integer L in [w, 2^40], the last far offset");
  if (m.L < m.w || m.L > 100000000)
    throw BadInput("L", fmt::format("{} is not accepted; an integer in [w, 1e8] (w = {})", m.L, m.w));
  m.weights = parse_far_weights(p.at("weights"));
  m.rho = require_double(p, "rho", 0.0, 1.0, true, "a far mass in (0, 1)");
  if (m.rho >= 1.0) throw BadInput("rho", "a far mass in (0, 1)");
  m.lambda = require_double(p, "lambda", 0.0, 300.0, false, "a logit scale in [0, 300]");
  c.eta = require_double(p, "eta", 0.0, 1.0, true, "a failure probability in (0, 1)");
  if (c.eta >= 1.0) throw BadInput("eta", "a failure probability in (0, 1)");
  c.c0 = require_double(p, "c0", 0.0, 1e6, false, "a background scale c0 >= 0");
  c.sigma_w = require_double(p, "sigma-w", 0.0, 1e6, false, "a noise scale sigma_w >= 0");
  if (c.c0 == 0 && c.sigma_w == 0) throw BadInput("sigma-w", "c0 and sigma_w are both 0; give one > 0");
  if (c.part == ValuePart::coherence && m.weights != FarWeights::uniform && m.weights != FarWeights::geometric)
    throw BadInput("weights", "--part coherence compares against a fixed position-only transport; uniform or geometric");
  return c;
}


namespace {

// Fixed far weights are e^{logit} exactly (the near mass sits on one logit).
double geometric_rate(const ValueModel& m) {
  return m.weights == FarWeights::geometric ? 4.0 / double(m.far_count()) : 0.0;
}

std::vector<SimRow> coherence_rows(const ValueTransportConfig& cfg, const SimContext& ctx,
                                   const ValueTransportTheory& th) {
  const ValueModel& m = cfg.model;
  const int B = m.blocks;
  const long long M = m.far_count();
  const double beta = std::abs(theory::so2_uniform_harmonic(m.a));
  std::vector<SimRow> rows;

  // Position-only: one deterministic query; T_D summed source by source.
  ValueModel position = m;
  position.a = 0;
  Stream unused(ctx.seed, sample_stream(ctx.point, 0, 0));
  Eigen::MatrixXd T = Eigen::MatrixXd::Zero(2 * B, 2 * B);
  const QueryTransport pos = run_query(position, unused, unused, [&](long long, double logit, const double* c,
                                                                    const double* s) { add_far_source(T, std::exp(logit), c, s); });
  Eigen::MatrixXd diag = Eigen::MatrixXd::Zero(2 * B, 2 * B);
  double q_closed = 0;
  for (int b = 0; b < B; ++b) {
    diag(2 * b, 2 * b) = diag(2 * b + 1, 2 * b + 1) = std::norm(pos.t[b]);
    q_closed = std::max(q_closed, th.position_only(m.omega[b], M, m.rho, geometric_rate(m)));
  }
  rows.push_back(exact_row("B.8", "block_structure_max_deviation", (T * T.transpose() - diag).cwiseAbs().maxCoeff(),
                           kNoStderr, 0.0, kZ));
  rows.push_back(exact_row("B.8", "max_b_q_position_only", pos.max_abs_t, kNoStderr, q_closed, kZ));
  rows.push_back(exact_row("B.8", "rho_D_qk_only", pos.rho, kNoStderr, m.rho, kZ));

  // Accumulated phases on the same weights: max_b |t_b| per trial.
  const Moments acc = parallel_moments(0, ctx.samples, 2, ctx.threads, [&](long long i, double* out, int) {
    Stream values(ctx.seed, sample_stream(ctx.point, i, 0)), scores(ctx.seed, sample_stream(ctx.point, i, 1));
    const QueryTransport q = run_query(m, values, scores);
    out[0] = q.max_abs_t;
    out[1] = th.separate(beta, m.w, q.rho, q.a, B, cfg.eta);
  });
  // Qualitative (B.8 against Theorem 7): accumulated phases cancel where
  // position-only ones do not, so the mean max_b |t_b| lies below max_b q_b.
  SimRow cancel = trend_row("B.8", "mean_max_t_accumulated", acc.mean[0], acc.stderr_of(0), pos.max_abs_t);
  cancel.verdict = verdict_of(acc.mean[0] + kZ * acc.stderr_of(0) < pos.max_abs_t);
  rows.push_back(cancel);
  rows.push_back(trend_row("Theorem 7", "bound", acc.mean[1], acc.stderr_of(1), std::nullopt));
  rows.push_back(trend_row("Theorem 7", "bound_over_rho_D", acc.mean[1] / pos.rho, kNoStderr, std::nullopt));
  return rows;
}

std::vector<SimRow> covariance_rows(const ValueTransportConfig& cfg, const SimContext& ctx,
                                    const ValueTransportTheory& th) {
  const ValueModel& m = cfg.model;
  const int d = 2 * m.blocks;
  // The environment E_i: trial 0's weights and phases, fixed for every draw of the values.
  Stream values(ctx.seed, sample_stream(ctx.point, 0, 0)), scores(ctx.seed, sample_stream(ctx.point, 0, 1));
  const FarEnvironment env = far_environment(m, values, scores);
  const double rho = env.transport.rho, a = env.transport.a;
  const Eigen::MatrixXd T = far_transport_matrix(env);
  const Eigen::MatrixXd want_qkv = th.covariance(T, cfg.c0, cfg.sigma_w, a);
  const Eigen::MatrixXd want_qk = th.covariance(rho * Eigen::MatrixXd::Identity(d, d), cfg.c0, cfg.sigma_w, a);

  // E e = 0, so Cov = E e e^T: the upper triangle of both products per draw.
  const int pairs = d * (d + 1) / 2;
  std::vector<std::vector<double>> scratch(ctx.threads, std::vector<double>(2 * d));
  const Moments mom = parallel_moments(0, ctx.samples, 2 * pairs, ctx.threads, [&](long long i, double* out, int t) {
    Stream s(ctx.seed, sample_stream(ctx.point, i, 2));
    double* e_qkv = scratch[t].data();
    double* e_qk = e_qkv + d;
    shared_background_error(env, cfg.c0, cfg.sigma_w, s, e_qkv, e_qk);
    int c = 0;
    for (int p = 0; p < d; ++p)
      for (int q = p; q < d; ++q, ++c) {
        out[c] = e_qkv[p] * e_qkv[q];
        out[pairs + c] = e_qk[p] * e_qk[q];
      }
  });
  double z_qkv = 0, z_qk = 0, scale = 0;
  int c = 0;
  for (int p = 0; p < d; ++p)
    for (int q = p; q < d; ++q, ++c) {
      z_qkv = std::max(z_qkv, std::abs(mom.mean[c] - want_qkv(p, q)) / mom.stderr_of(c));
      z_qk = std::max(z_qk, std::abs(mom.mean[pairs + c] - want_qk(p, q)) / mom.stderr_of(pairs + c));
      scale = std::max(scale, std::abs(want_qkv(p, q)));
    }
  const double z_entries = bonferroni_z(pairs);
  std::vector<SimRow> rows;
  for (auto [quantity, z] : {std::pair<const char*, double>{"max_entry_z_qkv_covariance", z_qkv},
                             std::pair<const char*, double>{"max_entry_z_qk_only_covariance", z_qk}}) {
    SimRow r = upper_row("B.9", quantity, z, kNoStderr, z_entries, 0.0);
    r.kind = Kind::exact;
    rows.push_back(r);
  }
  rows.push_back(trend_row("B.9", "max_abs_covariance_entry", scale, kNoStderr, std::nullopt));
  rows.push_back(trend_row("B.9", "max_b_t_qkv", env.transport.max_abs_t, kNoStderr, std::nullopt));
  rows.push_back(trend_row("B.9", "rho_D_qk_only", rho, kNoStderr, std::nullopt));
  rows.push_back(trend_row("B.9", "a_D", a, kNoStderr, std::nullopt));
  return rows;
}

std::vector<SimRow> bound_rows(const ValueTransportConfig& cfg, const SimContext& ctx, const ValueTransportTheory& th) {
  const ValueModel& m = cfg.model;
  const int B = m.blocks;
  const double beta = std::abs(theory::so2_uniform_harmonic(m.a));
  const bool same = m.weights == FarWeights::same;
  const char* result = same ? "Theorem 6" : "Theorem 7";
  // Per trial: max_b |t_b| (QKV), rho_D (QK-only), a_D, the bound, the D.4
  // eigenvalue bound. The eigenvalues of Delta_D are c0^2 |t_b|^2 + sigma_w^2 a_D^2 (B.8, B.9).
  enum { kT, kRho, kA, kBound, kLambda, kLambdaBound, kCount };
  const std::vector<double> per = parallel_fill(ctx.samples, kCount, ctx.threads, [&](long long i, double* out, int) {
    Stream values(ctx.seed, sample_stream(ctx.point, i, 0)), scores(ctx.seed, sample_stream(ctx.point, i, 1));
    const QueryTransport q = run_query(m, values, scores);
    out[kT] = q.max_abs_t;
    out[kRho] = q.rho;
    out[kA] = q.a;
    out[kBound] = same ? th.same(m.lambda, B, beta, m.w, q.rho, q.a, cfg.eta)
                       : th.separate(beta, m.w, q.rho, q.a, B, cfg.eta);
    out[kLambda] = cfg.c0 * cfg.c0 * q.max_abs_t * q.max_abs_t + cfg.sigma_w * cfg.sigma_w * q.a * q.a;
    out[kLambdaBound] = th.covariance_bound(out[kBound], cfg.c0, cfg.sigma_w, q.a);
  });
  const long long n = ctx.samples;
  long long exceed = 0, exceed_cov = 0, vacuous = 0;
  double largest = 0;
  Moments mom(4);
  for (long long i = 0; i < n; ++i) {
    const double* r = &per[std::size_t(i) * kCount];
    exceed += r[kT] > r[kBound];
    exceed_cov += r[kLambda] > r[kLambdaBound];
    vacuous += r[kBound] >= r[kRho];
    largest = std::max(largest, r[kT]);
    const double x[4] = {r[kT], r[kRho], r[kBound], r[kBound] / r[kRho]};
    mom.add(x);
  }
  std::vector<SimRow> rows;
  rows.push_back(tail_bound_row(result, "exceedance_frequency_max_t_over_bound", exceed, n, cfg.eta));
  if (!same) rows.push_back(tail_bound_row("D.4", "exceedance_frequency_covariance_over_bound", exceed_cov, n, cfg.eta));
  rows.push_back(trend_row(result, "mean_max_t_qkv", mom.mean[0], mom.stderr_of(0), std::nullopt));
  rows.push_back(trend_row(result, "largest_max_t_qkv", largest, kNoStderr, std::nullopt));
  rows.push_back(trend_row(result, "mean_rho_D_qk_only", mom.mean[1], mom.stderr_of(1), std::nullopt));
  rows.push_back(trend_row(result, "mean_bound", mom.mean[2], mom.stderr_of(2), std::nullopt));
  rows.push_back(trend_row(result, "mean_bound_over_rho_D", mom.mean[3], mom.stderr_of(3), std::nullopt));
  rows.push_back(trend_row(result, "vacuous_fraction_bound_ge_rho_D", double(vacuous) / double(n), kNoStderr, std::nullopt));
  if (m.weights == FarWeights::uniform)
    rows.push_back(trend_row(result, "far_count_M", double(m.far_count()), kNoStderr,
                             theory::separate_path_min_far_count(beta, m.w, B, cfg.eta)));
  return rows;
}

}  // namespace

std::vector<SimRow> value_transport_rows(const ValueTransportConfig& cfg, const SimContext& ctx,
                                         const ValueTransportTheory& theory) {
  switch (cfg.part) {
    case ValuePart::coherence: return coherence_rows(cfg, ctx, theory);
    case ValuePart::covariance: return covariance_rows(cfg, ctx, theory);
    case ValuePart::bound: return bound_rows(cfg, ctx, theory);
  }
  return {};
}

namespace {

std::vector<SimRow> run_value_transport(const Params& p, const SimContext& ctx) {
  return value_transport_rows(value_transport_config(p), ctx);
}

const bool registered_value_transport = register_sim({.name = "value-transport",
     .summary = "far value transport t_b: position-only vs accumulated phases (B.8), shared-background covariance (B.9), "
     "Theorem 7 / D.4 and Theorem 6 bounds; QK-only rho_D beside QKV",
     .flags = {{"part", "bound", "coherence (B.8), covariance (B.9) or bound (Theorem 7 and D.4; Theorem 6 with --weights same)"},
      {"blocks", "16", "SO(2) blocks B (d = 2B)"},
      {"a", "2", "value-phase increments omega_b + U[-a, a], beta = |sin a / a| (a = 2: 0.455, 1: 0.841, pi: 0)"},
      {"rope-base", "10000", "position frequencies omega_b = base^(-2b/d)"},
      {"w", "9", "first far offset: far set D = {w..L}, near {0..w-1}"},
      {"L", "20008", "context length, the last far offset (M = L - w + 1)"},
      {"weights", "uniform",
       "far weights: uniform or geometric (far mass --rho), separate (softmax of an independent score path, D.1) or "
       "same (softmax of the value phases' own scores, Theorem 6)"},
      {"rho", "0.3", "far mass of uniform and geometric weights"},
      {"lambda", "4", "logit scale of softmax weights"},
      {"eta", "0.05", "failure probability of the bounds"},
      {"c0", "1", "shared-background scale c0 (v_j = c0 G + w_j)"},
      {"sigma-w", "1", "per-source value noise sigma_w"}},
     .uses_family = false,
     .default_samples = 1000,
     .run = run_value_transport,
     .checks = {{"position-only coherence",
       {{"part", "coherence"}, {"blocks", "32"}, {"a", "1"}, {"w", "33"}, {"L", "512,4096,32768"}, {"rho", "0.2"}},
       100, 20},
      {"shared-background cov",
       {{"part", "covariance"}, {"blocks", "3"}, {"a", "1"}, {"w", "1"}, {"L", "40"}, {"rho", "0.9"}, {"c0", "0.5"},
        {"weights", "uniform,separate"}},
       200000, 20000},
      {"separate-path prefix",
       {{"part", "bound"}, {"blocks", "16"}, {"a", "2"}, {"w", "9"}, {"L", "20008"}, {"weights", "uniform,geometric,separate"}},
       200, 30},
      {"separate-path slow mixing",
       {{"part", "bound"}, {"blocks", "32"}, {"a", "1"}, {"w", "27"}, {"L", "100026"}, {"weights", "uniform"}},
       100, 10},
      {"same-path qkv",
       {{"part", "bound"}, {"blocks", "32,64"}, {"a", "2"}, {"w", "9"}, {"L", "20008"}, {"weights", "same"}},
       100, 20},
      {"same-path qkv uniform steps",
       {{"part", "bound"}, {"blocks", "64"}, {"a", "3.141592653589793"}, {"w", "1"}, {"L", "20000"}, {"lambda", "8"}, {"weights", "same"}},
       100, 10}},
     .order = 60,
     .validate = [](const Params& p) { value_transport_config(p); }});

}  // namespace

}  // namespace routelab
