// far-mass: the softmax side of the aggregation model, checked bound by bound
// (paper §4, B.4-B.7, B.11-B.12; docs/theory.md). The computational cores, with
// the bounds passed in so a test can plant a wrong one and watch it fail.
#pragma once

#include <functional>
#include <vector>

#include "attention/far_mass.h"
#include "groups/walk.h"
#include "sims/sim.h"
#include "theory/far_mass_bounds.h"

namespace routelab {

// The bounds the checks compare against (the paper's, by default).
struct FarMassBounds {
  // Proposition 1 (B.4), of (M, K, lambda g).
  std::function<double(double, double, double)> far_mass_upper = theory::prop1_far_mass_upper;
  std::function<double(double, double, double)> far_norm_upper = theory::prop1_far_norm_upper;
  // Proposition 3 (B.6), of (M_L, K, lambda) and of (M, K, spread Delta).
  std::function<double(double, double, double)> far_mass_lower = theory::prop3_far_mass_lower;
  std::function<double(double, double, double)> far_mass_lower_spread = theory::prop3_far_mass_lower_spread;
  // Proposition 4 (B.7), of rho_D; B.11, of (rho_D, gamma).
  std::function<double(double)> near_signal_upper = theory::prop4_near_signal_upper;
  std::function<double(double, double)> near_gain_lower = theory::b11_near_gain_lower;
};

// One parameter point: near-set size K, logit bound lambda, score gap g
// (Proposition 1), far-set sizes M_L (read off one stream), routes per M_L.
struct FarMassPoint {
  int K = 1;
  double lambda = 2;
  double gap = 0.5;
  std::vector<long long> ML = {10, 100, 1000, 10000, 100000};
  int routes = 4;
};

// The deterministic inequalities over ctx.samples random instances in the
// protocol's ranges (Prop 1: K in [1,5], M in [1,200], lambda in [0.5,30],
// scores on either side of the point's gap; Prop 3: lambda in [0.5,5], and
// logits in [-5,5] for the spread form; Prop 4 and B.11/B.12: d in [2,8],
// Dirichlet weights, Haar or exp(small skew) near transports), each as a
// violation count (theory 0) and the largest relative excess; plus equality at
// each bound's extremal configuration to 1e-12.
std::vector<SimRow> far_mass_bound_rows(const FarMassBounds& bounds, const FarMassPoint& pt, const SimContext& ctx);

// Scratch for streaming one route's far set in fixed-size chunks: its size
// does not depend on M_L (the far loop allocates nothing).
struct FarStreamBuffers {
  static constexpr int kChunk = 4096;  // a multiple of the walk's renormalisation period
  WalkBuffers walk;
  std::vector<double> scores, start, q;
  explicit FarStreamBuffers(const StepLaw& law);
};

// One query's softmax over K near sources at logit +lambda (perfectly aligned
// near routes: the smallest far mass any near set allows) and far sources at
// offsets K+1, ..., K+max(ML) of one nested route of `law`, logit
// lambda q^T P_n k with q = k = e_1, so every logit lies in [-lambda, lambda].
// The far set is streamed through a FarMassAccumulator; rho_D and a_D are
// written at each M_L (sorted ascending) into rho[c], a[c].
void stream_route_far_mass(const StepLaw& law, Stream& s, int K, double lambda, const std::vector<long long>& ML,
                           FarStreamBuffers& buf, double* rho, double* a);

// Per M_L: the mean far mass over pt.routes independent routes against
// Proposition 3 (kind lower), and the extremal configurations of Propositions
// 1 and 3 streamed at that M_L (equality to 1e-12).
std::vector<SimRow> far_mass_route_rows(const StepLaw& law, const FarMassBounds& bounds, const FarMassPoint& pt,
                                        const SimContext& ctx);

}  // namespace routelab
