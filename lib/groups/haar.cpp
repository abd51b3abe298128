#include "groups/haar.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "groups/family.h"
#include "theory/trace_moments.h"

namespace routelab {

namespace {

// One vector register of doubles, and the columns a pass holds in flight:
// as many as keep the pass's 4 + 4 kGroup live vectors in registers, of 32
// with AVX-512 and 16 with AVX2 and SSE2.
#if defined(__AVX512F__)
constexpr int kLanes = 8, kGroup = 4;
#elif defined(__AVX__)
constexpr int kLanes = 4, kGroup = 2;
#else
constexpr int kLanes = 2, kGroup = 2;
#endif
typedef double Lanes __attribute__((vector_size(kLanes * sizeof(double))));

inline Lanes load(const double* p) {
  Lanes x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store(double* p, Lanes x) { std::memcpy(p, &x, sizeof x); }
// The lanes added pairwise in a fixed order.
inline double sum(Lanes a) {
  double t[kLanes];
  std::memcpy(t, &a, sizeof t);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

#if defined(__AVX512F__)
// Three rounds of pairwise adds across vectors turn eight accumulators into
// their eight sums, in a third of the instructions of eight separate sums:
// fold4 gives [x0+x4 .. x3+x7, y0+y4 .. y3+y7], fold2 and fold1 the same a
// half and a quarter as far apart.
inline Lanes fold4(Lanes x, Lanes y) {
  return __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11) + __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15);
}
inline Lanes fold2(Lanes x, Lanes y) {
  return __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13) + __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
}
inline Lanes fold1(Lanes x, Lanes y) {
  return __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14) + __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
}
// The sums of s[0..7], as [s0, s4, s2, s6, s1, s5, s3, s7].
inline Lanes sums8(const Lanes* s) {
  return fold1(fold2(fold4(s[0], s[1]), fold4(s[2], s[3])), fold2(fold4(s[4], s[5]), fold4(s[6], s[7])));
}
#endif

// a . b over `rows` (whole vectors), in kLanes partial sums.
inline double dot(const double* a, const double* b, int rows) {
  Lanes acc = {};
  for (int i = 0; i < rows; i += kLanes) acc += load(a + i) * load(b + i);
  return sum(acc);
}

// One pass over kGroup columns ld apart, rows [0, rows) (whole vectors):
// x <- x - a_c u - b_c v, two reflections at once, and the next pair's dots
// alpha_c = u' . x, beta_c = v' . x of the new x, so each column is read and
// written once per two reflections. Each dot is kLanes partial sums added in
// a fixed order.
inline void reflect_pair(const double* u, const double* v, const double* a, const double* b, const double* un,
                         const double* vn, double* col, std::size_t ld, int rows, double* alpha, double* beta) {
  constexpr int C = kGroup;
  Lanes ac[C], bc[C], sa[C] = {}, sb[C] = {};
  for (int c = 0; c < C; ++c) ac[c] = Lanes{} + a[c], bc[c] = Lanes{} + b[c];
  for (int i = 0; i < rows; i += kLanes) {
    Lanes ui = load(u + i), vi = load(v + i), uni = load(un + i), vni = load(vn + i);
    // Keeps the four reflectors' lanes in registers for all the columns;
    // left alone, GCC re-reads them from memory for each (1.1x slower).
#if defined(__x86_64__)
    asm("" : "+v"(ui), "+v"(vi), "+v"(uni), "+v"(vni));
#endif
    for (int c = 0; c < C; ++c) {
      const Lanes x = load(col + c * ld + i) - ac[c] * ui - bc[c] * vi;
      store(col + c * ld + i, x);
      sa[c] += uni * x;
      sb[c] += vni * x;
    }
  }
#if defined(__AVX512F__)
  static_assert(C == 4);
  const Lanes order[8] = {sa[0], sb[0], sa[2], sb[2], sa[1], sb[1], sa[3], sb[3]};
  const Lanes sums = sums8(order);  // [alpha_0..3, beta_0..3]
  for (int c = 0; c < C; ++c) alpha[c] = sums[c], beta[c] = sums[C + c];
#else
  for (int c = 0; c < C; ++c) alpha[c] = sum(sa[c]), beta[c] = sum(sb[c]);
#endif
}

}  // namespace

Mat haar_sample(Stream& s, int d, bool special) {
  // Sampler S1 (Stewart 1980): Q = H_0 H_1 ... H_{d-2} D. H_k reflects
  // coordinates k..d-1 and takes a fresh x_k ~ N(0, I_{d-k}) to
  // -sign(x_k0) |x_k| e_k; D_kk = -sign(x_k0), and D_{d-1,d-1} the sign of
  // the last normal. Householder QR of a Gaussian Z builds exactly these
  // reflectors, for its k-th one is made from the k-th column of the
  // already-reflected Z, a fresh Gaussian by rotation invariance; so Q has
  // the law of Mezzadri's sign-fixed QR factor, Haar on O(d), from
  // d(d+1)/2 normals and (2/3) d^3 FMAs where the QR takes d^2 and (4/3) d^3.
  const int packed = d * (d + 1) / 2;
  Vec x(packed);
  s.normals(x.data(), std::size_t(packed));
  // Q is built in place of D, in A, whose columns are padded to whole
  // vectors (ld rows), after kGroup zero columns (A's, and the dots', index
  // c lies at c + kGroup) so that passes run whole groups ending at column
  // d - 1. When d is a whole number of vectors, and so of groups, neither
  // padding is needed and A is Q itself. Each reflector is a whole column
  // too, zero outside rows k..d-1.
  const int ld = (d + kLanes - 1) / kLanes * kLanes;
  const bool in_place = ld == d;
  Mat Q(d, d);  // overwritten whole by the copy from A unless A is Q
  if (in_place) Q.setZero();
  // Eigen's buffers start on a vector boundary (std::vector's need not), so
  // no load of a reflector or of A's columns straddles two cache lines.
  Vec Abuf = Vec::Zero(in_place ? 0 : std::ptrdiff_t(ld) * (d + kGroup)), vbuf = Vec::Zero(5 * std::ptrdiff_t(ld));
  std::vector<double> coef(4 * std::size_t(d + kGroup), 0.0);
  double* A = in_place ? Q.data() : Abuf.data() + std::size_t(kGroup) * ld;
  double *a = coef.data() + kGroup, *b = a + d + kGroup, *alpha = b + d + kGroup, *beta = alpha + d + kGroup;
  const double* zero = vbuf.data() + 4 * std::size_t(ld);
  auto col = [&](int c) { return A + std::ptrdiff_t(c) * ld; };
  // Reflector k (k < 0: none, v = 0, tau = 0) in the buffer k mod 4, which
  // held k + 4: rows k.. are written, which covers all of k + 4's.
  // v = x_k + sign(x_k0) |x_k| e_k, so |v|^2 = 2 |x_k| (|x_k| + |x_k0|).
  double tau[4] = {0, 0, 0, 0};
  bool negative = x[packed - 1] < 0;  // det Q = prod_k sign(x_k0): each H_k has det -1
  auto make = [&](int k) -> const double* {
    if (k < 0) return zero;
    double* v = vbuf.data() + std::size_t(k & 3) * ld;
    const int n = d - k;
    const double* xk = x.data() + std::size_t(k) * (2 * d - k + 1) / 2;  // after d + (d-1) + ... + (d-k+1)
    std::copy(xk, xk + n, v + k);
    const int k0 = k / kLanes * kLanes;
    const double norm = std::sqrt(dot(v + k0, v + k0, ld - k0)), x0 = xk[0];
    v[k] += x0 < 0 ? -norm : norm;
    tau[k & 3] = 1.0 / (norm * (norm + std::abs(x0)));
    col(k)[k] = x0 < 0 ? 1.0 : -1.0;  // D_kk
    negative ^= x0 < 0;
    return v;
  };
  auto tau_of = [&](int k) { return k < 0 ? 0.0 : tau[k & 3]; };
  col(d - 1)[d - 1] = negative ? -1.0 : 1.0;
  // Backward accumulation two reflectors at a time: M <- H_q H_p M, q = p - 1.
  // Before it, M = diag(D_0..D_p, H_{p+1} ... D), so only columns and rows
  // from q change; a column that joins the passes here is still D_cc e_c.
  const double* u = make(d - 2);
  const double* v = make(d - 3);
  int c_joined = d;  // the lowest column the passes have covered
  for (int p = d - 2; p >= 0; p -= 2) {
    const int q = p - 1, groups = (d - std::max(q, 0) + kGroup - 1) / kGroup, c0 = d - groups * kGroup;
    for (int c = c0; c < c_joined; ++c) {
      const double Dc = c >= 0 ? col(c)[c] : 0.0;
      alpha[c] = c >= 0 ? u[c] * Dc : 0.0;
      beta[c] = c >= 0 ? v[c] * Dc : 0.0;
    }
    c_joined = c0;
    const double* un = make(p - 2);
    const double* vn = make(p - 3);
    // H_q H_p x = x - a u - b v, a = tau_p (u . x), b = tau_q (v . x - (v . u) a).
    const int p0 = std::max(p, 0) / kLanes * kLanes;
    const double vu = dot(v + p0, u + p0, ld - p0), tp = tau_of(p), tq = tau_of(q);
    for (int c = c0; c < d; ++c) {
      a[c] = tp * alpha[c];
      b[c] = tq * (beta[c] - vu * a[c]);
    }
    const int r0 = std::max(c0, 0) / kLanes * kLanes;
    for (int c = c0; c < d; c += kGroup)
      reflect_pair(u + r0, v + r0, a + c, b + c, un + r0, vn + r0, col(c) + r0, ld, ld - r0, alpha + c, beta + c);
    u = un, v = vn;
  }
  if (!in_place)
    for (int c = 0; c < d; ++c) std::copy_n(col(c), d, Q.col(c).data());
  if (special && negative) Q.col(0) = -Q.col(0);
  return Q;
}

void Haar::draw(Stream& s, double* step) const {
  Mat Q = haar_sample(s, dim(), special_);
  std::copy(Q.data(), Q.data() + Q.size(), step);
}

void Haar::apply(const double* step, double* x) const {
  Eigen::Map<const Mat> U(step, dim(), dim());
  Eigen::Map<Vec> v(x, dim());
  v = (U * v).eval();
}

void Haar::apply_matrix(const double* step, Mat& P) const {
  Eigen::Map<const Mat> U(step, dim(), dim());
  P = (U * P).eval();
}

std::optional<StepKernel> Haar::kernel() const {
  return StepKernel{.family = KernelFamily::haar, .d = dim(), .special = special_};
}

std::optional<Mat> Haar::second_moment() const {
  const int d = dim();
  if (special_ && d == 2) {  // SO(2) is abelian: the antisymmetric part is invariant
    return Mat(theory::haar_second_moment(2) + (Mat::Identity(4, 4) - theory::commutation_matrix(2)) / 2.0);
  }
  return theory::haar_second_moment(d);
}

std::unique_ptr<StepLaw> make_haar(const Params& p) {
  const int d = int(require_int(p, "d", 2, kMaxDimension, "an integer d in [2, 4096]"));
  const std::string& g = p.at("group");
  if (g != "o" && g != "so") throw BadInput("group", fmt::format("unknown group '{}'; accepts o, so", g));
  return std::make_unique<Haar>(d, g == "so");
}

}  // namespace routelab
