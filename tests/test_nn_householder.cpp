// Householder transport in attention (nn/householder.h): the row-by-row fast
// path against the plain reference of explicit hd x hd products, output and
// every gradient (the reference differentiated by finite differences), on
// odd lengths in double; reflections preserve norms; the convention's
// off-by-one is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/householder.h"
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

std::vector<double> fast_output(const Inputs& in, bool values, int tile_rows = kHouseholderTileRows) {
  std::vector<double> o(in.q.size());
  householder_attention_forward(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                values, in.s, tile_rows);
  return o;
}

std::vector<double> reference_output(const Inputs& in, bool values, bool planted = false) {
  std::vector<double> o(in.q.size());
  householder_attention_reference(o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                  values, in.s, planted);
  return o;
}

// || a - b || / || b ||.
double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff2 += (a[i] - b[i]) * (a[i] - b[i]), ref2 += b[i] * b[i];
  return std::sqrt(diff2 / std::max(ref2, 1e-300));
}

// Odd lengths; 21 spans two tiles of rows, the last one ragged.
const AttentionShape kShapes[] = {{2, 7, 2, 5}, {1, 13, 1, 4}, {1, 21, 1, 3}};
const int kTileRows[] = {1, kHouseholderTileRows};

TEST(nn_householder, fast_path_equals_explicit_products) {
  for (const AttentionShape& s : kShapes)
    for (bool reflections : {false, true})
      for (bool values : {false, true})
        for (int tile_rows : kTileRows) {
          const Inputs in = inputs(s, reflections, 1);
          EXPECT_LE(rel_error(fast_output(in, values, tile_rows), reference_output(in, values)), 1e-13)
              << "T " << s.T << " reflections " << reflections << " values " << values << " tile " << tile_rows;
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
        std::vector<double> dq[2], dk[2], dv[2], dw[2], dbeta[2];  // by tile size
        for (int t = 0; t < 2; ++t) {
          for (auto* x : {dq, dk, dv, dw}) x[t].assign(in.q.size(), 0.0);
          dbeta[t].assign(in.beta.size(), 0.0);
          householder_attention_backward(dq[t].data(), dk[t].data(), dv[t].data(), dw[t].data(), dbeta[t].data(),
                                         G.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                         in.beta.data(), values, s, kTileRows[t]);
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
          std::vector<double> fd(x->size());
          const double h = 1e-3;
          for (std::size_t j = 0; j < x->size(); ++j) {
            const double x0 = (*x)[j];
            auto at = [&](double e) {
              (*x)[j] = x0 + e;
              return loss();
            };
            fd[j] = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h);
            (*x)[j] = x0;
          }
          for (int t = 0; t < 2; ++t)
            EXPECT_LE(rel_error(analytic[t], fd), 1e-8) << name << " T " << s.T << " reflections " << reflections
                                                        << " values " << values << " tile " << kTileRows[t];
        }
      }
}

// The check must be able to fail: the key's own step included in the route
// (H_j ... H_i) is a different model, far outside the tolerance.
TEST(nn_householder, planted_convention_error_is_caught) {
  for (bool values : {false, true}) {
    const Inputs in = inputs(kShapes[0], false, 1);
    EXPECT_GT(rel_error(fast_output(in, values), reference_output(in, values, true)), 1e-3);
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
