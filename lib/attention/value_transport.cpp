#include "attention/value_transport.h"

#include <algorithm>
#include <cmath>

#include "groups/family.h"
#include "groups/so2.h"
#include "groups/so2_phases.h"

namespace routelab {

void FarTransportAccumulator::add_far(double logit, const double* cos_theta, const double* sin_theta) {
  mass_.add_far(logit);
  if (logit > max_) {
    // A new maximum: rescale the sums kept against the old one.
    const double r = std::exp(max_ - logit);
    for (auto& z : sum_) z *= r;
    far_sum_ *= r;
    max_ = logit;
  }
  const double e = std::exp(logit - max_);
  far_sum_ += e;
  for (int b = 0; b < blocks(); ++b) sum_[b] += e * std::complex<double>(cos_theta[b], -sin_theta[b]);
}

std::complex<double> FarTransportAccumulator::t(int b) const {
  return far_sum_ > 0 ? far_mass() * sum_[b] / far_sum_ : std::complex<double>(0.0);
}

double FarTransportAccumulator::max_abs_t() const {
  double m = 0;
  for (int b = 0; b < blocks(); ++b) m = std::max(m, std::abs(t(b)));
  return m;
}

FarWeights parse_far_weights(const std::string& text) {
  for (FarWeights w : {FarWeights::uniform, FarWeights::geometric, FarWeights::separate, FarWeights::same})
    if (text == far_weights_name(w)) return w;
  throw BadInput("weights", "'" + text + "' is not accepted; one of uniform, geometric, separate, same");
}

std::string far_weights_name(FarWeights w) {
  switch (w) {
    case FarWeights::uniform: return "uniform";
    case FarWeights::geometric: return "geometric";
    case FarWeights::separate: return "separate";
    case FarWeights::same: return "same";
  }
  return "";
}

namespace {

// Accumulated phases Theta_b += omega_b + U[-a, a], one step at a time; the
// uniforms are drawn kSteps steps at a time (the same stream words, in order).
class PhaseWalk {
 public:
  PhaseWalk(const ValueModel& m, Stream& s) : m_(m), s_(s), theta_(m.blocks, 0.0), u_(kSteps * m.blocks) {}
  const double* step() {
    if (next_ == kSteps) {
      s_.uniforms(u_.data(), u_.size());
      next_ = 0;
    }
    const double* u = &u_[std::size_t(next_++) * m_.blocks];
    for (int b = 0; b < m_.blocks; ++b) theta_[b] = wrap_phase(theta_[b] + m_.omega[b] + m_.a * (2.0 * u[b] - 1.0));
    return theta_.data();
  }

 private:
  static constexpr int kSteps = 64;
  const ValueModel& m_;
  Stream& s_;
  std::vector<double> theta_, u_;
  int next_ = kSteps;
};

}  // namespace

QueryTransport run_query(const ValueModel& m, Stream& values, Stream& scores, const FarSourceVisitor& visit) {
  const int B = m.blocks;
  const long long M = m.far_count();
  const bool softmax = m.weights == FarWeights::separate || m.weights == FarWeights::same;
  std::vector<double> position_theta(B), c(B), s(B);
  PhaseWalk value_walk(m, values), score_walk(m, scores);
  FarTransportAccumulator acc(B);

  // Fixed weights put the whole near mass 1 - rho on one near logit, so the
  // far logits are log alpha_k. Geometric: alpha_k = rho e^{-g (k - w)} / Z,
  // g = 4 / M, Z = sum_{j < M} e^{-g j} = expm1(-4) / expm1(-g).
  const double g = 4.0 / double(M);
  const double log_geometric_norm = std::log(std::expm1(-4.0) / std::expm1(-g));
  if (!softmax) acc.add_near(std::log1p(-m.rho));
  else acc.add_near(m.lambda);  // offset 0, the query itself: S = 1

  for (long long k = 1; k <= m.L; ++k) {
    const bool far = k >= m.w;
    const double* theta = position_theta.data();
    if (m.a > 0) theta = value_walk.step();
    if (!far && !softmax) continue;
    if (m.a == 0)
      for (int b = 0; b < B; ++b) position_theta[b] = wrap_angle(m.omega[b] * double(k));
    double logit = 0;
    if (m.weights == FarWeights::separate) {
      const double* score_theta = score_walk.step();
      double sum = 0;
      for (int b = 0; b < B; ++b) sum += std::cos(score_theta[b]);
      logit = m.lambda * sum / B;
      if (!far) {
        acc.add_near(logit);
        continue;
      }
    }
    for (int b = 0; b < B; ++b) {
      c[b] = std::cos(theta[b]);
      s[b] = std::sin(theta[b]);
    }
    if (m.weights == FarWeights::same) {
      double sum = 0;
      for (int b = 0; b < B; ++b) sum += c[b];
      logit = m.lambda * sum / B;
      if (!far) {
        acc.add_near(logit);
        continue;
      }
    }
    if (m.weights == FarWeights::uniform) logit = std::log(m.rho / double(M));
    if (m.weights == FarWeights::geometric) logit = std::log(m.rho) - g * double(k - m.w) - log_geometric_norm;
    acc.add_far(logit, c.data(), s.data());
    if (visit) visit(k, logit, c.data(), s.data());
  }

  QueryTransport out;
  out.t.resize(B);
  for (int b = 0; b < B; ++b) out.t[b] = acc.t(b);
  out.rho = acc.far_mass();
  out.a = acc.far_norm();
  out.max_abs_t = acc.max_abs_t();
  return out;
}

FarEnvironment far_environment(const ValueModel& m, Stream& values, Stream& scores) {
  FarEnvironment env;
  env.blocks = m.blocks;
  std::vector<double> logits;
  env.transport = run_query(m, values, scores, [&](long long, double logit, const double* c, const double* s) {
    logits.push_back(logit);
    env.cos_theta.insert(env.cos_theta.end(), c, c + m.blocks);
    env.sin_theta.insert(env.sin_theta.end(), s, s + m.blocks);
  });
  // alpha_j = rho_D e^{l_j} / sum_D e^{l}.
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double l : logits) sum += std::exp(l - top);
  for (double l : logits) env.alpha.push_back(env.transport.rho * std::exp(l - top) / sum);
  return env;
}

Eigen::MatrixXd far_transport_matrix(const FarEnvironment& env) {
  const int B = env.blocks;
  Eigen::MatrixXd T = Eigen::MatrixXd::Zero(2 * B, 2 * B);
  for (long long j = 0; j < env.far_count(); ++j)
    add_far_source(T, env.alpha[j], &env.cos_theta[j * B], &env.sin_theta[j * B]);
  return T;
}

void add_far_source(Eigen::MatrixXd& T, double alpha, const double* cos_theta, const double* sin_theta) {
  for (int b = 0; b < int(T.rows()) / 2; ++b) {
    const double c = cos_theta[b], s = sin_theta[b];
    // R(-Theta) = [[cos, sin], [-sin, cos]]
    T(2 * b, 2 * b) += alpha * c;
    T(2 * b, 2 * b + 1) += alpha * s;
    T(2 * b + 1, 2 * b) -= alpha * s;
    T(2 * b + 1, 2 * b + 1) += alpha * c;
  }
}

void shared_background_error(const FarEnvironment& env, double c0, double sigma_w, Stream& s, double* e_qkv,
                             double* e_qk) {
  const int B = env.blocks, d = 2 * B;
  std::vector<double> G(d), w(d);
  s.normals(G.data(), std::size_t(d));
  std::fill(e_qkv, e_qkv + d, 0.0);
  std::fill(e_qk, e_qk + d, 0.0);
  for (long long j = 0; j < env.far_count(); ++j) {
    s.normals(w.data(), std::size_t(d));
    const double alpha = env.alpha[j];
    for (int b = 0; b < B; ++b) {
      const double x = c0 * G[2 * b] + sigma_w * w[2 * b], y = c0 * G[2 * b + 1] + sigma_w * w[2 * b + 1];
      const double c = env.cos_theta[j * B + b], sn = env.sin_theta[j * B + b];
      e_qk[2 * b] += alpha * x;
      e_qk[2 * b + 1] += alpha * y;
      // (x + iy) e^{-i Theta}
      e_qkv[2 * b] += alpha * (c * x + sn * y);
      e_qkv[2 * b + 1] += alpha * (c * y - sn * x);
    }
  }
}

}  // namespace routelab
