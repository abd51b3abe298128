// The draw and apply of nonnormal, skewexp, fisher, lieball, heat and
// dithered, written once for the CPU and the GPU. Part of
// groups/step_kernels.h, which includes it after the functions these use
// (draw_normals, rodrigues_rotate, householder_*, haar_draw, matrix_product,
// newton_schulz_step, ...): include step_kernels.h, not this.
//
// The CPU classes call what they can reproduce to the bit: nonnormal's draw
// and apply, skewexp's draw, matrix-Fisher on SO(2) (von Mises), the
// Lie-ball coordinates and skew matrix, and the exact heat kernel (d = 2, 3).
// They keep Eigen where Eigen's arithmetic is not this arithmetic: products
// (Eigen's GEMV and GEMM sum in another order; a dense step's apply), the Haar
// draw behind fisher at d >= 3 (haar_sample), the exponential (Eigen's Pade
// approximant against the Taylor polynomial below) and the heat walk's
// reorthonormalisation (an SVD against Newton-Schulz). There the GPU agrees
// with the CPU to rounding: the same words drawn, about 1e-16 per product and
// 1e-15 per exponential. The rejection samplers (von Mises, fisher at
// d >= 3, the Lie-ball bump) accept on a comparison of rounded values, so a
// draw could in principle take another branch where a value sits within
// rounding of its threshold (probability about 1e-16 per draw).
#pragma once

namespace routelab {

// ---------------------------------------------------------------------------
// Theorem 3's non-normal example (nonnormal.h), d = 3: step[0] = 0 rotates by
// angle 1 about the axis (0.6, 0, 0.8), step[0] = 1 reflects e_1.

template <class V>
ROUTELAB_HOST_DEVICE inline void nonnormal_draw(Stream& s, V step) {
  step[0] = double(s.next_u32() & 1u);
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void nonnormal_apply(S step, V x) {
  if (step[0] == 0.0) {
    const double axis[3] = {0.6, 0.0, 0.8};
    rodrigues_rotate(axis, ::cos(1.0), ::sin(1.0), x);
  } else {
    x[0] = -x[0];
  }
}

// ---------------------------------------------------------------------------
// exp of a scaled fixed skew matrix (Example 5, skewexp.h): step[0] = eps,
// U[-a, a]; M = Q diag(R(eps lambda_j)) Q^T with `table` = Q (d x d), then
// the d/2 lambda_j.

template <class V>
ROUTELAB_HOST_DEVICE inline void skewexp_draw(Stream& s, double a, V step) {
  step[0] = s.uniform(-a, a);
}

// x <- Q R(eps lambda) Q^T x, through tmp (d).
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void skewexp_apply(int d, const double* table, S step, S tmp, V x) {
  const double* Q = table;
  const double* lambdas = table + int64_t(d) * d;
  for (int i = 0; i < d; ++i) {
    double sum = 0;
    for (int j = 0; j < d; ++j) sum += Q[int64_t(i) * d + j] * x[j];
    tmp[i] = sum;
  }
  for (int b = 0; b < d / 2; ++b) {
    const double t = step[0] * lambdas[b];
    const double c = ::cos(t), s = ::sin(t);
    const double y0 = tmp[2 * b], y1 = tmp[2 * b + 1];
    tmp[2 * b] = c * y0 - s * y1;
    tmp[2 * b + 1] = s * y0 + c * y1;
  }
  for (int i = 0; i < d; ++i) {
    double sum = 0;
    for (int j = 0; j < d; ++j) sum += Q[int64_t(j) * d + i] * tmp[j];
    x[i] = sum;
  }
}

// ---------------------------------------------------------------------------
// Matrix-Fisher on SO(d), A = kappa I (fisher.h).

// theta ~ vonMises(0, kappa) on (-pi, pi], kappa >= 0 (Best and Fisher 1979).
ROUTELAB_HOST_DEVICE inline double von_mises(Stream& s, double kappa) {
  if (kappa < 1e-8) return M_PI * (2.0 * s.uniform() - 1.0);
  // Best-Fisher wrapped-Cauchy envelope, in the numerically stable form of
  // numpy's sampler (the series branch avoids 0/0 at small kappa).
  double r;
  if (kappa < 1e-5) {
    r = 1.0 / kappa + kappa;
  } else {
    const double t = 1.0 + ::sqrt(1.0 + 4.0 * kappa * kappa);
    const double rho = (t - ::sqrt(2.0 * t)) / (2.0 * kappa);
    r = (1.0 + rho * rho) / (2.0 * rho);
  }
  double w;
  while (true) {
    const double z = ::cos(M_PI * s.uniform());
    w = (1.0 + r * z) / (r + z);
    const double y = kappa * (r - w);
    const double v = s.uniform();
    if (y * (2.0 - y) - v >= 0 || ::log(y / v) + 1.0 - y >= 0) break;
  }
  const double theta = ::acos(w < -1.0 ? -1.0 : 1.0 < w ? 1.0 : w);  // std::clamp(w, -1, 1)
  return s.uniform() < 0.5 ? -theta : theta;
}

// G <- R(theta) (2 x 2).
template <class V>
ROUTELAB_HOST_DEVICE inline void rotation_2d(double theta, V G) {
  const double c = ::cos(theta), s = ::sin(theta);
  G[0] = c;
  G[1] = s;
  G[2] = -s;
  G[3] = c;
}

// d = 2: Q = R(theta), theta ~ vonMises(0, 2 kappa).
template <class V>
ROUTELAB_HOST_DEVICE inline void fisher_so2_draw(Stream& s, double kappa, V Q) {
  rotation_2d(von_mises(s, 2.0 * kappa), Q);
}

// Q (d x d); d >= 3: Haar on SO(d) accepted with probability
// exp(kappa (tr Q - d)), work d^2 + 2d (haar_draw's).
template <class V>
ROUTELAB_HOST_DEVICE ROUTELAB_OUT_OF_LINE inline void fisher_draw(Stream& s, int d, double kappa, V Q, V work) {
  if (d == 2) {
    fisher_so2_draw(s, kappa, Q);
    return;
  }
  while (true) {
    haar_draw(s, d, true, Q, work);
    double tr = 0;
    for (int i = 0; i < d; ++i) tr += Q[int64_t(i) * d + i];
    if (::log(s.uniform()) < kappa * (tr - d)) return;
  }
}

// ---------------------------------------------------------------------------
// so(d) and its exponential (heat.h): coordinates x_pq on the basis
// E_pq = e_p e_q^T - e_q e_p^T, p < q, pairs in row-major order.

// X <- sum_{p<q} x_pq E_pq (d x d).
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void skew_matrix(int d, S x, V X) {
  for (int64_t e = 0; e < int64_t(d) * d; ++e) X[e] = 0.0;
  int k = 0;
  for (int p = 0; p < d; ++p)
    for (int q = p + 1; q < d; ++q, ++k) {
      X[int64_t(q) * d + p] = x[k];
      X[int64_t(p) * d + q] = -x[k];
    }
}

// E <- exp(A) for skew A (A is scaled in place), T scratch (d^2): the degree
// 12 Taylor polynomial of A / 2^m, ||A / 2^m||_F <= 1/4 (remainder below
// 0.25^13 / 13! = 2.4e-18), squared m times; m <= 5 for the Lie ball's
// ||A||_F <= sqrt(2) pi. Within about 2^m 1e-16 of exp(A), as Eigen's Pade
// approximant is.
template <class V>
ROUTELAB_HOST_DEVICE inline void exp_skew_taylor(int d, V A, V E, V T) {
  const int64_t dd = int64_t(d) * d;
  double n2 = 0;
  for (int64_t e = 0; e < dd; ++e) n2 += A[e] * A[e];
  int m = 0;
  for (; n2 > 1.0 / 16; n2 *= 0.25) ++m;
  const double scale = ::ldexp(1.0, -m);
  for (int64_t e = 0; e < dd; ++e) A[e] *= scale;
  // Horner: E = I + A (I + A/2 (I + ... (I + A/12))).
  set_identity(E, d);
  for (int k = 12; k >= 1; --k) {
    matrix_product(d, A, E, T);
    for (int j = 0; j < d; ++j)
      for (int i = 0; i < d; ++i) E[int64_t(j) * d + i] = (i == j ? 1.0 : 0.0) + T[int64_t(j) * d + i] / k;
  }
  for (; m > 0; --m) {
    matrix_product(d, E, E, T);
    for (int64_t e = 0; e < dd; ++e) E[e] = T[e];
  }
}

// ---------------------------------------------------------------------------
// Lie-ball steps (sampler S10, lieball.h): M = exp(X), |x| = r U^{1/n} on a
// uniform direction, n = d(d-1)/2, the radius rejected for the bump density.

template <class V>
ROUTELAB_HOST_DEVICE inline void lieball_coords_draw(Stream& s, int n, double r, bool bump, V x) {
  // The radius fraction t = U^{1/n} is independent of the direction, so the
  // bump's rejection needs only t.
  double t;
  do t = ::pow(s.uniform(), 1.0 / n);
  while (bump && !(s.uniform() < ::exp(1.0 - 1.0 / (1.0 - t * t))));
  draw_normals(s, x, n);
  double norm2 = 0;
  for (int i = 0; i < n; ++i) norm2 += x[i] * x[i];
  const double scale = r * t / ::sqrt(norm2);
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

// Doubles of workspace (in units of d^2) lieball_draw needs.
constexpr int kLieBallWork = 3;

// M (d x d); work kLieBallWork d^2.
template <class V>
ROUTELAB_HOST_DEVICE ROUTELAB_OUT_OF_LINE inline void lieball_draw(Stream& s, int d, double r, bool bump, V M, V work) {
  const int dd = d * d;
  const V x = work, A = offset(work, dd), T = offset(work, 2 * dd);
  lieball_coords_draw(s, d * (d - 1) / 2, r, bump, x);
  skew_matrix(d, x, A);
  exp_skew_taylor(d, A, M, T);
}

// ---------------------------------------------------------------------------
// Heat-kernel steps (sampler S8, heat.h).

// Cells of the SO(3) heat angle's table.
constexpr int kSo3HeatCells = 4096;

// The SO(3) heat-kernel angle at probability u, from `table` = the nodes
// theta_i, then the CDF, then the density at them (kSo3HeatCells + 1 each):
// the cubic Hermite interpolant of the CDF on u's cell, inverted by Newton's
// method safeguarded by bisection (So3HeatAngle).
ROUTELAB_HOST_DEVICE inline double so3_heat_quantile(const double* table, double u) {
  constexpr int n = kSo3HeatCells + 1;
  const double *theta = table, *cdf = table + n, *pdf = table + 2 * n;
  if (u <= cdf[0]) return theta[0];
  if (u >= cdf[n - 1]) return theta[n - 1];
  // i + 1: the first node whose CDF exceeds u (std::upper_bound).
  int first = 0;
  for (int count = n; count > 0;) {
    const int half = count / 2;
    if (!(u < cdf[first + half])) {
      first += half + 1;
      count -= half + 1;
    } else {
      count = half;
    }
  }
  const int i = first - 1;
  const double dt = theta[i + 1] - theta[i];
  const double f0 = cdf[i], f1 = cdf[i + 1], m0 = dt * pdf[i], m1 = dt * pdf[i + 1];
  double lo = 0, hi = 1, t = f1 > f0 ? (u - f0) / (f1 - f0) : 0.5;
  for (int it = 0; it < 60; ++it) {
    const double t2 = t * t, t3 = t2 * t;
    const double h = f0 * (2 * t3 - 3 * t2 + 1) + m0 * (t3 - 2 * t2 + t) + f1 * (3 * t2 - 2 * t3) + m1 * (t3 - t2);
    const double dh = (f1 - f0) * (6 * t - 6 * t2) + m0 * (3 * t2 - 4 * t + 1) + m1 * (3 * t2 - 2 * t);
    const double f = h - u;
    if (f > 0) hi = t; else lo = t;
    if (f == 0 || hi - lo < 1e-15) break;
    double next = dh > 0 ? t - f / dh : -1.0;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (::fabs(next - t) < 1e-15) break;
    t = next;
  }
  return theta[i] + t * dt;
}

// The exact kernel, G (d x d): d = 2, R(theta) with theta ~ N(0, tau); d = 3,
// the angle by so3_heat_quantile(table, .), the axis uniform on S^2.
template <class V>
ROUTELAB_HOST_DEVICE inline void heat_exact_draw(Stream& s, int d, double tau, const double* table, V G) {
  if (d == 2) {
    rotation_2d(::sqrt(tau) * s.normal(), G);
    return;
  }
  const double theta = so3_heat_quantile(table, s.uniform());
  double n[3];
  draw_normals(s, n + 0, 3);
  const double inv = 1.0 / ::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  for (double& e : n) e *= inv;
  // set_identity(G, d), not (G, 3): the CPU's heat.cpp did this through
  // Eigen at a size unknown to the compiler, which therefore did not fold
  // the identity's zeros and ones into rodrigues_rotate and contract them
  // into other FMAs; this keeps its bits.
  set_identity(G, d);
  const double c = ::cos(theta), sn = ::sin(theta);
  for (int j = 0; j < 3; ++j) rodrigues_rotate(n + 0, c, sn, offset(G, 3 * j));
}

// Doubles of workspace (in units of d^2) heat_draw needs.
constexpr int kHeatWork = 4;

// The geodesic random walk, G = prod_k exp(sqrt(h) sum Z_pq E_pq) over
// `steps` steps, polar-corrected when it drifts past 1e-13 (HeatSampler);
// work kHeatWork d^2.
template <class V>
ROUTELAB_HOST_DEVICE inline void heat_walk_draw(Stream& s, int d, int steps, double h, V G, V work) {
  const int dd = d * d, n = d * (d - 1) / 2;
  const V z = work, A = offset(work, dd), E = offset(work, 2 * dd), T = offset(work, 3 * dd);
  const double sqrt_h = ::sqrt(h);
  set_identity(G, d);
  for (int k = 0; k < steps; ++k) {
    draw_normals(s, z, n);
    for (int i = 0; i < n; ++i) z[i] *= sqrt_h;
    skew_matrix(d, z, A);
    exp_skew_taylor(d, A, E, T);
    matrix_product(d, G, E, T);
    for (int e = 0; e < dd; ++e) G[e] = T[e];
  }
  polar_correct_if_drifted(G, A, E, d, 1e-13);
}

// G (d x d): the exact kernel when steps = 0, else the walk; work kHeatWork d^2.
template <class V>
ROUTELAB_HOST_DEVICE ROUTELAB_OUT_OF_LINE inline void heat_draw(Stream& s, int d, double tau, int steps, double h, const double* table, V G,
                                           V work) {
  if (steps == 0)
    heat_exact_draw(s, d, tau, table, G);
  else
    heat_walk_draw(s, d, steps, h, G, work);
}

// ---------------------------------------------------------------------------
// Heat-kernel-dithered steps (Example 6, dithered.h): M = L G, step =
// [G (d x d) | v (d) | 1 if L reflects, else 0 | heat workspace (kHeatWork d^2)].

template <class V>
ROUTELAB_HOST_DEVICE ROUTELAB_OUT_OF_LINE inline void dithered_draw(Stream& s, int d, double tau, int steps, double h, const double* table,
                                               NormalLaw law, const double* sigma, bool mixed, V step) {
  const int dd = d * d;
  heat_draw(s, d, tau, steps, h, table, step, offset(step, dd + d + 1));
  householder_normal_draw(s, law, sigma, offset(step, dd), d);
  step[dd + d] = mixed ? double(s.next_u32() & 1u) : 1.0;
}

// x <- L G x, through the workspace.
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void dithered_apply(int d, S step, V x) {
  const int dd = d * d;
  matrix_apply(d, step, offset(step, dd + d + 1), x);
  if (step[dd + d] != 0) householder_step(offset(step, dd), x, d);
}

}  // namespace routelab
