// routelab probe: the per-row statistics against a softmax written out by
// hand, the rebuilt rows against the model's own attention (its log-sum-exp),
// Proposition 3's bound on every row of a trained model, the angle gaps
// against their closed forms, and the command as a user meets it. Each check
// names a planted error it must reject.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>
#include <omp.h>

#include "cli_helpers.h"
#include "io/csv_read.h"
#include "nn/attention.h"
#include "nn/model.h"
#include "rng/stream.h"
#include "runs/config.h"
#include "runs/eval.h"
#include "runs/probe.h"
#include "runs/train.h"

namespace {

using namespace routelab;
using namespace routelab::nn;
using namespace routelab::runs;
using namespace routelab::testing;

// The row statistics the slow way: weights p_j = e^{l_j} / sum e^{l}, the far
// set {j : i - j > far_after}.
RowStats by_hand(const std::vector<double>& l, int64_t far_after) {
  const int64_t i = int64_t(l.size()) - 1;
  double z = 0;
  for (double x : l) z += std::exp(x);
  double rho = 0, a2 = 0, H = 0;
  for (int64_t j = 0; j <= i; ++j) {
    const double p = std::exp(l[j]) / z;
    H -= p * std::log(p);
    if (i - j > far_after) rho += p, a2 += p * p;
  }
  const auto [lo, hi] = std::minmax_element(l.begin(), l.end());
  const double lambda = (*hi - *lo) / 2;
  const double M = double(i - far_after), K = double(far_after + 1);
  return {rho, std::sqrt(a2), H, lambda, M / (M + K * std::exp(2 * lambda))};
}

TEST(nn_probe, row_statistics_match_a_softmax_written_out) {
  Stream s(7, 1);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> l(5 + trial);
    for (double& x : l) x = 3 * s.normal();
    const int64_t W = 1 + trial % 3;
    const RowStats got = attention_row_stats(l.data(), int64_t(l.size()), W), want = by_hand(l, W);
    EXPECT_NEAR(got.far_mass, want.far_mass, 1e-13);
    EXPECT_NEAR(got.far_norm, want.far_norm, 1e-13);
    EXPECT_NEAR(got.entropy, want.entropy, 1e-12);
    EXPECT_DOUBLE_EQ(got.logit_range, want.logit_range);
    EXPECT_NEAR(got.far_mass_lower_bound, want.far_mass_lower_bound, 1e-15);
    EXPECT_GE(got.far_mass, got.far_mass_lower_bound);
    // Planted: a far set off by one (i - j >= W) moves rho_D by a whole weight.
    EXPECT_GT(std::abs(by_hand(l, W - 1).far_mass - got.far_mass), 1e-6);
  }
  // Extremal row of Proposition 3: near logits +lambda, far -lambda: equality.
  std::vector<double> l = {-2, -2, -2, 2, 2};
  const RowStats r = attention_row_stats(l.data(), 5, 1);
  EXPECT_NEAR(r.far_mass, r.far_mass_lower_bound, 1e-15);
}

// A tiny model with strong logits (its qkv weights scaled up), so a wrong
// scale or bias shows in the softmax.
std::unique_ptr<Model<float>> strong_model(const std::string& scheme) {
  ModelConfig m;
  m.d_model = 16, m.heads = 2, m.layers = 2, m.mlp_ratio = 2, m.context = 16, m.scheme = scheme;
  auto model = std::make_unique<Model<float>>(m, 3);
  for (const auto& t : model->tensors())
    if (t.name.ends_with("qkvw"))
      for (std::size_t j = 0; j < t.size(); ++j) model->params[t.offset + j] *= 40;
  return model;
}

// max over rows of |logsumexp(rebuilt logits * stretch) - the model's lse|.
template <class Fn>
double max_lse_error(Model<float>& model, Fn stretch) {
  const int B = 2, T = 48;
  std::vector<int> tokens(B * T), targets(B * T);
  Stream s(11, 2);
  for (int& x : tokens) x = int(s.below(256));
  for (int& x : targets) x = int(s.below(256));
  double worst = 0;
  model.set_attention_observer([&](int, const float* q, const float* k, ScoreBias<float> bias, const float*,
                                   const float*, AttentionShape sh) {
    const std::size_t n = std::size_t(sh.B) * sh.H * sh.T;
    std::vector<float> o(n * sh.hd), lse(n);
    attention_forward(o.data(), lse.data(), q, k, k, bias, sh);
    std::vector<double> l(sh.T);
    for (int b = 0; b < sh.B; ++b)
      for (int h = 0; h < sh.H; ++h)
        for (int64_t i = 0; i < sh.T; ++i) {
          attention_row_logits(l.data(), q, k, bias, sh, b, h, i);
          double hi = -1e300, z = 0;
          for (int64_t j = 0; j <= i; ++j) hi = std::max(hi, stretch(l[j], i - j));
          for (int64_t j = 0; j <= i; ++j) z += std::exp(stretch(l[j], i - j) - hi);
          const double want = lse[(int64_t(b) * sh.H + h) * sh.T + i];
          worst = std::max(worst, std::abs(hi + std::log(z) - want) / (1 + std::abs(want)));
        }
  });
  model.forward(tokens.data(), targets.data(), B, T, 5, false);
  model.set_attention_observer(nullptr);
  return worst;
}

TEST(nn_probe, rebuilt_rows_are_the_models_own_softmax) {
  const auto same = [](double l, int64_t) { return l; };
  for (const char* scheme : {"rope", "random_qkv", "alibi", "learned_qkv_forget"}) {
    auto model = strong_model(scheme);
    const double err = max_lse_error(*model, same);
    EXPECT_LT(err, 2e-5) << scheme;
    // Planted: the score scale applied twice (1/hd instead of 1/sqrt(hd)).
    const double hd = model->config().head_dim();
    EXPECT_GT(max_lse_error(*model, [&](double l, int64_t) { return l / std::sqrt(hd); }), 100 * 2e-5) << scheme;
    // Planted: a distance bias off by 0.1 per byte (a misread ALiBi slope or forget gate).
    EXPECT_GT(max_lse_error(*model, [](double l, int64_t d) { return l + 0.1 * double(d); }), 100 * 2e-5) << scheme;
  }
}

TEST(nn_probe, every_row_of_a_trained_model_meets_proposition_3) {
  TempDir tmp;
  for (const char* scheme : {"learned_qkv", "alibi", "householder_qkv"}) {
    spit(tmp / "c.toml", tiny_config(scheme, 40, 40));
    train_run(load_run_config((tmp / "c.toml").string()), {(tmp / scheme).string(), false, false});
    TrainedRun run = load_trained_run((tmp / scheme).string(), "4x");
    const int64_t W = 3, L = 64;
    const int H = run.config.model.heads;
    std::vector<HeadProbe> heads(run.config.model.layers * H);
    run.model->set_attention_observer(probe_observer<float>(heads.data(), W));
    std::vector<int> tokens(2 * L), targets(2 * L);
    for (int64_t t = 0; t < 2 * L; ++t) tokens[t] = run.corpus.val[t], targets[t] = run.corpus.val[t + 1];
    run.model->forward(tokens.data(), targets.data(), 2, int(L), kEvalPass, false);
    for (const HeadProbe& p : heads) {
      EXPECT_EQ(p.queries, 2 * (L - W - 1)) << scheme;
      EXPECT_EQ(p.bound_violations, 0) << scheme;
      EXPECT_GE(p.min_slack, 0.0) << scheme;
      EXPECT_GT(p.far_mass, 0.0) << scheme;
    }
    // The observer's sums do not depend on the thread count.
    std::vector<HeadProbe> again(heads.size());
    run.model->set_attention_observer(probe_observer<float>(again.data(), W));
    const int threads = omp_get_max_threads();
    omp_set_num_threads(threads == 1 ? 2 : 1);
    run.model->forward(tokens.data(), targets.data(), 2, int(L), kEvalPass, false);
    omp_set_num_threads(threads);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      EXPECT_EQ(again[n].far_mass, heads[n].far_mass);
      EXPECT_EQ(again[n].entropy, heads[n].entropy);
    }
  }
}

TEST(nn_probe, angle_gaps_follow_their_closed_forms) {
  ModelConfig m;
  m.d_model = 16, m.heads = 2, m.layers = 2, m.mlp_ratio = 2, m.context = 16;
  const double eps = 0.05;
  std::vector<double> p(256, 0.0);
  p[0] = p[1] = 0.5;
  const std::vector<double> f = angle_frequencies(m);
  // Learned: psi = +a with probability 1/2, -a otherwise: beta = |cos a|, no drift.
  m.scheme = "learned_qkv";
  Model<float> learned(m, 1);
  for (const auto& t : learned.tensors())
    if (t.name.ends_with("angles"))
      for (int b = 0; b < 4; ++b) {
        learned.params[t.offset + b] = 0.3f * float(b + 1);       // byte 0
        learned.params[t.offset + 4 + b] = -0.3f * float(b + 1);  // byte 1
      }
  for (const BlockGap& g : angle_gaps(learned, p, eps)) {
    const double a = double(0.3f * (g.block + 1));
    EXPECT_NEAR(g.beta, std::abs(std::cos(a)), 1e-7);
    EXPECT_NEAR(g.drift, 0.0, 1e-7);
    EXPECT_EQ(g.mixing_window, (long long)std::ceil(std::log(1 / eps) / std::log(1 / std::abs(std::cos(a)))));
  }
  // Random: Example 1 at a = s f_b.
  m.scheme = "random_qk", m.angle_scale = 2;
  Model<float> random(m, 1);
  const auto gaps = angle_gaps(random, p, eps);
  ASSERT_EQ(gaps.size(), 2u * 4);
  for (const BlockGap& g : gaps) EXPECT_NEAR(g.beta, std::sin(2 * f[g.block]) / (2 * f[g.block]), 1e-15);
  // RoPE never mixes; nope has no angles.
  m.scheme = "rope";
  for (const BlockGap& g : angle_gaps(Model<float>(m, 1), p, eps)) EXPECT_EQ(g.mixing_window, -1);
  m.scheme = "nope";
  EXPECT_TRUE(angle_gaps(Model<float>(m, 1), p, eps).empty());
  EXPECT_EQ(window_lower_median({5, 1, -1, 3}), 3);
  EXPECT_EQ(window_lower_median({-1, -1, 2}), -1);
  EXPECT_EQ(window_max({5, 1, 3}), 5);
  EXPECT_EQ(window_max({5, -1}), -1);
}

// The projected increments start with the normal table's spread: over a
// stream of every byte, the step angles' first harmonic is about
// e^{-sigma^2/2} (0.61 at sigma = 1; its spread over blocks from |w_b|'s
// chi-squared law and 1024 positions is about 0.02 on the mean of 32
// blocks, so 0.06 is 3 s.d.). Planted: a start at sigma = 0.7 (0.78) fails.
TEST(nn_probe, projected_angles_start_near_the_normal_tables_beta) {
  auto mean_beta = [](double sigma) {
    ModelConfig m;
    m.d_model = 64, m.heads = 2, m.layers = 2, m.mlp_ratio = 2, m.context = 256;
    m.scheme = "projected_qkv", m.learned_sigma = sigma;
    Model<float> model(m, 3);
    PhaseStats stats(m.layers, m.head_dim() / 2, {16});
    model.set_angle_observer([&](int l, const double* theta, int B, int T, int) { stats.add(l, theta, B, T); });
    std::vector<int> tokens(4 * 256), targets(4 * 256, 0);
    Stream s(4, 0);
    for (int& x : tokens) x = int(s.below(256));
    model.forward(tokens.data(), targets.data(), 4, 256, kEvalPass, false);
    double sum = 0;
    const auto h = stats.step_harmonics();
    for (const auto& z : h) sum += std::abs(z);
    return sum / double(h.size());
  };
  EXPECT_NEAR(mean_beta(1.0), std::exp(-0.5), 0.06);
  EXPECT_GT(std::abs(mean_beta(0.7) - std::exp(-0.5)), 0.06);
}

enum class Steps { independent, shared, doubled };

// PhaseStats at distance 10 of accumulated phases theta (B = 20 windows x
// T = 400 positions x nb = 8 blocks, wrapped to [-pi, pi]) of U(-1, 1)
// steps: independent across blocks and positions, one step shared by every
// block, or each step taken twice in a row.
PhaseStats uniform_step_phases(uint64_t seed, Steps law) {
  const int B = 20, T = 400, nb = 8;
  std::vector<double> theta(std::size_t(B) * T * nb);
  Stream s(seed, 0);
  for (int b = 0; b < B; ++b) {
    std::vector<double> sum(nb, 0.0), step(nb, 0.0);
    for (int t = 0; t < T; ++t) {
      const double common = law == Steps::shared ? s.uniform(-1.0, 1.0) : 0.0;
      for (int j = 0; j < nb; ++j) {
        if (law == Steps::shared) step[j] = common;
        else if (law == Steps::independent || t % 2 == 0) step[j] = s.uniform(-1.0, 1.0);
        sum[j] += step[j];
        theta[(std::size_t(b) * T + t) * nb + j] = std::remainder(sum[j], 2 * M_PI);
      }
    }
  }
  PhaseStats stats(1, nb, {10});
  stats.add(0, theta.data(), B, T);
  return stats;
}

// Independent blocks give a variance ratio near 1; one phase shared by every
// block gives B; a step law's harmonic is recovered from theta alone.
TEST(nn_probe, phase_stats_see_shared_and_independent_blocks) {
  const int nb = 8, T = 400, B = 20;
  auto ratio = [&](bool shared) {
    const PhaseStats stats = uniform_step_phases(9, shared ? Steps::shared : Steps::independent);
    // Example 1: E e^{i psi} = sin(1)/1 for U(-1, 1) steps; 8000 steps give a
    // standard error of about 0.005.
    for (const auto& z : stats.step_harmonics()) EXPECT_NEAR(std::abs(z), std::sin(1.0), 0.03);
    return stats.rows()[0];
  };
  const auto independent = ratio(false), shared = ratio(true);
  EXPECT_EQ(independent.pairs, int64_t(B) * (T - 10));
  EXPECT_NEAR(independent.variance_ratio, 1.0, 0.3);
  EXPECT_LT(independent.mean_abs_corr, 0.1);
  EXPECT_NEAR(shared.variance_ratio, double(nb), 1e-6);
  EXPECT_NEAR(shared.mean_abs_corr, 1.0, 1e-9);
  EXPECT_EQ(phase_distances(128), (std::vector<int64_t>{16, 32, 64}));
  EXPECT_EQ(phase_distances(4), (std::vector<int64_t>{1, 2}));
}

// Unit rows of hd: alternating between the axes e_0 and e_1, or isotropic.
void fill_directions(std::vector<float>& w, int hd, bool isotropic, Stream& rng) {
  for (std::size_t r = 0; r * hd < w.size(); ++r) {
    float* v = w.data() + r * hd;
    if (!isotropic) {
      std::fill(v, v + hd, 0.0f), v[r % 2] = 1.0f;
      continue;
    }
    double n = 0;
    for (int j = 0; j < hd; ++j) v[j] = float(rng.normal()), n += double(v[j]) * v[j];
    for (int j = 0; j < hd; ++j) v[j] = float(v[j] / std::sqrt(n));
  }
}

// Example 2 inside the probe: reflections alternating between the axes e_0
// and e_1 of R^8 give M = I - 2 diag(1/2, 1/2, 0, ...): two directions mixed
// in one step, six never visited. Isotropic reflections give
// 1 - 2/hd in every direction (Example 2's uniform law; 20000 steps put each
// eigenvalue within about 4/sqrt(20000 hd) of it). Planted: dropping the
// beta weight (steps of beta 1) leaves the axes' directions at 1/2.
TEST(nn_probe, reflection_stats_follow_example_2) {
  const int hd = 8, T = 100;
  const nn::AttentionShape s{2, T, 1, hd};
  auto directions = [&](bool isotropic, float b0, int init_span) {
    ReflectionStats stats(1, 1, hd);
    std::vector<float> w(std::size_t(s.B) * T * hd, 0.0f), beta(std::size_t(s.B) * T, b0);
    Stream rng(5, 0);
    for (int rep = 0; rep < (isotropic ? 100 : 1); ++rep) {
      fill_directions(w, hd, isotropic, rng);
      stats.add(0, w.data(), beta.data(), s);
    }
    return stats.gaps(0.05, 0.5, init_span);
  };
  const auto axes = directions(false, 2.0f, hd);
  ASSERT_EQ(axes.size(), 8u);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(axes[j].block, j);
    EXPECT_NEAR(axes[j].beta, j < 6 ? 1.0 : 0.0, 1e-12);
    EXPECT_EQ(axes[j].mixing_window, j < 6 ? -1 : 1);
    EXPECT_EQ(axes[j].beta_init, 0.5);
  }
  const auto planted = directions(false, 1.0f, hd);
  EXPECT_NEAR(planted[7].beta, 0.5, 1e-6);  // beta 1 steps: not Example 2's reflections
  for (const BlockGap& g : directions(true, 2.0f, hd)) EXPECT_NEAR(g.beta, 1 - 2.0 / hd, 4 / std::sqrt(20000.0 * hd));
  ModelConfig m;
  m.d_model = 64, m.heads = 2;
  m.scheme = "householder_qk";
  EXPECT_DOUBLE_EQ(initial_reflection_beta(m), 1 - 1.0 / 32);
  m.householder_beta = "reflection";
  EXPECT_DOUBLE_EQ(initial_reflection_beta(m), 1 - 2.0 / 32);
  m.scheme = "path_qk";  // 3 taps of rank 32 span a head of 32
  EXPECT_EQ(initial_reflection_span(m), 32);
  EXPECT_DOUBLE_EQ(initial_reflection_beta(m), 1 - 2.0 / 32);
  m.d_model = 256, m.householder_beta = "path";  // heads of 128: w starts in 3 x 32 of them
  EXPECT_EQ(initial_reflection_span(m), 96);
  EXPECT_DOUBLE_EQ(initial_reflection_beta(m), 1 - 1.0 / 96);
  m.scheme = "householder_qkv";
  EXPECT_EQ(initial_reflection_span(m), 128);
  // Directions outside the start's span start at beta 1 (never mix): they
  // lead each head's rows, as the trained ones sort.
  const auto part = directions(false, 2.0f, 3);
  for (int j = 0; j < hd; ++j) {
    EXPECT_EQ(part[j].beta, axes[j].beta);
    EXPECT_EQ(part[j].beta_init, j < hd - 3 ? 1.0 : 0.5) << j;
    EXPECT_EQ(part[j].mixing_window_init, j < hd - 3 ? -1 : axes[j].mixing_window_init) << j;
  }
}

// The probe reads every registered scheme, and refuses one whose transport
// it reads only half of (rotary angles and Householder steps together).
TEST(nn_probe, refuses_a_scheme_it_cannot_read) {
  for (const SchemeInfo& s : all_schemes()) EXPECT_EQ(probe_unreadable(s), "") << s.name;
  SchemeInfo both = *find_scheme("householder_qkv");
  both.angles = AngleKind::learned;
  EXPECT_NE(probe_unreadable(both), "");
}

// Householder rows carry the score bias like the others: with every step
// the identity (beta = 0) the transported rows are the plain ones, forget
// gate and ALiBi included. Planted: the Householder rows without the bias.
TEST(nn_probe, householder_rows_carry_the_score_bias) {
  const AttentionShape s{2, 30, 2, 4};
  const std::size_t n = std::size_t(s.B) * s.H * s.T;
  Stream rng(12, 0);
  std::vector<double> q(n * s.hd), k(n * s.hd), w(n * s.hd), beta(n, 0.0), cum(n);
  for (auto* v : {&q, &k, &w})
    for (double& x : *v) x = 2 * rng.normal();
  for (std::size_t i = 0; i < n; ++i) cum[i] = (i % s.T ? cum[i - 1] : 0.0) - 0.3 * std::abs(rng.normal());
  const std::vector<double> slopes = alibi_slopes(s.H);
  const int64_t W = 5;
  auto probe = [&](ScoreBias<double> bias, const double* hh_w) {
    std::vector<HeadProbe> heads(s.H);
    probe_attention(heads.data(), q.data(), k.data(), bias, hh_w, hh_w ? beta.data() : nullptr, s, W);
    return heads;
  };
  for (const ScoreBias<double> bias :
       {ScoreBias<double>{nullptr, cum.data()}, ScoreBias<double>{slopes.data(), cum.data()}}) {
    const auto plain = probe(bias, nullptr), transported = probe(bias, w.data());
    const auto unbiased = probe({}, w.data());
    for (int h = 0; h < s.H; ++h) {
      EXPECT_EQ(transported[h].queries, plain[h].queries);
      EXPECT_NEAR(transported[h].far_mass, plain[h].far_mass, 1e-12 * plain[h].queries);
      EXPECT_NEAR(transported[h].entropy, plain[h].entropy, 1e-11 * plain[h].queries);
      EXPECT_NEAR(transported[h].logit_range, plain[h].logit_range, 1e-11 * plain[h].queries);
      EXPECT_GT(std::abs(unbiased[h].logit_range - plain[h].logit_range), 0.1);
    }
  }
}

// A block's share is its E|q_b| E|k_b| over the layer's sum: q and k
// carrying (3, 4) in block 0 and (0, 1) in block 1 give 25 : 1.
// The measured mean cosine against the i.i.d. prediction Re h^n: i.i.d.
// U(-1, 1) steps give sin(1)^n (8 blocks x 20 x 390 pairs, correlated along
// a window: the two agree within 0.03 at n = 10, where both are 0.18).
// Planted: each step taken twice in a row (psi_{2m+1} = psi_{2m}) keeps the
// harmonic, so the prediction, but X(10) then sums five doubled steps
// ((sin 2 / 2)^5) or four and two halves (sin^2 1 (sin 2 / 2)^4), half the
// pairs each: 0.025. The measured cosine must leave the prediction.
TEST(nn_probe, phase_stats_measure_the_transport_the_iid_law_predicts) {
  const PhaseRow iid = uniform_step_phases(11, Steps::independent).rows()[0];
  const PhaseRow doubled = uniform_step_phases(11, Steps::doubled).rows()[0];
  EXPECT_NEAR(iid.mean_cos_iid, std::pow(std::sin(1.0), 10), 0.03);
  EXPECT_NEAR(iid.mean_cos, iid.mean_cos_iid, 0.03);
  EXPECT_NEAR(doubled.mean_cos_iid, std::pow(std::sin(1.0), 10), 0.03);
  const double h2 = std::sin(2.0) / 2;
  EXPECT_NEAR(doubled.mean_cos, 0.5 * (std::pow(h2, 5) + std::pow(std::sin(1.0), 2) * std::pow(h2, 4)), 0.02);
  EXPECT_GT(doubled.mean_cos_iid - doubled.mean_cos, 0.1);
}

// Householder transport measured as (1/d) tr P_n. Reflections alternating
// between the axes e_0 and e_1 of R^8 give exact products: P_1 flips one
// axis (tr 6), P_2 both (tr 4), P_4 neither (tr 8), while the i.i.d. law of
// the same steps (M = diag(0, 0, 1, ...)) predicts 6/8 at every n. Isotropic
// i.i.d. reflections give (1 - 2/8)^n both ways (20000 products a distance,
// trace standard error about 0.01).
TEST(nn_probe, reflection_transport_against_the_iid_prediction) {
  const int hd = 8, T = 100;
  const nn::AttentionShape s{2, T, 1, hd};
  auto rows = [&](bool isotropic) {
    ReflectionStats stats(1, 1, hd, {1, 2, 4}, 1);
    std::vector<float> w(std::size_t(s.B) * T * hd, 0.0f), beta(std::size_t(s.B) * T, 2.0f);
    Stream rng(6, 0);
    for (int rep = 0; rep < (isotropic ? 100 : 1); ++rep) {
      fill_directions(w, hd, isotropic, rng);
      stats.add(0, w.data(), beta.data(), s);
    }
    return stats.rows();
  };
  const auto axes = rows(false);
  ASSERT_EQ(axes.size(), 3u);
  const double exact[] = {6.0 / 8, 4.0 / 8, 1.0};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(axes[k].pairs, 2 * (T - 4));  // starts j with j + 4 < T, in both windows
    EXPECT_EQ(axes[k].blocks, hd);
    EXPECT_NEAR(axes[k].mean_cos, exact[k], 1e-6);
    EXPECT_NEAR(axes[k].mean_cos_iid, 6.0 / 8, 1e-12);
    EXPECT_TRUE(std::isnan(axes[k].variance_ratio));
  }
  EXPECT_THROW(ReflectionStats(1, 1, hd, {4, 2}), std::invalid_argument);  // add() reads them in order
  EXPECT_THROW(ReflectionStats(1, 1, hd, {0, 2}), std::invalid_argument);
  const auto isotropic = rows(true);
  for (const PhaseRow& r : isotropic) {
    const double law = std::pow(1 - 2.0 / hd, double(r.distance));
    EXPECT_NEAR(r.mean_cos_iid, law, 0.01);
    EXPECT_NEAR(r.mean_cos, law, 0.03);
  }
}

TEST(nn_probe, block_shares_weigh_each_block_by_its_norms) {
  const nn::AttentionShape s{1, 3, 2, 4};
  std::vector<double> q(24), k(24);
  for (int r = 0; r < 6; ++r) {
    q[r * 4] = 3, q[r * 4 + 1] = 4, q[r * 4 + 3] = 1;
    k[r * 4 + 1] = 5, k[r * 4 + 2] = -1;
  }
  BlockShares shares(2, 2);
  shares.add(1, q.data(), k.data(), s);
  const auto out = shares.shares();
  EXPECT_EQ(out[0], 0.0);  // layer 0 saw nothing
  EXPECT_NEAR(out[2], 25.0 / 26, 1e-15);
  EXPECT_NEAR(out[3], 1.0 / 26, 1e-15);
}

// A five-step run of `scheme` in tmp/name.
void train_tiny(const TempDir& tmp, const std::string& name, const std::string& scheme) {
  spit(tmp / (name + ".toml"), tiny_config(scheme, 5, 5));
  ASSERT_EQ(run_routelab("train --config " + name + ".toml --out " + name + " --quiet", tmp.path, tmp.path).status, 0);
}

TEST(nn_cli, probe_writes_rows_angles_and_protocol_the_same_on_any_thread_count) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("learned_qkv", 20, 20));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  const std::string args = "probe --run run --lengths 1x,64 --window 4 --max-windows 2 --quiet";
  const auto r = run_routelab(args + " --threads 1", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string csv = slurp(tmp / "run/probe.csv");
  EXPECT_EQ(csv, r.out);
  EXPECT_EQ(csv.substr(0, csv.find('\n')) + "\n", probe_csv_header());
  EXPECT_EQ(count_lines(csv), 1 + 2 * 1 * 2);  // lengths x layers x heads
  EXPECT_NE(csv.find("\nrun,learned_qkv,1,16,64,4,0,1,2,118,"), std::string::npos) << csv;  // 2 windows x (64 - 5)
  // bound_violations, the last column, is 0 on every row.
  for (std::size_t at = csv.find('\n'); at + 1 < csv.size(); at = csv.find('\n', at + 1))
    EXPECT_EQ(csv.substr(csv.rfind(',', csv.find('\n', at + 1)), 3), ",0\n") << csv;
  const std::string angles = slurp(tmp / "run/probe-angles.csv");
  EXPECT_EQ(count_lines(angles), 1 + 1 * 4);  // layers x blocks
  const auto side = nlohmann::json::parse(slurp(tmp / "run/probe.csv.json"));
  EXPECT_EQ(side["runs"][0]["window"], 4);
  EXPECT_EQ(side["eps"], 0.05);
  const auto two = run_routelab(args + " --threads 2 --csv two.csv", tmp.path, tmp.path);
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_EQ(slurp(tmp / "two.csv"), csv);
  EXPECT_EQ(slurp(tmp / "two-angles.csv"), angles);
  const std::string phases = slurp(tmp / "run/probe-phases.csv");
  EXPECT_EQ(count_lines(phases), 1 + 1 * 3);  // layers x distances 2, 4, 8
  EXPECT_EQ(slurp(tmp / "two-phases.csv"), phases);
}

// Householder runs (householder_qk and PaTH's own directions, path_qk) get
// the reflections' directions as angle rows (layers x heads x head_dim, from
// the stream), random angles their blocks' score shares, which sum to 1 in
// each layer.
TEST(nn_cli, probe_reads_householder_directions_and_block_shares) {
  TempDir tmp;
  train_tiny(tmp, "h", "householder_qk");
  train_tiny(tmp, "path", "path_qk");
  train_tiny(tmp, "r", "random_qk");
  const auto r = run_routelab("probe --run h path r --lengths 1x --window 4 --max-windows 1 --csv p.csv --quiet",
                              tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const CsvTable t = parse_csv(slurp(tmp / "p-angles.csv"), "p-angles.csv");
  const int run = t.column("run"), source = t.column("beta_source"), beta = t.column("beta"),
            share = t.column("score_share"), init = t.column("beta_init");
  int householder = 0;
  double shares = 0;
  for (const auto& row : t.rows) {
    if (row[run] == "h" || row[run] == "path") {
      ++householder;
      EXPECT_EQ(row[source], "stream");
      EXPECT_LE(std::stod(row[beta]), 1.0);
      EXPECT_EQ(row[share], "");
      EXPECT_EQ(std::stod(row[init]), 1 - 1.0 / 8);  // PaTH's b0 = 1 at head_dim 8
    } else {
      shares += std::stod(row[share]);
    }
  }
  EXPECT_EQ(householder, 2 * 1 * 2 * 8);
  EXPECT_NEAR(shares, 1.0, 1e-12);
  // Both runs' transport, measured beside its i.i.d. prediction, per layer and distance.
  const CsvTable ph = parse_csv(slurp(tmp / "p-phases.csv"), "p-phases.csv");
  const int prun = ph.column("run"), measured = ph.column("mean_cos"), iid = ph.column("mean_cos_iid");
  int hrows = 0, prows = 0, rrows = 0;
  for (const auto& row : ph.rows) {
    (row[prun] == "h" ? hrows : row[prun] == "path" ? prows : rrows) += 1;
    EXPECT_LE(std::abs(std::stod(row[measured])), 1.0 + 1e-9);
    EXPECT_LE(std::abs(std::stod(row[iid])), 1.0 + 1e-9);
  }
  EXPECT_EQ(hrows, int(phase_distances(16).size()));  // one layer
  EXPECT_EQ(prows, hrows);
  EXPECT_EQ(rrows, hrows);
}

// The --update tests' start: runs a (random_qk) and b (learned_qkv), probed
// together into all.csv and a alone into p.csv, with the flags `kProbeFlags`.
const std::string kProbeFlags = "probe --lengths 1x --window 4 --max-windows 1 --quiet ";
void probe_a_and_b(const TempDir& tmp) {
  train_tiny(tmp, "a", "random_qk");
  train_tiny(tmp, "b", "learned_qkv");
  ASSERT_EQ(run_routelab(kProbeFlags + "--run a b --csv all.csv", tmp.path, tmp.path).status, 0);
  ASSERT_EQ(run_routelab(kProbeFlags + "--run a --csv p.csv", tmp.path, tmp.path).status, 0);
}

// --update: a clone has the committed probe CSVs but not the runs behind
// them, so a new run's probe is merged into them. The merge must give the
// bytes a probe of every run at once gives, re-probing a run must replace
// its rows where they stand, and a merge of unlike probes is refused.
TEST(nn_cli, probe_update_merges_new_runs_and_replaces_old_ones_in_place) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(probe_a_and_b(tmp));
  const auto merged = run_routelab(kProbeFlags + "--run b --csv p.csv --update", tmp.path, tmp.path);
  ASSERT_EQ(merged.status, 0) << merged.err;
  for (const char* suffix : {".csv", "-angles.csv", "-phases.csv"})
    EXPECT_EQ(slurp(tmp / (std::string("p") + suffix)), slurp(tmp / (std::string("all") + suffix))) << suffix;
  auto runs_of = [&](const char* side) {
    std::vector<std::string> out;
    const auto json = nlohmann::json::parse(slurp(tmp / side));
    for (const auto& r : json["runs"]) out.push_back(r["run"]);
    return out;
  };
  EXPECT_EQ(runs_of("p.csv.json"), (std::vector<std::string>{"a", "b"}));
  // Re-probing a, the first run, leaves every row where it was.
  const std::string before = slurp(tmp / "p.csv"), angles_before = slurp(tmp / "p-angles.csv");
  ASSERT_EQ(run_routelab(kProbeFlags + "--run a --csv p.csv --update", tmp.path, tmp.path).status, 0);
  EXPECT_EQ(slurp(tmp / "p.csv"), before);
  EXPECT_EQ(slurp(tmp / "p-angles.csv"), angles_before);
  EXPECT_EQ(runs_of("p.csv.json"), (std::vector<std::string>{"a", "b"}));

  expect_refusals_touch_nothing(
      {{"probe --lengths 1x --window 4 --max-windows 1 --run a --csv none.csv --update", "none.csv, which does not"},
       {"probe --lengths 1x,2x --window 4 --max-windows 1 --run a --csv p.csv --update",
        "--lengths 1x --max-windows 1"},
       {"probe --lengths 1x --window 4 --max-windows 1 --eps 0.1 --run a --csv p.csv --update", "--eps 0.05"},
       {"probe --lengths 1x --window 4 --max-windows 1 --run a b a --csv p.csv", "--run: a and a are the same run; name it once"},
       {"probe --lengths 1x --window 4 --max-windows 1 --run a --csv all-angles.csv --update", "does not start"}},
      tmp.path);
}

// A committed probe from before the last columns were added still takes new
// runs: its runs' rows get those columns empty, and its sidecar says so.
TEST(nn_cli, probe_update_widens_an_older_probe_leaving_its_new_columns_empty) {
  TempDir tmp;
  ASSERT_NO_FATAL_FAILURE(probe_a_and_b(tmp));
  // Each line of `text` without its last cell (`keep` says which lines), or with it empty.
  auto drop_last_cell = [](const std::string& text, bool empty, auto keep) {
    std::istringstream in(text);
    std::string out;
    for (std::string line; std::getline(in, line);)
      out += (keep(line) ? line : line.substr(0, line.rfind(',') + (empty ? 1 : 0))) + "\n";
    return out;
  };
  const auto none = [](const std::string&) { return false; };
  const auto not_a = [](const std::string& line) { return !line.starts_with("a,"); };
  for (const char* suffix : {"-angles.csv", "-phases.csv"}) {
    const fs::path path = tmp / (std::string("p") + suffix);
    spit(path, drop_last_cell(slurp(path), false, none));
  }
  const auto merged = run_routelab(kProbeFlags + "--run b --csv p.csv --update", tmp.path, tmp.path);
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(slurp(tmp / "p.csv"), slurp(tmp / "all.csv"));
  for (const char* suffix : {"-angles.csv", "-phases.csv"})
    EXPECT_EQ(slurp(tmp / (std::string("p") + suffix)),
              drop_last_cell(slurp(tmp / (std::string("all") + suffix)), true, not_a))
        << suffix;
  const auto side = nlohmann::json::parse(slurp(tmp / "p.csv.json"));
  ASSERT_EQ(side["runs"].size(), 2u);
  EXPECT_EQ(side["runs"][0]["columns_not_probed"], nlohmann::json({"score_share", "mean_cos_iid"}));
  EXPECT_FALSE(side["runs"][1].contains("columns_not_probed"));
}

TEST(nn_cli, probe_refuses_bad_input_before_writing) {
  TempDir tmp;
  train_tiny(tmp, "run", "rope");
  expect_refusal(run_routelab("probe --run nowhere", tmp.path, tmp.path), "not a run directory");
  expect_refusal(run_routelab("probe --run run --lengths 2y", tmp.path, tmp.path), "--lengths: '2y'");
  expect_refusal(run_routelab("probe --run run --window 0", tmp.path, tmp.path), "--window");
  expect_refusal(run_routelab("probe --run run --lengths 1x,8 --window 8", tmp.path, tmp.path), "--window: 8");
  expect_refusal(run_routelab("probe --run run --bogus 3", tmp.path, tmp.path), "--bogus");
  expect_refusal(run_routelab("probe --run run --eps 1", tmp.path, tmp.path), "--eps");
  expect_refusal(run_routelab("probe --run run run", tmp.path, tmp.path), "--csv");
  EXPECT_FALSE(fs::exists(tmp / "run/probe.csv"));
  EXPECT_FALSE(fs::exists(tmp / "run/probe-angles.csv"));
}

}  // namespace
