// moment-decay: ||E P_n||_op against beta^n (Theorem 3, B.5: E P_n = (E M)^n,
// with equality in norm when E M is normal) and the mixing window
// w_eps = ceil(log(1/eps)/log(1/beta)) (B.2; Theorem 1 for SO(2) blocks).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/core.h>

#include "groups/family.h"
#include "groups/walk.h"
#include "io/table.h"
#include "io/table.h"
#include "sims/sim.h"
#include "stats/intervals.h"
#include "stats/matrix_mean.h"
#include "theory/haar_score_law.h"
#include "theory/trace_moments.h"

namespace routelab {

namespace {

bool is_normal(const Mat& m) { return (m * m.transpose() - m.transpose() * m).cwiseAbs().maxCoeff() < 1e-12; }

}  // namespace

std::vector<SimRow> moment_decay_rows(const StepLaw& law_ref, const std::vector<long long>& ns,
                                      const std::vector<double>& epss, const SimContext& ctx) {
  const StepLaw* law = &law_ref;
  const int d = law->dim();
  const auto gap = law->gap();
  const auto mean = law->mean();

  // Walk lengths to record: the requested ones, and w-1, w for each window.
  std::set<long long> record(ns.begin(), ns.end());
  std::vector<long long> windows;
  for (double e : epss) {
    const long long w = gap ? theory::mixing_window(*gap, e) : -1;
    windows.push_back(w);
    if (w >= 1 && w <= 100000) {
      record.insert(w);
      if (w > 1) record.insert(w - 1);
    }
  }
  const std::vector<long long> steps_at(record.begin(), record.end());
  const int count = int(steps_at.size());

  std::vector<std::vector<double>> step(ctx.threads);
  std::vector<Mat> P(ctx.threads, Mat(d, d));
  auto sample = [&](long long i, double* out, int t) {
    Stream s(ctx.seed, sample_stream(ctx.point, i));
    walk_products_at(*law, s, steps_at, out, P[t], step[t]);
  };
  const auto est = estimate_matrix_means(ctx.samples, d, count, ctx.threads, sample);
  auto index_of = [&](long long n) { return int(std::lower_bound(steps_at.begin(), steps_at.end(), n) - steps_at.begin()); };

  std::vector<SimRow> rows;
  const double z_entries = bonferroni_z(d * d);
  for (long long n : ns) {
    const auto& e = est[index_of(n)];
    const std::vector<std::pair<std::string, std::string>> cells = {{"n", std::to_string(n)}};
    SimRow norm = gap ? upper_row("Theorem 3", "norm_mean_product", e.norm, e.norm_stderr, std::pow(*gap, double(n)), kZ)
                      : exact_row("Theorem 3", "norm_mean_product", e.norm, e.norm_stderr, std::nullopt, kZ);
    norm.cells = cells;
    rows.push_back(norm);
    if (mean) {
      SimRow entries = upper_row("Theorem 3", "max_entry_z_vs_power_of_mean",
                                 max_entry_z(e, theory::first_moment_power(*mean, int(n))), kNoStderr, z_entries, 0.0);
      entries.kind = Kind::exact;
      entries.cells = cells;
      rows.push_back(entries);
    }
  }
  for (std::size_t k = 0; k < epss.size(); ++k) {
    const long long w = windows[k];
    SimRow r;
    r.result = "B.2";
    r.quantity = "mixing_window";
    r.cells = {{"eps", format_number(epss[k])}};
    if (w < 1 || w > 100000) {
      r.estimate = std::numeric_limits<double>::quiet_NaN();
      r.theory = w < 1 ? std::nullopt : std::optional<double>(double(w));
      r.kind = Kind::exact;
      r.verdict = Verdict::none;
      rows.push_back(r);
      continue;
    }
    // The estimate is the first of w-1, w whose norm estimate is <= eps (w+1
    // when neither is). ||E P_w|| <= eps must hold; for normal E M,
    // ||E P_{w-1}|| > eps too.
    const auto& at_w = est[index_of(w)];
    const bool upper_ok = at_w.norm - kZ * at_w.norm_stderr <= epss[k];
    bool lower_ok = true;
    double before = 1.0;  // ||E P_0|| = ||I||
    if (w > 1) {
      const auto& at_w1 = est[index_of(w - 1)];
      before = at_w1.norm;
      if (mean && is_normal(*mean)) lower_ok = at_w1.norm + kZ * at_w1.norm_stderr >= epss[k];
    }
    r.estimate = at_w.norm <= epss[k] ? (before <= epss[k] ? double(w - 1) : double(w)) : double(w + 1);
    r.theory = double(w);
    r.kind = mean && is_normal(*mean) ? Kind::exact : Kind::upper;
    r.verdict = verdict_of(upper_ok && lower_ok);
    rows.push_back(r);
  }
  return rows;
}

namespace {
std::vector<SimRow> run_moment_decay(const Params& p, const SimContext& ctx) {
  auto law = make_step_law(p);
  const std::vector<long long> ns = parse_walk_lengths(p, "n");
  std::vector<double> epss = param_double_list(p, "eps");
  for (double e : epss)
    if (!(e > 0 && e < 1)) throw BadInput("eps", fmt::format("{} is not accepted; a comma list in (0, 1)", e));
  return moment_decay_rows(*law, ns, epss, ctx);
}
}  // namespace

namespace {
const bool registered_moment_decay = register_sim({.name = "moment-decay",
     .summary = "||E P_n||_op against beta^n (Theorem 3) and the mixing window w_eps (B.2)",
     .flags = {{"n", "1,2,4,8,16", "walk lengths (one walk, read at each length)", true},
           {"eps", "0.1,0.01", "mixing-window levels", true}},
     .uses_family = true,
     .default_samples = 40000,
     .run = run_moment_decay,
     .checks = {{"first-moment decay", {{"family", "householder"}, {"d", "16"}, {"n", "1,5,10,20"}, {"eps", "0.1,0.01"}}, 100000, 10000},
           {"so2 harmonic decay", {{"family", "so2"}, {"d", "2"}, {"a", "0.5,1,2"}, {"n", "1,5,10,20"}, {"eps", "0.1,0.01"}}, 400000, 40000},
           {"non-normal decay", {{"family", "nonnormal"}, {"d", "3"}, {"n", "4,8"}, {"eps", "0.1"}}, 400000, 40000}},
     .order = 20});
}  // namespace

}  // namespace routelab
