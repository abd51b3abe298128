// The value side of the stylized aggregation model (paper §5, B.8-B.10,
// Appendix D; docs/theory.md#conventions): one query i aggregates the values of its L
// sources, c_i = sum_j alpha_j P_{j->i} v_j. With SO(2) blocks the far part of
// the transport, T_D = sum_{j in D} alpha_j P_{j->i}, is block diagonal, and
// block b is complex multiplication by
//   t_b = sum_{k in K_D} alpha_k Pi_{k,b},   Pi_{k,b} = e^{-i Theta_{k,b}},
// where k = i - j is the source offset and Theta_{k,b} = sum_{l <= k} psi_{l,b}
// the accumulated value phase. So ||T_D||_op = max_b |t_b|.
//  - Without value transport (QK-only: P_{j->i} = I on the values) t_b = rho_D,
//    the far mass, for every block: nothing cancels.
//  - Position-only transport (RoPE) has psi_{l,b} = omega_b, so t_b is the
//    Fourier sum zeta_{b,L} = sum_k alpha_k e^{-i omega_b k} (B.8).
//  - Accumulated transport has psi_{l,b} = omega_b + U[-a, a], |E e^{-i psi}| =
//    beta = |sin a / a| < 1 (Example 1), and t_b concentrates near 0 when the
//    far weights are spread (Theorems 6 and 7).
// The far weights come from one of four models: uniform or geometric with a
// given far mass rho (fixed, so measurable in D.1's sense), a softmax of the
// scores of an independent score-side path (the separate path, D.1), or a
// softmax of the value phases' own scores (the same path, Theorem 6).
// Also the shared-background value model of B.9: v_j = c0 G + w_j.
#pragma once

#include <complex>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "attention/far_mass.h"
#include "rng/stream.h"

namespace routelab {

// t_b = sum_{k in D} alpha_k e^{-i Theta_{k,b}}, streamed. Weights arrive as
// logits (softmax over near and far); the far mass and norm come from a
// FarMassAccumulator, and t_b = rho_D * (sum_D e^{l_k} Pi_k) / (sum_D e^{l_k}),
// the phasor sum kept against its own running maximum so no logit overflows.
class FarTransportAccumulator {
 public:
  explicit FarTransportAccumulator(int blocks) : sum_(blocks, 0.0) {}
  void add_near(double logit) { mass_.add_near(logit); }
  // One far source: its logit and the cosines and sines of its B value phases.
  void add_far(double logit, const double* cos_theta, const double* sin_theta);

  int blocks() const { return int(sum_.size()); }
  std::complex<double> t(int b) const;
  double max_abs_t() const;             // ||T_D||_op
  double far_mass() const { return mass_.far_mass(); }  // rho_D: |t_b| without value transport
  double far_norm() const { return mass_.far_norm(); }  // a_D = ||alpha_D||_2

 private:
  FarMassAccumulator mass_;
  std::vector<std::complex<double>> sum_;  // sum_D e^{l_k - max} Pi_{k,b}
  double far_sum_ = 0;                     // sum_D e^{l_k - max}
  double max_ = -1e300;
};

enum class FarWeights {
  uniform,    // alpha_k = rho / M on D
  geometric,  // alpha_k proportional to e^{-4 (k - w) / M} on D, total rho
  separate,   // softmax of lambda S_k, S_k from an independent score path (D.1)
  same,       // softmax of lambda S_k, S_k from the value phases themselves (Theorem 6)
};
FarWeights parse_far_weights(const std::string& text);  // throws BadInput("weights", ...)
std::string far_weights_name(FarWeights w);

// One query of the model. Offsets k = 0..w-1 are near, k = w..L far (M = L - w + 1).
struct ValueModel {
  int blocks = 16;
  std::vector<double> omega;  // position frequency of each block (RoPE: base^{-2b/d})
  double a = 2;               // content increments U[-a, a]; a = 0: position-only transport
  long long w = 9, L = 20008;
  FarWeights weights = FarWeights::uniform;
  double rho = 0.3;     // far mass for uniform and geometric weights
  double lambda = 4;    // logit scale for the softmax weights
  long long far_count() const { return L - w + 1; }
};

struct QueryTransport {
  std::vector<std::complex<double>> t;  // t_b, b < B
  double rho = 0, a = 0;                // rho_D, a_D
  double max_abs_t = 0;
};

// Called for every far source k with its logit and the cos / sin of its phases.
using FarSourceVisitor = std::function<void(long long k, double logit, const double* cos_theta, const double* sin_theta)>;

// Runs one query: value phases from `values`, score phases (separate weights
// only) from `scores`. With a = 0 the phase of offset k is omega_b k exactly
// (a power of the position step, not an accumulated sum) and `values` is not read.
QueryTransport run_query(const ValueModel& m, Stream& values, Stream& scores, const FarSourceVisitor& visit = nullptr);

// The far sources of one query, kept whole: weights and phases (M x B).
struct FarEnvironment {
  int blocks = 0;
  std::vector<double> alpha;               // alpha_j, j < M
  std::vector<double> cos_theta, sin_theta;  // [j * B + b]
  QueryTransport transport;                // t_b, rho_D, a_D of the same query
  long long far_count() const { return (long long)alpha.size(); }
};
FarEnvironment far_environment(const ValueModel& m, Stream& values, Stream& scores);

// T_D = sum_j alpha_j P_{j->i} as a d x d matrix, summed source by source
// (block b of P_{j->i} is R(-Theta_{j,b})).
Eigen::MatrixXd far_transport_matrix(const FarEnvironment& env);
// T += alpha P for one source with phases (cos_theta, sin_theta).
void add_far_source(Eigen::MatrixXd& T, double alpha, const double* cos_theta, const double* sin_theta);

// B.9's shared-background values v_j = c0 G + w_j, G ~ N(0, I_d),
// w_j ~ N(0, sigma_w^2 I_d), drawn once from `s`; writes the far error
// e = sum_j alpha_j P_{j->i} v_j with value transport (QKV) to e_qkv and
// without (QK-only, P = I) to e_qk, both from the same draws.
void shared_background_error(const FarEnvironment& env, double c0, double sigma_w, Stream& s, double* e_qkv,
                             double* e_qk);

}  // namespace routelab
