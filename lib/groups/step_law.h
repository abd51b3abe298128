// One interface for every step law on O(d).
//
// A step law draws i.i.d. orthogonal steps M_t from a counter-based stream and
// applies them. Walks accumulate by left multiplication, P_n = M_n ... M_1, so
// a vector propagates as x <- M x without ever forming P_n; since the steps
// are i.i.d., P_n has the law of M_1 ... M_n used in the paper (docs/theory.md#conventions).
//
// A drawn step lives in a small flat buffer in the law's own parameterisation
// (a Householder normal, a Givens plane and angle, B block angles, or a full
// matrix); `apply` is the fast path on a vector, `apply_matrix` the same map on
// every column of a matrix, so the vector and matrix paths agree exactly.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "groups/step_kernels.h"
#include "rng/stream.h"

namespace routelab {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

// Which component of O(d) the steps live on.
enum class DetClass { plus, minus, mixed };

// Whether the walk's law converges to Haar on its component (Theorem 4 under
// Assumption 2), as far as the paper or the structure of the law says.
enum class HaarLimit { yes, no, unknown };

// The law of the score e_1^T P_n e_1 where it is known exactly at a walk
// length n (Theorem 5, Remark 3), for score-tail's exact-law rows.
struct ExactScoreLaw {
  // P_n is Haar itself: the law is Theorem 5's exact Haar law, which the sim
  // takes from its own theory (a test plants a wrong one there).
  bool haar = false;
  // Otherwise Pr[e_1^T P_n e_1 >= s].
  std::function<double(double s)> tail;
};

// Independent rotations of the B = d/2 coordinate planes (e_{2b}, e_{2b+1}),
// block b by omega + U[-a_b, a_b] (Example 1): the walk is a phase walk, and
// score sims read it by Theorem 2's matched score S_n = (1/B) sum_b
// cos Theta_{n,b} rather than by q^T P_n k.
struct PlaneRotations {
  std::vector<double> half_widths;  // a_b
  double omega = 0;
};

class StepLaw {
 public:
  explicit StepLaw(int d) : d_(d) {}
  virtual ~StepLaw() = default;

  int dim() const { return d_; }
  virtual std::string family() const = 0;
  virtual DetClass det_class() const = 0;

  // Probability that one step has determinant -1; the mixed laws here reflect
  // with probability 1/2.
  virtual double minus_probability() const {
    return det_class() == DetClass::plus ? 0.0 : det_class() == DetClass::minus ? 1.0 : 0.5;
  }
  virtual HaarLimit haar_limit() const { return HaarLimit::unknown; }

  // Size of one drawn step, in doubles.
  virtual int step_size() const = 0;
  virtual void draw(Stream& s, double* step) const = 0;
  // count steps into steps[i * step_size() ..], i < count: the values and
  // the words of count calls of draw. The default makes those calls; a law
  // may draw for all of them at once (the Householder laws' normals).
  virtual void draw_steps(Stream& s, double* steps, int count) const;
  // x <- M x for the drawn step.
  virtual void apply(const double* step, double* x) const = 0;
  // P <- M P. The default applies `apply` to each column.
  virtual void apply_matrix(const double* step, Mat& P) const;
  // The step as a dense matrix.
  Mat matrix(const double* step) const;

  // Closed-form E[M], where the paper has one or docs/theory.md derives one.
  virtual std::optional<Mat> mean() const { return std::nullopt; }
  // Closed-form E[M (x) M] (d^2 x d^2, acting as vec X -> vec(M X M^T)), where
  // known: it gives E (tr P_n)^2 = tr(T^n).
  virtual std::optional<Mat> second_moment() const { return std::nullopt; }
  // beta = ||E M||_op (Assumption 1), from mean() unless overridden.
  virtual std::optional<double> gap() const;
  // The law as a batch kernel sees it (groups/step_kernels.h), for the
  // families whose draw and apply are written there; those run on the GPU.
  virtual std::optional<StepKernel> kernel() const { return std::nullopt; }
  // The exact law of e_1^T P_n e_1 at walk length n, where known.
  virtual std::optional<ExactScoreLaw> exact_score_law(long long n) const { return std::nullopt; }
  // The law as plane rotations, where its steps are such.
  virtual std::optional<PlaneRotations> plane_rotations() const { return std::nullopt; }
  // For `routelab families`: the closed forms in words.
  virtual std::string closed_form_text() const = 0;

 private:
  int d_;
};

// Reorthonormalise an accumulated product whose drift from O(d) exceeds tol
// (||P^T P - I||_max); returns the drift measured before any correction.
// Long products drift by about n * 1e-16; walks call this every 256 steps.
double reorthonormalize_if_drifted(Mat& P, double tol = kDriftTolerance);

}  // namespace routelab
