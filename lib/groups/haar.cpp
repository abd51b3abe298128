#include "groups/haar.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "groups/family.h"
#include "theory/trace_moments.h"

namespace routelab {

namespace {

// One vector register of doubles, and the row chunks a pass holds in flight:
// as many as keep its 4 G + 4 live vectors in registers, of 32 with AVX-512
// and 16 with AVX2 and SSE2. With AVX2, 3 (all 16) ran haar_sample 5-6%
// faster than 2 at d = 64 and 128 on a Zen 4 (one binary, alternated); with
// AVX-512, 5 and 6 were no faster than 4.
#if defined(__AVX512F__)
constexpr int kLanes = 8, kMaxChunks = 4;
#elif defined(__AVX__)
constexpr int kLanes = 4, kMaxChunks = 3;
#else
constexpr int kLanes = 2, kMaxChunks = 2;
#endif
typedef double Lanes __attribute__((vector_size(kLanes * sizeof(double))));

inline Lanes load(const double* p) {
  Lanes x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store(double* p, Lanes x) { std::memcpy(p, &x, sizeof x); }
// x in every lane; from memory, one load that broadcasts (Lanes{} + x
// would add and shuffle, which on Intel takes the second FMA port).
inline Lanes lanes(double x) {
#if defined(__AVX512F__)
  return _mm512_set1_pd(x);
#elif defined(__AVX__)
  return _mm256_set1_pd(x);
#else
  return Lanes{x, x};
#endif
}

// a b + c and c - a b, fused whenever the target has FMA, as haar_draw's
// ::fma is; left to the compiler, whether each is fused would be its choice.
#if defined(__AVX512F__)
inline Lanes fmadd(Lanes a, Lanes b, Lanes c) { return _mm512_fmadd_pd(a, b, c); }
inline Lanes fnmadd(Lanes a, Lanes b, Lanes c) { return _mm512_fnmadd_pd(a, b, c); }
#elif defined(__FMA__)
inline Lanes fmadd(Lanes a, Lanes b, Lanes c) { return _mm256_fmadd_pd(a, b, c); }
inline Lanes fnmadd(Lanes a, Lanes b, Lanes c) { return _mm256_fnmadd_pd(a, b, c); }
#else
inline Lanes fmadd(Lanes a, Lanes b, Lanes c) { return a * b + c; }
inline Lanes fnmadd(Lanes a, Lanes b, Lanes c) { return c - a * b; }
#endif

// Eight partial sums, 8 / kLanes vectors of them, added in haar_dot's order.
inline double sum8(const Lanes* acc) {
  double t[8];
  std::memcpy(t, acc, sizeof t);
  for (int w = 4; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

// haar_dot (groups/step_kernels.h) in vectors: rows [from, to), both whole
// multiples of 8, element i in partial sum i mod 8, added in haar_dot's order.
inline double dot8(const double* a, const double* b, int from, int to) {
  constexpr int H = 8 / kLanes;
  Lanes acc[H] = {};
  for (int i = from; i < to; i += 8)
    for (int h = 0; h < H; ++h) acc[h] = fmadd(load(a + i + h * kLanes), load(b + i + h * kLanes), acc[h]);
  return sum8(acc);
}

// One pass over G chunks of rows (whole vectors from `rows`) of M (columns
// ld apart): x <- x - u_j Ya - v_j Yb for the columns j of [j0, d), two
// reflections at once from the right, and the next pair's M u', M v' as sums
// over the columns of [j_sum, d) in order, the first j0 - j_sum of them
// read, not changed (those that join the next pass, still D_jj e_j). So
// each column chunk is read and written once per two reflections, and every
// sum runs along a lane, never across lanes.
template <int G>
inline void reflect_rows(const double* u, const double* v, const double* un, const double* vn, const double* yu,
                         const double* yv, Lanes tp, Lanes tq, Lanes vu, double* rows, std::size_t ld, int j_sum,
                         int j0, int d, double* yun, double* yvn) {
  Lanes ya[G], yb[G], su[G] = {}, sv[G] = {};
  for (int g = 0; g < G; ++g) {
    ya[g] = tp * load(yu + g * kLanes);
    yb[g] = tq * fnmadd(vu, ya[g], load(yv + g * kLanes));
  }
  for (int j = j_sum; j < j0; ++j) {
    const Lanes unj = lanes(un[j]), vnj = lanes(vn[j]);
    const double* m = rows + std::ptrdiff_t(j) * ld;
    for (int g = 0; g < G; ++g) {
      su[g] = fmadd(unj, load(m + g * kLanes), su[g]);
      sv[g] = fmadd(vnj, load(m + g * kLanes), sv[g]);
    }
  }
  for (int j = j0; j < d; ++j) {
    const Lanes uj = lanes(u[j]), vj = lanes(v[j]), unj = lanes(un[j]), vnj = lanes(vn[j]);
    double* m = rows + std::ptrdiff_t(j) * ld;
    for (int g = 0; g < G; ++g) {
      const Lanes x = fnmadd(vj, yb[g], fnmadd(uj, ya[g], load(m + g * kLanes)));
      store(m + g * kLanes, x);
      su[g] = fmadd(unj, x, su[g]);
      sv[g] = fmadd(vnj, x, sv[g]);
    }
  }
  for (int g = 0; g < G; ++g) store(yun + g * kLanes, su[g]), store(yvn + g * kLanes, sv[g]);
}

// Rows [i, i + kLanes) of reflector k's normals, x_k of rows k..d-1 at xk,
// zero outside those rows; x_k's neighbours in memory are read and dropped.
inline Lanes reflector_rows(const double* xk, int k, int d, int i) {
  Lanes row = lanes(double(i));
  for (int l = 0; l < kLanes; ++l) row[l] += l;
  const Lanes raw = load(xk + (i - k));
  return row >= double(k) && row < double(d) ? raw : Lanes{};
}

// Chunks a pass takes at once out of `left`: kMaxChunks, but never leaving
// one alone at the end, whose sums would wait on their own latency.
inline int chunks_at_once(int left) {
  if (left <= kMaxChunks) return left;
  return left == kMaxChunks + 1 && kMaxChunks > 2 ? kMaxChunks - 1 : kMaxChunks;
}

}  // namespace

Mat haar_sample(Stream& s, int d, bool special) {
  // Sampler S1 (Stewart 1980): Q = D H_{d-2} ... H_0, the transpose of
  // Stewart's H_0 ... H_{d-2} D and so Haar too. H_k reflects coordinates
  // k..d-1 and takes a fresh x_k ~ N(0, I_{d-k}) to -sign(x_k0) |x_k| e_k;
  // D_kk = -sign(x_k0), and D_{d-1,d-1} the sign of the last normal.
  // Householder QR of a Gaussian Z builds exactly these reflectors, for its
  // k-th one is made from the k-th column of the already-reflected Z, a
  // fresh Gaussian by rotation invariance; so d(d+1)/2 normals and (2/3) d^3
  // FMAs give Mezzadri's sign-fixed QR factor's law, where the QR takes d^2
  // and (4/3) d^3. The arithmetic is haar_draw's (groups/step_kernels.h),
  // operation for operation, so the bytes are the same with AVX-512, AVX2 or
  // in that scalar code.
  const int packed = d * (d + 1) / 2;
  // M, built in place of D, has columns of ld rows, a multiple of 8 so that
  // dot8 and the passes run whole vectors; when d is such a multiple, M is Q
  // itself. The reflectors are columns of ld too, zero outside their rows,
  // and so are the sums M u, M v.
  const int ld = (d + 7) / 8 * 8;
  const bool in_place = ld == d;
  Mat Q(d, d);  // overwritten whole by the copy from M unless M is Q
  if (in_place) Q.setZero();
  // One buffer, on a vector boundary as Eigen's are (std::vector's need not
  // be), so no load straddles two cache lines: the normals, four reflectors
  // and a fifth, v = 0, for those of index < 0, the four sums, and M unless
  // M is Q.
  const std::ptrdiff_t packed_ld = (packed + 15) / 8 * 8, square = std::ptrdiff_t(d) * ld;
  Vec buf(packed_ld + 9 * ld + (in_place ? 0 : square));
  double* x = buf.data();
  double* R = x + packed_ld;
  double* y[4] = {R + 5 * ld, R + 6 * ld, R + 7 * ld, R + 8 * ld};
  double* M = in_place ? Q.data() : R + 9 * ld;
  std::fill_n(R, 9 * ld + (in_place ? 0 : square), 0.0);
  s.normals(x, std::size_t(packed));
  std::fill(x + packed, x + packed_ld, 0.0);  // what reflector_rows reads past the last x_k
  auto col = [&](int c) { return M + std::ptrdiff_t(c) * ld; };
  // Reflector k in the buffer k mod 4, which held k + 4: rows from k / 8 * 8
  // are written, which covers all of k + 4's. H_k reflects along
  // v = x_k + sign(x_k0) |x_k| e_k, and |v|^2 = 2 |x_k| (|x_k| + |x_k0|).
  double tau[5] = {0, 0, 0, 0, 0};  // tau[4]: k < 0
  bool negative = std::copysign(1.0, x[packed - 1]) < 0;  // det Q = prod_k sign(x_k0): each H_k has det -1
  col(d - 1)[d - 1] = negative ? -1.0 : 1.0;
  auto make = [&](int k) -> const double* {
    if (k < 0) return R + 4 * ld;
    double* v = R + std::ptrdiff_t(k & 3) * ld;
    const double* xk = x + std::size_t(k) * (2 * d - k + 1) / 2;  // after d + (d-1) + ... + (d-k+1)
    // Copied in whole vectors: a copy's narrower stores, read back at once
    // by dot8's vector loads, would stall them.
    for (int i = k / 8 * 8; i < ld; i += kLanes) store(v + i, reflector_rows(xk, k, d, i));
    const double norm = std::sqrt(dot8(v, v, k / 8 * 8, ld)), x0 = xk[0];
    // Without branches: x0's sign is a coin toss, and a mispredicted
    // branch costs as much as the rest of this.
    v[k] += std::copysign(norm, x0);
    tau[k & 3] = 1.0 / (norm * (norm + std::abs(x0)));
    col(k)[k] = -std::copysign(1.0, x0);  // D_kk
    negative ^= std::copysign(1.0, x0) < 0;
    return v;
  };
  auto tau_of = [&](int k) { return tau[k < 0 ? 4 : k & 3]; };
  // M <- M H_p H_q, q = p - 1, from M = D: before it, M = diag(D_0..D_p) and
  // the block H_{p+1} ... from p + 1 on, so only rows and columns from q
  // change. The sums M u, M v a pass needs cover its columns from q, of
  // which q and p join here, still D_cc e_c: the first pass's are those
  // columns' terms, and each pass sums them for the next.
  const double* u = make(d - 2);
  const double* v = make(d - 3);
  for (int c = std::max(d - 3, 0); c < d; ++c) {
    const double Dc = col(c)[c];
    y[0][c] = u[c] * Dc;
    y[1][c] = v[c] * Dc;
  }
  for (int p = d - 2; p >= 0; p -= 2) {
    const int q = p - 1, lo = std::max(q, 0), lo_next = std::max(q - 2, 0);
    const double tp = tau_of(p), tq = tau_of(q);
    const double *un = make(p - 2), *vn = make(p - 3);
    const double vu = q < 0 ? 0.0 : dot8(v, u, p / 8 * 8, ld);
    // Rows below lo's vector hold only D in the pair's columns, so a pass
    // would leave them as they are and add zeros to their sums: only the
    // sums are made, over [lo_next, lo), where D can be nonzero, in the
    // pass's order. Every product there is exact (D_jj = +-1, or 0), so
    // fused or not, the bits are the pass's. That is 3.4% of the passes'
    // FMAs at d = 64 (AVX-512), and haar_sample 1-2% faster there.
    const int r_pass = lo / kLanes * kLanes;
    for (int r = lo_next / kLanes * kLanes; r < r_pass; ++r) {
      double su = 0, sv = 0;
      for (int j = lo_next; j < lo; ++j) su += un[j] * col(j)[r], sv += vn[j] * col(j)[r];
      y[2][r] = su, y[3][r] = sv;
    }
    // Rows from lo on are 0 in the columns [lo_next, lo), so a chunk of them
    // starts its sums at lo: leaving out those zero products keeps the bits
    // (the sums start at +0), and its first FMAs need not wait for un's and
    // vn's last entries, made just before.
    for (int r = r_pass; r < ld;) {
      const int g = chunks_at_once((ld - r) / kLanes), j_sum = r >= lo ? lo : lo_next;
      auto pass = [&]<int G>() {
        reflect_rows<G>(u, v, un, vn, y[0] + r, y[1] + r, lanes(tp), lanes(tq), lanes(vu), M + r, ld, j_sum, lo, d,
                        y[2] + r, y[3] + r);
      };
      switch (g) {  // at most kMaxChunks
        case 1: pass.template operator()<1>(); break;
        case 2: pass.template operator()<2>(); break;
        case 3: pass.template operator()<3>(); break;
        default: pass.template operator()<4>(); break;
      }
      r += g * kLanes;
    }
    u = un, v = vn;
    std::swap(y[0], y[2]);
    std::swap(y[1], y[3]);
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
