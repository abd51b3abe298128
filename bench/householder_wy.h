// Products of Householder reflections in compact-WY form, so a long product
// acting on a full matrix runs as matrix-matrix work (Example 2's walks when
// the quantity needs P_n itself: E[P_n], traces).
//
// Schreiber & Van Loan (1989), "A storage-efficient WY representation for
// products of Householder transformations"; LAPACK's dlarft/dlarfb and
// Eigen's BlockHouseholder.h build the same factor. For reflections
// H_i = I - tau_i v_i v_i^T, i = 1..b, with V = [v_1 .. v_b] (d x b):
//   H_1 H_2 ... H_b = I - V T V^T,  T upper triangular (b x b),
//   T_ii = tau_i,  T(1:i-1, i) = -tau_i T(1:i-1, 1:i-1) V(:, 1:i-1)^T v_i.
// A walk multiplies on the left, P <- H_b ... H_1 P, which is the transpose
// of that product (each H_i is symmetric): P <- P - V T^T (V^T P), or on
// Q = P^T, Q <- Q - (Q V) T V^T: two d x b x d matrix products and a
// triangular d x b x b one, 4 b d^2 + b^2 d flops against 4 b d^2 for b
// rank-1 updates, but at matrix-multiply speed (bench/panel_gemm.h).
#pragma once

#include "groups/householder.h"

namespace routelab {

// T (b x b, upper triangular) of H_1 ... H_b = I - V T V^T, with
// tau_i = 2 / |v_i|^2 (a reflection for any nonzero v_i).
void wy_factor(const Mat& V, Mat& T);

// Scratch for householder_walk_matrix_wy; reuse it across walks.
struct WyBuffers {
  Mat Q, V, Vt, G, T, Z, Y;
};

// P <- M_n ... M_1 P for n steps of a Householder law, drawn from s exactly
// as n calls of law.draw would draw them (so P equals walk_matrix's product,
// up to rounding), applied `block` reflections at a time in compact-WY form.
// No reorthonormalisation: callers measure the drift on their own schedule.
void householder_walk_matrix_wy(const Householder& law, Stream& s, Mat& P, int n, int block, WyBuffers& buf);

}  // namespace routelab
