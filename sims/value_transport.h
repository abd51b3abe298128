// The value-transport simulation's core (docs/theory.md#b8, #b9, #theorem-6,
// D.1, Theorem 7 / D.2, D.4), exposed so tests can plant wrong bounds.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "attention/value_transport.h"
#include "sims/sim.h"

namespace routelab {

// Which result a point measures.
enum class ValuePart {
  coherence,   // B.8: position-only q_{b,L} against accumulated t_b, rho_D beside
  covariance,  // B.9: Cov(e | environment) against c0^2 T T^T + sigma_w^2 a_D^2 I
  bound,       // Theorem 7 and D.4 (uniform, geometric, separate weights) or Theorem 6 (same)
};

struct ValueTransportConfig {
  ValuePart part = ValuePart::bound;
  ValueModel model;
  double eta = 0.05;
  double c0 = 1, sigma_w = 1;
};

// The closed forms and bounds the checks compare against; tests replace one.
struct ValueTransportTheory {
  std::function<double(double beta, long long w, double rho, double a, int blocks, double eta)> separate;
  std::function<double(double lambda, int blocks, double beta, long long w, double rho, double a, double eta)> same;
  std::function<Eigen::MatrixXd(const Eigen::MatrixXd& T, double c0, double sigma_w, double a)> covariance;
  std::function<double(double R, double c0, double sigma_w, double a)> covariance_bound;
  std::function<double(double omega, long long M, double rho, double g)> position_only;
  ValueTransportTheory();  // the paper's
};

// Parses and validates one parameter point (BadInput names the flag).
ValueTransportConfig value_transport_config(const Params& p);
std::vector<SimRow> value_transport_rows(const ValueTransportConfig& cfg, const SimContext& ctx,
                                         const ValueTransportTheory& theory = ValueTransportTheory());

}  // namespace routelab
