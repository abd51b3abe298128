// A step law that walks exactly like another but claims other closed forms:
// the planted errors that every statistical check must catch.
#pragma once

#include <memory>
#include <optional>

#include "groups/family.h"

namespace routelab::testing {

class PlantedLaw : public StepLaw {
 public:
  explicit PlantedLaw(std::unique_ptr<StepLaw> real) : StepLaw(real->dim()), real_(std::move(real)) {}
  std::string family() const override { return real_->family(); }
  DetClass det_class() const override { return real_->det_class(); }
  int step_size() const override { return real_->step_size(); }
  void draw(Stream& s, double* step) const override { real_->draw(s, step); }
  void apply(const double* step, double* x) const override { real_->apply(step, x); }
  void apply_matrix(const double* step, Mat& P) const override { real_->apply_matrix(step, P); }
  std::string closed_form_text() const override { return "planted"; }

  std::optional<Mat> mean() const override { return mean_ ? mean_ : real_->mean(); }
  std::optional<Mat> second_moment() const override { return second_ ? second_ : real_->second_moment(); }
  std::optional<double> gap() const override { return gap_ ? gap_ : real_->gap(); }
  HaarLimit haar_limit() const override { return limit_ ? *limit_ : real_->haar_limit(); }
  std::optional<ExactScoreLaw> exact_score_law(long long n) const override { return real_->exact_score_law(n); }
  std::optional<PlaneRotations> plane_rotations() const override { return real_->plane_rotations(); }

  std::optional<Mat> mean_, second_;
  std::optional<double> gap_;
  std::optional<HaarLimit> limit_;

 private:
  std::unique_ptr<StepLaw> real_;
};

// The family's default flags with some replaced.
inline Params params_for(const std::string& family, std::initializer_list<std::pair<const std::string, std::string>> set) {
  Params p;
  const auto& info = family_info(family);
  for (const auto& spec : family_flags())
    if (spec.name == "family" || std::find(info.flags.begin(), info.flags.end(), spec.name) != info.flags.end())
      p[spec.name] = spec.default_value;
  p["family"] = family;
  for (const auto& [k, v] : set) p[k] = v;
  return p;
}

}  // namespace routelab::testing
