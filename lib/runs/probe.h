// Looking inside a trained model with the theory's quantities (issue 5, the
// probe; docs/theory.md#proposition-3 and #theorem-1).
//
// Attention side. The rows a trained model attends with are rebuilt in double
// from its own q, k and score bias (Model::set_attention_observer) and split
// at a window W: query i's far set D = {j : i - j > W} holds M = i - W keys,
// the near set S the last K = W + 1 keys (its own included). Per row: the far
// mass rho_D and far-weight norm a_D (attention/far_mass.h), the entropy
// (nats), the logit range lambda = (max - min)/2 over the whole row (so the
// logits lie in [-lambda, lambda] after a shift) and Proposition 3's lower
// bound M / (M + K e^{2 lambda}) from that lambda, which every row must meet.
// Queries i <= W have no far set and are not scored.
//
// Angle side. For the rotary schemes the theory's own prediction from the
// weights: per layer and block b the step angle psi_b's first harmonic
// E e^{i psi_b} (modulus beta_b, argument the drift), and the mixing window
// n_b = w_eps(beta_b) (B.2) past which block b's transport has decorrelated.
//   learned  psi_b = table[x][b] (the model sums table rows as they are), x
//            a byte of the validation stream with its frequency p(x)
//   projected psi_b = W_psi xhat + b_psi depends on the context: its
//            empirical law over every position of the validation stream cut
//            into training-length windows
//   random   psi_b ~ U(-s f_b, s f_b): beta_b = sin(s f_b)/(s f_b) (Example 1)
//   rope     psi_b = f_b always: beta_b = 1, never mixes
// Beside each, beta_b at initialisation from the init's closed form
// (nn::initial_block_beta): e^{-sigma^2/2} for the normal table and the
// projected start, sin(h)/h for the uniform of half-width h, 1 for "rope".
// Schemes without angles (nope, alibi) have no rows.
//
// Phase side. Theorem 2 (B.3) assumes a far route's block phases
// Theta_b = theta_{i,b} - theta_{i-n,b} independent across blocks b; for
// learned angles the paper leaves that as an empirical matter (the note after
// B.3). Over the same windows, per layer and distance n in {T/8, T/4, T/2}:
// X_b = cos Theta_b (the terms of the matched score S = (1/B) sum_b X_b),
// their variance ratio Var(sum_b X_b) / sum_b Var(X_b) (1 for independent
// blocks, up to B for one shared phase) and the mean |corr(X_b, X_b')| over
// pairs of blocks that vary. Beside the measured mean cosine, the i.i.d.
// prediction (1/B) sum_b Re h_b^n from the steps' first harmonics h_b: the
// law the mixing windows are read from. Where the two part, the steps are
// not i.i.d. along the stream and the window misjudges the transport.
// Householder runs get the same rows with X = (1/d) tr P_n, P_n the product
// of n steps (the mean over d directions of a rotation's cos Theta), against
// the i.i.d. prediction (1/d) tr M^n (Example 2).
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/model.h"
#include "runs/eval.h"

namespace routelab::runs {

struct RowStats {
  double far_mass, far_norm, entropy, logit_range, far_mass_lower_bound;
};

// Statistics of one attention row from its logits l_0..l_i (keys = i + 1,
// the query last); needs window < i so the far set is not empty.
RowStats attention_row_stats(const double* logits, int64_t keys, int64_t window);

// Query i's logits l_0..l_i of batch element b, head h, in double exactly as
// attention_forward scores them: scale q_i.k_j with scale = 1/sqrt(hd) in R,
// minus ALiBi's slope_h (i - j), plus the forget gate's cum_i - cum_j.
template <class R>
void attention_row_logits(double* logits, const R* q, const R* k, nn::ScoreBias<R> bias, nn::AttentionShape s,
                          int64_t b, int h, int64_t i);

// One head's row statistics summed over its scored queries.
struct HeadProbe {
  int64_t queries = 0;
  double far_mass = 0, far_norm = 0, entropy = 0, logit_range = 0, far_mass_lower_bound = 0;
  // Queries in eval's last position bin [L/2, L).
  int64_t last_bin_queries = 0;
  double far_mass_last_bin = 0;
  // Rows with rho_D below Proposition 3's bound (beyond relative 1e-12): 0.
  int64_t bound_violations = 0;
  double min_slack = std::numeric_limits<double>::infinity();  // min of rho_D - bound
  void add(const RowStats& r, bool last_bin);
};

// Adds every scored row of one layer's attention (all batch elements; heads
// into heads[0..H)). Rows are computed in parallel and added in a fixed order,
// so the sums do not depend on the thread count.
// Under Householder transport (hh_w not null) the logits are the transported
// scores k_j^T H_{j+1} ... H_i q_i / sqrt(hd) (nn/householder.h), plus the
// same score bias.
template <class R>
void probe_attention(HeadProbe* heads, const R* q, const R* k, nn::ScoreBias<R> bias, const R* hh_w, const R* hh_beta,
                     nn::AttentionShape s, int64_t window);

// A Model observer that probes every layer: layer l's heads go to
// heads[l H .. (l + 1) H).
template <class R>
typename nn::Model<R>::AttentionObserver probe_observer(HeadProbe* heads, int64_t window) {
  return [heads, window](int layer, const R* q, const R* k, nn::ScoreBias<R> bias, const R* hh_w, const R* hh_beta,
                         nn::AttentionShape s) {
    probe_attention(heads + int64_t(layer) * s.H, q, k, bias, hh_w, hh_beta, s, window);
  };
}

// One block's step-angle law.
struct BlockGap {
  int layer, block;
  double frequency;  // f_b
  double beta;       // |E e^{i psi_b}|
  double drift;      // arg E e^{i psi_b} (radians per byte)
  long long mixing_window;  // w_eps(beta_b); -1: never mixes
  double beta_init;         // at initialisation (closed form)
  long long mixing_window_init;
  const char* source;  // where beta comes from: "table", "stream", "closed form"
};

// beta_b = |E e^{i psi_b}| of block b (frequency f_b) where the scheme's
// angles follow a fixed law, not a trained one: RoPE's steps are f_b exactly
// (beta 1), random angles' U(-a, a) with a = angle_scale f_b. Nothing for
// trained angles.
std::optional<double> law_beta(const nn::ModelConfig& m, double f_b);

// The lower median over blocks of their mixing windows at eps (-1: never)
// where the angles' law is fixed (law_beta): every layer and every seed of
// such a configuration has it. Nothing for trained angles or none.
std::optional<long long> law_window(const nn::ModelConfig& m, double eps);

// Every layer's blocks for a model with angles (empty without); byte_freq is
// p(x), x < 256, used by learned tables; stream_harmonic (layer l block b at
// l nb + b) is the empirical E e^{i psi_b}, used by projected angles.
std::vector<BlockGap> angle_gaps(const nn::Model<float>& model, const std::vector<double>& byte_freq, double eps,
                                 const std::vector<std::complex<double>>& stream_harmonic = {});

// One layer's transport at one distance n, measured over the stream's pairs
// (i - n, i) and predicted from i.i.d. steps.
struct PhaseRow {
  int layer;
  int64_t distance, pairs;
  int blocks;             // blocks whose X_b varies (variance above 1e-12); householder: head_dim
  double mean_cos;        // (1/B) sum_b E X_b; householder: (1/d) E tr P_n, over heads
  double variance_ratio;  // Var(sum_b X_b) / sum_b Var(X_b); 1 if independent (rotary only)
  double mean_abs_corr;   // over pairs of varying blocks (rotary only)
  double mean_cos_iid;    // i.i.d. steps: (1/B) sum_b Re h_b^n; householder (1/d) tr M^n, over heads
};

// The accumulated angles' statistics over forward passes (an AngleObserver):
// the empirical first harmonic of every layer's step angles, and the
// cross-block moments of X_b = cos(theta_{i,b} - theta_{i-n,b}) at each
// distance n. Sums run in a fixed order: the same bytes at any thread count.
class PhaseStats {
 public:
  PhaseStats(int layers, int nb, std::vector<int64_t> distances);
  void add(int layer, const double* theta, int B, int T);
  // E e^{i psi_b} per layer and block (l nb + b).
  std::vector<std::complex<double>> step_harmonics() const;
  using Row = PhaseRow;
  std::vector<Row> rows() const;
  const std::vector<int64_t>& distances() const { return distances_; }

 private:
  int layers_, nb_;
  std::vector<int64_t> distances_;
  std::vector<std::complex<double>> step_sum_;
  std::vector<int64_t> steps_;
  // Per (layer, distance): pairs, sum X (nb), sum X X^T (nb x nb).
  std::vector<int64_t> pairs_;
  std::vector<double> sx_, sxx_;
};

// Householder transport's steps (Example 2; Theorem 1, B.5): per layer and
// head the empirical mean step M = E[I - beta_t w_t w_t^T] over forward
// passes (an attention observer's w and beta). With i.i.d. steps E P_n = M^n,
// so along M's eigendirection j (M is symmetric, eigenvalue 1 - mu_j) the
// mean transport decays as |1 - mu_j|^n: that direction's beta, the
// reflections' counterpart of a rotary block's. A direction the w's never
// visit keeps beta = 1 and never mixes.
//
// Beside M, the transport itself: (1/d) tr P_n for P_n = H_{j+1} ... H_{j+n}
// at each distance n (positive, increasing), from starts j every
// start_stride positions of each window (a product costs n d^2, so not from
// every j), against (1/d) tr M^n.
class ReflectionStats {
 public:
  ReflectionStats(int layers, int heads, int hd, std::vector<int64_t> distances = {}, int64_t start_stride = 1);
  template <class R>
  void add(int layer, const R* w, const R* beta, nn::AttentionShape s);
  // Rows as BlockGap: block = head hd + j, each head's directions by
  // decreasing beta; frequency NaN (an empty cell); drift 0 or pi (the sign of 1 - mu_j);
  // source "stream"; beta_init as given for the last init_span directions of
  // each head, 1 (never visited at the start) for the hd - init_span before.
  std::vector<BlockGap> gaps(double eps, double beta_init, int init_span) const;
  // Per layer and distance, the mean over heads; variance_ratio and
  // mean_abs_corr NaN.
  std::vector<PhaseRow> rows() const;

 private:
  int layers_, heads_, hd_;
  std::vector<int64_t> distances_;
  int64_t start_stride_;
  std::vector<double> sum_;  // per (layer, head): sum of beta w w^T (hd x hd)
  std::vector<int64_t> steps_;
  std::vector<double> mean_step_eigenvalues(std::size_t at) const;  // of M for (layer, head) at
  std::vector<double> trace_sum_;  // per (layer, head, distance): sum of tr P_n
  std::vector<int64_t> products_;  // per layer: products of each head at each distance
};

// The dimensions of a head that the steps' directions span at
// initialisation: hd for householder_* (w = unit(W x + b), W full rank);
// min(hd, 3 r) for path_*, whose w is SiLU of three per-channel rescalings
// of W2's rank-r output (SiLU is linear to 1e-3 at the N(0, 0.02) start).
int initial_reflection_span(const nn::ModelConfig& m);
// M's beta at initialisation along the span for w isotropic in it
// (E w w^T = I/span there): |1 - b0/span|, b0 = 1 for PaTH's 2 sigmoid(0),
// 2 for reflections (Example 2's 1 - 2/d); 1 outside the span.
double initial_reflection_beta(const nn::ModelConfig& m);

// Why the probe cannot read a model of this scheme, or empty: its rows read
// one kind of transport (rotary angles or Householder steps), so a scheme
// with both would be written half read. Refused before any work.
std::string probe_unreadable(const nn::SchemeInfo& s);

// How much of the q.k score each rotary block can carry: per layer and block
// b, E|q_b| E|k_b| over batch, heads and positions, as a share of the sum
// over blocks. A rotation keeps every block's norm, so the share is the same
// before and after the transport.
class BlockShares {
 public:
  BlockShares(int layers, int nb);
  template <class R>
  void add(int layer, const R* q, const R* k, nn::AttentionShape s);
  std::vector<double> shares() const;  // layer l block b at l nb + b

 private:
  int layers_, nb_;
  std::vector<double> q_, k_;
};

// The probe's distances for training length T: T/8, T/4, T/2 (each at least
// 1, no repeats).
std::vector<int64_t> phase_distances(int64_t T);

// A layer's decorrelation distances from its blocks' windows (-1 = never):
// the lower median (by then half the blocks, half the terms of the matched
// score (1/B) sum_b cos Theta_b, have mixed) and the max (every block mixed:
// the operator-norm window of Theorem 1 at beta = max_b beta_b). -1: never.
long long window_lower_median(std::vector<long long> windows);
long long window_max(const std::vector<long long>& windows);

inline constexpr int64_t kMaxProbeWindows = 1000000;

struct ProbeOptions {
  std::vector<std::string> runs;
  std::string lengths = "1x,2x,4x,8x,16x,32x,64x";
  int64_t window = 0;  // 0: a quarter of the training length
  int64_t max_windows = 4;  // 1 to kMaxProbeWindows
  double eps = 0.05;
  std::string csv;  // FILE.csv; angles go to FILE-angles.csv, phases to FILE-phases.csv
  // Keep every other run's rows (and sidecar entry) from the existing files;
  // the runs probed now replace theirs in place or follow the rest.
  bool update = false;
  bool progress = false;
  // Units: each run at each length, then its phase statistics (one more per run).
  WorkHooks hooks;
};

std::string probe_csv_header();
std::string probe_angles_csv_header();
std::string probe_angles_path(const std::string& csv);
std::string probe_phases_csv_header();
std::string probe_phases_path(const std::string& csv);

// Probes every run at every length and writes the three CSVs and the
// sidecar, all or nothing (with `update`, merged into the existing ones,
// which must come from a probe with the same lengths, max_windows and eps).
// Bad options are a ConfigError (or RunDirError) before any work.
// Returns the probe CSV.
std::string probe_runs(const ProbeOptions& o);

}  // namespace routelab::runs
