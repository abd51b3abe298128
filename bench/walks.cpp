// bench_walks: times routelab on the walk workloads of the performance issue
// and measures, in the same process and the same minute, the floor of each:
// the random words and transcendentals it must draw at the measured rate of
// our own generator, plus its arithmetic at the measured FMA rate.
//
//   W3  Householder walks, uniform normals, d = 64, 4096 walks x 256 steps,
//       vector propagation, score q^T P_n k at every step (walk_scores)
//   W4  SO(2) phases, B = 32, 10000 walks x 4096 steps, S_n = mean_b cos
//       Theta_{n,b} at every step (so2_mean_cos_walk)
//   W5  2000 Haar samples on O(64) (haar_sample)
//   W6  full-matrix Householder products, d = 128, 64 walks x 1024 steps,
//       compact-WY blocks (householder_walk_matrix_wy)
//
// Usage: bench_walks [--workload W3|W4|W5|W6|rates|all] [--reps R] [--span s]
//                    [--block b] [--scale s]  (s < 1 shrinks the walk counts, for a
//                    smoke run)
// ours_s is the best of the timed runs (at least R, spanning at least s
// seconds, default 0.5), first_s the first of them; the floor's rates are
// each a best of a few, so ours_over_floor takes ours_s.
// Prints an `isa` line (the build's instruction set, the Philox kernel, the
// normals' log and W6's panel kernel), then one line per workload,
// `key=value` pairs, for bench/run_walks.py.
// One thread throughout (OpenMP and Eigen): see bench/README.md.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "groups/haar.h"
#include "groups/householder.h"
#include "bench/householder_wy.h"
#include "bench/panel_gemm.h"
#include "groups/so2_phases.h"
#include "groups/walk.h"
#include "base/build.h"
#include "base/normal_log.h"
#include "rng/stream.h"

using namespace routelab;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best of `reps` timings of f (seconds).
template <class F>
static double best_of(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

static volatile double g_sink;  // keeps results alive

// ---------------------------------------------------------------------------
// Rates: each measured on a small, cache-resident problem, best of a few.

struct Rates {
  double word_s;   // one Philox word (bulk, vectorized)
  double uniform_s;  // one uniform (bulk, as Stream::uniforms makes them)
  double pair_s;   // one Box-Muller pair from its 4 words: log, sqrt, cos, sin
  double cos_s;    // one cos of a wrapped phase, weighted and summed
  double fma_s;    // one scalar fused multiply-add at the machine's peak
  double gemm_flops;  // Eigen dgemm, n = 1024, flop/s
};

// Seconds per value of a bulk Philox fill: fill(seed, stream, block0, nb,
// out) writes per_block values of type T a block into out, nb blocks a call,
// each call at fresh counters.
template <class T, class Fill>
static double measure_bulk(int nb, int per_block, Fill fill) {
  std::vector<T> out(std::size_t(per_block) * nb);
  uint64_t blk = 0;
  const int iters = 64;
  const double t = best_of(5, [&] {
    for (int i = 0; i < iters; ++i) fill(1, 2, blk += nb, std::size_t(nb), out.data());
  });
  g_sink = double(out[7]);
  return t / (double(iters) * per_block * nb);
}

static double measure_word() { return measure_bulk<uint32_t>(4096, 4, philox_blocks); }
static double measure_uniform() { return measure_bulk<double>(1024, 2, philox_uniforms); }

static double measure_pair() {
  const int chunks = 256;
  std::vector<uint32_t> w(2 * kNormalChunk * chunks);
  philox_blocks(3, 4, 0, w.size() / 4, w.data());
  std::vector<double> out(kNormalChunk * chunks);
  const int iters = 64;
  const double t = best_of(5, [&] {
    for (int i = 0; i < iters; ++i) normal_chunks(w.data(), chunks, out.data());
  });
  g_sink = out[5];
  return t / (double(iters) * chunks * kNormalChunk / 2);
}

static double measure_cos() {
  const int rows = 64, B = 32;
  std::vector<double> th(rows * B), w(B, 1.0 / B), S(rows);
  for (std::size_t i = 0; i < th.size(); ++i) th[i] = -3.1 + 6.2 * double(i) / th.size();
  const int iters = 512;
  const double t = best_of(5, [&] {
    for (int i = 0; i < iters; ++i) cos_weighted_rows(th.data(), rows, B, w.data(), S.data());
  });
  g_sink = S[3];
  return t / (double(iters) * rows * B);
}

// Peak FMA throughput: 16 independent vector accumulators hide the latency.
static double measure_fma() {
#if defined(__AVX512F__)
  using V = __m512d;
  constexpr int lanes = 8;
#define SET1 _mm512_set1_pd
#define FMA _mm512_fmadd_pd
#define ADD _mm512_add_pd
#else
  using V = __m256d;
  constexpr int lanes = 4;
#define SET1 _mm256_set1_pd
#define FMA _mm256_fmadd_pd
#define ADD _mm256_add_pd
#endif
  const long iters = 1 << 22;
  V s;
  // The accumulators live inside the timed lambda so they stay in registers.
  const double t = best_of(3, [&] {
    const V a = SET1(0.999999), b = SET1(1e-7);
    V c0 = SET1(0), c1 = SET1(1), c2 = SET1(2), c3 = SET1(3), c4 = SET1(4), c5 = SET1(5), c6 = SET1(6), c7 = SET1(7);
    V c8 = SET1(8), c9 = SET1(9), c10 = SET1(10), c11 = SET1(11);
    for (long i = 0; i < iters; ++i) {
      c0 = FMA(c0, a, b), c1 = FMA(c1, a, b), c2 = FMA(c2, a, b), c3 = FMA(c3, a, b);
      c4 = FMA(c4, a, b), c5 = FMA(c5, a, b), c6 = FMA(c6, a, b), c7 = FMA(c7, a, b);
      c8 = FMA(c8, a, b), c9 = FMA(c9, a, b), c10 = FMA(c10, a, b), c11 = FMA(c11, a, b);
    }
    s = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));
    s = ADD(s, ADD(ADD(c8, c9), ADD(c10, c11)));
  });
  double tmp[lanes];
  std::memcpy(tmp, &s, sizeof tmp);
  g_sink = tmp[0];
  return t / (double(iters) * 12 * lanes);
}

static double measure_gemm() {
  const int n = 1024;
  Mat A = Mat::Random(n, n), B = Mat::Random(n, n), C(n, n);
  const double t = best_of(3, [&] { C.noalias() = A * B; });
  g_sink = C(1, 2);
  return 2.0 * n * n * double(n) / t;
}

static Rates measure_rates() {
  Rates r;
  r.word_s = measure_word();
  r.uniform_s = measure_uniform();
  r.pair_s = measure_pair();
  r.cos_s = measure_cos();
  r.fma_s = measure_fma();
  r.gemm_flops = 0;
  return r;
}

// The faster of two measurements of each rate.
static Rates fastest(const Rates& a, const Rates& b) {
  return Rates{.word_s = std::min(a.word_s, b.word_s),
               .uniform_s = std::min(a.uniform_s, b.uniform_s),
               .pair_s = std::min(a.pair_s, b.pair_s),
               .cos_s = std::min(a.cos_s, b.cos_s),
               .fma_s = std::min(a.fma_s, b.fma_s),
               .gemm_flops = std::max(a.gemm_flops, b.gemm_flops)};
}

// ---------------------------------------------------------------------------
// Workloads. Each returns a checksum so the work cannot be dropped, and has a
// floor(rates) in seconds.

static const uint64_t kSeed = 20240611;

struct W3 {
  int d = 64, walks = 4096, n = 256;
  double run() const {
    Householder law(d, NormalSampler(NormalLaw::sphere, d, 1.0));
    std::vector<double> q(d), k(d), scores(n);
    for (int i = 0; i < d; ++i) q[i] = 1.0 / std::sqrt(double(d)), k[i] = (i == 0);
    WalkBuffers buf(law);
    double sum = 0;
    for (int w = 0; w < walks; ++w) {
      Stream s(kSeed, w);
      walk_scores(law, s, q.data(), k.data(), n, scores.data(), buf);
      sum += scores[n - 1];
    }
    return sum;
  }
  // d normals a step (2 words each, one Box-Muller pair per two), and about
  // 5 d FMAs: |g|^2, scale, v.x, x -= c v, q.x.
  double floor(const Rates& r) const {
    const double steps = double(walks) * n;
    return steps * (d * 2 * r.word_s + d / 2.0 * r.pair_s + 5.0 * d * r.fma_s);
  }
};

struct W4 {
  int B = 32, walks = 10000, n = 4096;
  double a = 0.5, omega = 0.3;
  double run() const {
    So2Blocks law(2 * B, std::vector<double>(B, a), omega);
    std::vector<double> S(n), mean(n, 0.0), sq(n, 0.0);
    for (int w = 0; w < walks; ++w) {
      Stream s(kSeed, w);
      so2_mean_cos_walk(law, s, n, S.data());
      // What a simulation keeps: the mean curve E S_n and its spread.
      for (int t = 0; t < n; ++t) mean[t] += S[t], sq[t] += S[t] * S[t];
    }
    return mean[n - 1] + sq[n - 1];
  }
  // A uniform and a cos per block and step; about 6 FMAs around them: the
  // increment, the wrap (scale, round, two FMAs), weight and sum. (A uniform
  // at the bulk uniforms' rate: with AVX-512 they never go through stored
  // words, and cost less than two words.)
  double floor(const Rates& r) const {
    const double e = double(walks) * n * B;
    return e * (r.uniform_s + r.cos_s + 6.0 * r.fma_s);
  }
};

struct W5 {
  int d = 64, samples = 2000;
  double run() const {
    double sum = 0;
    for (int i = 0; i < samples; ++i) {
      Stream s(kSeed, i);
      Mat Q = haar_sample(s, d, false);
      sum += Q(0, 0);
    }
    return sum;
  }
  // Stewart's product of reflections, transposed (haar_sample): d(d+1)/2
  // normals and the accumulation of d - 1 reflections, one on n = 2..d
  // coordinates costing 2 n^2 FMAs, (2/3) d^3 + d^2 + ... in all (until
  // 2026-12-03 the floor took (2/3) d^3 alone, 2.3% less at d = 64). (A QR
  // of d^2 normals takes twice both: (4/3) d^3 FMAs.)
  double floor(const Rates& r) const {
    const double dd = d;
    const double fmas = dd * (dd + 1) * (2 * dd + 1) / 3 - 2;  // sum_{n=2}^{d} 2 n^2
    return samples * (dd * (dd + 1) / 2 * (2 * r.word_s + r.pair_s / 2) + fmas * r.fma_s);
  }
};

struct W6 {
  int d = 128, walks = 64, n = 1024, block = 32;
  double run() const {
    Householder law(d, NormalSampler(NormalLaw::sphere, d, 1.0));
    WyBuffers buf;
    double sum = 0;
    for (int w = 0; w < walks; ++w) {
      Stream s(kSeed, w);
      Mat P = Mat::Identity(d, d);
      householder_walk_matrix_wy(law, s, P, n, block, buf);
      sum += P.trace();
    }
    return sum;
  }
  // Useful flops: a reflection on a d x d matrix is 4 d^2 flops (2 d^2 FMAs).
  double flops() const { return double(walks) * n * 4.0 * d * d; }
  double floor(const Rates& r) const {
    const double steps = double(walks) * n;
    return steps * (d * 2 * r.word_s + d / 2.0 * r.pair_s) + flops() / 2 * r.fma_s;
  }
};

int main(int argc, char** argv) {
  std::string which = "all";
  int reps = 1, block = 32;
  double scale = 1.0, span = 0.5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_walks: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--workload") which = next();
    else if (a == "--reps") reps = std::atoi(next());
    else if (a == "--span") span = std::atof(next());
    else if (a == "--block") block = std::atoi(next());
    else if (a == "--scale") scale = std::atof(next());
    else {
      std::fprintf(stderr, "bench_walks: unknown flag %s; accepts --workload W3|W4|W5|W6|rates|all, --reps R, "
                           "--span s, --block b, --scale s\n", a.c_str());
      return 2;
    }
  }
  const std::string workloads[] = {"W3", "W4", "W5", "W6", "rates", "all"};
  const char* bad = nullptr;
  if (std::find(std::begin(workloads), std::end(workloads), which) == std::end(workloads))
    bad = "--workload: accepts W3, W4, W5, W6, rates, all";
  else if (reps < 1) bad = "--reps: accepts an integer R >= 1";
  else if (!(span >= 0)) bad = "--span: accepts seconds s >= 0";
  else if (block < 1) bad = "--block: accepts an integer b >= 1";
  else if (!(scale > 0 && scale <= 1)) bad = "--scale: accepts s in (0, 1]";
  if (bad) {
    std::fprintf(stderr, "bench_walks: bad value for %s\n", bad);
    return 2;
  }
  // One thread for everything, as the NumPy peer runs (bench/README.md).
  omp_set_num_threads(1);
  Eigen::setNbThreads(1);

  // What this binary was compiled for, and which kernel each part runs: the
  // Philox block function, the normals' log, W6's panel products.
  std::printf("isa build=%s philox=%s normal_log=%s panel_gemm=%s\n", build_isa(), philox_path_name(philox_build_path()),
              normal_log_path(), panel::kPath);

  const bool all = which == "all";
  const Rates r = measure_rates();
  if (all || which == "rates") {
    const double gemm = measure_gemm();
    std::printf("rates word_ns=%.4f uniform_ns=%.4f pair_ns=%.4f cos_ns=%.4f fma_gflops=%.2f eigen_dgemm_gflops=%.2f\n",
                r.word_s * 1e9, r.uniform_s * 1e9, r.pair_s * 1e9, r.cos_s * 1e9, 2e-9 / r.fma_s, gemm * 1e-9);
  }
  // count: the workload's walks or samples, scaled by --scale. A tiny copy
  // (4 of them) runs first, untimed, as the peer's does: first calls and
  // the allocator settle outside the timed run.
  auto report = [&](const char* name, auto& w, int& count) {  // count is one of w's
    count = std::max(1, int(count * scale));
    const int full = count;
    count = std::min(full, 4);
    g_sink = w.run();
    count = full;
    // At least `reps` timed runs, and more until they span `span` seconds:
    // W5's 30 ms runs would otherwise all fall within one of this machine's
    // slow or fast moments, where W3's, W4's and W6's span several.
    double sum = 0, first = 0, t = 1e300, spent = 0;
    int runs = 0;
    for (; runs < reps || (spent < span && runs < 100); ++runs) {
      const double t0 = now();
      sum = w.run();
      const double ti = now() - t0;
      if (runs == 0) first = ti;
      t = std::min(t, ti);
      spent += ti;
    }
    // The rates again, after the runs: a floor is the machine's best, and on
    // a machine whose speed shifts within seconds one measurement of a rate
    // can land in a slow moment (a floor above our time, once).
    const double fl = w.floor(fastest(r, measure_rates()));
    std::printf("%s ours_s=%.5f first_s=%.5f runs=%d floor_s=%.5f ours_over_floor=%.3f checksum=%.12g", name, t, first,
                runs, fl, t / fl, sum);
    if constexpr (requires { w.flops(); }) std::printf(" useful_gflops=%.2f", w.flops() / t * 1e-9);
    std::printf("\n");
    std::fflush(stdout);
  };
  if (all || which == "W3") {
    W3 w;
    report("W3", w, w.walks);
  }
  if (all || which == "W4") {
    W4 w;
    report("W4", w, w.walks);
  }
  if (all || which == "W5") {
    W5 w;
    report("W5", w, w.samples);
  }
  if (all || which == "W6") {
    W6 w;
    w.block = block;
    report("W6", w, w.walks);
  }
  return 0;
}
