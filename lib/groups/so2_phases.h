// Phase walks for SO(2) blocks (Example 1), many steps at a time.
//
// A walk of So2Blocks steps never needs its matrices: block b of P_n is the
// rotation by Theta_{n,b} = sum_t psi_{t,b}, psi_{t,b} = omega + U[-a_b, a_b].
// So a score q^T P_n k = sum_b r_b cos(Theta_{n,b} + phi_b) (r_b = |q_b||k_b|,
// phi_b the angle from k_b to q_b) is a weighted sum of cosines of phases.
// This kernel draws the increments in batches, accumulates the phases in
// double, reduces them mod 2 pi every step (Cody-Waite, so the phase stays
// exact to a few ulps of pi however long the walk; DESIGN lesson 5), and
// evaluates the cosines through libmvec (so2_phases_vec.cpp).
//
// Stream layout: the increments come from the stream exactly as n calls of
// So2Blocks::draw would take them (step t, block b uses the uniform number
// t*B + b of the stream, two words each), so the phases equal those of a plain
// So2Blocks walk on the same (seed, stream), up to the rounding of the sum.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "groups/so2.h"

namespace routelab {

// One walk of n steps. theta[0..B) holds the starting phases on entry
// (phi_b above; zeros for P_0 = I) and the final phases, wrapped to
// [-pi, pi], on return. S[t-1] = sum_b weight[b] cos Theta_{t,b}, t = 1..n.
void so2_cos_walk(const So2Blocks& law, Stream& s, int n, const double* weight, double* theta, double* S);

// S_n = (1/B) sum_b cos Theta_{n,b} from Theta_0 = 0 (the mean cosine of the
// phases, E S_n = Re E e^{i Theta}: the W4 benchmark's quantity).
void so2_mean_cos_walk(const So2Blocks& law, Stream& s, int n, double* S);

// Buffers one thread reuses across walks (so2_mean_cos_at allocates nothing).
struct So2WalkScratch {
  std::vector<double> lo, width, u, th, weight, theta, rows, S;
};

// S at each of the sorted lengths ns[0 .. count): so2_mean_cos_walk's S[n - 1]
// for n = ns[c] (the same draws, phases and cosine sums, bit for bit), with
// cosines taken only at those lengths.
void so2_mean_cos_at(const So2Blocks& law, Stream& s, const long long* ns, int count, double* out,
                     So2WalkScratch& buf);

// so2_mean_cos_at for `walks` walks at once, walk w on Stream(seed, stream0 +
// w): out[w * count + c] is what so2_mean_cos_at gives that walk at ns[c],
// bit for bit. With AVX-512 the walks go eight to a register, each lane its
// own Philox stream at the same counter, so a short walk costs its draws and
// not a kernel call; elsewhere it loops over so2_mean_cos_at.
void so2_mean_cos_at_walks(const So2Blocks& law, uint64_t seed, uint64_t stream0, long long walks,
                           const long long* ns, int count, double* out, So2WalkScratch& buf);

// S[r] = sum_b w[b] cos(theta[r * B + b]) for r < rows, vectorized through
// libmvec; theta must already be wrapped to about [-pi, pi].
void cos_weighted_rows(const double* theta, int rows, int B, const double* w, double* S);

// wrap_phase (base/angles.h) reduces the phases mod 2 pi.

}  // namespace routelab
