// The step laws' draw and apply, written once for the CPU and the GPU.
//
// The StepLaw classes (so2.h, givens.h, householder.h, axis3.h, and those
// of step_kernels_dense.h where they can) call these functions on plain
// arrays; lib/cuda/walks.cu calls the same functions from a GPU thread, on
// vectors laid out with a stride (one walk per thread, walks interleaved so a
// warp's loads coalesce). Both draw from rng/stream.h's Stream, so a device
// walk consumes exactly the words, in the same order, as the CPU walk on the
// same (seed, stream): the steps agree up to the last bits of a library log,
// sin or cos and the order of a sum (step_kernels_dense.h: and of a matrix
// exponential).
//
// A "vector" V below is anything indexable as v[i] -> double&: a double*, or
// Strided on the device.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "base/angles.h"
#include "rng/stream.h"

namespace routelab {

// v[i] is p[i * stride]: element i of one walk whose vectors are interleaved
// with those of the other walks of a batch.
struct Strided {
  double* p;
  int64_t stride;
  ROUTELAB_HOST_DEVICE double& operator[](int64_t i) const { return p[i * stride]; }
};

// The vector starting at element i of v.
ROUTELAB_HOST_DEVICE inline double* offset(double* v, int i) { return v + i; }
ROUTELAB_HOST_DEVICE inline const double* offset(const double* v, int i) { return v + i; }
ROUTELAB_HOST_DEVICE inline Strided offset(Strided v, int i) { return {v.p + i * v.stride, v.stride}; }

// Walks renormalise (vectors) or reorthonormalise (matrices) every this many
// steps (groups/walk.h).
constexpr int kReorthonormalizeEvery = 256;
// A matrix walk is reorthonormalised when ||P^T P - I||_max exceeds this.
constexpr double kDriftTolerance = 1e-12;

// n normals into v: Stream::normals on the host for a plain array (batched),
// n calls of normal() otherwise; the same values and words either way.
template <class V>
ROUTELAB_HOST_DEVICE inline void draw_normals(Stream& s, V v, int n) {
#ifndef __CUDA_ARCH__
  if constexpr (std::is_same_v<V, double*>) {
    s.normals(v, std::size_t(n));
    return;
  }
#endif
  for (int i = 0; i < n; ++i) v[i] = s.normal();
}


// ---------------------------------------------------------------------------
// SO(2) blocks (Example 1): step[b] = omega + U[-a_b, a_b], b < B.

template <class V>
ROUTELAB_HOST_DEVICE inline void so2_draw(Stream& s, int B, const double* a, double omega, V step) {
  for (int b = 0; b < B; ++b) step[b] = omega + s.uniform(-a[b], a[b]);
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void so2_apply(int B, S step, V x) {
  for (int b = 0; b < B; ++b) {
    const double c = ::cos(step[b]), s = ::sin(step[b]);
    const double x0 = x[2 * b], x1 = x[2 * b + 1];
    x[2 * b] = c * x0 - s * x1;
    x[2 * b + 1] = s * x0 + c * x1;
  }
}

// ---------------------------------------------------------------------------
// Givens (Example 3): step = (p, q, angle), the plane uniform over the C(d,2)
// pairs p < q in row order, the angle U[-a, a].

template <class V>
ROUTELAB_HOST_DEVICE inline void givens_draw(Stream& s, int d, double a, V step) {
  uint64_t k = s.below(uint64_t(d) * (d - 1) / 2);
  int p = 0;
  while (k >= uint64_t(d - 1 - p)) {
    k -= d - 1 - p;
    ++p;
  }
  step[0] = p;
  step[1] = p + 1 + double(k);
  step[2] = s.uniform(-a, a);
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void givens_apply(S step, V x) {
  const int p = int(step[0]), q = int(step[1]);
  const double c = ::cos(step[2]), s = ::sin(step[2]);
  const double xp = x[p], xq = x[q];
  x[p] = c * xp - s * xq;
  x[q] = s * xp + c * xq;
}

// ---------------------------------------------------------------------------
// Householder (Example 2, Remark 3): H = I - 2 v v^T, the normal v uniform on
// the sphere, a coordinate vector +-e_i, or an angular Gaussian g/|g|,
// g ~ N(0, diag(sigma^2)).

enum class NormalLaw { sphere, coordinate, gaussian };

// The draw after its normals (sphere and gaussian), in two parts that a
// batch of draws runs one after the other (NormalSampler::draw_many): g
// scaled by sigma for the gaussian law, and 1 / |g| ...
template <class V>
ROUTELAB_HOST_DEVICE inline double householder_normal_inverse_norm(NormalLaw law, const double* sigma, V v, int d) {
  if (law == NormalLaw::gaussian)
    for (int i = 0; i < d; ++i) v[i] *= sigma[i];
  double norm2 = 0;
#ifndef __CUDACC__
#pragma omp simd reduction(+ : norm2)
#endif
  for (int i = 0; i < d; ++i) norm2 += v[i] * v[i];
  return 1.0 / ::sqrt(norm2);
}

// ... then v = g / |g|.
template <class V>
ROUTELAB_HOST_DEVICE inline void householder_normal_finish(NormalLaw law, const double* sigma, V v, int d) {
  const double inv = householder_normal_inverse_norm(law, sigma, v, d);
  for (int i = 0; i < d; ++i) v[i] *= inv;
}

template <class V>
ROUTELAB_HOST_DEVICE inline void householder_normal_draw(Stream& s, NormalLaw law, const double* sigma, V v, int d) {
  if (law == NormalLaw::coordinate) {
    for (int i = 0; i < d; ++i) v[i] = 0.0;
    // The sign of +-e_i does not change H; draw it anyway so the normal's
    // law is the one Remark 3 states.
    const uint64_t k = s.below(2 * uint64_t(d));
    v[int(k >> 1)] = (k & 1) ? -1.0 : 1.0;
    return;
  }
  draw_normals(s, v, d);
  householder_normal_finish(law, sigma, v, d);
}

// x <- (I - 2 v v^T) x
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void householder_step(S v, V x, int d) {
  // `omp simd reduction` lets the sum vectorize (a fixed, build-dependent
  // order) without fast-math.
  double dot = 0;
#ifndef __CUDACC__
#pragma omp simd reduction(+ : dot)
#endif
  for (int i = 0; i < d; ++i) dot += v[i] * x[i];
  const double c = 2.0 * dot;
  for (int i = 0; i < d; ++i) x[i] -= c * v[i];
}

// ---------------------------------------------------------------------------
// 3D axis rotations (Example 4): d = 3B, block b rotated by theta about the
// unit axis step[3b .. 3b + 3), uniform on S^2.

template <class V>
ROUTELAB_HOST_DEVICE inline void axis3_draw(Stream& s, int d, V step) {
  for (int b = 0; b < d / 3; ++b) {
    double n[3];
    draw_normals(s, n + 0, 3);
    const double inv = 1.0 / ::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int i = 0; i < 3; ++i) step[3 * b + i] = n[i] * inv;
  }
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void axis3_apply(int d, double theta, S step, V x);

// x <- R(n, theta) x for one 3-vector, Rodrigues' formula.
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void rodrigues_rotate(S n, double c, double s, V x) {
  const double dot = n[0] * x[0] + n[1] * x[1] + n[2] * x[2];
  const double cx = n[1] * x[2] - n[2] * x[1];
  const double cy = n[2] * x[0] - n[0] * x[2];
  const double cz = n[0] * x[1] - n[1] * x[0];
  const double k = (1.0 - c) * dot;
  x[0] = c * x[0] + k * n[0] + s * cx;
  x[1] = c * x[1] + k * n[1] + s * cy;
  x[2] = c * x[2] + k * n[2] + s * cz;
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void axis3_apply(int d, double theta, S step, V x) {
  const double c = ::cos(theta), s = ::sin(theta);
  for (int b = 0; b < d / 3; ++b) rodrigues_rotate(offset(step, 3 * b), c, s, offset(x, 3 * b));
}

// ---------------------------------------------------------------------------
// Matrices: d x d, column-major, entry (i, j) at m[j d + i].

// det A > 0, by Gaussian elimination with partial pivoting on a copy in work
// (d^2): the sign of Eigen's PartialPivLU determinant.
template <class M, class W>
ROUTELAB_HOST_DEVICE inline bool determinant_positive(M A0, W A, int d) {
  const int64_t dd = int64_t(d) * d;
  for (int64_t e = 0; e < dd; ++e) A[e] = A0[e];
  bool negative = false;
  for (int k = 0; k < d; ++k) {
    int piv = k;
    for (int i = k + 1; i < d; ++i)
      if (::fabs(A[int64_t(k) * d + i]) > ::fabs(A[int64_t(k) * d + piv])) piv = i;
    const double pivot = A[int64_t(k) * d + piv];
    if (pivot == 0) return false;
    if (piv != k) {
      for (int j = k; j < d; ++j) {
        const double t = A[int64_t(j) * d + k];
        A[int64_t(j) * d + k] = A[int64_t(j) * d + piv];
        A[int64_t(j) * d + piv] = t;
      }
      negative = !negative;
    }
    if (pivot < 0) negative = !negative;
    for (int i = k + 1; i < d; ++i) {
      const double f = A[int64_t(k) * d + i] / pivot;
      for (int j = k + 1; j < d; ++j) A[int64_t(j) * d + i] -= f * A[int64_t(j) * d + k];
    }
  }
  return !negative;
}

// The order of every sum in a Haar draw: eight partial sums, element i
// (of rows [from, to)) fused into partial i mod 8 in increasing i, then added
// pairwise (0+4 .. 3+7, 0+2, 1+3, 0+1). haar_sample's vector dots keep it
// with four or eight lanes alike, so its bytes do not depend on the ISA.
template <class A, class B>
ROUTELAB_HOST_DEVICE inline double haar_dot(A a, B b, int from, int to) {
  double t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int i = from; i < to; ++i) t[i & 7] = ::fma(a[i], b[i], t[i & 7]);
  for (int w = 4; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

// Sampler S1 (docs/theory.md#sampler-haar): d(d+1)/2 normals, x_k the d - k
// of them from offset k(2d - k + 1)/2; Q = D H_{d-2} ... H_0, the transpose
// of Stewart's product, H_k the reflection of coordinates k..d-1 taking x_k
// to -sign(x_k0)|x_k| e_k, D_kk = -sign(x_k0) and D_{d-1,d-1} the sign of
// the last normal; on SO(d), column 0 negated when det Q = prod_k sign(x_k0)
// < 0. `work` holds d^2 + 2d doubles.
//
// Q is accumulated from the right, two reflections at a time: with p = k,
// q = k - 1 and M = D H_{d-2} ... H_{p+1}, M H_p H_q = M - Ya u^T - Yb v^T
// for Ya = tau_p M u and Yb = tau_q (M v - (v . u) Ya), and M u, M v for the
// next pair are sums over M's new columns, row by row. This is haar_sample's
// arithmetic operation for operation (every multiply-add fused), so on the
// host it gives haar_sample's bytes; on the GPU, the same from its normals.
template <class V>
ROUTELAB_HOST_DEVICE ROUTELAB_OUT_OF_LINE inline void haar_draw(Stream& s, int d, bool special, V Q, V work) {
  const int packed = d * (d + 1) / 2;
  for (int e = 0; e < packed; ++e) work[e] = s.normal();
  const int64_t dd = int64_t(d) * d;
  for (int64_t e = 0; e < dd; ++e) Q[e] = 0;
  V y0 = offset(work, packed), y1 = offset(work, packed + d);  // M u, M v, then Ya, Yb
  for (int r = 0; r < 2 * d; ++r) y0[r] = 0;
  bool negative = ::copysign(1.0, work[packed - 1]) < 0;
  Q[dd - 1] = negative ? -1.0 : 1.0;
  double tau[2] = {0, 0};
  // Reflector k: x_k made v = x_k + sign(x_k0)|x_k| e_k in place, read by
  // row (0 outside rows k..d-1); tau = 2 / |v|^2 = 1 / (|x_k| (|x_k| + |x_k0|)).
  auto reflector = [&](int k) { return offset(work, k < 0 ? 0 : k * (2 * d - k - 1) / 2); };
  auto at = [&](int k, int i) { return k < 0 || i < k ? 0.0 : reflector(k)[i]; };
  auto make = [&](int k) {
    if (k < 0) return;
    V v = reflector(k);
    const double norm = ::sqrt(haar_dot(v, v, k, d)), x0 = v[k];
    negative = negative != (::copysign(1.0, x0) < 0);
    v[k] += ::copysign(norm, x0);
    tau[k & 1] = 1.0 / (norm * (norm + ::fabs(x0)));
    Q[int64_t(k) * d + k] = -::copysign(1.0, x0);
  };
  make(d - 2);
  make(d - 3);
  // The first pass's M u, M v: its columns are still D_cc e_c. Each pass
  // then sums them for the next over the next one's columns, two of which
  // (still D_cc e_c) it reads but does not change.
  for (int c = d - 3 < 0 ? 0 : d - 3; c < d; ++c) {
    const double Dc = Q[int64_t(c) * d + c];
    y0[c] = at(d - 2, c) * Dc;
    y1[c] = at(d - 3, c) * Dc;
  }
  for (int p = d - 2; p >= 0; p -= 2) {
    const int q = p - 1, lo = q < 0 ? 0 : q, lo_next = q - 2 < 0 ? 0 : q - 2;
    const double tp = tau[p & 1], tq = q < 0 ? 0.0 : tau[q & 1];
    make(p - 2);
    make(p - 3);
    const double vu = q < 0 ? 0.0 : haar_dot(reflector(q), reflector(p), p, d);
    for (int r = lo; r < d; ++r) {
      y0[r] = tp * y0[r];
      y1[r] = tq * ::fma(-vu, y0[r], y1[r]);
    }
    for (int j = lo; j < d; ++j)
      for (int r = lo; r < d; ++r) {
        double& m = Q[int64_t(j) * d + r];
        m = ::fma(-at(q, j), y1[r], ::fma(-at(p, j), y0[r], m));
      }
    for (int r = lo_next; r < d; ++r) {
      double su = 0, sv = 0;
      for (int j = lo_next; j < d; ++j) {
        const double m = Q[int64_t(j) * d + r];
        su = ::fma(at(p - 2, j), m, su);
        sv = ::fma(at(p - 3, j), m, sv);
      }
      y0[r] = su;
      y1[r] = sv;
    }
  }
  if (special && negative)
    for (int i = 0; i < d; ++i) Q[i] = -Q[i];
}

// x <- Q x, through tmp (d).
template <class S, class V>
ROUTELAB_HOST_DEVICE inline void matrix_apply(int d, S Q, S tmp, V x) {
  for (int i = 0; i < d; ++i) {
    double sum = 0;
    for (int j = 0; j < d; ++j) sum += Q[int64_t(j) * d + i] * x[j];
    tmp[i] = sum;
  }
  for (int i = 0; i < d; ++i) x[i] = tmp[i];
}

// m <- I (d x d).
template <class M>
ROUTELAB_HOST_DEVICE inline void set_identity(M m, int d) {
  for (int j = 0; j < d; ++j)
    for (int i = 0; i < d; ++i) m[int64_t(j) * d + i] = i == j ? 1.0 : 0.0;
}

// C <- A B (d x d; C is neither A nor B).
template <class MA, class MB, class MC>
ROUTELAB_HOST_DEVICE inline void matrix_product(int d, MA A, MB B, MC C) {
  for (int j = 0; j < d; ++j)
    for (int i = 0; i < d; ++i) {
      double sum = 0;
      for (int k = 0; k < d; ++k) sum += A[int64_t(k) * d + i] * B[int64_t(j) * d + k];
      C[int64_t(j) * d + i] = sum;
    }
}

// g0 + (P^T P)_ij: columns i and j of the column-major d x d matrix P dotted,
// the sum starting from g0.
template <class M>
ROUTELAB_HOST_DEVICE inline double column_dot(M P, int i, int j, int d, double g0 = 0.0) {
  for (int k = 0; k < d; ++k) g0 += P[int64_t(i) * d + k] * P[int64_t(j) * d + k];
  return g0;
}

// max_ij |(P^T P - I)_ij|, as reorthonormalize_if_drifted measures it.
template <class M>
ROUTELAB_HOST_DEVICE inline double orthogonality_drift(M P, int d) {
  double worst = 0;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) worst = ::fmax(worst, ::fabs(column_dot(P, i, j, d, i == j ? -1.0 : 0.0)));
  return worst;
}

// One Newton-Schulz step toward the polar factor, P <- P (3I - P^T P) / 2,
// which converges quadratically from a drift of 1e-12; G and row are scratch
// (d^2 and d). The polar factor is unique, so two steps give the SVD's U V^T
// of the CPU's reorthonormalize_if_drifted up to rounding.
template <class M>
ROUTELAB_HOST_DEVICE inline void newton_schulz_step(M P, M G, M row, int d) {
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) G[int64_t(j) * d + i] = column_dot(P, i, j, d);
  for (int r = 0; r < d; ++r) {
    for (int j = 0; j < d; ++j) {
      double pg = 0;
      for (int k = 0; k < d; ++k) pg += P[int64_t(k) * d + r] * G[int64_t(j) * d + k];
      row[j] = 1.5 * P[int64_t(j) * d + r] - 0.5 * pg;
    }
    for (int j = 0; j < d; ++j) P[int64_t(j) * d + r] = row[j];
  }
}

// P <- its polar factor, by two Newton-Schulz steps, when its drift exceeds
// tol (reorthonormalize_if_drifted's SVD on the CPU); G and row as above.
template <class M>
ROUTELAB_HOST_DEVICE inline void polar_correct_if_drifted(M P, M G, M row, int d, double tol) {
  if (!(orthogonality_drift(P, d) > tol)) return;
  newton_schulz_step(P, G, row, d);
  newton_schulz_step(P, G, row, d);
}

}  // namespace routelab

// nonnormal, skewexp, fisher, lieball, heat, dithered: they use the functions
// above, and the dispatch below uses theirs.
#include "groups/step_kernels_dense.h"

namespace routelab {

// ---------------------------------------------------------------------------
// A step law as a kernel sees it: its family and parameters, no virtual calls.
// StepLaw::kernel() gives it for the families above; the pointers point into
// the law's own arrays (host memory; the GPU side copies them).

enum class KernelFamily { so2, givens, householder, axis3, haar, nonnormal, skewexp, fisher, lieball, heat, dithered };

struct StepKernel {
  KernelFamily family = KernelFamily::so2;
  int d = 0;
  double a = 0;      // givens: half-width
  double omega = 0;  // so2: drift
  double theta = 0;  // axis3: rotation angle
  bool special = false;  // haar: SO(d) rather than O(d)
  NormalLaw normals = NormalLaw::sphere;  // householder
  const double* widths = nullptr;  // so2: the B half-widths a_b
  const double* sigma = nullptr;   // householder, dithered, gaussian normals: d standard deviations
  double kappa = 0;      // fisher: concentration
  double radius = 0;     // lieball: ball radius r
  bool bump = false;     // lieball: the bump density rather than the uniform ball
  bool mixed = false;    // dithered: reflect with probability 1/2, not always
  double tau = 0;        // heat, dithered: Brownian time
  int heat_steps = 0;    // heat, dithered: 0 for the exact kernel (d <= 3), else the walk's steps of heat_h
  double heat_h = 0;
  // skewexp: Q (d x d) then the d/2 lambda_j; heat, dithered, exact at d = 3:
  // the angle table of so3_heat_quantile (3 (kSo3HeatCells + 1)).
  const double* table = nullptr;
  int table_size = 0;
  // Doubles of one drawn step with its workspace (haar, fisher: the matrix,
  // then d^2 + 2d for the draw, whose last d the apply reuses; lieball, heat:
  // the matrix, then the draw's workspace, whose first d the apply reuses).
  int step_size() const {
    const int dd = d * d;
    switch (family) {
      case KernelFamily::so2: return d / 2;
      case KernelFamily::givens: return 3;
      case KernelFamily::householder:
      case KernelFamily::axis3: return d;
      case KernelFamily::haar:
      case KernelFamily::fisher: return 2 * dd + 2 * d;
      case KernelFamily::nonnormal: return 1;
      case KernelFamily::skewexp: return 1 + d;
      case KernelFamily::lieball: return dd + kLieBallWork * dd;
      case KernelFamily::heat: return dd + kHeatWork * dd;
      case KernelFamily::dithered: return dd + d + 1 + kHeatWork * dd;
    }
    return d;
  }
};

// The law's draw and its apply on one vector, as its StepLaw class does them.
template <class V>
ROUTELAB_HOST_DEVICE inline void kernel_draw(const StepKernel& k, Stream& s, V step) {
  switch (k.family) {
    case KernelFamily::so2: so2_draw(s, k.d / 2, k.widths, k.omega, step); break;
    case KernelFamily::givens: givens_draw(s, k.d, k.a, step); break;
    case KernelFamily::householder: householder_normal_draw(s, k.normals, k.sigma, step, k.d); break;
    case KernelFamily::axis3: axis3_draw(s, k.d, step); break;
    case KernelFamily::haar: haar_draw(s, k.d, k.special, step, offset(step, k.d * k.d)); break;
    case KernelFamily::nonnormal: nonnormal_draw(s, step); break;
    case KernelFamily::skewexp: skewexp_draw(s, k.a, step); break;
    case KernelFamily::fisher: fisher_draw(s, k.d, k.kappa, step, offset(step, k.d * k.d)); break;
    case KernelFamily::lieball: lieball_draw(s, k.d, k.radius, k.bump, step, offset(step, k.d * k.d)); break;
    case KernelFamily::heat:
      heat_draw(s, k.d, k.tau, k.heat_steps, k.heat_h, k.table, step, offset(step, k.d * k.d));
      break;
    case KernelFamily::dithered:
      dithered_draw(s, k.d, k.tau, k.heat_steps, k.heat_h, k.table, k.normals, k.sigma, k.mixed, step);
      break;
  }
}

template <class S, class V>
ROUTELAB_HOST_DEVICE inline void kernel_apply(const StepKernel& k, S step, V x) {
  switch (k.family) {
    case KernelFamily::so2: so2_apply(k.d / 2, step, x); break;
    case KernelFamily::givens: givens_apply(step, x); break;
    case KernelFamily::householder: householder_step(step, x, k.d); break;
    case KernelFamily::axis3: axis3_apply(k.d, k.theta, step, x); break;
    case KernelFamily::haar:
    case KernelFamily::fisher: matrix_apply(k.d, step, offset(step, 2 * k.d * k.d), x); break;
    case KernelFamily::nonnormal: nonnormal_apply(step, x); break;
    case KernelFamily::skewexp: skewexp_apply(k.d, k.table, step, offset(step, 1), x); break;
    case KernelFamily::lieball:
    case KernelFamily::heat: matrix_apply(k.d, step, offset(step, k.d * k.d), x); break;
    case KernelFamily::dithered: dithered_apply(k.d, step, x); break;
  }
}

}  // namespace routelab
