// What the host runs of the GPU's Householder algorithms share
// (test_householder_rows.cpp, test_householder_chunks.cpp): float inputs of
// one attention shape, their six results (o and every gradient), the
// CPU's, and their comparison, RMS difference over RMS reference per result.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/householder.h"
#include "rms_error.h"
#include "rng/stream.h"

namespace routelab::testing {

struct HouseholderInputs {
  nn::AttentionShape s;
  std::vector<float> q, k, v, w, beta, d_o;
};

// Normal q, k, v, d_o; unit w; beta ~ U(0, 2) (PaTH's steps) or 2
// (reflections).
inline HouseholderInputs householder_inputs(nn::AttentionShape s, bool reflections, uint64_t seed) {
  Stream rs(seed, 0);
  const std::size_t n = std::size_t(s.B) * s.H * s.T * s.hd;
  HouseholderInputs in{s, {}, {}, {}, {}, {}, {}};
  for (auto* x : {&in.q, &in.k, &in.v, &in.w, &in.d_o}) {
    x->resize(n);
    for (auto& e : *x) e = float(rs.normal());
  }
  for (std::size_t t = 0; t < n / s.hd; ++t) {
    float* wt = in.w.data() + t * s.hd;
    double norm = 0;
    for (int c = 0; c < s.hd; ++c) norm += double(wt[c]) * wt[c];
    for (int c = 0; c < s.hd; ++c) wt[c] = float(wt[c] / std::sqrt(norm));
    in.beta.push_back(reflections ? 2.0f : float(rs.uniform(0.0, 2.0)));
  }
  return in;
}

struct HouseholderGrads {
  std::vector<float> o, dq, dk, dv, dw, dbeta;
};

// All zero, shaped as the inputs' (backward adds).
inline HouseholderGrads householder_zeros(const HouseholderInputs& in) {
  const std::size_t n = in.q.size();
  return {std::vector<float>(n), std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
          std::vector<float>(n), std::vector<float>(in.beta.size())};
}

// The CPU's forward and backward on `path`.
inline HouseholderGrads householder_cpu(const HouseholderInputs& in, bool values, nn::HouseholderPath path) {
  HouseholderGrads g = householder_zeros(in);
  nn::householder_attention_forward(g.o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(),
                                    values, in.s, path);
  nn::householder_attention_backward(g.dq.data(), g.dk.data(), g.dv.data(), g.dw.data(), g.dbeta.data(),
                                     in.d_o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                     in.beta.data(), values, in.s, path);
  return g;
}

inline const char* const kHouseholderResults[] = {"o", "dq", "dk", "dv", "dw", "dbeta"};
inline const std::vector<float>& householder_result(const HouseholderGrads& g, int x) {
  const std::vector<float>* parts[] = {&g.o, &g.dq, &g.dk, &g.dv, &g.dw, &g.dbeta};
  return *parts[x];
}

// Float against the CPU's tiled reference: the largest RMS error the host runs
// of the GPU's algorithms may show (measured at most 8.7e-7).
inline constexpr double kHouseholderTolerance = 1e-5;

// The largest of the six errors; with tol > 0 each must be within it, and
// each that is not is named.
inline double worst_error(const HouseholderGrads& got, const HouseholderGrads& want, const std::string& where,
                          double tol) {
  double worst = 0;
  for (int x = 0; x < 6; ++x) {
    const double e = rms_relative_error(householder_result(got, x), householder_result(want, x));
    if (tol > 0) {
      EXPECT_LT(e, tol) << where << ": " << kHouseholderResults[x];
    }
    worst = std::max(worst, e);
  }
  return worst;
}

}  // namespace routelab::testing
