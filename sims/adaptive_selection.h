// The adaptive-selection simulation's core (docs/theory.md#d3), exposed so tests
// can plant wrong bounds.
#pragma once

#include <functional>
#include <vector>

#include "sims/sim.h"

namespace routelab {

struct AdaptiveSelectionConfig {
  long long M = 1000;  // far routes
  double eps = 0.3;    // selection half-width: A_eps = {k : |arg zeta_k| <= eps}
  double eta = 0.05;
};

// The bounds the checks compare against; tests replace one.
struct AdaptiveSelectionTheory {
  std::function<double(long long M, double p)> chernoff;  // Pr[N_eps < Mp/2] <= exp(-Mp/8)
  std::function<double(double eps)> min_abs_t;            // |t| >= cos eps
  std::function<double(double beta, long long w, double rho, double a, int blocks, double eta)> separate;  // Theorem 7
  AdaptiveSelectionTheory();  // the paper's
};

AdaptiveSelectionConfig adaptive_selection_config(const Params& p);  // throws BadInput naming the flag
std::vector<SimRow> adaptive_selection_rows(const AdaptiveSelectionConfig& cfg, const SimContext& ctx,
                                            const AdaptiveSelectionTheory& theory = AdaptiveSelectionTheory());

}  // namespace routelab
