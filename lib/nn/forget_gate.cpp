#include "nn/forget_gate.h"

#include <cmath>

namespace routelab::nn {

namespace {
// log sigmoid(z), stable for either sign.
inline double log_sigmoid(double z) { return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z)); }
}  // namespace

template <class R>
void forget_gate_forward(R* cum, const R* z, int B, int T, int H) {
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < int64_t(B) * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    double sum = 0;
    for (int64_t t = 0; t < T; ++t) {
      sum += log_sigmoid(double(z[(b * T + t) * H + h]));
      cum[bh * T + t] = R(sum);
    }
  }
}

template <class R>
void forget_gate_backward(R* dz, const R* dcum, const R* z, int B, int T, int H) {
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < int64_t(B) * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    // cum_t sums log f_l for l <= t, so log f_l collects dcum_t for t >= l;
    // d log sigmoid(z) / dz = 1 - sigmoid(z).
    double suffix = 0;
    for (int64_t t = T - 1; t >= 0; --t) {
      suffix += double(dcum[bh * T + t]);
      const double zt = double(z[(b * T + t) * H + h]);
      dz[(b * T + t) * H + h] = R(suffix / (1.0 + std::exp(zt)));
    }
  }
}

template void forget_gate_forward<float>(float*, const float*, int, int, int);
template void forget_gate_forward<double>(double*, const double*, int, int, int);
template void forget_gate_backward<float>(float*, const float*, const float*, int, int, int);
template void forget_gate_backward<double>(double*, const double*, const double*, int, int, int);

}  // namespace routelab::nn
