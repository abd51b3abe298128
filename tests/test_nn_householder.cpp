// Householder transport in attention (nn/householder.h): every path (blocked
// at several chunk sizes, tiles of rows, row by row) against the plain
// reference of explicit hd x hd products, output and every gradient (the
// reference differentiated by finite differences), on odd lengths in double:
// T not a multiple of the chunk, T below it, chunks of one step; reflections
// preserve norms; the convention's off-by-one is caught.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/householder.h"
#include "rms_error.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;

struct Inputs {
  AttentionShape s;
  std::vector<double> q, k, v, w, beta;
};

// Unit w; beta ~ U(0, 2) (PaTH's steps) or 2 everywhere (reflections).
Inputs inputs(AttentionShape s, bool reflections, uint64_t seed) {
  Stream rs(seed, 0);
  const std::size_t n = std::size_t(s.B) * s.H * s.T * s.hd;
  Inputs in{s, {}, {}, {}, {}, {}};
  for (auto* x : {&in.q, &in.k, &in.v, &in.w}) {
    x->resize(n);
    for (auto& e : *x) e = rs.normal();
  }
  for (std::size_t t = 0; t < n / s.hd; ++t) {
    double* wt = in.w.data() + t * s.hd;
    double norm = 0;
    for (int c = 0; c < s.hd; ++c) norm += wt[c] * wt[c];
    for (int c = 0; c < s.hd; ++c) wt[c] /= std::sqrt(norm);
    in.beta.push_back(reflections ? 2.0 : rs.uniform(0.0, 2.0));
  }
  return in;
}

// A path and, for blocked, its chunk size.
struct Path {
  HouseholderPath path;
  int chunk;
  std::string name() const {
    return path == HouseholderPath::rows ? "rows" : path == HouseholderPath::tiles ? "tiles"
                                                                                   : chunk ? "blocked c=" + std::to_string(chunk) : "blocked (the model's chunk)";
  }
};
// Chunks of 1, 4 (T = 7, 13, 21 end mid-chunk), 8 and the model's
// (householder_chunk(T): 16 here, so T = 21 is two chunks, the others one).
const Path kPaths[] = {{HouseholderPath::rows, 0},    {HouseholderPath::tiles, 0},   {HouseholderPath::blocked, 1},
                       {HouseholderPath::blocked, 4}, {HouseholderPath::blocked, 8},
                       {HouseholderPath::blocked, 0}};

std::vector<double> fast_output(const Inputs& in, bool values, Path p = {HouseholderPath::blocked, 0}) {
  std::vector<double> o(in.q.size());
  householder_attention_forward(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                values, in.s, p.path, p.chunk);
  return o;
}

std::vector<double> reference_output(const Inputs& in, bool values, bool planted = false,
                                     const std::vector<double>& cum = {}) {
  std::vector<double> o(in.q.size());
  householder_attention_reference(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                  values, in.s, planted, cum.empty() ? nullptr : cum.data());
  return o;
}

// d loss / d x by a five-point stencil in every entry of x.
std::vector<double> stencil_gradient(std::vector<double>& x, const std::function<double()>& loss) {
  std::vector<double> fd(x.size());
  const double h = 1e-3;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double x0 = x[j];
    auto at = [&](double e) {
      x[j] = x0 + e;
      return loss();
    };
    fd[j] = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h);
    x[j] = x0;
  }
  return fd;
}

using routelab::testing::rms_relative_error;

// Odd lengths; 21 spans two tiles of rows, the last one ragged.
const AttentionShape kShapes[] = {{2, 7, 2, 5}, {1, 13, 1, 4}, {1, 21, 1, 3}};
TEST(nn_householder, every_path_equals_explicit_products) {
  for (const AttentionShape& s : kShapes)
    for (bool reflections : {false, true})
      for (bool values : {false, true})
        for (const Path& p : kPaths) {
          const Inputs in = inputs(s, reflections, 1);
          EXPECT_LE(rms_relative_error(fast_output(in, values, p), reference_output(in, values)), 1e-13)
              << "T " << s.T << " reflections " << reflections << " values " << values << " " << p.name();
        }
}

// Loss = sum G o: the fast backward against a five-point stencil of the
// reference in every entry of q, k, v, w and beta (w as free vectors).
TEST(nn_householder, every_gradient_matches_the_reference) {
  for (const AttentionShape& s : kShapes)
    for (bool reflections : {false, true})
      for (bool values : {false, true}) {
        Inputs in = inputs(s, reflections, 2);
        Stream rs(3, 0);
        std::vector<double> G(in.q.size());
        for (auto& g : G) g = rs.normal();
        constexpr int P = std::size(kPaths);
        std::vector<double> dq[P], dk[P], dv[P], dw[P], dbeta[P];  // by path
        for (int t = 0; t < P; ++t) {
          for (auto* x : {dq, dk, dv, dw}) x[t].assign(in.q.size(), 0.0);
          dbeta[t].assign(in.beta.size(), 0.0);
          householder_attention_backward(dq[t].data(), dk[t].data(), dv[t].data(), dw[t].data(), dbeta[t].data(),
                                         G.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                         in.beta.data(), values, s, kPaths[t].path,
                                         kPaths[t].chunk);
        }
        auto loss = [&] {
          const auto o = reference_output(in, values);
          double l = 0;
          for (std::size_t i = 0; i < o.size(); ++i) l += G[i] * o[i];
          return l;
        };
        const std::pair<const char*, std::pair<std::vector<double>*, std::vector<double>*>> quantities[] = {
            {"dq", {&in.q, dq}}, {"dk", {&in.k, dk}}, {"dv", {&in.v, dv}},
            {"dw", {&in.w, dw}}, {"dbeta", {&in.beta, dbeta}}};
        for (const auto& [name, pair] : quantities) {
          auto& [x, analytic] = pair;
          const std::vector<double> fd = stencil_gradient(*x, loss);
          for (int t = 0; t < P; ++t)
            EXPECT_LE(rms_relative_error(analytic[t], fd), 1e-8) << name << " T " << s.T << " reflections " << reflections
                                                        << " values " << values << " " << kPaths[t].name();
        }
      }
}

// A forget gate's bias (path_qk_forget): cum_i - cum_j on every logit. The
// blocked path at every chunk size against the reference, output and every
// gradient (dcum too) by finite differences; the tiles and rows refuse it.
// Planted: the bias the other way round (cum_j - cum_i) must miss.
TEST(nn_householder, a_forget_gates_bias_matches_the_reference) {
  for (const AttentionShape& s : kShapes)
    for (bool values : {false, true}) {
      Inputs in = inputs(s, false, 5);
      Stream rs(6, 0);
      const std::size_t n = std::size_t(s.B) * s.H * s.T;
      std::vector<double> cum(n), G(in.q.size());
      for (std::size_t i = 0; i < n; ++i) cum[i] = (i % s.T ? cum[i - 1] : 0.0) - 0.4 * std::abs(rs.normal());
      for (auto& g : G) g = rs.normal();
      const auto want = reference_output(in, values, false, cum);
      std::vector<double> flipped(cum);
      for (double& c : flipped) c = -c;
      EXPECT_GT(rms_relative_error(reference_output(in, values, false, flipped), want), 1e-3) << "planted";
      auto loss = [&] {
        const auto o = reference_output(in, values, false, cum);
        double l = 0;
        for (std::size_t i = 0; i < o.size(); ++i) l += G[i] * o[i];
        return l;
      };
      const std::vector<double> fd[] = {stencil_gradient(in.q, loss), stencil_gradient(in.k, loss),
                                        stencil_gradient(in.v, loss), stencil_gradient(in.w, loss),
                                        stencil_gradient(in.beta, loss), stencil_gradient(cum, loss)};
      HouseholderCache<double>* const no_cache = nullptr;
      for (int chunk : {1, 4, 8, 0}) {
        const std::string where = "T " + std::to_string(s.T) + " values " + std::to_string(values) + " chunk " +
                                  std::to_string(chunk);
        std::vector<double> o(in.q.size());
        householder_attention_forward(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                      values, s, HouseholderPath::blocked, chunk, no_cache, cum.data());
        EXPECT_LE(rms_relative_error(o, want), 1e-13) << where;
        std::vector<double> grads[6];
        for (int x = 0; x < 4; ++x) grads[x].assign(in.q.size(), 0.0);
        grads[4].assign(in.beta.size(), 0.0);
        grads[5].assign(n, 0.0);
        householder_attention_backward(grads[0].data(), grads[1].data(), grads[2].data(), grads[3].data(),
                                       grads[4].data(), G.data(), in.q.data(), in.k.data(), in.v.data(),
                                       in.w.data(), in.beta.data(), values, s, HouseholderPath::blocked, chunk,
                                       no_cache, cum.data(), grads[5].data());
        const char* names[] = {"dq", "dk", "dv", "dw", "dbeta", "dcum"};
        for (int x = 0; x < 6; ++x) EXPECT_LE(rms_relative_error(grads[x], fd[x]), 1e-8) << names[x] << " " << where;
      }
      for (HouseholderPath path : {HouseholderPath::tiles, HouseholderPath::rows}) {
        std::vector<double> o(in.q.size());
        EXPECT_THROW(householder_attention_forward(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                                   in.beta.data(), values, s, path, 0, no_cache, cum.data()),
                     std::invalid_argument);
      }
    }
}

// In float, as the model runs: the blocked path (the model's) against the
// tiled reference, output and every gradient, at T below one chunk (13), two
// chunks and a ragged end (37), and several chunks (100); RMS relative error
// within 1e-5 (measured at most 1e-6, in dbeta); the
// same bytes at 1 and 2 threads. Planted: the reference with value transport
// switched off must fail the same check.
TEST(nn_householder, blocked_float_matches_the_tiled_reference_at_any_thread_count) {
  auto to_float = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  for (int T : {13, 2 * householder_chunk(37) + 5, 100})
    for (bool reflections : {false, true})
      for (bool values : {false, true}) {
        const AttentionShape s{2, T, 2, 32};
        const Inputs in = inputs(s, reflections, 7);
        const auto q = to_float(in.q), k = to_float(in.k), v = to_float(in.v), w = to_float(in.w),
                   beta = to_float(in.beta);
        Stream rs(8, 0);
        std::vector<float> G(q.size());
        for (auto& g : G) g = float(rs.normal());
        auto run = [&](HouseholderPath path, bool with_values, int threads) {
          omp_set_num_threads(threads);
          std::vector<std::vector<float>> out(6);
          for (int x = 0; x < 5; ++x) out[x].assign(q.size(), 0.f);
          out[5].assign(beta.size(), 0.f);
          householder_attention_forward(out[0].data(), q.data(), k.data(), v.data(), w.data(), beta.data(),
                                        with_values, s, path);
          householder_attention_backward(out[1].data(), out[2].data(), out[3].data(), out[4].data(), out[5].data(),
                                         G.data(), q.data(), k.data(), v.data(), w.data(), beta.data(), with_values,
                                         s, path);
          return out;
        };
        const int threads = omp_get_max_threads();
        const auto blocked = run(HouseholderPath::blocked, values, 1);
        const auto tiles = run(HouseholderPath::tiles, values, 1);
        const auto two = run(HouseholderPath::blocked, values, 2);
        const auto wrong = run(HouseholderPath::tiles, !values, 1);
        omp_set_num_threads(threads);
        const char* names[] = {"o", "dq", "dk", "dv", "dw", "dbeta"};
        for (int x = 0; x < 6; ++x) {
          EXPECT_LE(rms_relative_error(blocked[x], tiles[x]), 1e-5) << names[x] << " T " << T << " values " << values;
          EXPECT_TRUE(blocked[x] == two[x]) << names[x] << " differs between 1 and 2 threads";
        }
        EXPECT_GT(rms_relative_error(blocked[0], wrong[0]), 1e-3) << "planted: value transport switched";
      }
}

// Training's cache (forward's chunk products, kept for backward) changes no
// bit of backward: against backward with no cache, at one chunk (13), a ragged
// end (37) and many chunks (100, 700); and a cache left by other inputs is
// rebuilt, not used.
TEST(nn_householder, cache_gives_the_same_bits_as_none) {
  auto to_float = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  for (int T : {13, 37, 100, 700})
    for (bool values : {false, true}) {
      const AttentionShape s{1, T, 2, 32};
      const Inputs in = inputs(s, false, 9), other = inputs(s, false, 10);
      const auto q = to_float(in.q), k = to_float(in.k), v = to_float(in.v), w = to_float(in.w),
                 beta = to_float(in.beta), q2 = to_float(other.q);
      Stream rs(11, 0);
      std::vector<float> G(q.size());
      for (auto& g : G) g = float(rs.normal());
      // forward_q, backward_q: the queries forward and backward see.
      auto run = [&](HouseholderCache<float>* cache, const std::vector<float>& forward_q,
                     const std::vector<float>& backward_q) {
        std::vector<std::vector<float>> out(6);
        for (int x = 0; x < 5; ++x) out[x].assign(q.size(), 0.f);
        out[5].assign(beta.size(), 0.f);
        householder_attention_forward(out[0].data(), forward_q.data(), k.data(), v.data(), w.data(), beta.data(),
                                      values, s, HouseholderPath::blocked, 0, cache);
        householder_attention_backward(out[1].data(), out[2].data(), out[3].data(), out[4].data(), out[5].data(),
                                       G.data(), backward_q.data(), k.data(), v.data(), w.data(), beta.data(),
                                       values, s, HouseholderPath::blocked, 0, cache);
        return out;
      };
      const auto none = run(nullptr, q, q);
      const auto cached = run(make_householder_cache<float>().get(), q, q);
      const auto stale = run(make_householder_cache<float>().get(), q2, q);
      const char* names[] = {"o", "dq", "dk", "dv", "dw", "dbeta"};
      for (int x = 0; x < 6; ++x) {
        EXPECT_TRUE(cached[x] == none[x]) << names[x] << " T " << T << " values " << values;
        if (x > 0) {
          EXPECT_TRUE(stale[x] == none[x]) << names[x] << " T " << T << " values " << values << " (stale cache)";
        }
      }
      // What a stale cache used as if current would give: q2's gradients.
      EXPECT_FALSE(none[2] == run(nullptr, q2, q2)[2]) << "planted: q2's backward must differ from q's";
    }
}

// The check must be able to fail: the key's own step included in the route
// (H_j ... H_i) is a different model, far outside the tolerance.
TEST(nn_householder, planted_convention_error_is_caught) {
  for (bool values : {false, true})
    for (const Path& p : kPaths) {
      const Inputs in = inputs(kShapes[0], false, 1);
      EXPECT_GT(rms_relative_error(fast_output(in, values, p), reference_output(in, values, true)), 1e-3) << p.name();
    }
}

// Reflections are orthogonal: the carried query keeps its norm at every key
// (read through the probe's raw logits, one basis key per batch row), and a
// single value arrives with its norm. PaTH's steps in (0, 2) contract.
TEST(nn_householder, reflections_preserve_norms_and_other_steps_contract) {
  const int d = 6, T = 9;
  const AttentionShape s{d, T, 1, d};  // batch row c has every key = e_c
  for (bool reflections : {true, false}) {
    Inputs in = inputs(s, reflections, 4);
    // Every batch row shares row 0's query, steps; keys are basis vectors.
    for (int c = 0; c < d; ++c)
      for (int t = 0; t < T; ++t) {
        for (int e = 0; e < d; ++e) {
          in.q[(c * T + t) * d + e] = in.q[t * d + e];
          in.w[(c * T + t) * d + e] = in.w[t * d + e];
          in.k[(c * T + t) * d + e] = e == c ? 1.0 : 0.0;
        }
        in.beta[c * T + t] = in.beta[t];
      }
    const int i = T - 1;
    std::vector<double> row(i + 1), norm2(i + 1, 0.0);
    for (int c = 0; c < d; ++c) {
      householder_row_logits(row.data(), in.q.data(), in.k.data(), in.w.data(), in.beta.data(), c, i, s);
      for (int j = 0; j <= i; ++j) norm2[j] += row[j] * row[j] * d;  // undo 1/sqrt(d)
    }
    double qn2 = 0;
    for (int e = 0; e < d; ++e) qn2 += in.q[i * d + e] * in.q[i * d + e];
    EXPECT_NEAR(norm2[i], qn2, 1e-12);  // j = i: no step at all
    for (int j = 0; j < i; ++j)
      if (reflections)
        EXPECT_NEAR(norm2[j], qn2, 1e-12 * qn2) << "key " << j;
      else
        EXPECT_LT(norm2[j], qn2 * (1 - 1e-6)) << "key " << j;

    // q = 0 spreads p evenly; only v_0 nonzero: o_i = H_i ... H_1 v_0 / (i + 1).
    std::fill(in.q.begin(), in.q.end(), 0.0);
    std::fill(in.v.begin(), in.v.end(), 0.0);
    for (int e = 0; e < d; ++e) in.v[e] = 1.0 + e;
    const auto o = fast_output(in, true);
    double on2 = 0, vn2 = 0;
    for (int e = 0; e < d; ++e) on2 += o[i * d + e] * o[i * d + e], vn2 += in.v[e] * in.v[e];
    if (reflections)
      EXPECT_NEAR(std::sqrt(on2) * T, std::sqrt(vn2), 1e-12);
    else
      EXPECT_LT(std::sqrt(on2) * T, std::sqrt(vn2) * (1 - 1e-6));
  }
}

// The probe's raw logits are the scores the forward softmaxes: without value
// transport, softmax(logits) v is the fast path's row.
TEST(nn_householder, row_logits_are_the_forward_scores) {
  const Inputs in = inputs(kShapes[1], false, 5);
  const AttentionShape& s = in.s;
  const auto o = fast_output(in, false);
  for (int64_t bh = 0; bh < s.B * s.H; ++bh)
    for (int64_t i = 0; i < s.T; ++i) {
      std::vector<double> p(i + 1);
      householder_row_logits(p.data(), in.q.data(), in.k.data(), in.w.data(), in.beta.data(), bh, i, s);
      const double mx = *std::max_element(p.begin(), p.end());
      double z = 0;
      for (auto& x : p) z += (x = std::exp(x - mx));
      for (int c = 0; c < s.hd; ++c) {
        double want = 0;
        for (int64_t j = 0; j <= i; ++j) want += p[j] / z * in.v[(bh * s.T + j) * s.hd + c];
        EXPECT_NEAR(o[(bh * s.T + i) * s.hd + c], want, 1e-13);
      }
    }
}

}  // namespace
