// Two-sided normal-theory intervals and the z-levels of the statistical
// protocol (docs/theory.md#statistical-protocol): z = 5 for checks that gate CI (false failure about
// 6e-7 per scalar), Bonferroni-raised when one verdict covers many scalars.
#pragma once

namespace routelab {

constexpr double kZ = 5.0;
// Level of the one-sided Clopper-Pearson limits of every tail verdict: pass
// iff the lower limit at level 1 - 3e-7 is <= the bound.
constexpr double kTailAlpha = 3e-7;
// Two-sided z for a family of `count` tests with total false-failure rate
// 2 Phi(-kZ) (about 5.7e-7); at least kZ.
double bonferroni_z(long long count);
// One-sided Clopper-Pearson limits for x successes in n trials at level 1 - alpha.
double clopper_pearson_lower(long long x, long long n, double alpha);
double clopper_pearson_upper(long long x, long long n, double alpha);

}  // namespace routelab
