// The generator and its batch kernels: Philox4x32-10 known answers (the
// vectors of Random123's kat_vectors), batch == scalar for words, uniforms and
// normals however the calls are split, and the normal law itself
// (equiprobable-bin chi-squared and the first four moments).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <boost/math/distributions/normal.hpp>
#include <gtest/gtest.h>

#include "io/table.h"
#include "base/build.h"
#include "base/normal_log.h"
#include "rng/stream.h"
#include "stats/chi2.h"

using namespace routelab;

namespace {

// Every Philox kernel this CPU can run; prints which ran and which it skipped.
std::vector<PhiloxPath> philox_paths_here(const char* test) {
  std::vector<PhiloxPath> paths;
  std::string ran, skipped;
  for (PhiloxPath p : {PhiloxPath::scalar, PhiloxPath::avx2, PhiloxPath::avx512}) {
    std::string& list = philox_path_runs_here(p) ? ran : skipped;
    list += std::string(list.empty() ? "" : ",") + philox_path_name(p);
    if (philox_path_runs_here(p)) paths.push_back(p);
  }
  std::printf("%s: Philox kernels run: %s; skipped (not on this CPU): %s; philox_blocks uses %s\n", test,
              ran.c_str(), skipped.empty() ? "none" : skipped.c_str(), philox_path_name(philox_build_path()));
  return paths;
}

// philox_block takes the counter as (block, stream) and the key as the seed:
// ctr = {block lo, block hi, stream lo, stream hi}, key = {seed lo, seed hi}.
// Each kernel is checked on 37 consecutive blocks from the vector's counter
// (so the known answer sits in a full vector group, not only the remainder).
void expect_kat(const std::vector<PhiloxPath>& paths, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                uint32_t k0, uint32_t k1, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  const uint64_t block = uint64_t(c0) | uint64_t(c1) << 32;
  const uint64_t stream = uint64_t(c2) | uint64_t(c3) << 32;
  const uint64_t seed = uint64_t(k0) | uint64_t(k1) << 32;
  auto r = philox_block(seed, stream, block);
  EXPECT_EQ(r.v[0], r0);
  EXPECT_EQ(r.v[1], r1);
  EXPECT_EQ(r.v[2], r2);
  EXPECT_EQ(r.v[3], r3);
  const uint32_t want[4] = {r0, r1, r2, r3};
  for (PhiloxPath p : paths) {
    uint32_t w[4 * 37];
    philox_blocks_on(p, seed, stream, block, 37, w);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(w[j], want[j]) << philox_path_name(p) << " word " << j;
  }
  uint32_t w[4];
  philox_blocks(seed, stream, block, 1, w);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(w[j], want[j]) << "philox_blocks word " << j;
}

}  // namespace

TEST(Normals, PhiloxKnownAnswers) {
  const auto paths = philox_paths_here("PhiloxKnownAnswers");
  // Random123 kat_vectors, philox4x32 10 rounds: zero, all-ones, pi digits.
  expect_kat(paths, 0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  expect_kat(paths, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
             0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  expect_kat(paths, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
             0x94fdcceb, 0x5001e420, 0x24126ea1);
}

// Counts that leave remainders for each vector width and group (AVX-512:
// 45 = 32 + 8 + 5 blocks), and first blocks whose ranges carry into the high
// counter word (inside a vector group, at several lanes) and wrap around 2^64.
constexpr std::size_t kBatchSizes[] = {1, 7, 8, 23, 37, 45};
constexpr uint64_t kFirstBlocks[] = {0, 5, 0xfffffff0ull, 0xfffffffbull, 0x7fffffffffffffffull, 0xffffffffffffffe9ull};

// check(path, block0, n, block function's words of blocks block0 ..) for
// every kernel this CPU runs, every first block and every count above.
template <class Check>
void for_each_batch(const char* test, Check check) {
  const uint64_t seed = 0x0123456789abcdefull, stream = 0xfedcba9876543210ull;
  for (PhiloxPath p : philox_paths_here(test))
    for (uint64_t block0 : kFirstBlocks)
      for (std::size_t n : kBatchSizes) {
        std::vector<r123::Philox4x32::ctr_type> want(n);
        for (std::size_t i = 0; i < n; ++i) want[i] = philox_block(seed, stream, block0 + i);
        check(p, seed, stream, block0, n, want);
      }
}

TEST(Normals, PhiloxBatchMatchesBlockFunction) {
  // Every kernel against the block function.
  for_each_batch("PhiloxBatchMatchesBlockFunction", [](PhiloxPath p, uint64_t seed, uint64_t stream,
                                                       uint64_t block0, std::size_t n, const auto& want) {
    std::vector<uint32_t> w(4 * n);
    philox_blocks_on(p, seed, stream, block0, n, w.data());
    for (std::size_t i = 0; i < n; ++i)
      for (int j = 0; j < 4; ++j)
        ASSERT_EQ(w[4 * i + j], want[i].v[j]) << philox_path_name(p) << " block " << block0 + i << " n " << n;
  });
}

TEST(Normals, PhiloxUniformsMatchBlockFunction) {
  // Every kernel's uniforms (AVX-512 makes them without storing words)
  // against u01_open of the block function's words.
  for_each_batch("PhiloxUniformsMatchBlockFunction", [](PhiloxPath p, uint64_t seed, uint64_t stream,
                                                        uint64_t block0, std::size_t n, const auto& want) {
    std::vector<double> u(2 * n);
    philox_uniforms_on(p, seed, stream, block0, n, u.data());
    for (std::size_t i = 0; i < n; ++i) {
      const auto& r = want[i];
      ASSERT_EQ(u[2 * i], u01_open(r.v[0] | uint64_t(r.v[1]) << 32)) << philox_path_name(p) << " block " << block0 + i;
      ASSERT_EQ(u[2 * i + 1], u01_open(r.v[2] | uint64_t(r.v[3]) << 32)) << philox_path_name(p) << " block " << block0 + i;
    }
  });
}

TEST(Normals, WordsAndUniformsBatchEqualScalar) {
  // From every position in a block: uniforms start on a block boundary
  // (whole blocks go straight to uniforms), after two words, or straddle.
  for (int skip : {0, 1, 2, 3}) {
    Stream a(42, 9), b(42, 9);
    for (int i = 0; i < skip; ++i) a.next_u32(), b.next_u32();
    std::vector<uint32_t> w(1001);
    a.u32s(w.data(), w.size());
    for (uint32_t x : w) ASSERT_EQ(x, b.next_u32());
    std::vector<double> u(777);
    a.uniforms(u.data(), u.size());
    for (double x : u) ASSERT_EQ(x, b.uniform());
    EXPECT_EQ(a.next_u32(), b.next_u32());
  }
}

TEST(Normals, ScalarEqualsBatchSequence) {
  // However the draws are split, one at a time or in batches, and after a
  // misaligned word, the same normals come out and the same words are used.
  const int n = 1000;
  for (int skip : {0, 1, 2}) {
    Stream ref(7, 3);
    for (int i = 0; i < skip; ++i) ref.next_u32();
    std::vector<double> x(n);
    for (int i = 0; i < n; ++i) x[i] = ref.normal();
    const uint32_t after = ref.next_u32();

    for (int split : {1, 3, 16, 17, 64, 999}) {
      Stream s(7, 3);
      for (int i = 0; i < skip; ++i) s.next_u32();
      std::vector<double> y(n);
      int i = 0;
      bool one = true;
      while (i < n) {
        if (one) {
          y[i++] = s.normal();
        } else {
          const int m = std::min(split, n - i);
          s.normals(y.data() + i, m);
          i += m;
        }
        one = !one;
      }
      for (int j = 0; j < n; ++j) ASSERT_EQ(x[j], y[j]) << "skip " << skip << " split " << split << " at " << j;
      EXPECT_EQ(s.next_u32(), after);
    }
  }
}

TEST(Normals, PairsMatchTheirWords) {
  // Each pair against libm's log, cos and sin of the documented map from its
  // four words: checks the kernel's polynomial sine and cosine and its
  // quarter turns, to a few ulps.
  Stream s(123, 45);
  const int n = 4096;
  std::vector<double> x(n);
  s.normals(x.data(), n);
  std::vector<uint32_t> w(2 * n);
  philox_blocks(123, 45, 0, n / 2, w.data());
  double worst = 0;
  for (int p = 0; p < n / 2; ++p) {
    const uint64_t b1 = uint64_t(w[4 * p]) | uint64_t(w[4 * p + 1]) << 32;
    const uint64_t b2 = uint64_t(w[4 * p + 2]) | uint64_t(w[4 * p + 3]) << 32;
    const double r = std::sqrt(-2.0 * std::log(u01_open(b1)));
    const uint64_t m = b2 >> 11;
    const long double theta = (m >> 51) * (M_PIl / 2) +
                              2 * M_PIl * ((long double)(m & ((uint64_t(1) << 51) - 1)) + 0.5L - 0x1.0p50L) * 0x1.0p-53L;
    const double c = r * double(cosl(theta)), sn = r * double(sinl(theta));
    worst = std::max({worst, std::abs(x[2 * p] - c), std::abs(x[2 * p + 1] - sn)});
  }
  EXPECT_LT(worst, 1e-14);
}

TEST(Normals, DrawsArePureFunctionsOfPosition) {
  // A stream opened at block b gives what the stream from block 0 gives after
  // b blocks: 2 * kNormalChunk words make one chunk of normals.
  Stream a(5, 1);
  std::vector<double> x(3 * kNormalChunk);
  a.normals(x.data(), x.size());
  Stream b(5, 1, 2 * (2 * kNormalChunk) / 4);  // skip two chunks (2 * kNormalChunk words each)
  std::vector<double> y(kNormalChunk);
  b.normals(y.data(), y.size());
  for (int i = 0; i < kNormalChunk; ++i) EXPECT_EQ(x[2 * kNormalChunk + i], y[i]);
}

static double normal_cdf(double v) {
  static const boost::math::normal_distribution<double> nd;
  return boost::math::cdf(nd, v);
}

TEST(Normals, StandardNormalLaw) {
  const uint64_t seed = 20240611;
  std::printf("seed %llu, normals' log: %s\n", (unsigned long long)seed, normal_log_path());
  Stream s(seed, 0);
  const int n = 2000000;
  std::vector<double> x(n);
  s.normals(x.data(), n);
  EXPECT_GT(chi2_equiprobable(x, normal_cdf, 200).pvalue, 1e-7);

  // Moments against N(0,1): E x = 0, E x^2 = 1, E x^3 = 0, E x^4 = 3, with
  // standard errors sqrt(Var/n): Var x = 1, Var x^2 = 2, Var x^3 = 15,
  // Var x^4 = 105 - 9 = 96; pairs uncorrelated (Var = 1 over n/2 pairs).
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0, cross = 0;
  for (int i = 0; i < n; ++i) {
    const double v = x[i];
    m1 += v, m2 += v * v, m3 += v * v * v, m4 += v * v * v * v;
    if (i % 2 == 0) cross += v * x[i + 1];  // the two normals of a pair
  }
  const double z = 5.0, rn = std::sqrt(double(n));
  EXPECT_NEAR(m1 / n, 0.0, z * 1.0 / rn);
  EXPECT_NEAR(m2 / n, 1.0, z * std::sqrt(2.0) / rn);
  EXPECT_NEAR(m3 / n, 0.0, z * std::sqrt(15.0) / rn);
  EXPECT_NEAR(m4 / n, 3.0, z * std::sqrt(96.0) / rn);
  EXPECT_NEAR(cross / (n / 2), 0.0, z / std::sqrt(n / 2.0));
}

TEST(Normals, ChiSquaredCanFail) {
  // The same check on a planted wrong law (scale 1.01) must fail: the test
  // above has the power to see a 1% error in the spread.
  Stream s(1, 0);
  const int n = 2000000;
  std::vector<double> x(n);
  s.normals(x.data(), n);
  for (double& v : x) v *= 1.01;
  EXPECT_LT(chi2_equiprobable(x, normal_cdf, 200).pvalue, 1e-7);
}

// A sidecar names the log this build's normals use (their last bits depend on
// it): the one normal_chunks was compiled with.
TEST(Normals, SidecarsNameTheLogTheNormalsUse) {
  const auto j = nlohmann::json::parse(sidecar_text("x.csv", nlohmann::json::object(), 0.0));
  EXPECT_EQ(j.at("normal_log").get<std::string>(), std::string(normal_log_path()));
  EXPECT_TRUE(j.at("normal_log") == "libmvec-avx512" || j.at("normal_log") == "libmvec-avx2" ||
              j.at("normal_log") == "scalar");
}

// And the vector extension the build was compiled for (this test is compiled
// with the library's flags, so its own macros must agree) and the CPU, as
// /proc/cpuinfo names it: what else a training run's last bits follow.
TEST(Normals, SidecarsNameTheBuildIsaAndTheCpu) {
  const auto j = nlohmann::json::parse(sidecar_text("x.csv", nlohmann::json::object(), 0.0));
#if defined(__AVX512F__)
  EXPECT_EQ(j.at("build_isa"), "avx512");
#elif defined(__AVX2__)
  EXPECT_EQ(j.at("build_isa"), "avx2");
#else
  EXPECT_TRUE(j.at("build_isa") == "x86-64" || j.at("build_isa") == "other");
#endif
  const std::string cpu = j.at("cpu").get<std::string>();
  EXPECT_EQ(cpu, host_cpu_name());
  std::ifstream in("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (info.find("model name") == std::string::npos) {
    EXPECT_EQ(cpu, "unknown");
  } else {
    EXPECT_NE(cpu, "unknown");
    EXPECT_NE(info.find(": " + cpu + "\n"), std::string::npos) << cpu;
  }
}
