#include "groups/so2_phases.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "rng/philox_lanes.h"

namespace routelab {

// Steps per batch: B * kSteps uniforms and phases stay in L1/L2.
constexpr int kSteps = 64;

namespace {

// Adding an increment of size |omega| + a to a phase in [-pi, pi] would
// round at ulp(|omega|) every step; when it can exceed pi, it is wrapped
// first.
bool increments_can_exceed_pi(const So2Blocks& law) {
  for (double a : law.half_widths())
    if (std::abs(law.omega()) + a > M_PI) return true;
  return false;
}

// How phase_batches forms an increment: lo + width u (one fused
// multiply-add in GCC's code), plus omega unless it is zero (adding +0 to
// that sum, never -0, changes nothing), wrapped first when it can exceed pi.
enum class Increment { no_drift, drift, wrapped };

Increment increment_of(const So2Blocks& law) {
  return increments_can_exceed_pi(law) ? Increment::wrapped
         : law.omega() != 0            ? Increment::drift
                                       : Increment::no_drift;
}

// f(std::integral_constant<Increment, inc>()): the kernels take the
// increment's kind as a template parameter, chosen once outside their loops.
template <class F>
decltype(auto) with_increment(Increment inc, F&& f) {
  using K = Increment;
  switch (inc) {
    case K::no_drift: return f(std::integral_constant<K, K::no_drift>());
    case K::drift: return f(std::integral_constant<K, K::drift>());
    default: return f(std::integral_constant<K, K::wrapped>());
  }
}

#if defined(__AVX512F__)
inline __m512d wrap_phase8(__m512d x) {  // wrap_phase, eight at a time
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(kInvTwoPi)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_fnmadd_pd(k, _mm512_set1_pd(kTwoPiLo), _mm512_fnmadd_pd(k, _mm512_set1_pd(kTwoPiHi), x));
}

// Phases theta after one step by increments lo + width u (+ omega, wrapped
// as kInc says): phase_batches' update, eight phases at a time, so the
// same bits.
template <Increment kInc>
inline __m512d phase_update8(__m512d theta, __m512d lo, __m512d width, __m512d omega, __m512d u) {
  __m512d psi = _mm512_fmadd_pd(width, u, lo);
  if (kInc != Increment::no_drift) psi = _mm512_add_pd(omega, psi);
  if (kInc == Increment::wrapped) psi = wrap_phase8(psi);
  return wrap_phase8(_mm512_add_pd(theta, psi));
}

// phase_batches' steps for blocks [b0, b0 + 8 V), the phases held in V
// registers from step to step: kept in memory, each step's update waited on
// the last one's store as well as on its own arithmetic.
template <Increment kInc, int V>
inline void phase_rows8(const double* u, double* th, double* theta, const double* lo, const double* width,
                        double omega, int m, int B, int b0) {
  __m512d t[V], l[V], w[V];
  for (int v = 0; v < V; ++v) {
    t[v] = _mm512_loadu_pd(theta + b0 + 8 * v);
    l[v] = _mm512_loadu_pd(lo + b0 + 8 * v);
    w[v] = _mm512_loadu_pd(width + b0 + 8 * v);
  }
  const __m512d om = _mm512_set1_pd(omega);
  for (int step = 0; step < m; ++step) {
    const double* ut = u + std::size_t(step) * B + b0;
    double* tht = th + std::size_t(step) * B + b0;
    for (int v = 0; v < V; ++v) {
      t[v] = phase_update8<kInc>(t[v], l[v], w[v], om, _mm512_loadu_pd(ut + 8 * v));
      _mm512_storeu_pd(tht + 8 * v, t[v]);
    }
  }
  for (int v = 0; v < V; ++v) _mm512_storeu_pd(theta + b0 + 8 * v, t[v]);
}

// phase_rows8 over the whole registers' worth of blocks, 32 and then 8 at a
// time; returns how many blocks it made (the rest are phase_batches' own).
template <Increment kInc>
int phase_rows8_all(const double* u, double* th, double* theta, const double* lo, const double* width, double omega,
                    int m, int B) {
  int b = 0;
  for (; b + 32 <= B; b += 32) phase_rows8<kInc, 4>(u, th, theta, lo, width, omega, m, B, b);
  for (; b + 8 <= B; b += 8) phase_rows8<kInc, 1>(u, th, theta, lo, width, omega, m, B, b);
  return b;
}
#endif

// The phase recursion, kSteps steps at a time: after each batch of m steps
// starting at step t0, record(t0, m, th) sees the batch's phase rows.
template <class Record>
void phase_batches(const So2Blocks& law, Stream& s, long long n, double* theta, So2WalkScratch& buf,
                   Record&& record) {
  const int B = law.blocks();
  const double omega = law.omega();
  // So2Blocks::draw computes omega + s.uniform(-a, a) = omega + (lo + (hi - lo) u);
  // the same expression here gives the same increment.
  buf.lo.resize(B), buf.width.resize(B), buf.u.resize(std::size_t(kSteps) * B), buf.th.resize(std::size_t(kSteps) * B);
  double *lo = buf.lo.data(), *width = buf.width.data(), *u = buf.u.data(), *th = buf.th.data();
  const Increment inc = increment_of(law);
  const bool big = inc == Increment::wrapped;
  for (int b = 0; b < B; ++b) {
    const double a = law.half_widths()[b];
    lo[b] = -a;
    width[b] = a - (-a);
    theta[b] = wrap_phase(theta[b]);
  }
  for (long long t0 = 0; t0 < n; t0 += kSteps) {
    const int m = int(std::min<long long>(kSteps, n - t0));
    s.uniforms(u, std::size_t(m) * B);
    int b_done = 0;  // blocks whose m steps are made
#if defined(__AVX512F__)
    b_done = with_increment(inc, [&](auto k) { return phase_rows8_all<decltype(k)::value>(u, th, theta, lo, width, omega, m, B); });
#endif
    for (int t = 0; t < m && b_done < B; ++t) {
      const double* ut = u + std::size_t(t) * B;
      double* tht = th + std::size_t(t) * B;
      if (big) {
        for (int b = b_done; b < B; ++b) {
          const double psi = wrap_phase(omega + (lo[b] + width[b] * ut[b]));
          theta[b] = wrap_phase(theta[b] + psi);
          tht[b] = theta[b];
        }
      } else {
        for (int b = b_done; b < B; ++b) {
          const double psi = omega + (lo[b] + width[b] * ut[b]);
          theta[b] = wrap_phase(theta[b] + psi);
          tht[b] = theta[b];
        }
      }
    }
    record(t0, m, th);
  }
}

}  // namespace

void so2_cos_walk(const So2Blocks& law, Stream& s, int n, const double* weight, double* theta, double* S) {
  So2WalkScratch buf;
  const int B = law.blocks();
  phase_batches(law, s, n, theta, buf,
                [&](long long t0, int m, const double* th) { cos_weighted_rows(th, m, B, weight, S + t0); });
}

void so2_mean_cos_at(const So2Blocks& law, Stream& s, const long long* ns, int count, double* out,
                     So2WalkScratch& buf) {
  const int B = law.blocks();
  buf.weight.assign(B, 1.0 / B);
  buf.theta.assign(B, 0.0);
  int c = 0;
  phase_batches(law, s, ns[count - 1], buf.theta.data(), buf, [&](long long t0, int m, const double* th) {
    for (; c < count && ns[c] <= t0 + m; ++c)
      cos_weighted_rows(th + std::size_t(ns[c] - 1 - t0) * B, 1, B, buf.weight.data(), out + c);
  });
}

namespace {

#if defined(__AVX512F__)

// phase_batches' update of phase b by uniform u = 2^53 u01 and width2 = 2^-53
// width: width2 u = width u01 exactly, so the fused multiply-add, and every
// phase after it, is the single-walk one.
template <Increment kInc>
inline void phase_step8(double* th, double lo, double width2, double omega, __m512d u) {
  _mm512_storeu_pd(th, phase_update8<kInc>(_mm512_loadu_pd(th), _mm512_set1_pd(lo), _mm512_set1_pd(width2),
                                           _mm512_set1_pd(omega), u));
}

// Blocks a lane's Philox rounds interleave (a step of B = 32 phases is 16).
constexpr int kInterleave = 4;

// Walk k of the lanes draws uniform t B + b for step t, block b.
template <Increment kInc>
void mean_cos_eight_walks(const So2Blocks& law, const PhiloxLanes& gen, int lanes, const long long* ns, int count,
                          double* out, So2WalkScratch& buf) {
  const int B = law.blocks();
  const double omega = law.omega();
  buf.th.assign(std::size_t(8) * B, 0.0);  // th[8 b + w]; wrap_phase(0) = 0, the walk's start
  double *th = buf.th.data(), *lo = buf.lo.data(), *width = buf.width.data();
  auto record = [&](int c) {  // S at ns[c] = the step just made
    for (int k = 0; k < B; ++k)
      for (int w = 0; w < 8; ++w) buf.rows[std::size_t(w) * B + k] = th[8 * k + w];
    cos_weighted_rows(buf.rows.data(), lanes, B, buf.weight.data(), buf.S.data());
    for (int w = 0; w < lanes; ++w) out[std::size_t(w) * count + c] = buf.S[w];
  };
  const long long n = ns[count - 1];
  int c = 0;
  __m512d u[2 * kInterleave];
  if (B % (2 * kInterleave) == 0) {  // a step is B / 2 whole blocks
    for (long long t = 1; t <= n; ++t) {
      const uint64_t first = uint64_t(t - 1) * uint64_t(B / 2);
      for (int b = 0; b < B; b += 2 * kInterleave) {
        gen.uniforms<kInterleave>(first + b / 2, u);
        for (int i = 0; i < 2 * kInterleave; ++i) phase_step8<kInc>(th + 8 * (b + i), lo[b + i], width[b + i], omega, u[i]);
      }
      for (; c < count && ns[c] == t; ++c) record(c);
    }
    return;
  }
  long long t = 0;  // odd B: a block can straddle two steps
  int b = 0;
  for (uint64_t block = 0; t < n; ++block) {
    gen.uniforms<1>(block, u);
    for (int i = 0; i < 2; ++i) {
      if (t == n) break;
      phase_step8<kInc>(th + 8 * b, lo[b], width[b], omega, u[i]);
      if (++b < B) continue;
      b = 0;
      ++t;
      for (; c < count && ns[c] == t; ++c) record(c);
    }
  }
}
#endif

}  // namespace

void so2_mean_cos_at_walks(const So2Blocks& law, uint64_t seed, uint64_t stream0, long long walks,
                           const long long* ns, int count, double* out, So2WalkScratch& buf) {
#if defined(__AVX512F__)
  const int B = law.blocks();
  bool exact = true;
  buf.lo.resize(B), buf.width.resize(B), buf.rows.resize(std::size_t(8) * B), buf.S.resize(8);
  buf.weight.assign(B, 1.0 / B);
  for (int b = 0; b < B; ++b) {
    const double a = law.half_widths()[b];
    buf.lo[b] = -a;
    buf.width[b] = (a - (-a)) * 0x1.0p-53;
    exact &= buf.width[b] * 0x1.0p53 == a - (-a);  // not subnormal
  }
  const Increment inc = increment_of(law);
  for (long long w = 0; w < walks && exact; w += 8) {
    const PhiloxLanes gen(seed, stream0 + uint64_t(w));
    const int lanes = int(std::min<long long>(8, walks - w));
    double* o = out + std::size_t(w) * count;
    with_increment(inc, [&](auto k) { mean_cos_eight_walks<decltype(k)::value>(law, gen, lanes, ns, count, o, buf); });
  }
  if (exact) return;
#endif
  for (long long w = 0; w < walks; ++w) {
    Stream s(seed, stream0 + uint64_t(w));
    so2_mean_cos_at(law, s, ns, count, out + std::size_t(w) * count, buf);
  }
}

void so2_mean_cos_walk(const So2Blocks& law, Stream& s, int n, double* S) {
  const int B = law.blocks();
  std::vector<double> w(B, 1.0 / B), theta(B, 0.0);
  so2_cos_walk(law, s, n, w.data(), theta.data(), S);
}

}  // namespace routelab
