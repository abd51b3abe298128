// The SO(2) phase kernel (lib/groups/so2_phases.h) against a plain So2Blocks
// walk on the same stream, and its wrapping at huge angles.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "groups/so2_phases.h"
#include "groups/walk.h"

using namespace routelab;

TEST(So2Phases, EqualsPlainWalk) {
  // Plain reference: draw each step with So2Blocks::draw, sum the angles,
  // wrap with wrap_angle and take cos. Also the matrix walk's x_t for the
  // score q^T P_t k, as a weighted cosine sum with phases phi_b.
  const int B = 5, n = 777;  // odd sizes: kernel batches of 64 steps end mid-batch
  for (double omega : {0.0, 0.3, -2.5}) {
    So2Blocks law(2 * B, rope_frequencies(2 * B, 100.0), omega);
    Stream s1(11, 4), s2(11, 4);
    std::vector<double> S(n), step(B), sum(B, 0.0);
    so2_mean_cos_walk(law, s1, n, S.data());
    for (int t = 0; t < n; ++t) {
      law.draw(s2, step.data());
      double ref = 0;
      for (int b = 0; b < B; ++b) {
        sum[b] += step[b];
        ref += std::cos(wrap_angle(sum[b])) / B;
      }
      ASSERT_NEAR(S[t], ref, 1e-12) << "omega " << omega << " step " << t;
    }
    // Both read the same number of words.
    EXPECT_EQ(s1.next_u32(), s2.next_u32());
  }
}

TEST(So2Phases, WeightedScoreEqualsVectorWalk) {
  // q^T P_t k = sum_b |q_b||k_b| cos(Theta_{t,b} + phi_b), phi_b the angle
  // from k_b to q_b: the kernel with weights and starting phases gives the
  // scores of walk_scores on the same stream.
  const int B = 3, d = 2 * B, n = 300;
  So2Blocks law(d, std::vector<double>(B, 0.7), 0.2);
  const double q[d] = {0.3, -1.1, 0.5, 0.2, -0.4, 0.9}, k[d] = {1.0, 0.5, -0.3, 0.8, 0.6, 0.1};
  std::vector<double> w(B), theta(B), S(n), ref(n);
  for (int b = 0; b < B; ++b) {
    w[b] = std::hypot(q[2 * b], q[2 * b + 1]) * std::hypot(k[2 * b], k[2 * b + 1]);
    theta[b] = std::atan2(k[2 * b + 1], k[2 * b]) - std::atan2(q[2 * b + 1], q[2 * b]);
  }
  Stream s1(3, 9), s2(3, 9);
  so2_cos_walk(law, s1, n, w.data(), theta.data(), S.data());
  WalkBuffers buf(law);
  walk_scores(law, s2, q, k, n, ref.data(), buf);
  for (int t = 0; t < n; ++t) ASSERT_NEAR(S[t], ref[t], 1e-11) << "step " << t;
}

TEST(So2Phases, WrapsHugeAngles) {
  // a = 0 and a dyadic omega: every increment is omega exactly and the true
  // phase n omega is exact in double, so glibc's cos (exact argument
  // reduction) gives the reference. The kernel's per-step reduction keeps the
  // phase within a few ulps of pi per step; the unreduced sum or a one-shot
  // fmod by the double 2 pi would be off by ~1e-7 here.
  const int n = 20000;
  for (double omega : {1000003.25, -7777.125, 3.0e5 + 0.0625}) {
    So2Blocks law(2, std::vector<double>(1, 0.0), omega);
    Stream s(1, 1);
    std::vector<double> S(n);
    so2_mean_cos_walk(law, s, n, S.data());
    for (int t : {0, 1, 99, 4095, 12345, n - 1}) {
      const double exact = std::cos(double(t + 1) * omega);
      EXPECT_NEAR(S[t], exact, 1e-9) << "omega " << omega << " step " << t + 1;
    }
  }
  // wrap_phase itself: within an ulp or so of the exact remainder.
  for (double x : {0.0, 1.0, -3.5, 1e6 + 0.5, -123456789.0, 1e11}) {
    const double r = wrap_phase(x);
    EXPECT_LE(std::abs(r), M_PI + 1e-15);
    EXPECT_NEAR(std::cos(r), std::cos(x), 4e-16 * (1 + std::abs(x) * 1e-10)) << x;
    EXPECT_NEAR(std::sin(r), std::sin(x), 4e-16 * (1 + std::abs(x) * 1e-10)) << x;
  }
}

TEST(So2Phases, MeanCosAtListedLengthsIsTheFullWalksBitForBit) {
  // score-tail reads S only at its listed lengths: so2_mean_cos_at must give
  // so2_mean_cos_walk's S[n - 1] exactly, lengths inside and across the
  // kernel's 64-step batches, and leave the stream where the walk does.
  So2Blocks law(64, rope_frequencies(64, 10000.0), 0.1);
  const std::vector<long long> ns = {1, 10, 63, 64, 65, 200};
  So2WalkScratch buf;
  for (int rep = 0; rep < 3; ++rep) {  // the scratch is reused across walks
    Stream s1(5, 7 + rep), s2(5, 7 + rep);
    std::vector<double> S(ns.back()), at(ns.size());
    so2_mean_cos_walk(law, s1, int(ns.back()), S.data());
    so2_mean_cos_at(law, s2, ns.data(), int(ns.size()), at.data(), buf);
    for (std::size_t c = 0; c < ns.size(); ++c) EXPECT_EQ(at[c], S[ns[c] - 1]) << "n " << ns[c];
    EXPECT_EQ(s1.next_u32(), s2.next_u32());
  }
}
