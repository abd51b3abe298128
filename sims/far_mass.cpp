// far-mass: how much of one query's softmax the far set takes, against the
// paper's bounds (§4; docs/theory.md#proposition-1 to #b12):
//  - Proposition 1 (B.4): a score gap g and logit scale lambda cap the far mass
//    rho_D <= M e^{-lambda g}/(K + M e^{-lambda g}) and a_D <= sqrt(M) e^{-lambda g}/K;
//  - Proposition 3 (§4, B.6): logits in [-lambda, lambda] force
//    rho_D >= M_L/(M_L + K e^{2 lambda}) -> 1 as the far set grows, for any
//    transport; shown against the far mass of nested routes of the chosen step
//    law for M_L up to 1e7 and beyond, streamed (memory independent of M_L);
//  - Proposition 4 (B.7): ||B_S||_op <= 1 - rho_D;
//  - B.11/B.12: sigma_min(B_S U) >= (1 - rho_D)(1 - gamma), and the sandwich
//    (1 - rho_D)(1 - gamma) <= sigma_min(B_S U) <= ||B_S||_op <= 1 - rho_D.
// The inequalities are deterministic (docs/theory.md#statistical-protocol): zero violations beyond
// relative 1e-12 over random instances, and equality at each extremal
// configuration to 1e-12.
#include "sims/far_mass.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/core.h>

#include "attention/near_signal.h"
#include "groups/family.h"
#include "groups/haar.h"
#include "groups/heat.h"
#include "sims/device_walks.h"
#include "stats/intervals.h"
#include "stats/moments.h"

namespace routelab {

namespace {

constexpr double kRelTol = 1e-12;  // theory.md's protocol: violations beyond relative 1e-12

// By how much, relative to the bound, a value exceeds an upper bound or falls
// short of a lower one (> kRelTol is a violation).
double upper_excess(double value, double bound) { return (value - bound) / std::max(std::abs(bound), 1e-300); }
double lower_excess(double value, double bound) { return (bound - value) / std::max(std::abs(bound), 1e-300); }

// A score in [lo, hi], exactly at `edge` one time in four: instances on a
// bound's extremal face test its tightness, not only its validity.
double score_in(Stream& s, double lo, double hi, double edge) {
  return s.uniform() < 0.25 ? edge : s.uniform(lo, hi);
}

// Dirichlet(1, ..., 1) weights over n entries.
void dirichlet(Stream& s, int n, std::vector<double>& w) {
  w.resize(n);
  double total = 0;
  for (auto& x : w) total += (x = -std::log(s.uniform()));
  for (auto& x : w) x /= total;
}

// Sources of the random instances, one stream purpose each.
enum Purpose : unsigned { kRoute = 0, kProp1 = 1, kProp3 = 2, kProp4 = 3, kNearGain = 4, kExtremal = 5 };

// The per-instance outputs, in the order of the fill below.
enum Column { kRho1, kA1, kRho3, kSpread3, kNorm4, kGain11, kSandwich12, kColumns };

// Near weights (K of them) and the far mass of Dirichlet weights over K + M
// sources. The near weights are rescaled to sum to the computed 1 - rho_D, so
// that a bound in 1 - rho_D is not compared against a sum that differs from it
// by rounding: near a far mass of 1, 1 - rho_D carries an absolute error of
// about 1e-16, which relative to a near mass of 1e-5 would read as 1e-11.
double near_weights(Stream& s, int K, int M, std::vector<double>& w) {
  dirichlet(s, K + M, w);
  double rho = 0, near = 0;
  for (int j = K; j < K + M; ++j) rho += w[j];
  for (int j = 0; j < K; ++j) near += w[j];
  w.resize(K);
  for (auto& x : w) x *= (1.0 - rho) / near;
  return rho;
}

SimRow violation_row(std::string result, std::string quantity, long long count) {
  // A count with no noise: passes iff it is 0.
  return upper_row(std::move(result), std::move(quantity), double(count), kNoStderr, 0.0, 0.0);
}

SimRow excess_row(std::string result, std::string quantity, double excess) {
  SimRow r;
  r.result = std::move(result);
  r.quantity = std::move(quantity);
  r.estimate = excess;
  r.kind = Kind::trend;
  r.verdict = Verdict::none;
  return r;
}

SimRow equality_row(std::string result, double rel_error) {
  return exact_row(std::move(result), "extremal_equality_error", rel_error, kNoStderr, 0.0, 0.0);
}

}  // namespace

std::vector<SimRow> far_mass_bound_rows(const FarMassBounds& bounds, const FarMassPoint& pt, const SimContext& ctx) {
  struct Scratch {
    std::vector<double> w, coords;
    std::vector<Mat> P;
  };
  std::vector<Scratch> scratch(ctx.threads);
  const double g = pt.gap;
  const std::vector<double> out = parallel_fill(ctx.samples, kColumns, ctx.threads, [&](long long i, double* o, int t) {
    Scratch& sc = scratch[t];
    {  // Proposition 1: near scores >= c_near, far scores <= c_far = c_near - g.
      Stream s(ctx.seed, sample_stream(ctx.point, i, kProp1));
      const int K = 1 + int(s.below(5)), M = 1 + int(s.below(200));
      const double lambda = s.uniform(0.5, 30.0), c_far = s.uniform(-1.0, 1.0 - g), c_near = c_far + g;
      FarMassAccumulator acc;
      for (int j = 0; j < K; ++j) acc.add_near(lambda * score_in(s, c_near, 1.0, c_near));
      for (int j = 0; j < M; ++j) acc.add_far(lambda * score_in(s, -1.0, c_far, c_far));
      o[kRho1] = upper_excess(acc.far_mass(), bounds.far_mass_upper(M, K, lambda * g));
      o[kA1] = upper_excess(acc.far_norm(), bounds.far_norm_upper(M, K, lambda * g));
    }
    {  // Proposition 3: logits in [-lambda, lambda]; then any logits and their spread.
      Stream s(ctx.seed, sample_stream(ctx.point, i, kProp3));
      const int K = 1 + int(s.below(5)), M = 1 + int(s.below(200));
      const double lambda = s.uniform(0.5, 5.0);
      FarMassAccumulator acc, spread;
      for (int j = 0; j < K; ++j) acc.add_near(score_in(s, -lambda, lambda, lambda));
      for (int j = 0; j < M; ++j) acc.add_far(score_in(s, -lambda, lambda, -lambda));
      o[kRho3] = lower_excess(acc.far_mass(), bounds.far_mass_lower(M, K, lambda));
      double near_max = -1e300, far_min = 1e300;
      for (int j = 0; j < K; ++j) {
        const double l = s.uniform(-5.0, 5.0);
        spread.add_near(l);
        near_max = std::max(near_max, l);
      }
      for (int j = 0; j < M; ++j) {
        const double l = s.uniform(-5.0, 5.0);
        spread.add_far(l);
        far_min = std::min(far_min, l);
      }
      o[kSpread3] = lower_excess(spread.far_mass(), bounds.far_mass_lower_spread(M, K, near_max - far_min));
    }
    {  // Proposition 4: Haar near transports on O(d).
      Stream s(ctx.seed, sample_stream(ctx.point, i, kProp4));
      const int d = 2 + int(s.below(7)), K = 1 + int(s.below(5)), M = 1 + int(s.below(5));
      sc.P.resize(K);
      for (auto& P : sc.P) P = haar_sample(s, d, false);
      const double rho = near_weights(s, K, M, sc.w);
      const Mat B = near_signal_coefficient(sc.w, sc.P);
      o[kNorm4] = upper_excess(Eigen::JacobiSVD<Mat>(B).singularValues()(0), bounds.near_signal_upper(rho));
    }
    {  // B.11/B.12: near transports exp(X), ||X||_g = t < 0.9, so gamma < 1.
      Stream s(ctx.seed, sample_stream(ctx.point, i, kNearGain));
      const int d = 2 + int(s.below(7)), r = 1 + int(s.below(d)), K = 1 + int(s.below(5)), M = 1 + int(s.below(5));
      const Mat U = haar_sample(s, d, false).leftCols(r);
      const double size = s.uniform(0.0, 0.9);
      sc.P.resize(K);
      sc.coords.resize(so_dim(d));
      double gamma = 0;
      for (auto& P : sc.P) {
        s.normals(sc.coords.data(), sc.coords.size());
        const double len = std::sqrt(std::inner_product(sc.coords.begin(), sc.coords.end(), sc.coords.begin(), 0.0));
        P = exp_skew(skew_from_coords(sc.coords.data(), d) * (size / len));
        gamma = std::max(gamma, transport_misalignment(P, U));
      }
      const double rho = near_weights(s, K, M, sc.w);
      const Mat B = near_signal_coefficient(sc.w, sc.P);
      const double gain = near_gain(B, U), norm = Eigen::JacobiSVD<Mat>(B).singularValues()(0);
      o[kGain11] = lower_excess(gain, bounds.near_gain_lower(rho, gamma));
      o[kSandwich12] = std::max({o[kGain11], upper_excess(gain, norm), upper_excess(norm, bounds.near_signal_upper(rho))});
    }
  });

  long long count[kColumns] = {};
  double worst[kColumns];
  std::fill(worst, worst + kColumns, -1e300);
  for (long long i = 0; i < ctx.samples; ++i)
    for (int c = 0; c < kColumns; ++c) {
      const double e = out[std::size_t(i) * kColumns + c];
      count[c] += e > kRelTol;
      worst[c] = std::max(worst[c], e);
    }

  // Extremal configurations at the point's K. Proposition 4: every near
  // transport the same orthogonal Q, so ||B_S|| = sum of near weights.
  // B.11: transports that fix U (gamma = 0), so sigma_min(B_S U) = 1 - rho_D;
  // for orthogonal transports this is the only equality case (at gamma > 0
  // the tight value is (1 - rho_D)(1 - gamma^2/2), since u^T P u = 1 - |(P - I)u|^2/2).
  Stream s(ctx.seed, sample_stream(ctx.point, 0, kExtremal));
  std::vector<double> w;
  const int d = 8, r = 3;
  const Mat Q = haar_sample(s, d, false);
  double rho = near_weights(s, pt.K, 3, w);
  const double norm4 = Eigen::JacobiSVD<Mat>(near_signal_coefficient(w, std::vector<Mat>(pt.K, Q))).singularValues()(0);
  const double bound4 = bounds.near_signal_upper(rho);
  const Mat V = haar_sample(s, d, false), U = V.leftCols(r);
  std::vector<Mat> fixing(pt.K);
  double gamma = 0;
  for (auto& P : fixing) {
    Mat block = Mat::Identity(d, d);
    block.bottomRightCorner(d - r, d - r) = haar_sample(s, d - r, false);
    P = V * block * V.transpose();
    gamma = std::max(gamma, transport_misalignment(P, U));
  }
  rho = near_weights(s, pt.K, 3, w);
  const double bound11 = bounds.near_gain_lower(rho, gamma);
  const double gain11 = near_gain(near_signal_coefficient(w, fixing), U);

  std::vector<SimRow> rows;
  const char* p1 = "Proposition 1 (B.4)";
  const char* p3 = "Proposition 3 (B.6)";
  const char* p4 = "Proposition 4 (B.7)";
  rows.push_back(violation_row(p1, "far_mass_violations", count[kRho1]));
  rows.push_back(excess_row(p1, "far_mass_max_relative_excess", worst[kRho1]));
  rows.push_back(violation_row(p1, "far_norm_violations", count[kA1]));
  rows.push_back(excess_row(p1, "far_norm_max_relative_excess", worst[kA1]));
  rows.push_back(violation_row(p3, "far_mass_violations", count[kRho3]));
  rows.push_back(excess_row(p3, "far_mass_max_relative_excess", worst[kRho3]));
  rows.push_back(violation_row(p3, "spread_far_mass_violations", count[kSpread3]));
  rows.push_back(excess_row(p3, "spread_far_mass_max_relative_excess", worst[kSpread3]));
  rows.push_back(violation_row(p4, "near_signal_norm_violations", count[kNorm4]));
  rows.push_back(excess_row(p4, "near_signal_norm_max_relative_excess", worst[kNorm4]));
  rows.push_back(equality_row(p4, std::abs(norm4 - bound4) / bound4));
  rows.push_back(violation_row("B.11", "near_gain_violations", count[kGain11]));
  rows.push_back(excess_row("B.11", "near_gain_max_relative_excess", worst[kGain11]));
  rows.push_back(equality_row("B.11", std::abs(gain11 - bound11) / bound11));
  rows.push_back(violation_row("B.12", "sandwich_violations", count[kSandwich12]));
  rows.push_back(excess_row("B.12", "sandwich_max_relative_excess", worst[kSandwich12]));
  return rows;
}

FarStreamBuffers::FarStreamBuffers(const StepLaw& law)
    : walk(law), scores(kChunk), start(law.dim()), q(law.dim(), 0.0) {
  q[0] = 1.0;
}

void stream_route_far_mass(const StepLaw& law, Stream& s, int K, double lambda, const std::vector<long long>& ML,
                           FarStreamBuffers& buf, double* rho, double* a) {
  const int d = law.dim();
  std::fill(buf.start.begin(), buf.start.end(), 0.0);
  buf.start[0] = 1.0;  // k = e_1
  // Walks n <= kChunk steps on from buf.start, then restarts buf.start at the
  // end point (renormalised: orthogonal steps keep |x| = 1 up to rounding).
  auto walk_chunk = [&](int n) {
    walk_scores(law, s, buf.q.data(), buf.start.data(), n, buf.scores.data(), buf.walk);
    double n2 = 0;
    for (int i = 0; i < d; ++i) n2 += buf.walk.x[i] * buf.walk.x[i];
    const double c = 1.0 / std::sqrt(n2);
    for (int i = 0; i < d; ++i) buf.start[i] = buf.walk.x[i] * c;
  };
  FarMassAccumulator acc;
  for (int j = 0; j < K; ++j) acc.add_near(lambda);
  // The near window's own steps: the far set starts at offset K + 1.
  for (long long done = 0; done < K; done += FarStreamBuffers::kChunk)
    walk_chunk(int(std::min<long long>(FarStreamBuffers::kChunk, K - done)));
  std::size_t c = 0;
  for (long long done = 0; done < ML.back();) {
    const int n = int(std::min<long long>(FarStreamBuffers::kChunk, ML.back() - done));
    walk_chunk(n);
    for (int t = 0; t < n; ++t) {
      acc.add_far(lambda * buf.scores[t]);
      ++done;
      if (done == ML[c]) {
        rho[c] = acc.far_mass();
        a[c] = acc.far_norm();
        ++c;
      }
    }
  }
}

std::vector<SimRow> far_mass_route_rows(const StepLaw& law, const FarMassBounds& bounds, const FarMassPoint& pt,
                                        const SimContext& ctx) {
  const int count = int(pt.ML.size());
  std::vector<FarStreamBuffers> buffers;
  for (int t = 0; t < ctx.threads; ++t) buffers.emplace_back(law);
  // --device cuda: the same routes on the GPU (the bound rows' random
  // instances above stay on the CPU: no walks there).
  const std::vector<double> out =
      ctx.gpu ? gpu_far_mass_routes(law, ctx, pt.routes, pt.K, pt.lambda, pt.ML, FarStreamBuffers::kChunk, kRoute)
              : parallel_fill(pt.routes, 2 * count, ctx.threads, [&](long long i, double* o, int t) {
                  Stream s(ctx.seed, sample_stream(ctx.point, i, kRoute));
                  stream_route_far_mass(law, s, pt.K, pt.lambda, pt.ML, buffers[t], o, o + count);
                });

  // The extremal configurations, streamed like the routes: Proposition 3's
  // (near logits +lambda, far -lambda) and Proposition 1's (near scores
  // c_near = 1, far scores c_far = 1 - g).
  FarMassAccumulator ext3, ext1;
  for (int j = 0; j < pt.K; ++j) ext3.add_near(pt.lambda), ext1.add_near(pt.lambda);
  std::vector<double> rho3(count), rho1(count), a1(count);
  for (long long m = 1, c = 0; c < count; ++m) {
    ext3.add_far(-pt.lambda);
    ext1.add_far(pt.lambda * (1.0 - pt.gap));
    if (m == pt.ML[c]) rho3[c] = ext3.far_mass(), rho1[c] = ext1.far_mass(), a1[c] = ext1.far_norm(), ++c;
  }

  std::vector<SimRow> rows;
  std::vector<double> column(pt.routes);
  for (int c = 0; c < count; ++c) {
    const double M = double(pt.ML[c]);
    const std::vector<std::pair<std::string, std::string>> cells = {{"ML", std::to_string(pt.ML[c])}};
    Moments rho(1), a(1);
    for (int i = 0; i < pt.routes; ++i) {
      rho.add(&out[std::size_t(i) * 2 * count + c]);
      a.add(&out[std::size_t(i) * 2 * count + count + c]);
    }
    const double lower3 = bounds.far_mass_lower(M, pt.K, pt.lambda);
    SimRow r = lower_row("Proposition 3 (B.6)", "far_mass", rho.mean[0], rho.stderr_of(0), lower3, kZ);
    r.cells = cells;
    rows.push_back(r);
    SimRow norm = excess_row("Proposition 3 (B.6)", "far_norm", a.mean[0]);
    norm.stderr_ = a.stderr_of(0);
    norm.cells = cells;
    rows.push_back(norm);
    SimRow e3 = equality_row("Proposition 3 (B.6)", std::abs(rho3[c] - lower3) / lower3);
    e3.cells = cells;
    rows.push_back(e3);
    const double upper1 = bounds.far_mass_upper(M, pt.K, pt.lambda * pt.gap);
    SimRow e1 = equality_row("Proposition 1 (B.4)", std::abs(rho1[c] - upper1) / upper1);
    e1.cells = cells;
    rows.push_back(e1);
    SimRow n1 = upper_row("Proposition 1 (B.4)", "extremal_far_norm", a1[c], kNoStderr,
                          bounds.far_norm_upper(M, pt.K, pt.lambda * pt.gap), 0.0);
    n1.cells = cells;
    rows.push_back(n1);
  }
  return rows;
}

namespace {

FarMassPoint parse_far_mass_point(const Params& p) {
  FarMassPoint pt;
  pt.K = int(require_int(p, "K", 1, 1000000, "an integer in [1, 1000000] (the near-set size)"));
  pt.lambda = require_double(p, "lambda", 0.0, 100.0, true, "a number in (0, 100] (logits lie in [-lambda, lambda])");
  pt.gap = require_double(p, "gap", 0.0, 2.0, true, "a number in (0, 2] (scores lie in [-1, 1], so c_near - c_far <= 2)");
  pt.routes = int(require_int(p, "routes", 2, 100000, "an integer in [2, 100000]"));
  pt.ML.clear();
  for (double x : param_double_list(p, "ML")) {
    if (!(x == std::floor(x) && x >= 1 && x <= 1e9))
      throw BadInput("ML", fmt::format("{} is not accepted; a comma list of integers in [1, 1e9]", x));
    pt.ML.push_back((long long)x);
  }
  std::sort(pt.ML.begin(), pt.ML.end());
  pt.ML.erase(std::unique(pt.ML.begin(), pt.ML.end()), pt.ML.end());
  return pt;
}

std::vector<SimRow> run_far_mass(const Params& p, const SimContext& ctx) {
  const FarMassPoint pt = parse_far_mass_point(p);
  const auto law = make_step_law(p);
  const FarMassBounds bounds;
  std::vector<SimRow> rows = far_mass_bound_rows(bounds, pt, ctx);
  for (auto& r : far_mass_route_rows(*law, bounds, pt, ctx)) rows.push_back(std::move(r));
  return rows;
}

// Defaults: at lambda = 2, K = 1 Proposition 3's bound M_L/(M_L + 54.6) runs
// from 0.15 to 0.9995 over M_L = 10..1e5 (not vacuous); at lambda = 5 it
// crosses 1/2 at M_L = 2.2e4. With g = 0.5, the random Proposition 1 instances
// (lambda g up to 15 against log M up to 5.3) mostly have a bound below 1/2.
const bool registered_far_mass = register_sim({.name = "far-mass",
     .summary = "far mass rho_D and a_D against Props 1, 3 (streamed to M_L = 1e7+), Prop 4 and B.11/B.12",
     .flags = {{"K", "1", "near-set size K"},
           {"lambda", "2", "logit bound: logits lambda S with S in [-1, 1]"},
           {"gap", "0.5", "Proposition 1's score gap g = c_near - c_far, in (0, 2]"},
           {"ML", "10,100,1000,10000,100000", "far-set sizes M_L (one streamed far set per route, read at each)", true},
           {"routes", "8", "independent nested routes (queries) per far-set curve"}},
     .uses_family = true,
     .default_samples = 100000,
     .run = run_far_mass,
     .checks = {{"far mass bounds", {{"family", "householder"}, {"d", "8"}, {"K", "1,4"}, {"lambda", "3"}, {"gap", "0.5"},
                                {"ML", "10,100,1000,10000,100000"}, {"routes", "8"}}, 100000, 10000}},
     .order = 50,
     .validate = [](const Params& p) { parse_far_mass_point(p); },
     .gpu_refusal = gpu_family_refusal});

}  // namespace

}  // namespace routelab
