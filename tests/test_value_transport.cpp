// value-transport at small sizes with fixed seeds: the streaming t_b against a
// direct sum, the closed forms against independently computed reference numbers (numpy/scipy), every check
// passing at the paper's bounds, and each planted wrong bound failing.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "attention/value_transport.h"
#include "sims/value_transport.h"
#include "sim_cells.h"
#include "theory/value_bounds.h"

using namespace routelab;
using routelab::testing::expect_no_failures;
using routelab::testing::find_row;

namespace {

SimContext value_transport_context(long long samples, uint64_t seed = 5) {
  return SimContext{seed, 2, samples, 0};  // seed, threads, samples, point
}

// The sim's defaults with some flags replaced.
Params flags(std::initializer_list<std::pair<const std::string, std::string>> set) {
  Params p;
  for (const auto& f : find_sim("value-transport").flags) p[f.name] = f.default_value;
  for (const auto& [k, v] : set) p[k] = v;
  return p;
}

}  // namespace

TEST(ValueTransport, AccumulatorMatchesDirectSum) {
  const int B = 3;
  Stream s(11, 0);
  FarTransportAccumulator acc(B);
  std::vector<double> logits, c, sn;
  double near = 0;
  for (int j = 0; j < 5; ++j) {
    const double l = s.uniform(-40, 40);
    acc.add_near(l);
    near += std::exp(l);
  }
  const double zero_c[B] = {1, 1, 1}, zero_s[B] = {0, 0, 0};
  for (int j = 0; j < 200; ++j) {
    const double l = s.uniform(-40, 40);  // new maxima arrive along the way
    logits.push_back(l);
    double cc[B], ss[B];
    for (int b = 0; b < B; ++b) {
      const double th = s.uniform(-M_PI, M_PI);
      cc[b] = std::cos(th);
      ss[b] = std::sin(th);
      c.push_back(cc[b]);
      sn.push_back(ss[b]);
    }
    acc.add_far(l, cc, ss);
  }
  double far = 0, far2 = 0;
  for (double l : logits) {
    far += std::exp(l);
    far2 += std::exp(2 * l);
  }
  for (int b = 0; b < B; ++b) {
    std::complex<double> t = 0;
    for (std::size_t j = 0; j < logits.size(); ++j)
      t += std::exp(logits[j]) / (near + far) * std::complex<double>(c[j * B + b], -sn[j * B + b]);
    EXPECT_NEAR(std::abs(acc.t(b) - t), 0.0, 1e-13) << b;
  }
  EXPECT_NEAR(acc.far_mass(), far / (near + far), 1e-13);
  EXPECT_NEAR(acc.far_norm(), std::sqrt(far2) / (near + far), 1e-13);

  // QK-only: identity value transport gives |t_b| = rho_D in every block.
  FarTransportAccumulator plain(B);
  for (int j = 0; j < 5; ++j) plain.add_near(1.0);
  for (int j = 0; j < 50; ++j) plain.add_far(0.5 * j / 50.0, zero_c, zero_s);
  for (int b = 0; b < B; ++b) EXPECT_NEAR(std::abs(plain.t(b)), plain.far_mass(), 1e-15);
}

// Reference numbers (computed independently in numpy/scipy): Theorem 7 at (B, beta, w, M, rho) = (16, 0.455, 9, 2e4, 0.3)
// is 0.0419; the non-vacuous M is about 385 (beta = 0.455) and 4.5e3 (0.841);
// the B.8 table's position-only 0.2000 / 0.1976 / 0.0750; D.3's 0.857; Chernoff 0.092.
TEST(ValueTransport, ClosedFormsMatchReference) {
  const double b455 = std::sin(2.0) / 2.0, b841 = std::sin(1.0);
  EXPECT_NEAR(theory::separate_path_bound(b455, 9, 0.3, 0.3 / std::sqrt(2e4), 16, 0.05), 0.0419, 5e-4);
  EXPECT_NEAR(theory::separate_path_min_far_count(b455, 9, 16, 0.05), 385, 10);
  EXPECT_NEAR(theory::separate_path_min_far_count(b841, 1000, 16, 0.05), 4.5e3, 100);  // beta^w -> 0
  EXPECT_NEAR(theory::separate_path_bound(0.0, 1, 1.0, 1 / std::sqrt(1000 * 0.3 / M_PI), 1, 0.05), 0.857, 1e-3);
  EXPECT_NEAR(theory::chernoff_half_mean_tail(200, 0.3 / M_PI), 0.092, 1e-3);
  // B.8, d = 64, RoPE omega, uniform weights on (32, L], rho = 0.2.
  const double want[3] = {0.2000, 0.1976, 0.0750};
  const long long Ls[3] = {512, 4096, 32768};
  for (int i = 0; i < 3; ++i) {
    double q = 0;
    for (int b = 0; b < 32; ++b)
      q = std::max(q, theory::position_only_coherence(std::pow(10000.0, -2.0 * b / 64), Ls[i] - 32, 0.2));
    EXPECT_NEAR(q, want[i], 1e-4) << Ls[i];
  }
  // Geometric weights against a direct sum.
  const long long M = 300;
  const double g = 4.0 / M, omega = 0.01;
  std::complex<double> z = 0;
  double mass = 0;
  for (long long j = 0; j < M; ++j) {
    z += std::exp(-g * j) * std::polar(1.0, -omega * j);
    mass += std::exp(-g * j);
  }
  EXPECT_NEAR(theory::position_only_coherence(omega, M, 0.4, g), 0.4 * std::abs(z) / mass, 1e-13);
  // R_same reduces to R_pp at lambda = 0.
  EXPECT_DOUBLE_EQ(theory::same_path_bound(0, 8, 0.5, 3, 0.4, 0.01, 0.05),
                   theory::separate_path_bound(0.5, 3, 0.4, 0.01, 8, 0.05));
}

TEST(ValueTransport, CoherenceRowsPass) {
  for (const char* weights : {"uniform", "geometric"}) {
    const auto cfg = value_transport_config(
        flags({{"part", "coherence"}, {"blocks", "8"}, {"a", "1"}, {"w", "33"}, {"L", "4096"}, {"rho", "0.2"},
               {"weights", weights}}));
    const auto rows = value_transport_rows(cfg, value_transport_context(20));
    expect_no_failures(rows);
    EXPECT_EQ(find_row(rows, "block_structure_max_deviation").verdict, Verdict::pass);
    EXPECT_EQ(find_row(rows, "max_b_q_position_only").verdict, Verdict::pass);
    EXPECT_EQ(find_row(rows, "mean_max_t_accumulated").verdict, Verdict::pass);
  }
}

// B.9 with and without value transport; planted: the covariance without its
// sigma_w^2 a_D^2 I term (about 0.02 on the diagonal at M = 40, rho = 0.9). With
// c0 = 0.3 the QK-only diagonal is about 0.09, its entry SE about 1e-3.
TEST(ValueTransport, CovarianceExactAndPlantedNoiseTermFails) {
  for (const char* weights : {"uniform", "separate"}) {
    const auto cfg = value_transport_config(flags({{"part", "covariance"}, {"blocks", "3"}, {"a", "1"}, {"w", "1"},
                                                   {"L", "40"}, {"rho", "0.9"}, {"c0", "0.3"}, {"weights", weights}}));
    const auto rows = value_transport_rows(cfg, value_transport_context(20000));
    EXPECT_EQ(find_row(rows, "max_entry_z_qkv_covariance").verdict, Verdict::pass) << weights;
    EXPECT_EQ(find_row(rows, "max_entry_z_qk_only_covariance").verdict, Verdict::pass) << weights;
    ValueTransportTheory planted;
    planted.covariance = [](const Eigen::MatrixXd& T, double c0, double, double) {
      return Eigen::MatrixXd(c0 * c0 * T * T.transpose());
    };
    const auto bad = value_transport_rows(cfg, value_transport_context(20000), planted);
    EXPECT_EQ(find_row(bad, "max_entry_z_qkv_covariance").verdict, Verdict::fail) << weights;
    EXPECT_EQ(find_row(bad, "max_entry_z_qk_only_covariance").verdict, Verdict::fail) << weights;
  }
}

TEST(ValueTransport, SeparatePathBoundsPassWhereInformative) {
  for (const char* weights : {"uniform", "geometric", "separate"}) {
    const auto cfg = value_transport_config(
        flags({{"part", "bound"}, {"blocks", "8"}, {"a", "2"}, {"w", "9"}, {"L", "5008"}, {"weights", weights}}));
    const auto rows = value_transport_rows(cfg, value_transport_context(40));
    expect_no_failures(rows);
    EXPECT_EQ(find_row(rows, "exceedance_frequency_max_t_over_bound").verdict, Verdict::pass);
    EXPECT_EQ(find_row(rows, "exceedance_frequency_covariance_over_bound").verdict, Verdict::pass);
    EXPECT_EQ(find_row(rows, "vacuous_fraction_bound_ge_rho_D").estimate, 0.0) << weights;
  }
}

// Theorem 7 without its 1/(1 - beta) factor (the price of nested routes): at
// beta = 0.985 the far transport's spread is about 11 rho / sqrt(M) against the
// planted 4 sqrt(log(4B/eta)) rho / sqrt(M) = 10 rho / sqrt(M), so most trials exceed it.
// The covariance corollary D.4 inherits the error.
TEST(ValueTransport, PlantedTheorem7WithoutNestedFactorFails) {
  const auto cfg = value_transport_config(
      flags({{"part", "bound"}, {"blocks", "8"}, {"a", "0.3"}, {"w", "400"}, {"L", "5400"}, {"weights", "uniform"}}));
  EXPECT_EQ(find_row(value_transport_rows(cfg, value_transport_context(40)), "exceedance_frequency_max_t_over_bound").verdict, Verdict::pass);
  ValueTransportTheory planted;
  planted.separate = [](double beta, long long w, double rho, double a, int blocks, double eta) {
    return theory::separate_path_bound(beta, w, rho, a, blocks, eta) * (1.0 - beta);
  };
  const auto rows = value_transport_rows(cfg, value_transport_context(40), planted);
  EXPECT_EQ(find_row(rows, "exceedance_frequency_max_t_over_bound").verdict, Verdict::fail);
  EXPECT_EQ(find_row(rows, "exceedance_frequency_covariance_over_bound").verdict, Verdict::fail);
}

// Theorem 7 with a smaller constant (1/2 instead of 4) at the default regime's beta.
TEST(ValueTransport, PlantedTheorem7SmallerConstantFails) {
  const auto cfg = value_transport_config(
      flags({{"part", "bound"}, {"blocks", "8"}, {"a", "2"}, {"w", "9"}, {"L", "5008"}, {"weights", "uniform"}}));
  ValueTransportTheory planted;
  planted.separate = [](double beta, long long w, double rho, double a, int blocks, double eta) {
    return std::pow(beta, double(w)) * rho + 0.5 * a / (1.0 - beta) * std::sqrt(std::log(4.0 * blocks / eta));
  };
  EXPECT_EQ(find_row(value_transport_rows(cfg, value_transport_context(40), planted), "exceedance_frequency_max_t_over_bound").verdict, Verdict::fail);
}

// Theorem 6 in its informative regime (lambda / sqrt(2B) = 0.5); planted: R_same
// without the (e^{2 lambda/B} - 1) rho coupling term and with the constant 1.
TEST(ValueTransport, SamePathBoundPassesAndPlantedFails) {
  const auto cfg = value_transport_config(flags(
      {{"part", "bound"}, {"blocks", "32"}, {"a", "2"}, {"w", "9"}, {"L", "20008"}, {"lambda", "4"}, {"weights", "same"}}));
  const auto rows = value_transport_rows(cfg, value_transport_context(20));
  expect_no_failures(rows);
  EXPECT_EQ(find_row(rows, "exceedance_frequency_max_t_over_bound").result, "Theorem 6");
  EXPECT_EQ(find_row(rows, "vacuous_fraction_bound_ge_rho_D").estimate, 0.0);
  ValueTransportTheory planted;
  planted.same = [](double lambda, int blocks, double beta, long long w, double rho, double a, double eta) {
    return std::exp(2.0 * lambda / blocks) *
           (std::pow(beta, double(w)) * rho + a / (1.0 - beta) * std::sqrt(std::log(4.0 * blocks / eta)));
  };
  EXPECT_EQ(find_row(value_transport_rows(cfg, value_transport_context(20), planted), "exceedance_frequency_max_t_over_bound").verdict, Verdict::fail);
}

TEST(ValueTransport, SameRowsAtOneAndTwoThreads) {
  const auto cfg = value_transport_config(
      flags({{"part", "bound"}, {"blocks", "4"}, {"L", "2008"}, {"weights", "separate"}}));
  SimContext one = value_transport_context(30), two = value_transport_context(30);
  one.threads = 1;
  const auto a = value_transport_rows(cfg, one), b = value_transport_rows(cfg, two);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].estimate, b[i].estimate) << a[i].quantity;
}

TEST(ValueTransport, BadInputNamesTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"part", "everything"}, {"blocks", "0"},  {"blocks", "1.5"}, {"a", "0"},        {"a", "-1"},
      {"rope-base", "1"},     {"w", "0"},       {"L", "5"},        {"weights", "flat"}, {"rho", "0"},
      {"rho", "1"},           {"lambda", "-1"}, {"eta", "0"},      {"eta", "1"},      {"c0", "-1"},
      {"sigma-w", "-0.5"}};
  for (const auto& [flag, value] : bad) {
    Params p = flags({{"w", "9"}, {"L", "100"}});
    p[flag] = value;
    try {
      value_transport_config(p);
      ADD_FAILURE() << "--" << flag << " " << value << " accepted";
    } catch (const BadInput& e) {
      EXPECT_EQ(e.flag, flag) << value << ": " << e.what();
    }
  }
  // c0 = sigma_w = 0 leaves nothing to measure; coherence needs fixed weights.
  EXPECT_THROW(value_transport_config(flags({{"c0", "0"}, {"sigma-w", "0"}})), BadInput);
  EXPECT_THROW(value_transport_config(flags({{"part", "coherence"}, {"weights", "same"}})), BadInput);
}
