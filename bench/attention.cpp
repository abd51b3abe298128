// bench_attention: one attention layer's forward + backward, tokens per
// second, at the default model's heads (H = 4, hd = 32), for the SO(2) path
// (rope: rotate q, k in split_heads, streamed softmax attention) against
// PaTH's Householder transport (nn/householder.h), with and without value
// transport, in tiles of query rows (the model's) and row by row. Each method's batch is sized so one
// measurement takes about `--seconds`; rounds alternate the methods and the
// table shows medians and the ratio to rope.
//
// Usage: bench_attention [--lengths 128,512] [--rounds R] [--seconds s] [--blocked]
// --blocked adds a forward-only table: the tiled path against a blocked
// compact-WY prototype (below), after checking that the two agree.
// One thread (OpenMP and Eigen), as bench_walks: see bench/README.md.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Core>

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
void householder_layer(Buffers& b, bool values, int tile_rows) {
  householder_steps_forward(b.w.data(), b.beta.data(), b.z.data(), b.beta_logit.data(), b.s);
  split_heads_forward(b.q.data(), b.k.data(), b.v.data(), b.qkv.data(), (const float*)nullptr, false, b.s);
  householder_attention_forward(b.o.data(), b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), values,
                                b.s, tile_rows);
  householder_attention_backward(b.dq.data(), b.dk.data(), b.dv.data(), b.dw.data(), b.dbeta.data(), b.d_o.data(),
                                 b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), values, b.s,
                                 tile_rows);
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

// A blocked compact-WY/UT forward, a prototype for measurement only (no
// backward, no value transport, so the model does not use it): keys in
// chunks of c steps with P_m = H_a ... H_{a+c-1} = I - W T W^T (T as
// groups/householder_wy.h's factor with tau = beta) and the chunk's keys
// carried to its top once per head, k~_j = H_{a+c-1} ... H_{j+1} k_j, so a
// tile of c query rows meets each lower chunk with three matrix products:
// S = k~^T X, X <- X - W (T (W^T X)). The diagonal chunk goes row by row.
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;  // column-major: a (T, hd) buffer is (hd, T)

void blocked_forward_qk(float* o, const float* q, const float* k, const float* v, const float* w,
                        const float* beta, AttentionShape s) {
  const int c = 16, d = s.hd;
  const int64_t T = s.T, chunks = (T + c - 1) / c;
  const float scale = 1.f / std::sqrt(float(d));
  for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
    const int64_t at = bh * T * d;
    Eigen::Map<const MatF> Q(q + at, d, T), K(k + at, d, T), V(v + at, d, T), Wall(w + at, d, T);
    const float* be = beta + bh * T;
    std::vector<MatF> W(chunks), F(chunks), Kt(chunks);
    for (int64_t m = 0; m < chunks; ++m) {
      const int64_t a = m * c;
      const int cm = int(std::min<int64_t>(c, T - a));
      W[m] = Wall.middleCols(a, cm);
      const MatF G = W[m].transpose() * W[m];
      F[m].setZero(cm, cm);
      for (int i = 0; i < cm; ++i) {
        F[m](i, i) = be[a + i];
        if (i == 0) continue;
        const Eigen::VectorXf z = F[m].topLeftCorner(i, i).triangularView<Eigen::Upper>() * G.col(i).head(i);
        F[m].col(i).head(i) = -be[a + i] * z;
      }
      Kt[m] = K.middleCols(a, cm);
      for (int jj = 0; jj < cm; ++jj)
        for (int t = jj + 1; t < cm; ++t)
          Kt[m].col(jj) -= be[a + t] * W[m].col(t) * W[m].col(t).dot(Kt[m].col(jj));
    }
    MatF X, S, Tmp, O;
    for (int64_t n = 0; n < chunks; ++n) {
      const int64_t i0 = n * c;
      const int rows = int(std::min<int64_t>(c, T - i0));
      X.setZero(d, rows);
      S.setZero(i0 + rows, rows);
      for (int l = 0; l < rows; ++l) {
        Eigen::VectorXf u = Q.col(i0 + l);
        for (int64_t j = i0 + l; j >= i0; --j) {
          S(j, l) = scale * K.col(j).dot(u);
          u -= be[j] * Wall.col(j) * Wall.col(j).dot(u);
        }
        X.col(l) = u;
      }
      for (int64_t m = n - 1; m >= 0; --m) {
        S.middleRows(m * c, c).noalias() = scale * (Kt[m].transpose() * X);
        Tmp.noalias() = W[m].transpose() * X;
        X.noalias() -= W[m] * (F[m] * Tmp);
      }
      for (int l = 0; l < rows; ++l) {
        auto p = S.col(l).head(i0 + l + 1);
        p = (p.array() - p.maxCoeff()).exp();
        p /= p.sum();
      }
      O.noalias() = V.leftCols(i0 + rows) * S;
      Eigen::Map<MatF>(o + at + i0 * d, d, rows) = O;
    }
  }
}

// Forward only, no value transport: the tiled fast path against the blocked
// prototype, after checking that they agree.
void blocked_comparison(const std::vector<int>& lengths, int rounds, double seconds) {
  std::printf("\nforward only, householder_qk: tiles of 16 rows (the model's) against blocked compact-WY, c = 16\n");
  std::printf("%-20s %6s %6s %12s %10s\n", "method", "T", "B", "tokens/s", "tiled/this");
  for (int T : lengths) {
    auto prepare = [](Buffers& x) {
      householder_steps_forward(x.w.data(), x.beta.data(), x.z.data(), x.beta_logit.data(), x.s);
      split_heads_forward(x.q.data(), x.k.data(), x.v.data(), x.qkv.data(), (const float*)nullptr, false, x.s);
    };
    Buffers b({1, T, 4, 32});
    prepare(b);
    std::vector<float> o2(b.o.size());
    householder_attention_forward(b.o.data(), b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), false,
                                  b.s);
    blocked_forward_qk(o2.data(), b.q.data(), b.k.data(), b.v.data(), b.w.data(), b.beta.data(), b.s);
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < o2.size(); ++i) diff += std::pow(o2[i] - b.o[i], 2), ref += std::pow(b.o[i], 2);
    std::printf("(T = %d: blocked differs from tiled by %.1e relative)\n", T, std::sqrt(diff / ref));
    const Method methods[] = {
        {"tiled", [](Buffers& x) {
           householder_attention_forward(x.o.data(), x.q.data(), x.k.data(), x.v.data(), x.w.data(), x.beta.data(),
                                         false, x.s);
         }},
        {"blocked", [](Buffers& x) {
           blocked_forward_qk(x.o.data(), x.q.data(), x.k.data(), x.v.data(), x.w.data(), x.beta.data(), x.s);
         }}};
    time_methods(methods, 2, T, rounds, seconds, prepare);
  }
}

int main(int argc, char** argv) {
  std::vector<int> lengths = {128, 512};
  int rounds = 5;
  double seconds = 1.0;
  bool blocked = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--lengths") {
      lengths.clear();
      for (std::string rest = argv[++i]; !rest.empty();) {
        const std::size_t comma = rest.find(',');
        lengths.push_back(std::stoi(rest.substr(0, comma)));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      }
    } else if (i + 1 < argc && a == "--rounds") {
      rounds = std::stoi(argv[++i]);
    } else if (i + 1 < argc && a == "--seconds") {
      seconds = std::stod(argv[++i]);
    } else if (a == "--blocked") {
      blocked = true;
    } else {
      std::fprintf(stderr, "bench_attention: unknown flag %s; accepts --lengths a,b --rounds R --seconds s --blocked\n",
                   a.c_str());
      return 2;
    }
  }
  omp_set_num_threads(1);
  Eigen::setNbThreads(1);
  // "rows": tile_rows = 1, the plain row-by-row order.
  const Method methods[] = {{"rope", rope_layer},
                            {"householder_qk", [](Buffers& b) { householder_layer(b, false, kHouseholderTileRows); }},
                            {"householder_qkv", [](Buffers& b) { householder_layer(b, true, kHouseholderTileRows); }},
                            {"householder_qk_rows", [](Buffers& b) { householder_layer(b, false, 1); }},
                            {"householder_qkv_rows", [](Buffers& b) { householder_layer(b, true, 1); }}};
  std::printf("attention forward+backward, H = 4, hd = 32, float, 1 thread, %d rounds (median)\n", rounds);
  std::printf("%-20s %6s %6s %12s %10s\n", "method", "T", "B", "tokens/s", "rope/this");
  for (int T : lengths) time_methods(methods, std::size(methods), T, rounds, seconds, [](Buffers&) {});
  if (blocked) blocked_comparison(lengths, rounds, seconds);
  return 0;
}
