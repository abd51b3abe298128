// spectral-gap: beta = ||E M||_op of one step law against its closed form
// (Assumption 1; Examples 1-5, Example 6, the heat-kernel, Matrix-Fisher and
// Lie-ball entries). Two rows, each with its own verdict: every entry of the
// sample mean against the closed-form matrix (Bonferroni z over the d^2
// entries), and the split-sample estimate of beta (stats/matrix_mean.h)
// against gap().
#include <fmt/core.h>

#include <memory>

#include "groups/family.h"
#include "sims/device_walks.h"
#include "sims/sim.h"
#include "stats/intervals.h"
#include "stats/matrix_mean.h"

namespace routelab {

namespace {

std::string result_label(const StepLaw& law) { return family_info(law.family()).paper_label; }

}  // namespace

std::vector<SimRow> spectral_gap_rows(const StepLaw& law_ref, const SimContext& ctx) {
  const StepLaw* law = &law_ref;
  const int d = law->dim();
  std::vector<std::vector<double>> steps(ctx.threads, std::vector<double>(law->step_size()));
  std::vector<Mat> matrices(ctx.threads, Mat(d, d));
  // --device cuda: the same matrices, drawn on the GPU a window at a time.
  const std::unique_ptr<GpuStepMatrices> gpu = ctx.gpu ? std::make_unique<GpuStepMatrices>(*law, ctx) : nullptr;
  auto sample = [&](long long i, double* out, int t) {
    if (gpu) return gpu->get(i, out);
    Stream s(ctx.seed, sample_stream(ctx.point, i));
    law->draw(s, steps[t].data());
    Mat& m = matrices[t];
    m.setIdentity();
    law->apply_matrix(steps[t].data(), m);
    std::copy(m.data(), m.data() + m.size(), out);
  };
  const MatrixMeanEstimate e = estimate_matrix_means(ctx.samples, d, 1, ctx.threads, sample)[0];
  const std::string result = result_label(*law);
  const auto mean = law->mean();
  const double z_entries = bonferroni_z(d * d);

  std::vector<SimRow> rows;
  // Each row's verdict tests its own quantity against its own theory, so a
  // gap() that disagrees with the law fails even where mean() is right: beta's
  // split-sample estimate against gap() (biased only down, by the first
  // half's singular vectors' misalignment, second order in the entries'
  // noise), every entry against mean().
  SimRow beta = exact_row(result, "beta", e.norm, e.norm_stderr, law->gap(), kZ);
  SimRow entries;
  if (mean) {
    entries = upper_row(result, "max_entry_z", max_entry_z(e, *mean), kNoStderr, z_entries, 0.0);
  } else {
    entries = exact_row(result, "max_entry_z", std::numeric_limits<double>::quiet_NaN(), kNoStderr, std::nullopt, 0.0);
    entries.kind = Kind::upper;
  }
  rows.push_back(beta);
  rows.push_back(entries);
  return rows;
}

namespace {
std::vector<SimRow> run_spectral_gap(const Params& p, const SimContext& ctx) {
  return spectral_gap_rows(*make_step_law(p), ctx);
}
}  // namespace

namespace {
const bool registered_spectral_gap = register_sim({.name = "spectral-gap",
     .summary = "beta = ||E M||_op from the sample mean of M against the closed form (entrywise check)",
     .flags = {},
     .uses_family = true,
     .default_samples = 200000,
     .run = run_spectral_gap,
     .checks = {{"so2 gap", {{"family", "so2"}, {"d", "4"}, {"a", "0.5,1,3.141592653589793,4"}, {"omega", "0,0.7"}}, 1000000, 100000},
           {"so2 rope gap", {{"family", "so2"}, {"d", "16"}, {"rope-base", "10000"}}, 400000, 50000},
           {"householder gap", {{"family", "householder"}, {"d", "2,3,5,8,16"}}, 1000000, 100000},
           {"householder coordinate gap", {{"family", "householder"}, {"normals", "coordinate"}, {"d", "4"}}, 400000, 50000},
           {"householder gaussian gap", {{"family", "householder"}, {"normals", "gaussian"}, {"aniso", "3"}, {"d", "5"}}, 400000, 50000},
           {"givens gap", {{"family", "givens"}, {"d", "2,3,8"}, {"a", "1,3.141592653589793"}}, 1000000, 100000},
           {"axis3 gap", {{"family", "axis3"}, {"d", "3"}, {"theta", "0.5235987755982988,1.5707963267948966,2.0943951023931957,2.6179938779914944"}}, 1000000, 100000},
           {"skewexp gap", {{"family", "skewexp"}, {"d", "6"}, {"a", "0.5,1.5,3"}}, 400000, 50000},
           {"heat gap", {{"family", "heat"}, {"d", "2,3"}, {"tau", "0.2,1"}}, 400000, 50000},
           {"fisher gap", {{"family", "fisher"}, {"d", "2,3"}, {"kappa", "0.5,2"}}, 200000, 20000},
           {"lieball gap", {{"family", "lieball"}, {"d", "3"}, {"r", "0.5,1.5,3"}}, 400000, 50000},
           {"dithered gap", {{"family", "dithered"}, {"d", "4"}, {"normals", "coordinate"}, {"tau", "0.5"}, {"sign", "minus,mixed"}}, 100000, 20000},
           {"haar mean", {{"family", "haar"}, {"d", "3,8"}, {"group", "o,so"}}, 200000, 20000},
           {"nonnormal gap", {{"family", "nonnormal"}, {"d", "3"}}, 200000, 20000}},
     .order = 10,
     .validate = {},
     .gpu_refusal = gpu_family_refusal});
}  // namespace

}  // namespace routelab
