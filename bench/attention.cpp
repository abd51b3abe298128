// bench_attention: one attention layer's forward + backward, tokens per
// second, at the default model's heads (H = 4, hd = 32), for the SO(2) path
// (rope: rotate q, k in split_heads, streamed softmax attention) against
// PaTH's Householder transport (nn/householder.h), with and without value
// transport, in tiles of query rows (the model's) and row by row. Each method's batch is sized so one
// measurement takes about `--seconds`; rounds alternate the methods and the
// table shows medians and the ratio to rope.
//
// Usage: bench_attention [--lengths 128,512] [--rounds R] [--seconds s]
//                        [--chunks a,b] [--only rope,householder_qkv]
// --chunks adds a table of the blocked householder_qkv at each chunk size;
// --only times the named methods alone (the first is the ratio's base).
// One thread (OpenMP and Eigen), as bench_walks: see bench/README.md.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "io/parse.h"
#include "nn/attention.h"
#include "nn/householder.h"
#include "rng/stream.h"

using namespace routelab;
using namespace routelab::nn;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every buffer one layer's attention reads and writes, float as in training.
struct Buffers {
  AttentionShape s;
  std::vector<float> qkv, cs, z, beta_logit, q, k, v, o, lse, w, beta, d_o, dq, dk, dv, dw, dbeta, dqkv, dz, dbl;
  // The blocked path's chunk products from forward, for backward: as the
  // model keeps them in training.
  std::shared_ptr<HouseholderCache<float>> cache = make_householder_cache<float>();
  explicit Buffers(AttentionShape shape) : s(shape) {
    const std::size_t N = std::size_t(s.B) * s.T, C = s.C(), n = N * C, nh = N * s.H;
    Stream rs(1, 0);
    auto fill = [&](std::vector<float>& x, std::size_t size, double sd) {
      x.resize(size);
      for (auto& e : x) e = float(sd * rs.normal());
    };
    fill(qkv, 3 * n, 1.0), fill(z, n, 1.0), fill(beta_logit, nh, 1.0), fill(d_o, n, 1.0);
    cs.resize(N * s.hd);
    for (std::size_t t = 0; t < N; ++t)
      for (int j = 0; j < s.hd / 2; ++j) {
        const double theta = double(t % s.T) * std::pow(10000.0, -2.0 * j / s.hd);
        cs[(t * s.hd / 2 + j) * 2] = float(std::cos(theta)), cs[(t * s.hd / 2 + j) * 2 + 1] = float(std::sin(theta));
      }
    for (auto* x : {&q, &k, &v, &o, &w, &dq, &dk, &dv, &dw, &dz}) x->assign(n, 0.f);
    for (auto* x : {&lse, &beta, &dbeta, &dbl}) x->assign(nh, 0.f);
    dqkv.assign(3 * n, 0.f);
  }
};

void rope_layer(Buffers& b) {
  split_heads_forward(b.q.data(), b.k.data(), b.v.data(), b.qkv.data(), b.cs.data(), false, b.s);
  attention_forward(b.o.data(), b.lse.data(), b.q.data(), b.k.data(), b.v.data(), ScoreBias<float>{}, b.s);
  attention_backward(b.dq.data(), b.dk.data(), b.dv.data(), (float*)nullptr, b.d_o.data(), b.o.data(), b.lse.data(),
                     b.q.data(), b.k.data(), b.v.data(), ScoreBias<float>{}, b.s);
  split_heads_backward(b.dqkv.data(), (double*)nullptr, b.dq.data(), b.dk.data(), b.dv.data(), b.q.data(),
                       b.k.data(), b.v.data(), b.cs.data(), false, b.s);
}

// The steps (PaTH's beta) are part of the layer's cost, the projections not.
void householder_layer(Buffers& b, bool values, HouseholderPath path, int chunk = 0) {
  householder_steps_forward(b.w.data(), b.beta.data(), b.z.data(), b.beta_logit.data(), b.s);
  split_heads_forward(b.q.data(), b.k.data(), b.v.data(), b.qkv.data(), (const float*)nullptr, false, b.s);
  householder_attention_forward(b.o.data(), b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), values,
                                b.s, path, chunk, b.cache.get());
  householder_attention_backward(b.dq.data(), b.dk.data(), b.dv.data(), b.dw.data(), b.dbeta.data(), b.d_o.data(),
                                 b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), values, b.s,
                                 path, chunk, b.cache.get());
  householder_steps_backward(b.dz.data(), b.dbl.data(), b.dw.data(), b.dbeta.data(), b.z.data(), b.beta.data(), b.s);
  split_heads_backward(b.dqkv.data(), (double*)nullptr, b.dq.data(), b.dk.data(), b.dv.data(), b.q.data(),
                       b.k.data(), b.v.data(), (const float*)nullptr, false, b.s);
}

struct Method {
  const char* name;
  std::function<void(Buffers&)> run;
};

// One table block at length T: each method's batch sized from one B = 1 run
// so a measurement takes about `seconds` (`prepare` readies fresh buffers),
// rounds alternating who goes first, median tokens/s and the first method's
// rate over each one's.
void time_methods(const Method* methods, std::size_t n, int T, int rounds, double seconds,
                  const std::function<void(Buffers&)>& prepare) {
  const int H = 4, hd = 32;
  std::vector<Buffers> bufs;
  for (std::size_t m = 0; m < n; ++m) {
    Buffers probe({1, T, H, hd});
    prepare(probe);
    const double t0 = now();
    methods[m].run(probe);
    const double one = std::max(now() - t0, 1e-6);
    bufs.emplace_back(AttentionShape{std::max(1, int(seconds / one)), T, H, hd});
    prepare(bufs.back());
  }
  std::vector<std::vector<double>> rates(n);
  for (int r = 0; r < rounds; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t m = (j + r) % n;
      const double t0 = now();
      methods[m].run(bufs[m]);
      rates[m].push_back(double(bufs[m].s.B) * T / (now() - t0));
    }
  std::vector<double> med(n);
  for (std::size_t m = 0; m < n; ++m) {
    std::sort(rates[m].begin(), rates[m].end());
    med[m] = rates[m][rates[m].size() / 2];
  }
  for (std::size_t m = 0; m < n; ++m)
    std::printf("%-20s %6d %6d %12.0f %10.2f\n", methods[m].name, T, bufs[m].s.B, med[m], med[0] / med[m]);
}

// The blocked path at each chunk size, householder_qkv forward + backward:
// what 0 was tuned with.
void chunk_sweep(const std::vector<int>& lengths, const std::vector<int>& chunks, int rounds, double seconds) {
  std::printf("\nhouseholder_qkv forward+backward, blocked, by chunk size (ratio: the first chunk's rate over each)\n");
  std::printf("%-20s %6s %6s %12s %10s\n", "chunk", "T", "B", "tokens/s", "first/this");
  for (int T : lengths) {
    std::vector<Method> methods;
    std::vector<std::string> names;
    for (int c : chunks) names.push_back("blocked c=" + std::to_string(c));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const int c = chunks[i];
      methods.push_back({names[i].c_str(), [c](Buffers& b) { householder_layer(b, true, HouseholderPath::blocked, c); }});
    }
    time_methods(methods.data(), methods.size(), T, rounds, seconds, [](Buffers&) {});
  }
}

// A flag's "a,b,c": its items, or exit 2 naming what was wrong.
std::vector<std::string> items_of(const char* flag, const char* text) {
  const auto items = split_list(text);
  if (!items) {
    std::fprintf(stderr, "bench_attention: %s takes a comma-separated list without empty items; got '%s'\n", flag, text);
    std::exit(2);
  }
  return *items;
}

std::vector<int> positive_ints_of(const char* flag, const char* text) {
  std::vector<int> out;
  for (const std::string& item : items_of(flag, text)) {
    const auto v = parse_integer(item);
    if (!v || *v < 1 || *v > 1 << 20) {
      std::fprintf(stderr, "bench_attention: %s takes positive integers; got '%s'\n", flag, item.c_str());
      std::exit(2);
    }
    out.push_back(int(*v));
  }
  return out;
}

int positive_int_of(const char* flag, const char* text) {
  const std::vector<int> v = positive_ints_of(flag, text);
  if (v.size() != 1) {
    std::fprintf(stderr, "bench_attention: %s takes one positive integer; got '%s'\n", flag, text);
    std::exit(2);
  }
  return v[0];
}

int main(int argc, char** argv) {
  std::vector<int> lengths = {128, 512};
  int rounds = 5;
  double seconds = 1.0;
  std::vector<int> chunks;
  std::vector<std::string> only;  // method names; empty: all
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--lengths") {
      lengths = positive_ints_of("--lengths", argv[++i]);
    } else if (i + 1 < argc && a == "--rounds") {
      rounds = positive_int_of("--rounds", argv[++i]);
    } else if (i + 1 < argc && a == "--seconds") {
      const auto s = parse_finite(argv[++i]);
      if (!s || *s <= 0) {
        std::fprintf(stderr, "bench_attention: --seconds takes a positive number; got '%s'\n", argv[i]);
        return 2;
      }
      seconds = *s;
    } else if (i + 1 < argc && a == "--only") {
      only = items_of("--only", argv[++i]);
    } else if (i + 1 < argc && a == "--chunks") {
      chunks = positive_ints_of("--chunks", argv[++i]);
    } else {
      std::fprintf(stderr, "bench_attention: unknown flag %s; accepts --lengths a,b --rounds R --seconds s --chunks a,b --only m,n\n",
                   a.c_str());
      return 2;
    }
  }
  omp_set_num_threads(1);
  Eigen::setNbThreads(1);
  // "tiles": the reference path, 16 query rows side by side, rank-1 steps.
  const Method all_methods[] = {
      {"rope", rope_layer},
      {"householder_qk", [](Buffers& b) { householder_layer(b, false, HouseholderPath::blocked); }},
      {"householder_qkv", [](Buffers& b) { householder_layer(b, true, HouseholderPath::blocked); }},
      {"householder_qk_tiles", [](Buffers& b) { householder_layer(b, false, HouseholderPath::tiles); }},
      {"householder_qkv_tiles", [](Buffers& b) { householder_layer(b, true, HouseholderPath::tiles); }}};
  std::vector<Method> methods;
  for (const Method& m : all_methods)
    if (only.empty() || std::find(only.begin(), only.end(), m.name) != only.end()) methods.push_back(m);
  if (methods.empty()) {
    std::fprintf(stderr, "bench_attention: --only names no method; accepts rope, householder_qk, householder_qkv, "
                         "householder_qk_tiles, householder_qkv_tiles\n");
    return 2;
  }
  std::printf("attention forward+backward, H = 4, hd = 32, float, 1 thread, %d rounds (median)\n", rounds);
  std::printf("%-20s %6s %6s %12s %10s\n", "method", "T", "B", "tokens/s", "rope/this");
  for (int T : lengths) time_methods(methods.data(), methods.size(), T, rounds, seconds, [](Buffers&) {});
  if (!chunks.empty()) chunk_sweep(lengths, chunks, rounds, seconds);
  return 0;
}
