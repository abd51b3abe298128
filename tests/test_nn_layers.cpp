// The transformer's pieces on their own: streamed attention against the
// textbook softmax, the schemes' angles, thread invariance, the memory of
// long passes, the learning-rate schedule. (The run workflow's pieces:
// tests/test_runs.cpp.)
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "model_configs.h"
#include "nn/adamw.h"
#include "nn/attention.h"
#include "nn/model.h"
#include "nn/scheme.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;

std::vector<double> normals(std::size_t n, uint64_t seed) {
  Stream s(seed, 0);
  std::vector<double> v(n);
  for (auto& x : v) x = s.normal();
  return v;
}

// softmax(q k^T / sqrt(hd) - slope (i - j) + cum_i - cum_j, causal) v, row by
// row.
std::vector<double> naive_attention(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, const std::vector<double>& slopes,
                                    const std::vector<double>& cum, AttentionShape s) {
  std::vector<double> o(q.size(), 0.0);
  for (int bh = 0; bh < s.B * s.H; ++bh)
    for (int i = 0; i < s.T; ++i) {
      std::vector<double> w(i + 1);
      double mx = -1e300;
      for (int j = 0; j <= i; ++j) {
        double d = 0;
        for (int c = 0; c < s.hd; ++c) d += q[(bh * s.T + i) * s.hd + c] * k[(bh * s.T + j) * s.hd + c];
        w[j] = d / std::sqrt(double(s.hd)) - (slopes.empty() ? 0.0 : slopes[bh % s.H] * (i - j)) +
               (cum.empty() ? 0.0 : cum[bh * s.T + i] - cum[bh * s.T + j]);
        mx = std::max(mx, w[j]);
      }
      double z = 0;
      for (auto& x : w) z += (x = std::exp(x - mx));
      for (int j = 0; j <= i; ++j)
        for (int c = 0; c < s.hd; ++c) o[(bh * s.T + i) * s.hd + c] += w[j] / z * v[(bh * s.T + j) * s.hd + c];
    }
  return o;
}

TEST(nn_attention, streamed_softmax_equals_textbook_attention_across_tiles) {
  const AttentionShape s{2, 150, 2, 8};  // three key tiles, a ragged last one
  const std::size_t n = std::size_t(s.B) * s.H * s.T * s.hd;
  const auto q = normals(n, 1), k = normals(n, 2), v = normals(n, 3);
  // A forget gate's running sum: log f_t < 0, so cum falls.
  std::vector<double> cum = normals(std::size_t(s.B) * s.H * s.T, 4);
  for (std::size_t i = 0; i < cum.size(); ++i) cum[i] = (i % s.T ? cum[i - 1] : 0.0) - 0.05 * std::abs(cum[i]);
  const std::vector<double> none;
  const std::pair<const std::vector<double>*, const std::vector<double>*> cases[] = {
      {&none, &none}, {nullptr, &none}, {&none, &cum}};
  for (const auto& [slopes_case, cum_case] : cases) {
    const std::vector<double> slopes = slopes_case ? *slopes_case : alibi_slopes(s.H);
    std::vector<double> o(n), lse(std::size_t(s.B) * s.H * s.T);
    const ScoreBias<double> bias{slopes.empty() ? nullptr : slopes.data(), cum_case->empty() ? nullptr : cum.data()};
    attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), bias, s);
    const auto want = naive_attention(q, k, v, slopes, *cum_case, s);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(o[i] - want[i]));
    EXPECT_LT(worst, 1e-12) << (slopes.empty() ? "no alibi" : "alibi") << (cum_case->empty() ? "" : ", forget gate");
  }
}

TEST(nn_attention, rotating_q_and_k_leaves_only_the_relative_angle) {
  // RoPE's promise: the score of (t, s) depends on theta_t - theta_s only, so
  // adding one angle to every position changes nothing.
  const AttentionShape s{1, 5, 1, 4};
  const auto qkv = normals(std::size_t(s.T) * 3 * 4, 4);
  auto scores = [&](double shift) {
    std::vector<double> cs(std::size_t(s.T) * 2 * 2);
    for (int t = 0; t < s.T; ++t)
      for (int j = 0; j < 2; ++j) {
        const double th = 0.7 * t * (j + 1) + shift;
        cs[(t * 2 + j) * 2] = std::cos(th);
        cs[(t * 2 + j) * 2 + 1] = std::sin(th);
      }
    std::vector<double> q(20), k(20), v(20);
    split_heads_forward(q.data(), k.data(), v.data(), qkv.data(), cs.data(), false, s);
    std::vector<double> out;
    for (int i = 0; i < s.T; ++i)
      for (int j = 0; j < s.T; ++j) out.push_back(std::inner_product(q.begin() + 4 * i, q.begin() + 4 * i + 4,
                                                                     k.begin() + 4 * j, 0.0));
    return out;
  };
  const auto a = scores(0.0), b = scores(2.3);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

// Four heads of 8; a context past 128 so angle tables see long sums.
ModelConfig small_config(const std::string& scheme) { return routelab::testing::small_model_config(scheme, 4, 130); }

TEST(nn_schemes, rope_angles_stay_exact_far_past_training_length) {
  ModelConfig m = small_config("rope");
  auto src = make_angle_source<float>(m, 1);
  const int T = 64 * 128;
  std::vector<double> theta(std::size_t(T) * 4);
  std::vector<int> tokens(T, 0);
  src->angles(theta.data(), tokens.data(), 1, T, 0, 0, nullptr, 0);
  const auto f = angle_frequencies(m);
  for (int t : {0, 1, 127, 8191})
    for (int j = 0; j < 4; ++j) {
      const long double want = (long double)t * (long double)f[j];
      EXPECT_NEAR(std::cos(theta[std::size_t(t) * 4 + j]), double(cosl(want)), 1e-12);
      EXPECT_LE(std::abs(theta[std::size_t(t) * 4 + j]), M_PI);
    }
}

TEST(nn_schemes, learned_angles_are_running_sums_of_token_rows) {
  ModelConfig m = small_config("learned_qk");
  m.learned_init = "uniform";
  auto src = make_angle_source<double>(m, 1);
  std::vector<double> table(src->table_size());
  src->init_table(table.data(), 5, 0);
  const std::vector<int> tokens = {3, 200, 3, 7, 255};
  std::vector<double> theta(5 * 4);
  src->angles(theta.data(), tokens.data(), 1, 5, 0, 0, table.data(), 0);
  const auto f = angle_frequencies(m);
  for (int j = 0; j < 4; ++j) {
    double sum = 0;
    for (int t = 0; t < 5; ++t) {
      sum += table[tokens[t] * 4 + j];
      EXPECT_NEAR(theta[t * 4 + j], std::remainder(sum, 2 * M_PI), 1e-15);
    }
    for (int v = 0; v < 256; ++v) EXPECT_LE(std::abs(table[v * 4 + j]), f[j]);
  }
}

// Each start's law: normal entries N(0, sigma^2) (mean within 5 standard
// errors of 0, variance within 5 of sigma^2, the chi-squared's s.d.
// sqrt(2/n) relative), uniform ones inside (-f_b, f_b), the RoPE start f_b.
TEST(nn_schemes, learned_tables_start_with_their_inits_law) {
  ModelConfig m = routelab::testing::small_model_config("learned_qkv", 2, 16);
  m.d_model = 128;  // 32 blocks: 8192 entries
  auto moments = [&](double sigma) {
    m.learned_init = "normal", m.learned_sigma = sigma;
    auto src = make_angle_source<double>(m, 1);
    std::vector<double> table(src->table_size());
    src->init_table(table.data(), 5, 1);
    double sum = 0, sum2 = 0;
    for (double x : table) sum += x, sum2 += x * x;
    const double n = double(table.size());
    return std::pair{sum / n, sum2 / n};
  };
  const double n = 256.0 * 32, sigma = 0.3;
  const auto [mean, second] = moments(sigma);
  EXPECT_LE(std::abs(mean), 5 * sigma / std::sqrt(n));
  EXPECT_LE(std::abs(second / (sigma * sigma) - 1), 5 * std::sqrt(2 / n));
  // Planted: a table drawn at 1.2 sigma fails the variance check.
  EXPECT_GT(std::abs(moments(1.2 * sigma).second / (sigma * sigma) - 1), 5 * std::sqrt(2 / n));
  const auto f = angle_frequencies(m);
  for (const char* init : {"uniform", "rope"}) {
    m.learned_init = init, m.angle_scale = 0.5;
    auto src = make_angle_source<double>(m, 1);
    std::vector<double> table(src->table_size());
    src->init_table(table.data(), 5, 0);
    for (int v = 0; v < 256; ++v)
      for (int j = 0; j < 32; ++j) {
        if (m.learned_init == "rope") EXPECT_EQ(table[v * 32 + j], 0.5 * f[j]);
        else EXPECT_LE(std::abs(table[v * 32 + j]), 0.5 * f[j]);
      }
  }
}

TEST(nn_schemes, initial_beta_is_each_inits_closed_form) {
  ModelConfig m = small_config("learned_qkv");
  m.learned_sigma = 0.8;
  EXPECT_DOUBLE_EQ(initial_block_beta(m, 0.1), std::exp(-0.32));  // normal: e^{-sigma^2/2}
  m.learned_init = "uniform", m.angle_scale = 2;
  EXPECT_DOUBLE_EQ(initial_block_beta(m, 0.5), std::sin(1.0) / 1.0);  // Example 1 at h = 1
  m.learned_init = "rope";
  EXPECT_EQ(initial_block_beta(m, 0.5), 1.0);
  m.scheme = "projected_qk";  // projected ignores learned_init: the normal start
  EXPECT_DOUBLE_EQ(initial_block_beta(m, 0.5), std::exp(-0.32));
}

// Which keys a point reads decides what a sweep varies.
TEST(nn_schemes, each_scheme_reads_its_own_keys) {
  ModelConfig m = small_config("rope");
  EXPECT_TRUE(scheme_reads(m, "rope_base"));
  EXPECT_FALSE(scheme_reads(m, "learned_sigma"));
  EXPECT_FALSE(scheme_reads(m, "angle_scale"));
  EXPECT_TRUE(scheme_reads(m, "d_model"));
  m.scheme = "learned_qkv";  // normal start: sigma, not f_b
  EXPECT_TRUE(scheme_reads(m, "learned_sigma"));
  EXPECT_TRUE(scheme_reads(m, "learned_shared"));
  EXPECT_FALSE(scheme_reads(m, "rope_base"));
  m.learned_init = "uniform";
  EXPECT_FALSE(scheme_reads(m, "learned_sigma"));
  EXPECT_TRUE(scheme_reads(m, "angle_scale"));
  m.scheme = "projected_qkv";
  EXPECT_TRUE(scheme_reads(m, "learned_sigma"));
  EXPECT_FALSE(scheme_reads(m, "learned_init"));
  EXPECT_FALSE(scheme_reads(m, "householder_beta"));
  m.scheme = "householder_qk";
  EXPECT_TRUE(scheme_reads(m, "householder_beta"));
  m.scheme = "path_qkv";
  EXPECT_TRUE(scheme_reads(m, "householder_beta"));
  m.scheme = "fox";
  EXPECT_FALSE(scheme_reads(m, "householder_beta"));
  EXPECT_FALSE(scheme_reads(m, "rope_base"));
}

namespace {

// The names in the first column of docs/training.md's scheme table, rows like
// "| `random_qk`, `random_qkv` | ..."; empty if the table is not there.
std::set<std::string> documented_schemes() {
  std::ifstream in(std::string(ROUTELAB_SOURCE_DIR) + "/docs/training.md");
  std::set<std::string> names;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (!in_table) {
      in_table = line.rfind("| scheme |", 0) == 0;
      continue;
    }
    if (line.empty() || line[0] != '|') break;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (std::size_t open = first.find('`'); open != std::string::npos;) {
      const std::size_t close = first.find('`', open + 1);
      if (close == std::string::npos) break;
      names.insert(first.substr(open + 1, close - open - 1));
      open = first.find('`', close + 1);
    }
  }
  return names;
}

}  // namespace

// The hand-written scheme table in docs/training.md names exactly the
// registry's schemes, so a new scheme cannot go undocumented.
TEST(nn_schemes, training_doc_table_names_exactly_the_registered_schemes) {
  const std::set<std::string> documented = documented_schemes();
  ASSERT_FALSE(documented.empty()) << "no \"| scheme |\" table in docs/training.md";
  std::set<std::string> registered;
  for (const SchemeInfo& s : all_schemes()) {
    registered.insert(s.name);
    EXPECT_TRUE(documented.count(s.name)) << "scheme " << s.name << " is missing from docs/training.md's scheme table";
  }
  for (const std::string& name : documented)
    EXPECT_TRUE(registered.count(name)) << "docs/training.md's scheme table names " << name
                                        << ", which all_schemes() does not have";
}

TEST(nn_schemes, random_angles_repeat_within_a_pass_and_change_between_passes) {
  ModelConfig m = small_config("random_qkv");
  m.angle_scale = 0.5;
  auto src = make_angle_source<float>(m, 9);
  const int T = 50;
  std::vector<int> tokens(2 * T, 0);
  std::vector<double> a(2 * T * 4), b(a.size()), c(a.size());
  src->angles(a.data(), tokens.data(), 2, T, 1, 17, nullptr, 0);
  src->angles(b.data(), tokens.data(), 2, T, 1, 17, nullptr, 0);
  src->angles(c.data(), tokens.data(), 2, T, 1, 18, nullptr, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A data-parallel rank holding element 1 alone draws what one process does.
  std::vector<double> second(T * 4);
  src->angles(second.data(), tokens.data(), 1, T, 1, 17, nullptr, 1);
  EXPECT_TRUE(std::equal(second.begin(), second.end(), a.begin() + T * 4));
  // Increments lie in (-scale f_b, scale f_b).
  const auto f = angle_frequencies(m);
  for (int t = 1; t < T; ++t)
    for (int j = 0; j < 4; ++j)
      EXPECT_LE(std::abs(std::remainder(a[t * 4 + j] - a[(t - 1) * 4 + j], 2 * M_PI)), 0.5 * f[j] + 1e-12);
}

TEST(nn_schemes, alibi_slopes_are_the_standard_ones) {
  const auto s8 = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_DOUBLE_EQ(s8[h], std::pow(2.0, -(h + 1)));
  // Six heads: the four of H = 4, then every other one of H = 8.
  const std::vector<double> s6 = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  EXPECT_EQ(alibi_slopes(6), s6);
}

// The same weights give the same bytes wherever the heap put the buffers:
// with plain std::vector, Eigen's peeling of an unaligned head made the
// second run of an experiment differ from the same run trained alone.
TEST(nn_model, same_bytes_wherever_the_heap_puts_the_buffers) {
  for (const char* scheme : {"rope", "alibi", "learned_qkv", "householder_qkv"}) {
    const int B = 2, T = 40;
    std::vector<int> tokens(B * T), targets(B * T);
    Stream s(5, 0);
    for (auto& x : tokens) x = int(s.below(256));
    for (auto& x : targets) x = int(s.below(256));
    double first_loss = 0;
    HostVector<float> first_grads;
    // Every model stays alive, each after a small allocation, so each one's
    // buffers land at a new place on the heap.
    std::vector<std::unique_ptr<char[]>> shims;
    std::vector<std::unique_ptr<Model<float>>> models;
    for (int shift : {0, 16, 32, 48, 8}) {
      shims.emplace_back(new char[shift + 1]);
      Model<float>& model = *models.emplace_back(std::make_unique<Model<float>>(small_config(scheme), 2));
      const double loss = model.forward(tokens.data(), targets.data(), B, T, 4);
      model.backward();
      if (shift == 0) {
        first_loss = loss, first_grads = model.grads;
        continue;
      }
      EXPECT_EQ(loss, first_loss) << scheme << " shift " << shift;
      EXPECT_TRUE(model.grads == first_grads) << scheme << " shift " << shift;
    }
  }
}

TEST(nn_model, same_bytes_at_one_and_two_threads) {
  for (const char* scheme : {"random_qkv", "learned_qkv", "alibi", "learned_qkv_forget", "householder_qkv"}) {
    Model<float> model(small_config(scheme), 2);
    const int B = 3, T = 130;
    std::vector<int> tokens(B * T), targets(B * T);
    Stream s(3, 0);
    for (auto& x : tokens) x = int(s.below(256));
    for (auto& x : targets) x = int(s.below(256));
    routelab::nn::HostVector<float> grads[2];
    double loss[2];
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      loss[threads - 1] = model.forward(tokens.data(), targets.data(), B, T, 4);
      model.backward();
      grads[threads - 1] = model.grads;
    }
    EXPECT_EQ(loss[0], loss[1]) << scheme;
    EXPECT_EQ(grads[0], grads[1]) << scheme;
  }
}

TEST(nn_model, evaluation_memory_grows_linearly_in_length) {
  for (const char* scheme : {"rope", "householder_qkv"}) {
    ModelConfig m = small_config(scheme);
    Model<float> model(m, 1);
    std::size_t floats[2];
    for (int i = 0; i < 2; ++i) {
      const int T = 512 << i;
      std::vector<int> tokens(T, 65);
      model.forward(tokens.data(), tokens.data(), 1, T, 0, false);
      floats[i] = model.arena_floats();
    }
    EXPECT_NEAR(double(floats[1]) / double(floats[0]), 2.0, 0.01) << scheme;
    // The default model at 64 x 128: well under 1 GiB of activations.
    ModelConfig d;
    const double per_position = double(floats[0]) / 512 / m.d_model * d.d_model;
    EXPECT_LT(per_position * 8192 * 4, 0.25 * (1 << 30)) << scheme;
  }
}

TEST(nn_adamw, warmup_then_cosine_to_the_floor) {
  TrainConfig c;
  c.steps = 1000;
  c.warmup = 100;
  c.lr = 1e-3;
  c.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(c, 0), 1e-5);
  EXPECT_DOUBLE_EQ(learning_rate(c, 99), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(c, 100), 1e-3);
  EXPECT_NEAR(learning_rate(c, 999), 1e-4, 1e-15);
  for (int s = 101; s < 1000; ++s) EXPECT_LT(learning_rate(c, s), learning_rate(c, s - 1));
}

}  // namespace
