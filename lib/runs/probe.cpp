#include "runs/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <fmt/core.h>

#include "attention/far_mass.h"
#include "io/csv_read.h"
#include "io/output.h"
#include "io/parse.h"
#include "io/table.h"
#include "nn/householder.h"
#include "runs/eval.h"
#include "theory/far_mass_bounds.h"
#include "theory/haar_score_law.h"
#include "theory/step_gaps.h"

namespace routelab::runs {

namespace fs = std::filesystem;

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// attention_forward's score scale, in R as it computes it, then widened.
template <class R>
double score_scale(int hd) {
  return double(R(1) / std::sqrt(R(hd)));
}

// Adds the score bias to query i's logits l_0..l_i: ALiBi's -slope (i - j)
// and the forget gate's cum_i - cum_j (cum the head's row, or null).
template <class R>
void add_score_bias(double* logits, double slope, const R* cum, int64_t i) {
  if (slope != 0)
    for (int64_t j = 0; j <= i; ++j) logits[j] -= slope * double(i - j);
  if (cum)
    for (int64_t j = 0; j <= i; ++j) logits[j] += double(cum[i]) - double(cum[j]);
}

// Query i's logits from one head's q and k already in double (T x hd each).
template <class R>
void row_logits(double* logits, const MatD& Q, const MatD& K, double scale, double slope, const R* cum, int64_t i) {
  Eigen::Map<Eigen::VectorXd> l(logits, i + 1);
  l.noalias() = K.topRows(i + 1) * Q.row(i).transpose();
  l *= scale;
  add_score_bias(logits, slope, cum, i);
}

// One head's q or k, (T, hd) rows of the (B, H, T, hd) tensor, in double.
template <class R>
MatD head_matrix(const R* x, nn::AttentionShape s, int64_t bh) {
  return Eigen::Map<const Eigen::Matrix<R, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
             x + bh * s.T * s.hd, s.T, s.hd)
      .template cast<double>();
}

// The first position of eval's last log2 bin [lo, L).
int64_t last_bin_start(int64_t L) {
  int64_t lo = 1;
  while (2 * lo < L) lo *= 2;
  return L > 1 ? lo : 0;
}

std::string window_text(long long w) { return w < 0 ? "inf" : std::to_string(w); }

}  // namespace

RowStats attention_row_stats(const double* logits, int64_t keys, int64_t window) {
  const int64_t i = keys - 1;
  const Eigen::Map<const Eigen::ArrayXd> l(logits, keys);
  const double hi = l.maxCoeff(), lo = l.minCoeff();
  // Entropy -sum p log p = log z - sum e (l - hi) / z, e = e^{l - hi}, z = sum e
  // (Eigen's vectorized exp: this loop and the accumulator's are the probe's cost).
  const Eigen::ArrayXd shifted = l - hi, e = shifted.exp();
  const double z = e.sum(), zl = (e * shifted).sum();
  FarMassAccumulator acc;
  for (int64_t j = 0; j < keys; ++j) {
    if (i - j > window)
      acc.add_far(logits[j]);
    else
      acc.add_near(logits[j]);
  }
  const double lambda = (hi - lo) / 2;
  return {acc.far_mass(), acc.far_norm(), std::log(z) - zl / z, lambda,
          theory::prop3_far_mass_lower(double(i - window), double(window + 1), lambda)};
}

template <class R>
void attention_row_logits(double* logits, const R* q, const R* k, nn::ScoreBias<R> bias, nn::AttentionShape s,
                          int64_t b, int h, int64_t i) {
  const int64_t bh = b * s.H + h;
  row_logits(logits, head_matrix(q, s, bh), head_matrix(k, s, bh), score_scale<R>(s.hd),
             bias.slopes ? bias.slopes[h] : 0.0, bias.cum ? bias.cum + bh * s.T : nullptr, i);
}

void HeadProbe::add(const RowStats& r, bool last_bin) {
  ++queries;
  far_mass += r.far_mass;
  far_norm += r.far_norm;
  entropy += r.entropy;
  logit_range += r.logit_range;
  far_mass_lower_bound += r.far_mass_lower_bound;
  if (last_bin) ++last_bin_queries, far_mass_last_bin += r.far_mass;
  const double slack = r.far_mass - r.far_mass_lower_bound;
  min_slack = std::min(min_slack, slack);
  // The protocol's tolerance for deterministic bounds (docs/theory.md): relative 1e-12.
  if (slack < -1e-12 * r.far_mass_lower_bound) ++bound_violations;
}

template <class R>
void probe_attention(HeadProbe* heads, const R* q, const R* k, nn::ScoreBias<R> bias, const R* hh_w, const R* hh_beta,
                     nn::AttentionShape s, int64_t window) {
  const int64_t BH = int64_t(s.B) * s.H, T = s.T, rows = T - window - 1;
  if (rows <= 0) return;
  std::vector<MatD> Q(BH), K(BH);
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < BH; ++bh) Q[bh] = head_matrix(q, s, bh), K[bh] = head_matrix(k, s, bh);
  const double scale = score_scale<R>(s.hd);
  std::vector<RowStats> stats(std::size_t(BH * rows));
#pragma omp parallel
  {
    std::vector<double> logits(T);
    std::vector<R> transported(hh_w ? T : 0);
#pragma omp for schedule(dynamic, 16)
    for (int64_t task = 0; task < BH * rows; ++task) {
      const int64_t bh = task / rows, i = window + 1 + task % rows;
      const double slope = bias.slopes ? bias.slopes[bh % s.H] : 0.0;
      const R* cum = bias.cum ? bias.cum + bh * T : nullptr;
      if (hh_w) {
        nn::householder_row_logits(transported.data(), q, k, hh_w, hh_beta, bh, i, s);
        std::copy(transported.begin(), transported.begin() + i + 1, logits.begin());
        add_score_bias(logits.data(), slope, cum, i);
      } else {
        row_logits(logits.data(), Q[bh], K[bh], scale, slope, cum, i);
      }
      stats[task] = attention_row_stats(logits.data(), i + 1, window);
    }
  }
  const int64_t last = last_bin_start(T);
  for (int64_t task = 0; task < BH * rows; ++task)
    heads[(task / rows) % s.H].add(stats[task], window + 1 + task % rows >= last);
}

std::optional<double> law_beta(const nn::ModelConfig& m, double f_b) {
  const nn::SchemeInfo* scheme = nn::find_scheme(m.scheme);
  if (!scheme) return std::nullopt;
  switch (scheme->angles) {
    case nn::AngleKind::rope:
      return 1.0;  // |e^{i f_b}| = 1 exactly
    case nn::AngleKind::random:
      // Example 1: E e^{i psi} = sin(a)/a for psi ~ U(-a, a), a = s f_b.
      return std::abs(theory::so2_uniform_harmonic(m.angle_scale * f_b));
    case nn::AngleKind::learned:
    case nn::AngleKind::projected:
      return std::nullopt;  // trained: the law is the table's or the stream's, not a closed form
    case nn::AngleKind::none:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<long long> law_window(const nn::ModelConfig& m, double eps) {
  std::vector<long long> w;
  for (double f : nn::angle_frequencies(m)) {
    const auto beta = law_beta(m, f);
    if (!beta) return std::nullopt;
    w.push_back(theory::mixing_window(*beta, eps));
  }
  return window_lower_median(w);
}

std::vector<BlockGap> angle_gaps(const nn::Model<float>& model, const std::vector<double>& byte_freq, double eps,
                                 const std::vector<std::complex<double>>& stream_harmonic) {
  const nn::ModelConfig& m = model.config();
  const nn::SchemeInfo* scheme = nn::find_scheme(m.scheme);
  if (!scheme || scheme->angles == nn::AngleKind::none) return {};
  const std::vector<double> f = nn::angle_frequencies(m);
  const int nb = int(f.size());
  if (scheme->angles == nn::AngleKind::projected && stream_harmonic.size() != std::size_t(m.layers) * nb)
    throw std::logic_error("angle_gaps: projected angles need the stream's step harmonics");
  std::vector<BlockGap> out;
  for (int l = 0; l < m.layers; ++l) {
    // The learned table's layout is LearnedAngles': entry (x, b) at x nb + b.
    const float* table = scheme->angles == nn::AngleKind::learned
                             ? model.params.data() + nn::layer_params(model.tensors(), l).angles
                             : nullptr;
    for (int b = 0; b < nb; ++b) {
      std::complex<double> mean;
      const char* source = "closed form";
      double beta_init = 1.0;
      switch (scheme->angles) {
        case nn::AngleKind::rope:
          mean = 1.0;  // the drift is f_b, set below
          break;
        case nn::AngleKind::random:
          mean = theory::so2_uniform_harmonic(m.angle_scale * f[b]);  // real: U(-a, a) has no drift
          beta_init = *law_beta(m, f[b]);  // drawn, not trained
          break;
        case nn::AngleKind::learned:
          for (int x = 0; x < 256; ++x) mean += byte_freq[x] * std::polar(1.0, double(table[x * nb + b]));
          source = "table";
          beta_init = nn::initial_block_beta(m, f[b]);
          break;
        case nn::AngleKind::projected:
          mean = stream_harmonic[std::size_t(l) * nb + b];
          source = "stream";
          beta_init = nn::initial_block_beta(m, f[b]);
          break;
        case nn::AngleKind::none:
          break;
      }
      const double beta = std::abs(mean);
      const double drift = scheme->angles == nn::AngleKind::rope ? f[b] : std::arg(mean);
      out.push_back({l, b, f[b], beta, drift, theory::mixing_window(beta, eps), beta_init,
                     theory::mixing_window(beta_init, eps), source});
    }
  }
  return out;
}

PhaseStats::PhaseStats(int layers, int nb, std::vector<int64_t> distances)
    : layers_(layers), nb_(nb), distances_(std::move(distances)), step_sum_(std::size_t(layers) * nb),
      steps_(layers, 0), pairs_(std::size_t(layers) * distances_.size(), 0),
      sx_(pairs_.size() * nb, 0.0), sxx_(pairs_.size() * nb * nb, 0.0) {}

void PhaseStats::add(int layer, const double* theta, int B, int T) {
  const int nb = nb_;
  std::complex<double>* steps = step_sum_.data() + std::size_t(layer) * nb;
  std::vector<double> x(nb);
  for (int b = 0; b < B; ++b) {
    const double* th = theta + int64_t(b) * T * nb;
    // psi_t = theta_t - theta_{t-1} up to 2 pi: the wrap does not change
    // e^{i psi}. From t = 1: the transport from j to i > j sums psi_{j+1..i},
    // so theta_0 (RoPE's 0) is no step of any.
    for (int64_t t = 1; t < T; ++t)
      for (int j = 0; j < nb; ++j) steps[j] += std::polar(1.0, th[t * nb + j] - th[(t - 1) * nb + j]);
    steps_[layer] += T - 1;
    for (std::size_t k = 0; k < distances_.size(); ++k) {
      const int64_t n = distances_[k];
      const std::size_t at = std::size_t(layer) * distances_.size() + k;
      double* sx = sx_.data() + at * nb;
      double* sxx = sxx_.data() + at * nb * nb;
      for (int64_t i = n; i < T; ++i) {
        for (int j = 0; j < nb; ++j) x[j] = std::cos(th[i * nb + j] - th[(i - n) * nb + j]);
        for (int j = 0; j < nb; ++j) {
          sx[j] += x[j];
          for (int jj = 0; jj < nb; ++jj) sxx[j * nb + jj] += x[j] * x[jj];
        }
        ++pairs_[at];
      }
    }
  }
}

std::vector<std::complex<double>> PhaseStats::step_harmonics() const {
  std::vector<std::complex<double>> out(step_sum_.size());
  for (int l = 0; l < layers_; ++l)
    for (int j = 0; j < nb_; ++j)
      out[std::size_t(l) * nb_ + j] = steps_[l] ? step_sum_[std::size_t(l) * nb_ + j] / double(steps_[l]) : 0.0;
  return out;
}

std::vector<PhaseStats::Row> PhaseStats::rows() const {
  std::vector<Row> out;
  const int nb = nb_;
  const std::vector<std::complex<double>> harmonics = step_harmonics();
  for (int l = 0; l < layers_; ++l)
    for (std::size_t k = 0; k < distances_.size(); ++k) {
      const std::size_t at = std::size_t(l) * distances_.size() + k;
      const double n = double(pairs_[at]);
      Row r{l, distances_[k], pairs_[at], 0, 0.0, 0.0, 0.0, 0.0};
      // X_b(n) = cos of a sum of n steps: for i.i.d. steps E X_b = Re h_b^n.
      for (int b = 0; b < nb; ++b)
        r.mean_cos_iid += std::real(std::pow(harmonics[std::size_t(l) * nb + b], double(distances_[k]))) / nb;
      if (pairs_[at] == 0) {
        out.push_back(r);
        continue;
      }
      const double* sx = sx_.data() + at * nb;
      const double* sxx = sxx_.data() + at * nb * nb;
      auto cov = [&](int a, int b) { return sxx[a * nb + b] / n - (sx[a] / n) * (sx[b] / n); };
      double total = 0, diagonal = 0, corr = 0;
      int pairs = 0;
      for (int a = 0; a < nb; ++a) {
        r.mean_cos += sx[a] / n / nb;
        diagonal += cov(a, a);
        for (int b = 0; b < nb; ++b) total += cov(a, b);
        if (cov(a, a) > 1e-12) ++r.blocks;
        for (int b = a + 1; b < nb; ++b)
          if (cov(a, a) > 1e-12 && cov(b, b) > 1e-12) corr += std::abs(cov(a, b)) / std::sqrt(cov(a, a) * cov(b, b)), ++pairs;
      }
      r.variance_ratio = diagonal > 0 ? total / diagonal : std::numeric_limits<double>::quiet_NaN();
      r.mean_abs_corr = pairs ? corr / pairs : std::numeric_limits<double>::quiet_NaN();
      out.push_back(r);
    }
  return out;
}

ReflectionStats::ReflectionStats(int layers, int heads, int hd, std::vector<int64_t> distances, int64_t start_stride)
    : layers_(layers), heads_(heads), hd_(hd), distances_(std::move(distances)),
      start_stride_(std::max<int64_t>(1, start_stride)), sum_(std::size_t(layers) * heads * hd * hd, 0.0),
      steps_(std::size_t(layers) * heads, 0), trace_sum_(std::size_t(layers) * heads * distances_.size(), 0.0),
      products_(layers, 0) {
  // add() walks each product once, reading the distances in order.
  if (!std::is_sorted(distances_.begin(), distances_.end()) ||
      std::adjacent_find(distances_.begin(), distances_.end()) != distances_.end() ||
      (!distances_.empty() && distances_.front() < 1))
    throw std::invalid_argument("ReflectionStats: distances must be positive and increasing");
}

template <class R>
void ReflectionStats::add(int layer, const R* w, const R* beta, nn::AttentionShape s) {
  const int64_t hd = s.hd;
  const int64_t longest = distances_.empty() ? 0 : distances_.back();
  // Every start j with j + longest < T reaches every distance.
  const int64_t starts = longest > 0 && longest < s.T ? (s.T - longest - 1) / start_stride_ + 1 : 0;
  products_[layer] += s.B * starts;
  for (int64_t b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      const std::size_t at = std::size_t(layer) * heads_ + h;
      Eigen::Map<MatD> sum(sum_.data() + at * hd * hd, hd, hd);
      const int64_t bh = b * s.H + h;
      const MatD W = head_matrix(w, s, bh);  // (T, hd)
      Eigen::VectorXd bt(s.T);
      for (int64_t t = 0; t < s.T; ++t) bt(t) = double(beta[bh * s.T + t]);
      sum.noalias() += W.transpose() * bt.asDiagonal() * W;
      steps_[at] += s.T;
      // P_n = H_{j+1} ... H_{j+n}, one step at a time: P <- P - beta (P w) w^T.
      MatD P(hd, hd);
      Eigen::VectorXd Pw(hd);
      for (int64_t i = 0; i < starts; ++i) {
        const int64_t j = i * start_stride_;
        P.setIdentity();
        for (std::size_t n = 1, k = 0; k < distances_.size(); ++n) {
          const auto wt = W.row(j + n).transpose();
          Pw.noalias() = P * wt;
          P.noalias() -= bt(j + n) * Pw * wt.transpose();
          if (int64_t(n) == distances_[k]) trace_sum_[at * distances_.size() + k++] += P.trace();
        }
      }
    }
}

std::vector<double> ReflectionStats::mean_step_eigenvalues(std::size_t at) const {
  const MatD M = MatD::Identity(hd_, hd_) - Eigen::Map<const MatD>(sum_.data() + at * hd_ * hd_, hd_, hd_) /
                                                double(std::max<int64_t>(steps_[at], 1));
  Eigen::SelfAdjointEigenSolver<MatD> eig(M, Eigen::EigenvaluesOnly);
  return {eig.eigenvalues().data(), eig.eigenvalues().data() + hd_};
}

std::vector<BlockGap> ReflectionStats::gaps(double eps, double beta_init, int init_span) const {
  std::vector<BlockGap> out;
  const long long window_init = theory::mixing_window(beta_init, eps);
  const int unvisited = std::max(0, hd_ - init_span);
  for (int l = 0; l < layers_; ++l)
    for (int h = 0; h < heads_; ++h) {
      std::vector<double> lambda = mean_step_eigenvalues(std::size_t(l) * heads_ + h);
      std::sort(lambda.begin(), lambda.end(), [](double a, double b) { return std::abs(a) > std::abs(b); });
      for (int j = 0; j < hd_; ++j) {
        // An eigenvalue within rounding of 1 is a direction never visited.
        const double beta = std::abs(lambda[j]) > 1 - 1e-12 ? 1.0 : std::abs(lambda[j]);
        const bool spanned = j >= unvisited;
        out.push_back({l, h * hd_ + j, std::numeric_limits<double>::quiet_NaN(), beta, lambda[j] < 0 ? M_PI : 0.0,
                       theory::mixing_window(beta, eps), spanned ? beta_init : 1.0, spanned ? window_init : -1,
                       "stream"});
      }
    }
  return out;
}

std::vector<PhaseRow> ReflectionStats::rows() const {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<PhaseRow> out;
  const std::size_t nd = distances_.size();
  for (int l = 0; l < layers_; ++l) {
    const int64_t products = products_[l];
    for (std::size_t k = 0; k < nd; ++k) out.push_back({l, distances_[k], products, hd_, 0.0, nan, nan, 0.0});
    PhaseRow* rows = out.data() + out.size() - nd;
    for (int h = 0; h < heads_; ++h) {
      const std::size_t at = std::size_t(l) * heads_ + h;
      const std::vector<double> lambda = mean_step_eigenvalues(at);
      for (std::size_t k = 0; k < nd; ++k) {
        if (products) rows[k].mean_cos += trace_sum_[at * nd + k] / double(products) / hd_ / heads_;
        // For i.i.d. steps E P_n = M^n (Example 2).
        for (double mu : lambda) rows[k].mean_cos_iid += std::pow(mu, double(distances_[k])) / hd_ / heads_;
      }
    }
  }
  return out;
}

int initial_reflection_span(const nn::ModelConfig& m) {
  const nn::SchemeInfo* s = nn::find_scheme(m.scheme);
  const int hd = m.head_dim();
  return s && s->path_w ? std::min(hd, nn::kPathConvTaps * nn::path_rank(m)) : hd;
}

double initial_reflection_beta(const nn::ModelConfig& m) {
  const double b0 = m.householder_beta == "reflection" ? 2.0 : 1.0;
  return std::abs(1 - b0 / double(initial_reflection_span(m)));
}

std::string probe_unreadable(const nn::SchemeInfo& s) {
  if (s.householder && s.angles != nn::AngleKind::none)
    return "it transports by rotary angles and Householder steps at once, and the probe reads one or the other";
  return "";
}

BlockShares::BlockShares(int layers, int nb)
    : layers_(layers), nb_(nb), q_(std::size_t(layers) * nb, 0.0), k_(std::size_t(layers) * nb, 0.0) {}

template <class R>
void BlockShares::add(int layer, const R* q, const R* k, nn::AttentionShape s) {
  double* sq = q_.data() + std::size_t(layer) * nb_;
  double* sk = k_.data() + std::size_t(layer) * nb_;
  const int64_t rows = s.B * s.H * s.T;
  for (int64_t r = 0; r < rows; ++r)
    for (int b = 0; b < nb_; ++b) {
      const R* qb = q + r * s.hd + 2 * b;
      const R* kb = k + r * s.hd + 2 * b;
      sq[b] += std::hypot(double(qb[0]), double(qb[1]));
      sk[b] += std::hypot(double(kb[0]), double(kb[1]));
    }
}

std::vector<double> BlockShares::shares() const {
  std::vector<double> out(q_.size(), 0.0);
  for (int l = 0; l < layers_; ++l) {
    double total = 0;
    for (int b = 0; b < nb_; ++b) total += q_[l * nb_ + b] * k_[l * nb_ + b];
    for (int b = 0; b < nb_; ++b) out[l * nb_ + b] = total > 0 ? q_[l * nb_ + b] * k_[l * nb_ + b] / total : 0.0;
  }
  return out;
}

std::vector<int64_t> phase_distances(int64_t T) {
  std::vector<int64_t> out;
  for (int64_t div : {8, 4, 2}) {
    const int64_t n = std::max<int64_t>(1, T / div);
    if (n < T && (out.empty() || out.back() != n)) out.push_back(n);
  }
  return out;
}

long long window_lower_median(std::vector<long long> w) {
  // Never-mixing blocks (-1) sort last.
  for (auto& x : w) x = x < 0 ? std::numeric_limits<long long>::max() : x;
  std::sort(w.begin(), w.end());
  const long long med = w[(w.size() - 1) / 2];
  return med == std::numeric_limits<long long>::max() ? -1 : med;
}

long long window_max(const std::vector<long long>& w) {
  long long out = 0;
  for (long long x : w) {
    if (x < 0) return -1;
    out = std::max(out, x);
  }
  return out;
}

std::string probe_csv_header() {
  return "run,scheme,seed,train_len,eval_len,window,layer,head,windows,queries,far_mass,far_norm,entropy,logit_range,"
         "far_mass_lower_bound,far_mass_last_bin,bound_violations\n";
}

std::string probe_angles_csv_header() {
  return "run,scheme,seed,train_len,layer,block,frequency,eps,beta,drift,mixing_window,layer_window_median,"
         "layer_window_max,beta_source,beta_init,mixing_window_init,layer_window_median_init,score_share\n";
}

std::string probe_angles_path(const std::string& csv) { return csv_with_suffix(csv, "-angles.csv"); }

std::string probe_phases_csv_header() {
  return "run,scheme,seed,train_len,layer,distance,pairs,blocks,mean_cos,variance_ratio,mean_abs_corr,mean_cos_iid\n";
}

std::string probe_phases_path(const std::string& csv) { return csv_with_suffix(csv, "-phases.csv"); }

namespace {

// The files --update merges into, read and checked before any work.
using Rows = std::vector<std::vector<std::string>>;
struct ProbeFiles {
  Rows rows, angle_rows, phase_rows;
  nlohmann::json runs = nlohmann::json::array();
};

// The text of `path`, an existing file --update keeps rows from.
std::string kept_file(const std::string& path) {
  if (!fs::is_regular_file(path))
    throw ConfigError(fmt::format("--update keeps the other runs' rows from {}, which does not exist; probe "
                                  "without --update first",
                                  path));
  return read_text_file(path);
}

// The rows of the probe CSV `path`, whose header must be `header` (one of the
// probe_*_csv_header()), each checked as the probe writes its rows (every
// cell but the run, scheme and beta_source a number). A probe written before the
// last columns were added has the first columns of it: its rows get the
// missing columns empty (only the runs could fill them), and their names go
// to `missing`.
Rows kept_rows(const std::string& path, const std::string& header, std::vector<std::string>& missing) {
  const std::string text = kept_file(path);
  const auto now = split_list(header.substr(0, header.find('\n')));
  const auto then = split_list(std::string_view(text).substr(0, text.find('\n')));
  // The run's key (run,scheme,seed,train_len) and more must be there.
  if (!then || then->size() <= 4 || then->size() > now->size() ||
      !std::equal(then->begin(), then->end(), now->begin()))
    throw ConfigError(fmt::format("--update: {} does not start with the probe's header {},... (or an older "
                                  "probe's, its first columns)",
                                  path, now->front()));
  CsvTable t;
  try {
    t = parse_csv(text, path);
    require_number_cells(t, {"run", "scheme", "beta_source"}, path);
  } catch (const CsvError& e) {
    throw ConfigError(fmt::format("--update: {}; its rows cannot be kept", e.what()));
  }
  if (then->size() < now->size()) missing.insert(missing.end(), now->begin() + then->size(), now->end());
  for (auto& row : t.rows) row.resize(now->size());
  return t.rows;
}

ProbeFiles read_probe_files(const ProbeOptions& o) {
  ProbeFiles f;
  if (!o.update) return f;
  // Columns the kept rows have empty: they were probed before those existed.
  std::vector<std::string> not_probed;
  f.rows = kept_rows(o.csv, probe_csv_header(), not_probed);
  f.angle_rows = kept_rows(probe_angles_path(o.csv), probe_angles_csv_header(), not_probed);
  f.phase_rows = kept_rows(probe_phases_path(o.csv), probe_phases_csv_header(), not_probed);
  const auto side = nlohmann::json::parse(kept_file(o.csv + ".json"), nullptr, false);
  if (side.is_discarded() || side.value("command", "") != "probe" || !side.contains("runs"))
    throw ConfigError(fmt::format("--update: {}.json is not a probe's sidecar", o.csv));
  // Rows probed over other windows or with another eps are not comparable.
  if (side.value("lengths_text", "") != o.lengths || side.value("max_windows", -1) != o.max_windows ||
      side.value("eps", -1.0) != o.eps)
    throw ConfigError(fmt::format("--update: {} was probed with --lengths {} --max-windows {} --eps {}; probe "
                                  "with the same, or without --update",
                                  o.csv, side.value("lengths_text", "?"), side.value("max_windows", -1),
                                  side.value("eps", -1.0)));
  f.runs = side["runs"];
  // Said on each kept run, so that it outlives the next merge.
  for (auto& run : f.runs)
    for (const auto& column : not_probed) run["columns_not_probed"].push_back(column);
  return f;
}

// `kept` with each probed run's rows `fresh[i]` in place of the rows of the
// run whose folder resolves to `probed[i]` (run_identity), or after the rest
// where it had none.
std::string replace_run_rows(const Rows& kept, const std::vector<std::string>& probed,
                             const std::vector<std::string>& fresh) {
  std::vector<bool> placed(probed.size(), false);
  std::string out;
  for (const auto& row : kept) {
    const auto i = std::find(probed.begin(), probed.end(), run_identity(row[0]));
    if (i == probed.end()) {
      out += csv_line(row);
    } else if (const auto at = std::size_t(i - probed.begin()); !placed[at]) {
      out += fresh[at];
      placed[at] = true;
    }
  }
  for (std::size_t i = 0; i < probed.size(); ++i)
    if (!placed[i]) out += fresh[i];
  return out;
}

// A task run's probe reads task sequences of its own law, laid end to end
// (data::task_stream): window w of length L is sequence w, so every probed
// row is a row of a real sequence of that length. Seed 1 and streams apart
// from evaluation's sets (runs/task_eval.h draws below 2^60).
constexpr int64_t kTaskPhaseWindows = 64;
std::vector<uint8_t> task_probe_stream(const RunConfig& c, int64_t L, int64_t windows) {
  return data::task_stream(c.task, L, windows, 1, (uint64_t(1) << 61) | (uint64_t(L) << 20));
}

}  // namespace

std::string probe_runs(const ProbeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.runs.empty()) throw ConfigError("--run: name at least one run directory");
  if (!(o.eps > 0 && o.eps < 1)) throw ConfigError(fmt::format("--eps: {} is not in (0, 1)", o.eps));
  if (o.max_windows < 1 || o.max_windows > kMaxProbeWindows)
    throw ConfigError(fmt::format("--max-windows: {} is not accepted; an integer in [1, {}]", o.max_windows,
                                  kMaxProbeWindows));
  if (o.window < 0) throw ConfigError(fmt::format("--window: {} must be at least 1", o.window));
  // Every run's configuration, lengths and window are checked before any work.
  std::size_t units = 0, done = 0;
  // A run is its resolved folder: its rows and sidecar entry are found by it.
  std::vector<std::string> identities;
  for (const auto& dir : o.runs) {
    const std::string id = run_identity(dir);
    if (const auto same = std::find(identities.begin(), identities.end(), id); same != identities.end())
      throw ConfigError(fmt::format("--run: {} and {} are the same run; name it once", o.runs[same - identities.begin()],
                                    dir));
    identities.push_back(id);
  }
  for (const auto& dir : o.runs) {
    const RunConfig c = load_run_dir_config(dir);
    if (const std::string why = probe_unreadable(*nn::find_scheme(c.model.scheme)); !why.empty())
      throw ConfigError(fmt::format("--run: {} has scheme {}, which the probe cannot read: {}", dir, c.model.scheme,
                                    why));
    std::vector<int64_t> lengths;
    try {
      lengths = parse_lengths(o.lengths, c.model.context);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("--lengths: ") + e.what());
    }
    const int64_t W = o.window ? o.window : c.model.context / 4;
    const int64_t shortest = *std::min_element(lengths.begin(), lengths.end());
    // W = L - 1 would leave no query with a far key.
    if (W < 1 || W >= shortest - 1)
      throw ConfigError(fmt::format("--window: {} must be at least 1 and below every length minus 1 (the shortest "
                                    "length of {} is {})",
                                    W, dir, shortest));
    if (!fs::exists(checkpoint_path(dir)))
      throw RunDirError(fmt::format("{} holds no checkpoint yet; train it first (routelab train --resume)", dir));
    units += lengths.size() + 1;
  }
  const auto after_pass = [&](int64_t, int) {
    if (o.hooks.after_pass) o.hooks.after_pass();
  };
  const auto after_unit = [&] {
    if (o.hooks.after_unit) o.hooks.after_unit(++done, units);
  };

  // Writing into a run waits for no training of it.
  const auto locks = lock_runs_written(o.runs, {o.csv, probe_angles_path(o.csv), probe_phases_path(o.csv)});
  const ProbeFiles kept = read_probe_files(o);

  OutputFiles files("probe");
  for (const auto& dir : o.runs) files.input(config_path(dir)), files.input(checkpoint_path(dir));
  files.output(o.csv, "--csv");
  files.output(probe_angles_path(o.csv), "the angles CSV (--csv FILE-angles.csv)");
  files.output(probe_phases_path(o.csv), "the phases CSV (--csv FILE-phases.csv)");
  files.output(o.csv + ".json", "the sidecar (--csv FILE.json)");
  // Per run, in --run order: its rows.
  std::vector<std::string> run_rows, run_angle_rows, run_phase_rows;
  nlohmann::json runs_json = kept.runs;
  for (const auto& dir : o.runs) {
    std::string rows, angle_rows, phase_rows;
    TrainedRun run = load_trained_run(dir, o.lengths);
    const RunConfig& c = run.config;
    nn::Model<float>& model = *run.model;
    // A task run reads the task's own sequences (task_probe_stream), a corpus
    // run its validation stream.
    const std::vector<uint8_t> task_val =
        c.is_task() ? task_probe_stream(c, c.model.context, kTaskPhaseWindows) : std::vector<uint8_t>{};
    const std::vector<uint8_t>& val = c.is_task() ? task_val : run.corpus.val;
    const int64_t W = o.window ? o.window : c.model.context / 4;
    const int H = c.model.heads, layers = c.model.layers;
    const std::string key = fmt::format("{},{},{},{}", csv_field(dir), c.model.scheme, c.train.seed, c.model.context);
    nlohmann::json per_length = nlohmann::json::array();
    for (int64_t L : run.lengths) {
      const std::vector<uint8_t> task_windows =
          c.is_task() ? task_probe_stream(c, L, o.max_windows) : std::vector<uint8_t>{};
      const std::vector<uint8_t>& val = c.is_task() ? task_windows : run.corpus.val;
      if (int64_t(val.size()) < L + 1)
        throw ConfigError(fmt::format("--lengths: {} is longer than the validation stream of {} ({} bytes)", L, dir,
                                      val.size()));
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t windows = std::min<int64_t>(o.max_windows, int64_t(val.size() - 1) / L);
      std::vector<HeadProbe> heads(std::size_t(layers) * H);
      model.set_attention_observer(probe_observer<float>(heads.data(), W));
      // evaluate()'s windows and pass ids: the same bytes, the same random angles.
      forward_windows(model, val, L, windows, after_pass);
      model.set_attention_observer(nullptr);
      for (int l = 0; l < layers; ++l)
        for (int h = 0; h < H; ++h) {
          const HeadProbe& p = heads[l * H + h];
          const double n = double(p.queries);
          rows += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", key, L, W, l, h, windows, p.queries,
                              format_number(p.far_mass / n), format_number(p.far_norm / n),
                              format_number(p.entropy / n), format_number(p.logit_range / n),
                              format_number(p.far_mass_lower_bound / n),
                              format_number(p.far_mass_last_bin / double(p.last_bin_queries)), p.bound_violations);
        }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      per_length.push_back({{"eval_len", L}, {"windows", windows}, {"seconds", secs}});
      if (o.progress)
        fmt::print(stderr, "probe {} L={}: {} windows in {:.1f} s\n", dir, L, windows, secs);
      after_unit();
    }

    std::vector<double> freq(256, 0.0);
    for (uint8_t x : val) freq[x] += 1.0 / double(val.size());
    // The angles and steps over the whole validation stream in training-length windows.
    const nn::SchemeInfo* scheme = nn::find_scheme(c.model.scheme);
    const bool angles = scheme->angles != nn::AngleKind::none, reflects = scheme->householder;
    const int nb = c.model.head_dim() / 2;
    const int64_t T = c.model.context;
    PhaseStats phases(layers, nb, phase_distances(T));
    ReflectionStats reflections(layers, H, c.model.head_dim(), phase_distances(T), std::max<int64_t>(1, T / 16));
    BlockShares shares(layers, nb);
    double phase_secs = 0;
    if ((angles || reflects) && int64_t(val.size()) > T) {
      const auto t0 = std::chrono::steady_clock::now();
      if (angles)
        model.set_angle_observer(
            [&](int layer, const double* theta, int B, int Tw, int) { phases.add(layer, theta, B, Tw); });
      model.set_attention_observer([&](int layer, const float* q, const float* k, nn::ScoreBias<float>,
                                       const float* hh_w, const float* hh_beta, nn::AttentionShape s) {
        if (hh_w) reflections.add(layer, hh_w, hh_beta, s);
        else shares.add(layer, q, k, s);
      });
      forward_windows(model, val, T, int64_t(val.size() - 1) / T, after_pass);
      model.set_angle_observer(nullptr);
      model.set_attention_observer(nullptr);
      phase_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const auto& r : reflects ? reflections.rows() : phases.rows())
        phase_rows += fmt::format("{},{},{},{},{},{},{},{},{}\n", key, r.layer, r.distance, r.pairs, r.blocks,
                                  format_number(r.mean_cos), format_number(r.variance_ratio),
                                  format_number(r.mean_abs_corr), format_number(r.mean_cos_iid));
      if (o.progress)
        fmt::print(stderr, "probe {} phases: {} windows of {} in {:.1f} s\n", dir, (val.size() - 1) / T, T, phase_secs);
    }
    const std::vector<BlockGap> gaps = reflects ? reflections.gaps(o.eps, initial_reflection_beta(c.model),
                                                                   initial_reflection_span(c.model))
                                                : angle_gaps(model, freq, o.eps, phases.step_harmonics());
    const std::vector<double> share = shares.shares();
    for (int l = 0; l < layers && !gaps.empty(); ++l) {
      std::vector<long long> w, w_init;
      for (const auto& g : gaps)
        if (g.layer == l) w.push_back(g.mixing_window), w_init.push_back(g.mixing_window_init);
      const std::string median = window_text(window_lower_median(w)), max = window_text(window_max(w));
      const std::string median_init = window_text(window_lower_median(w_init));
      for (const auto& g : gaps)
        if (g.layer == l)
          angle_rows += fmt::format(
              "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", key, l, g.block, format_number(g.frequency),
              format_number(o.eps), format_number(g.beta), format_number(g.drift), window_text(g.mixing_window),
              median, max, g.source, format_number(g.beta_init), window_text(g.mixing_window_init), median_init,
              reflects || phase_secs == 0 ? std::string() : format_number(share[std::size_t(l) * nb + g.block]));
    }
    after_unit();
    run_rows.push_back(std::move(rows));
    run_angle_rows.push_back(std::move(angle_rows));
    run_phase_rows.push_back(std::move(phase_rows));
    const nlohmann::json entry = {{"run", dir},
                                  {"checkpoint_step", run.step},
                                  {"config", to_json(c)},
                                  {"window", W},
                                  {"lengths", per_length},
                                  {"phase_windows", phase_secs > 0 ? int64_t(val.size() - 1) / T : 0},
                                  {"phase_seconds", phase_secs}};
    // Its entry replaces the first of the kept ones of the same folder; the
    // others (one run named two ways by an older probe) go.
    const auto same = [&](const nlohmann::json& r) {
      return r.is_object() && r.contains("run") && r["run"].is_string() &&
             run_identity(r["run"].get<std::string>()) == run_identity(dir);
    };
    nlohmann::json merged = nlohmann::json::array();
    bool placed = false;
    for (const auto& r : runs_json)
      if (!same(r)) merged.push_back(r);
      else if (!placed) merged.push_back(entry), placed = true;
    if (!placed) merged.push_back(entry);
    runs_json = std::move(merged);
  }

  const std::string csv = probe_csv_header() + replace_run_rows(kept.rows, identities, run_rows);
  files.set(probe_angles_path(o.csv),
            probe_angles_csv_header() + replace_run_rows(kept.angle_rows, identities, run_angle_rows));
  files.set(probe_phases_path(o.csv),
            probe_phases_csv_header() + replace_run_rows(kept.phase_rows, identities, run_phase_rows));
  files.set(o.csv, csv);
  files.set(o.csv + ".json", sidecar_text(
      o.csv,
      {{"command", "probe"},
       {"runs", runs_json},
       {"lengths_text", o.lengths},
       {"max_windows", o.max_windows},
       {"eps", o.eps},
       {"angles_csv", probe_angles_path(o.csv)},
       {"phases_csv", probe_phases_path(o.csv)},
       {"protocol",
        {{"stream", "validation"},
         {"windows", "the first min(max_windows, all) of eval's consecutive windows of L bytes, with eval's pass ids "
                     "(the same random angles)"},
         {"rows", "every query i > window of every head, rebuilt in double from the model's q, k and score bias"},
         {"far_set", "keys j with i - j > window (M = i - window); near set the last window + 1 keys (K)"},
         {"logit_range", "(max - min)/2 of the row's logits, bias included"},
         {"far_mass_lower_bound", "Proposition 3 (B.6): M / (M + K e^{2 logit_range})"},
         {"entropy", "nats"},
         {"far_mass_last_bin", "mean far mass over queries in eval's last position bin [2^k, L)"},
         {"means", "over every scored query of every probed window"},
         {"angles", "learned: psi_b = table[x][b] under the validation byte frequencies; projected: the "
                    "empirical law of psi_b = theta_t - theta_{t-1} over every position of the validation stream "
                    "in training-length windows; random: U(-s f_b, s f_b); rope: beta = 1. "
                    "mixing_window = ceil(log(1/eps)/log(1/beta)) (B.2), inf when beta = 1; "
                    "layer_window_median = lower median over blocks, layer_window_max = max over blocks; "
                    "beta_init: the init's closed form (normal and projected e^{-sigma^2/2}, uniform sin(h)/h, "
                    "rope 1); householder: block = head * head_dim + j, the j-th eigendirection (by decreasing beta) of "
                    "the head's mean step M = E[I - beta_t w_t w_t^T] over every position of the validation stream "
                    "in training-length windows, beta = |1 - mu_j| its eigenvalue's modulus (Example 2), drift 0 or "
                    "pi by its sign, frequency empty, beta_init |1 - b0/span| for w isotropic in the span it has at "
                    "the start (b0 = 1 PaTH, 2 reflection; span = head_dim, path_*: min(head_dim, 3 r)), 1 outside "
                    "it; score_share: E|q_b| E|k_b| over the same windows as a share of the layer's sum "
                    "over blocks (empty for householder)"},
         {"phases", "over the same training-length windows, per layer and distance n (T/8, T/4, T/2): X_b = "
                    "cos(theta_{i,b} - theta_{i-n,b}) for i >= n; variance_ratio = Var(sum_b X_b) / sum_b "
                    "Var(X_b) (1 when the blocks are independent, Theorem 2's assumption); mean_abs_corr over "
                    "pairs of blocks with Var(X_b) > 1e-12 (biased up by about sqrt(2/(pi pairs)) at zero "
                    "correlation, more since pairs in one window overlap); mean_cos_iid = (1/B) sum_b Re h_b^n, "
                    "h_b the steps' first harmonic: mean_cos if the steps were i.i.d.; householder: mean_cos = "
                    "(1/d) tr P_n, P_n = H_{j+1} ... H_{j+n} from starts j every T/16 positions (pairs: products "
                    "per head), mean_cos_iid = (1/d) tr M^n, both averaged over heads, variance_ratio and "
                    "mean_abs_corr empty"}}}},
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  files.commit();
  return csv;
}

#define ROUTELAB_PROBE(R)                                                                                  \
  template void attention_row_logits<R>(double*, const R*, const R*, nn::ScoreBias<R>, nn::AttentionShape, \
                                        int64_t, int, int64_t);                                            \
  template void probe_attention<R>(HeadProbe*, const R*, const R*, nn::ScoreBias<R>, const R*, const R*,   \
                                   nn::AttentionShape, int64_t);                                           \
  template void ReflectionStats::add<R>(int, const R*, const R*, nn::AttentionShape);                      \
  template void BlockShares::add<R>(int, const R*, const R*, nn::AttentionShape);
ROUTELAB_PROBE(float)
ROUTELAB_PROBE(double)
#undef ROUTELAB_PROBE

}  // namespace routelab::runs
