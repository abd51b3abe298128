// random-variant: the paper's "random" experimental positional scheme
// (Appendix C "Model variants"; docs/theory.md#random-variant), block by
// block. The computational core, with the per-block gaps passed in so a test
// can plant wrong ones.
#pragma once

#include <vector>

#include "sims/sim.h"

namespace routelab {

struct RandomVariantSetup {
  int d = 64;
  double base = 10000;     // half-widths f_b = base^(-2b/d)
  double eps = 0.01;       // the window level: block b carries the gap at n while beta_b^n > eps
  std::vector<double> gaps;  // claimed beta_b; empty: the paper's sin f_b / f_b
};

// Rows at walk lengths ns for the blocks listed in `blocks` (per-block rows);
// every block enters E S_n and the carrying-blocks count.
std::vector<SimRow> random_variant_rows(const RandomVariantSetup& setup, const std::vector<long long>& ns,
                                        const std::vector<int>& blocks, const SimContext& ctx);

}  // namespace routelab
