#include "nn/scheme.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/angles.h"
#include "nn/streams.h"
#include "rng/stream.h"
#include "theory/step_gaps.h"

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
      {"projected_qk", AngleKind::projected, false, false},
      {"projected_qkv", AngleKind::projected, true, false},
      {"fox", AngleKind::none, false, false, true},
      {"path_qk", AngleKind::none, false, false, false, true, true},
      {"path_qkv", AngleKind::none, true, false, false, true, true},
      {"path_qk_forget", AngleKind::none, false, false, true, true, true},
  };
  return s;
}

const SchemeInfo* find_scheme(const std::string& name) {
  for (const auto& s : all_schemes())
    if (s.name == name) return &s;
  return nullptr;
}

int path_rank(const ModelConfig& m) { return std::min(kPathRank, m.d_model); }

std::string scheme_names() {
  std::string out;
  for (const auto& s : all_schemes()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

namespace {

// Whether a kind of angles reads one of the angle keys (angle_scale,
// rope_base, learned_init, learned_shared, learned_sigma).
bool angles_read(const ModelConfig& m, AngleKind k, const std::string& key) {
  switch (k) {
    case AngleKind::none:
      return false;
    case AngleKind::rope:
      return key == "rope_base";
    case AngleKind::random:
      return key == "angle_scale" || key == "rope_base";
    case AngleKind::learned:
      if (key == "learned_init" || key == "learned_shared") return true;
      // The uniform and rope starts scale f_b; the normal one has its own spread.
      return m.learned_init == "normal" ? key == "learned_sigma" : key == "angle_scale" || key == "rope_base";
    case AngleKind::projected:
      return key == "learned_sigma";
  }
  return false;
}

}  // namespace

bool scheme_reads(const ModelConfig& m, const std::string& key) {
  const SchemeInfo* s = find_scheme(m.scheme);
  if (!s) return false;
  for (const char* angle_key : {"angle_scale", "rope_base", "learned_init", "learned_shared", "learned_sigma"})
    if (key == angle_key) return angles_read(m, s->angles, key);
  if (key == "householder_beta") return s->householder;
  return true;
}

const char* angle_kind_name(AngleKind k) {
  switch (k) {
    case AngleKind::none: return "none";
    case AngleKind::rope: return "rope";
    case AngleKind::random: return "random";
    case AngleKind::learned: return "learned";
    case AngleKind::projected: return "projected";
  }
  return "?";
}

std::vector<double> angle_frequencies(const ModelConfig& m) {
  return rope_frequencies(m.head_dim(), m.rope_base);
}

std::vector<double> angle_rates(const ModelConfig& m) {
  const SchemeInfo* s = find_scheme(m.scheme);
  if (!s) throw std::invalid_argument("unknown scheme " + m.scheme);
  std::vector<double> f = angle_frequencies(m);
  switch (s->angles) {
    case AngleKind::random:
      for (double& x : f) x *= m.angle_scale;
      return f;
    case AngleKind::none:
    case AngleKind::rope:
    case AngleKind::learned:
    case AngleKind::projected:
      return f;
  }
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


template <class R>
class RopeAngles final : public AngleSource<R> {
 public:
  explicit RopeAngles(std::vector<double> f) : f_(std::move(f)) {}
  void angles(double* theta, const int*, int B, int T, int, uint64_t, const R*, int) const override {
    const int nb = int(f_.size());
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int j = 0; j < nb; ++j) theta[(int64_t(b) * T + t) * nb + j] = wrap_remainder(double(t) * f_[j]);
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
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; ++b) {
      Stream s(seed_, random_angle_stream(pass, layer, uint64_t(first_b + b)));
      std::vector<double> u(nb), sum(nb, 0.0);
      for (int64_t t = 0; t < T; ++t) {
        s.uniforms(u.data(), nb);
        for (int j = 0; j < nb; ++j) {
          sum[j] += w_[j] * (2.0 * u[j] - 1.0);
          theta[(int64_t(b) * T + t) * nb + j] = wrap_remainder(sum[j]);
        }
      }
    }
  }

 private:
  std::vector<double> w_;
  uint64_t seed_;
};

// theta_t = wrap_remainder(sum_{s <= t} increment(b, s)) in double, and its backward:
// increment (b, s) collects the suffix sum of dtheta from t = s on. Learned
// angles read the increment from the table row of token s, projected angles
// from row (b T + s) of the layer's psi.
template <class R, class Row>
void accumulate_increments(double* theta, int B, int T, int nb, Row row) {
#pragma omp parallel for schedule(static)
  for (int b = 0; b < B; ++b) {
    std::vector<double> sum(nb, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      const R* x = row(b, t);
      for (int j = 0; j < nb; ++j) {
        sum[j] += double(x[j]);
        theta[(int64_t(b) * T + t) * nb + j] = wrap_remainder(sum[j]);
      }
    }
  }
}

template <class R, class Row>
void accumulate_increments_backward(const double* dtheta, int B, int T, int nb, Row row) {
  std::vector<double> suffix(nb);
  for (int b = 0; b < B; ++b) {
    std::fill(suffix.begin(), suffix.end(), 0.0);
    for (int64_t t = T - 1; t >= 0; --t) {
      R* x = row(b, t);
      const double* d = dtheta + (int64_t(b) * T + t) * nb;
      for (int j = 0; j < nb; ++j) {
        suffix[j] += d[j];
        x[j] += R(suffix[j]);
      }
    }
  }
}

template <class R>
class LearnedAngles final : public AngleSource<R> {
 public:
  LearnedAngles(std::vector<double> f, const ModelConfig& m)
      : f_(std::move(f)), scale_(m.angle_scale), sigma_(m.learned_sigma), init_(m.learned_init) {}
  std::size_t table_size() const override { return 256 * f_.size(); }
  bool trained() const override { return true; }
  void init_table(R* table, uint64_t seed, int layer) const override {
    const int nb = int(f_.size());
    Stream s(seed, table_init_stream(uint64_t(layer)));
    for (int v = 0; v < 256; ++v)
      for (int j = 0; j < nb; ++j) {
        double x = scale_ * f_[j];  // "rope"
        if (init_ == "uniform") x *= 2.0 * s.uniform() - 1.0;
        if (init_ == "normal") x = sigma_ * s.normal();
        table[v * nb + j] = R(x);
      }
  }
  void angles(double* theta, const int* tokens, int B, int T, int, uint64_t, const R* table, int) const override {
    const int nb = int(f_.size());
    accumulate_increments<R>(theta, B, T, nb, [&](int b, int64_t t) {
      return table + std::size_t(tokens[int64_t(b) * T + t]) * nb;
    });
  }
  void angles_backward(R* dtable, const double* dtheta, const int* tokens, int B, int T) const override {
    const int nb = int(f_.size());
    accumulate_increments_backward<R>(dtheta, B, T, nb, [&](int b, int64_t t) {
      return dtable + std::size_t(tokens[int64_t(b) * T + t]) * nb;
    });
  }

 private:
  std::vector<double> f_;
  double scale_, sigma_;
  std::string init_;
};

template <class R>
class ProjectedAngles final : public AngleSource<R> {
 public:
  explicit ProjectedAngles(int nb) : nb_(nb) {}
  bool trained() const override { return true; }
  void angles(double* theta, const int*, int B, int T, int, uint64_t, const R* psi, int) const override {
    accumulate_increments<R>(theta, B, T, nb_, [&](int b, int64_t t) { return psi + (int64_t(b) * T + t) * nb_; });
  }
  void angles_backward(R* dpsi, const double* dtheta, const int*, int B, int T) const override {
    accumulate_increments_backward<R>(dtheta, B, T, nb_,
                                      [&](int b, int64_t t) { return dpsi + (int64_t(b) * T + t) * nb_; });
  }

 private:
  int nb_;
};

}  // namespace

template <class R>
std::unique_ptr<AngleSource<R>> make_angle_source(const ModelConfig& m, uint64_t seed) {
  const SchemeInfo* s = find_scheme(m.scheme);
  if (!s) throw std::invalid_argument("unknown scheme " + m.scheme);
  std::vector<double> f = angle_rates(m);
  switch (s->angles) {
    case AngleKind::none:
      return nullptr;
    case AngleKind::rope:
      return std::make_unique<RopeAngles<R>>(f);
    case AngleKind::random:
      return std::make_unique<RandomAngles<R>>(f, seed);
    case AngleKind::learned:
      return std::make_unique<LearnedAngles<R>>(f, m);
    case AngleKind::projected:
      return std::make_unique<ProjectedAngles<R>>(int(f.size()));
  }
  return nullptr;
}

double initial_block_beta(const ModelConfig& m, double f_b) {
  const SchemeInfo* s = find_scheme(m.scheme);
  if (s && s->angles == AngleKind::projected) return std::exp(-m.learned_sigma * m.learned_sigma / 2);
  if (m.learned_init == "normal") return std::exp(-m.learned_sigma * m.learned_sigma / 2);
  if (m.learned_init == "uniform") return std::abs(theory::so2_uniform_harmonic(m.angle_scale * f_b));
  return 1.0;  // "rope": every step is f_b
}

template std::unique_ptr<AngleSource<float>> make_angle_source<float>(const ModelConfig&, uint64_t);
template std::unique_ptr<AngleSource<double>> make_angle_source<double>(const ModelConfig&, uint64_t);

}  // namespace routelab::nn
