#include "nn/scheme.h"

#include <cmath>
#include <stdexcept>

#include "nn/streams.h"
#include "rng/stream.h"

namespace routelab::nn {

const std::vector<SchemeInfo>& all_schemes() {
  static const std::vector<SchemeInfo> s = {
      {"nope", AngleKind::none, false, false},         {"rope", AngleKind::rope, false, false},
      {"rope_qkv", AngleKind::rope, true, false},      {"random_qk", AngleKind::random, false, false},
      {"random_qkv", AngleKind::random, true, false},  {"learned_qk", AngleKind::learned, false, false},
      {"learned_qkv", AngleKind::learned, true, false}, {"alibi", AngleKind::none, false, true},
      {"learned_qkv_alibi", AngleKind::learned, true, true},
      {"random_qkv_alibi", AngleKind::random, true, true},
      {"learned_qkv_forget", AngleKind::learned, true, false, true},
      {"householder_qk", AngleKind::none, false, false, false, true},
      {"householder_qkv", AngleKind::none, true, false, false, true},
  };
  return s;
}

const SchemeInfo* find_scheme(const std::string& name) {
  for (const auto& s : all_schemes())
    if (s.name == name) return &s;
  return nullptr;
}

std::string scheme_names() {
  std::string out;
  for (const auto& s : all_schemes()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

std::vector<double> angle_frequencies(const ModelConfig& m) {
  const int hd = m.head_dim();
  std::vector<double> f(hd / 2);
  for (int b = 0; b < hd / 2; ++b) f[b] = std::pow(m.rope_base, -2.0 * b / hd);
  return f;
}

std::vector<double> alibi_slopes(int heads) {
  auto pow2_slopes = [](int n) {
    std::vector<double> s(n);
    const double start = std::pow(2.0, -8.0 / n);
    for (int i = 0; i < n; ++i) s[i] = std::pow(start, i + 1);
    return s;
  };
  int p = 1;
  while (p * 2 <= heads) p *= 2;
  std::vector<double> s = pow2_slopes(p);
  if (p == heads) return s;
  const std::vector<double> extra = pow2_slopes(2 * p);
  for (int i = 0; int(s.size()) < heads; i += 2) s.push_back(extra[i]);
  return s;
}

namespace {

// Wrapped to [-pi, pi]: sin and cos of a huge argument lose digits.
inline double wrap(double x) { return std::remainder(x, 2.0 * M_PI); }

template <class R>
class RopeAngles final : public AngleSource<R> {
 public:
  explicit RopeAngles(std::vector<double> f) : f_(std::move(f)) {}
  void angles(double* theta, const int*, int B, int T, int, uint64_t, const R*, int) const override {
    const int nb = int(f_.size());
    for (int b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int j = 0; j < nb; ++j) theta[(int64_t(b) * T + t) * nb + j] = wrap(double(t) * f_[j]);
  }

 private:
  std::vector<double> f_;
};

template <class R>
class RandomAngles final : public AngleSource<R> {
 public:
  RandomAngles(std::vector<double> half_width, uint64_t seed) : w_(std::move(half_width)), seed_(seed) {}
  void angles(double* theta, const int*, int B, int T, int layer, uint64_t pass, const R*,
              int first_b) const override {
    const int nb = int(w_.size());
    std::vector<double> u(nb);
    for (int b = 0; b < B; ++b) {
      Stream s(seed_, random_angle_stream(pass, layer, uint64_t(first_b + b)));
      std::vector<double> sum(nb, 0.0);
      for (int64_t t = 0; t < T; ++t) {
        s.uniforms(u.data(), nb);
        for (int j = 0; j < nb; ++j) {
          sum[j] += w_[j] * (2.0 * u[j] - 1.0);
          theta[(int64_t(b) * T + t) * nb + j] = wrap(sum[j]);
        }
      }
    }
  }

 private:
  std::vector<double> w_;
  uint64_t seed_;
};

template <class R>
class LearnedAngles final : public AngleSource<R> {
 public:
  LearnedAngles(std::vector<double> f, double scale, bool rope_init)
      : f_(std::move(f)), scale_(scale), rope_init_(rope_init) {}
  std::size_t table_size() const override { return 256 * f_.size(); }
  void init_table(R* table, uint64_t seed, int layer) const override {
    const int nb = int(f_.size());
    Stream s(seed, init_stream(1000 + layer));
    for (int v = 0; v < 256; ++v)
      for (int j = 0; j < nb; ++j)
        table[v * nb + j] = R(rope_init_ ? scale_ * f_[j] : scale_ * f_[j] * (2.0 * s.uniform() - 1.0));
  }
  void angles(double* theta, const int* tokens, int B, int T, int, uint64_t, const R* table, int) const override {
    const int nb = int(f_.size());
    std::vector<double> sum(nb);
    for (int b = 0; b < B; ++b) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t t = 0; t < T; ++t) {
        const R* row = table + std::size_t(tokens[int64_t(b) * T + t]) * nb;
        for (int j = 0; j < nb; ++j) {
          sum[j] += double(row[j]);
          theta[(int64_t(b) * T + t) * nb + j] = wrap(sum[j]);
        }
      }
    }
  }
  // theta_t sums the entries of tokens s <= t, so entry s gets the suffix sum
  // of dtheta from t = s on.
  void angles_backward(R* dtable, const double* dtheta, const int* tokens, int B, int T) const override {
    const int nb = int(f_.size());
    std::vector<double> suffix(nb);
    for (int b = 0; b < B; ++b) {
      std::fill(suffix.begin(), suffix.end(), 0.0);
      for (int64_t t = T - 1; t >= 0; --t) {
        R* row = dtable + std::size_t(tokens[int64_t(b) * T + t]) * nb;
        const double* d = dtheta + (int64_t(b) * T + t) * nb;
        for (int j = 0; j < nb; ++j) {
          suffix[j] += d[j];
          row[j] += R(suffix[j]);
        }
      }
    }
  }

 private:
  std::vector<double> f_;
  double scale_;
  bool rope_init_;
};

}  // namespace

template <class R>
std::unique_ptr<AngleSource<R>> make_angle_source(const ModelConfig& m, uint64_t seed) {
  const SchemeInfo* s = find_scheme(m.scheme);
  if (!s) throw std::invalid_argument("unknown scheme " + m.scheme);
  std::vector<double> f = angle_frequencies(m);
  switch (s->angles) {
    case AngleKind::none:
      return nullptr;
    case AngleKind::rope:
      return std::make_unique<RopeAngles<R>>(f);
    case AngleKind::random: {
      for (double& x : f) x *= m.angle_scale;
      return std::make_unique<RandomAngles<R>>(f, seed);
    }
    case AngleKind::learned:
      return std::make_unique<LearnedAngles<R>>(f, m.angle_scale, m.learned_init == "rope");
  }
  return nullptr;
}

template std::unique_ptr<AngleSource<float>> make_angle_source<float>(const ModelConfig&, uint64_t);
template std::unique_ptr<AngleSource<double>> make_angle_source<double>(const ModelConfig&, uint64_t);

}  // namespace routelab::nn
