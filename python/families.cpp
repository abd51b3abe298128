// Step laws from Python: the family registry (groups/family.h), one law's
// closed forms, and its walks' product matrices and scores as arrays.
#include <algorithm>

#include <fmt/core.h>
#include <omp.h>
#include <pybind11/stl.h>

#include "groups/family.h"
#include "groups/walk.h"
#include "python/bindings.h"
#include "rng/stream.h"
#include "stats/moments.h"
#include "sims/runner.h"
#include "sims/sim.h"
#include "theory/haar_score_law.h"

namespace routelab::python {

namespace {

using FlagList = std::vector<std::pair<std::string, std::string>>;

const char* det_text(DetClass c) { return c == DetClass::plus ? "plus" : c == DetClass::minus ? "minus" : "mixed"; }
const char* haar_text(HaarLimit h) { return h == HaarLimit::yes ? "yes" : h == HaarLimit::no ? "no" : "unknown"; }

py::array_t<double> matrix_array(const Mat& m) {
  std::vector<double> v(std::size_t(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v[std::size_t(i * m.cols() + j)] = m(i, j);
  return owned_array(std::move(v), {py::ssize_t(m.rows()), py::ssize_t(m.cols())});
}

// A closed form the law may not have: its array, or None.
py::object matrix_or_none(const std::optional<Mat>& m) { return m ? py::object(matrix_array(*m)) : py::none(); }

struct Law {
  Params params;
  std::shared_ptr<StepLaw> law;
};

void require_count(long long v, long long lo, long long hi, const char* flag) {
  if (v < lo || v > hi) throw BadInput(flag, fmt::format("{} is not accepted; an integer in [{}, {}]", v, lo, hi));
}

int threads_or_all(int64_t threads) {
  if (threads == 0) return omp_get_max_threads();
  require_count(threads, 1, kMaxThreads, "threads");
  return int(threads);
}

// P_n for each n in `lengths` (ascending, distinct) of `samples` walks; walk
// i reads stream sample_stream(0, i), as a simulation's point 0 does, and is
// walk_products_at's walk; stats' parallel_fill runs them, as the sims run
// theirs. Each matrix comes back in Eigen's column-major layout, handed to
// NumPy as it lies, with the strides that index it [sample, length, row,
// column].
py::array_t<double> products(const Law& l, std::vector<long long> lengths, long long samples, uint64_t seed,
                             int64_t threads) {
  require_count(samples, 1, 1 << 24, "samples");
  if (lengths.empty() || !std::is_sorted(lengths.begin(), lengths.end()) ||
      std::adjacent_find(lengths.begin(), lengths.end()) != lengths.end() || lengths.front() < 1 ||
      lengths.back() > 100000)
    throw BadInput("n", "walk lengths: a non-empty ascending list of distinct integers in [1, 100000]");
  const int d = l.law->dim();
  const std::size_t per = std::size_t(d) * d, K = lengths.size();
  if (double(samples) * K * per > 1e9) throw BadInput("samples", "samples x lengths x d^2 must be at most 1e9 doubles");
  const int n_threads = threads_or_all(threads);
  std::vector<Mat> P(n_threads);
  std::vector<std::vector<double>> step(n_threads);
  std::vector<double> out;
  {
    py::gil_scoped_release release;
    out = parallel_fill(samples, int(K * per), n_threads, [&](long long i, double* dst, int t) {
      Stream s(seed, sample_stream(0, i));
      walk_products_at(*l.law, s, lengths, dst, P[t], step[t]);
    });
  }
  const py::ssize_t D = d, E = sizeof(double);
  return owned_array(std::move(out), {py::ssize_t(samples), py::ssize_t(K), D, D},
                     {py::ssize_t(K * per) * E, py::ssize_t(per) * E, E, D * E});
}

// Scores q^T P_t k for t = 1..n of `samples` walks (e_1 for q and k unless
// given), walk i on stream sample_stream(0, i) through walk_scores.
py::array_t<double> scores(const Law& l, long long n, long long samples, uint64_t seed,
                           std::optional<std::vector<double>> q, std::optional<std::vector<double>> k,
                           int64_t threads) {
  require_count(n, 1, 100000, "n");
  require_count(samples, 1, 1LL << 30, "samples");
  const int d = l.law->dim();
  std::vector<double> e1(std::size_t(d), 0.0);
  e1[0] = 1;
  const std::vector<double> qv = q.value_or(e1), kv = k.value_or(e1);
  if (int(qv.size()) != d || int(kv.size()) != d)
    throw BadInput("q", fmt::format("q and k must have the law's dimension d = {}", d));
  if (double(samples) * n > 1e9) throw BadInput("samples", "samples x n must be at most 1e9");
  const int n_threads = threads_or_all(threads);
  std::vector<WalkBuffers> buf(n_threads, WalkBuffers(*l.law));
  std::vector<double> out;
  {
    py::gil_scoped_release release;
    out = parallel_fill(samples, int(n), n_threads, [&](long long i, double* dst, int t) {
      Stream s(seed, sample_stream(0, i));
      walk_scores(*l.law, s, qv.data(), kv.data(), int(n), dst, buf[t]);
    });
  }
  return owned_array(std::move(out), {py::ssize_t(samples), py::ssize_t(n)});
}

}  // namespace

void bind_families(py::module_& m) {
  m.def(
      "families",
      [] {
        py::list out;
        for (const auto& f : families()) {
          py::dict row;
          row["name"] = f.name;
          row["summary"] = f.summary;
          row["flags"] = f.flags;
          row["determinant"] = f.det_class;
          row["paper_label"] = f.paper_label;
          try {
            row["closed_forms"] = make_step_law(default_params(f))->closed_form_text();
          } catch (const BadInput& e) {
            row["closed_forms"] = py::none();
          }
          out.append(row);
        }
        return out;
      },
      "The step-law families as `routelab families` lists them: name, summary, flags, determinant class, the "
      "paper result of its gap and its closed forms in words (at the flags' defaults).");
  m.def(
      "family_flags",
      [] {
        py::list out;
        for (const auto& f : family_flags())
          out.append(py::dict(py::arg("name") = f.name, py::arg("default") = f.default_value, py::arg("help") = f.help,
                              py::arg("list_valued") = list_valued(f.name)));
        return out;
      },
      "Every step-law flag with its default and help text; list_valued: its one value is a list (--lambdas).");
  m.def("mixing_window", &theory::mixing_window, py::arg("beta"), py::arg("eps"),
        "B.2's mixing window w_eps = ceil(log(1/eps) / log(1/beta)) (1 when beta = 0).");

  py::class_<Law>(m, "StepLaw", "One step law of the registry at one parameter point (routelab.step_law).")
      .def_property_readonly("family", [](const Law& l) { return l.law->family(); }, "the family's name")
      .def_property_readonly("d", [](const Law& l) { return l.law->dim(); }, "the dimension: steps are d x d")
      .def_property_readonly("params", [](const Law& l) { return l.params; }, "the flags it was built from")
      .def_property_readonly("determinant", [](const Law& l) { return det_text(l.law->det_class()); },
                             "where the steps live: plus (SO(d)), minus or mixed")
      .def_property_readonly("haar_limit", [](const Law& l) { return haar_text(l.law->haar_limit()); },
                             "whether the walk tends to Haar on its component (Theorem 4): yes, no or unknown")
      .def_property_readonly("closed_forms", [](const Law& l) { return l.law->closed_form_text(); },
                             "the closed forms in words, as `routelab families` prints them")
      .def_property_readonly("gap", [](const Law& l) { return l.law->gap(); },
                             "beta = ||E M||_op from the closed form (Assumption 1), or None")
      .def_property_readonly("mean", [](const Law& l) { return matrix_or_none(l.law->mean()); },
                             "the closed-form E[M] (d x d), or None")
      .def_property_readonly("second_moment", [](const Law& l) { return matrix_or_none(l.law->second_moment()); },
                             "the closed-form E[M (x) M] (d^2 x d^2), or None")
      .def("products", &products, py::arg("lengths"), py::arg("samples"), py::arg("seed") = 1, py::arg("threads") = 0,
           "P_n = M_n ... M_1 at each walk length n of `lengths` (ascending), for `samples` walks: an array "
           "(samples, len(lengths), d, d). Walk i reads Philox stream i of `seed` (a simulation's point 0), so "
           "the numbers do not depend on `threads` (0: all cores).")
      .def("scores", &scores, py::arg("n"), py::arg("samples"), py::arg("seed") = 1, py::arg("q") = py::none(),
           py::arg("k") = py::none(), py::arg("threads") = 0,
           "Scores q^T P_t k for t = 1..n of `samples` walks (q = k = e_1 unless given): an array (samples, n); "
           "walk i reads stream i of `seed`.");
  m.def(
      "_step_law",
      [](const std::string& family, const FlagList& flags) {
        const Params p = family_point(family, flags);
        return Law{p, std::shared_ptr<StepLaw>(make_step_law(p))};
      },
      py::arg("family"), py::arg("flags"));
}

}  // namespace routelab::python
