// Heat-kernel steps (sampler S8): G = Brownian motion on SO(d) at time tau,
// generator Laplacian/2 for the metric <X, Y> = tr(X^T Y)/2.
//   d = 2: exact, G = R(theta), theta ~ N(0, tau).
//   d = 3: exact, angle by inverse CDF of the character series, axis uniform
//          on S^2, then Rodrigues.
//   d >= 4: geodesic random walk G <- G exp(sqrt(h) sum_{p<q} Z_pq E_pq),
//          n = ceil(tau/h) steps of h = tau/n; it has its own closed-form
//          mean c(h)^n I and mixes slightly faster than the kernel, at O(tau h).
// The walk can also be forced at d = 2, 3, to test it against the exact law.
//
// Also here, shared with `lieball` and `dithered`: dense matrix steps, the
// so(d) coordinates and the exact exponential.
#pragma once

#include <memory>
#include <vector>

#include "groups/family.h"
#include "groups/step_law.h"

namespace routelab {

// A law whose drawn step is the d x d matrix itself, column-major.
class DenseStepLaw : public StepLaw {
 public:
  using StepLaw::StepLaw;
  int step_size() const override { return dim() * dim(); }
  void apply(const double* step, double* x) const override;
  void apply_matrix(const double* step, Mat& P) const override;
};

// so(d) in the orthonormal basis E_pq = e_p e_q^T - e_q e_p^T (p < q, pairs in
// row-major order) of <X, Y> = tr(X^T Y)/2, so ||X||_g = |x|.
inline int so_dim(int d) { return d * (d - 1) / 2; }
Mat skew_from_coords(const double* x, int d);
// exp(X) for skew X, to rounding (Pade scaling and squaring is orthogonal in
// exact arithmetic for skew arguments).
Mat exp_skew(const Mat& X);

// The SO(3) heat-kernel rotation angle by inverse CDF: the exact CDF and
// density are tabulated once on a grid of kSo3HeatCells cells, and a draw
// inverts the cubic Hermite interpolant on its cell (error O(grid^4), below
// 1e-12 in the CDF; so3_heat_quantile, shared with the GPU).
class So3HeatAngle {
 public:
  explicit So3HeatAngle(double tau);
  double quantile(double u) const { return so3_heat_quantile(table_.data(), u); }
  // The nodes, then the CDF, then the density at them.
  const double* table() const { return table_.data(); }
  int table_size() const { return int(table_.size()); }

 private:
  std::vector<double> table_;
};

enum class HeatMethod { exact, walk };

class HeatSampler {
 public:
  // method exact needs d <= 3.
  HeatSampler(int d, double tau, double heat_h, HeatMethod method);
  static HeatMethod natural_method(int d) { return d <= 3 ? HeatMethod::exact : HeatMethod::walk; }

  // One step G, d x d column-major.
  void draw(Stream& s, double* G) const;
  // k's heat fields (tau, heat_steps, heat_h, the SO(3) angle table).
  void fill_kernel(StepKernel& k) const;
  // E[G] = mean_scalar() I for the law actually sampled.
  double mean_scalar() const;
  // E[G (x) G]: exact kernel, or the walk's own to O(tau h^2).
  Mat second_moment() const;

  int dim() const { return d_; }
  double tau() const { return tau_; }
  double heat_h() const { return heat_h_; }
  HeatMethod method() const { return method_; }

 private:
  int d_;
  double tau_, heat_h_;
  HeatMethod method_;
  std::shared_ptr<const So3HeatAngle> so3_;
};

// Parses --tau and --heat-h for a family of dimension d.
HeatSampler parse_heat(const Params& p, int d);

class Heat : public DenseStepLaw {
 public:
  explicit Heat(HeatSampler sampler) : DenseStepLaw(sampler.dim()), sampler_(std::move(sampler)) {}
  std::string family() const override { return "heat"; }
  DetClass det_class() const override { return DetClass::plus; }
  // Lemma 1: an L^2 density with the identity in its support.
  HaarLimit haar_limit() const override { return HaarLimit::yes; }
  void draw(Stream& s, double* step) const override { sampler_.draw(s, step); }
  std::optional<Mat> mean() const override;
  std::optional<Mat> second_moment() const override { return sampler_.second_moment(); }
  std::optional<StepKernel> kernel() const override;
  std::string closed_form_text() const override;
  const HeatSampler& sampler() const { return sampler_; }

 private:
  HeatSampler sampler_;
};

}  // namespace routelab
