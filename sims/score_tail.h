// score-tail: far-route score tails against the paper's bounds (Theorem 2,
// Theorem 5, Corollary B.5, Remark 3). The computational core, with the bounds
// passed in so a test can plant a wrong one and see its check fail.
#pragma once

#include <functional>
#include <vector>

#include "sims/sim.h"
#include "stats/intervals.h"

namespace routelab {

struct ScoreTailTheory {
  // Theorem 2(b): Pr[S - E S >= t] <= hoeffding(B, t).
  std::function<double(int blocks, double t)> hoeffding;
  // Theorem 5(b): Pr[q^T U k >= s] <= levy(d, s) after mixing.
  std::function<double(int d, double s)> levy;
  // Theorem 2: E S_n for the so2 law (half-widths, omega, n).
  std::function<double(const std::vector<double>&, double, long long)> so2_mean;
  // Theorem 5's exact Haar law: Pr[q^T U k >= s].
  std::function<double(int d, double s)> haar_tail;
};

// The paper's bounds (theory/score_tails.h, theory/haar_score_law.h).
ScoreTailTheory paper_score_tail_theory();

// Corollary B.5's constants: near route within gamma of the identity (SO(2):
// phases within delta = gamma), K = 1 near source, targets rho*, a*.
struct FarMassTargets {
  double gamma = 0.1;
  double rho_star = 0.05;
  double a_star = 0.01;
};

// Rows of one parameter point. ns: walk lengths (one walk read at each), ss:
// thresholds in [-1, 1], routes: M >= 1 far routes for the union bound.
// A law of plane rotations (StepLaw::plane_rotations: the so2 family) gets
// Theorem 2's rows (matched score S = (1/B) sum cos Theta_b), every other law
// Theorem 5's (q = k = e_1), with exact-law rows where the law knows its score
// law (StepLaw::exact_score_law; the Haar law's from `theory`).
std::vector<SimRow> score_tail_rows(const StepLaw& law, const std::vector<long long>& ns, const std::vector<double>& ss,
                                    long long routes, const SimContext& ctx,
                                    const ScoreTailTheory& theory = paper_score_tail_theory(),
                                    const FarMassTargets& targets = {});

}  // namespace routelab
