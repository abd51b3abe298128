// Trained runs from Python: train from a config file or TOML text, evaluate
// at lengths, passkey, probe and export, through the same library calls as
// `routelab train/eval/passkey/probe/export` (app/cmd_nn.cpp), so the same
// run gives the same numbers and the same refusals: the library checks every
// argument and takes the run folder's lock itself (runs/run_dir.h), so
// nothing here repeats a rule. Integers arrive as int64, so a value out of a
// C++ int's range is refused by the library's one line, not by pybind11's
// conversion. Long work runs without the GIL and stops on Ctrl-C after any
// forward pass (training: any step).
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <omp.h>
#include <pybind11/stl.h>

#include "base/threads.h"
#include "io/table.h"
#include "runs/config.h"
#include "runs/eval.h"
#include "runs/experiment.h"
#include "runs/export.h"
#include "runs/passkey.h"
#include "runs/probe.h"
#include "runs/train.h"
#include "python/bindings.h"
#include "sims/sim.h"

namespace routelab::python {

namespace {

// OpenMP threads for one call (0: the library's choice, the cores other
// processes leave free; base/threads.h), as --threads sets them for one
// command; the choice before comes back after the call.
class ThreadsFor {
 public:
  explicit ThreadsFor(int64_t threads) {
    if (threads < 0 || threads > kMaxThreads)
      throw BadInput("threads", fmt::format("{} is not accepted; an integer in [1, {}], or 0 for the cores other "
                                            "processes leave free",
                                            threads, kMaxThreads));
    saved_ = use_threads(int(threads));
  }
  ~ThreadsFor() { use_threads(saved_); }
  ThreadsFor(const ThreadsFor&) = delete;
  ThreadsFor& operator=(const ThreadsFor&) = delete;

 private:
  int saved_;
};

// Long work from Python: Ctrl-C stops it after any forward pass, and
// progress(done, total) is called after each of its units. `progress` is
// held by reference, not copied: the hooks live within the call, and may be
// destroyed where the GIL is released.
runs::WorkHooks python_hooks(const py::object& progress) {
  return {stop_on_ctrl_c, [&progress](std::size_t done, std::size_t total) { checkpoint_python(progress, done, total); }};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `routelab eval` without its files: bits per byte per length, the position
// bins, and with `losses` every scored position's loss.
py::dict evaluate(const std::string& run_dir, const std::string& lengths, bool losses, int64_t threads,
                  const py::object& progress) {
  const ThreadsFor threads_for(threads);
  runs::TrainedRun run = runs::load_trained_run(run_dir, lengths);
  const std::unique_ptr<nn::ModelBackend> model = runs::trained_run_backend(run, {});
  std::vector<std::string> names = {"eval_len", "windows", "tokens", "bits_per_byte", "ppl"};
  std::vector<std::string> bin_names = {"eval_len", "pos_lo", "pos_hi", "tokens", "bits_per_byte"};
  std::vector<std::vector<std::string>> rows, bin_rows;
  py::dict per_position;
  for (std::size_t i = 0; i < run.lengths.size(); ++i) {
    const int64_t L = run.lengths[i];
    std::vector<float> nats;
    runs::EvalResult r;
    {
      py::gil_scoped_release release;
      r = runs::evaluate(*model, run.corpus.val, L, losses ? &nats : nullptr, stop_on_ctrl_c);
    }
    rows.push_back({std::to_string(L), std::to_string(r.windows), std::to_string(r.tokens),
                    format_number(r.bits_per_byte), format_number(r.ppl)});
    for (const auto& b : r.bins)
      bin_rows.push_back({std::to_string(L), std::to_string(b.lo), std::to_string(b.hi), std::to_string(b.tokens),
                          format_number(b.bits_per_byte)});
    if (losses) {
      const auto windows = py::ssize_t(nats.size()) / L;
      per_position[py::int_(L)] = owned_array(std::move(nats), {windows, py::ssize_t(L)});
    }
    checkpoint_python(progress, i + 1, run.lengths.size());
  }
  py::dict out = columns_to_arrays(names, rows, {"bits_per_byte", "ppl"});
  py::dict result;
  result["lengths"] = out;
  result["positions"] = columns_to_arrays(bin_names, bin_rows, {"bits_per_byte"});
  if (losses) result["losses"] = per_position;
  return result;
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def(
      "_train",
      [](const std::string& config, bool is_text, const std::string& out, bool resume, int64_t threads,
         const py::object& progress) {
        const ThreadsFor threads_for(threads);
        const runs::RunConfig c = is_text ? runs::parse_run_config_text(config, "config") : runs::load_run_config(config);
        runs::TrainOptions opt{out, resume, false, nullptr};
        opt.on_step = [&progress](int done, int steps, double loss) { checkpoint_python(progress, done, steps, loss); };
        runs::TrainSummary s;
        {
          py::gil_scoped_release release;
          s = runs::train_run(c, opt);
        }
        return py::dict(py::arg("start_step") = s.start_step, py::arg("steps") = s.steps,
                        py::arg("final_loss") = s.final_loss, py::arg("wall_seconds") = s.wall_seconds);
      },
      py::arg("config"), py::arg("is_text"), py::arg("out"), py::arg("resume") = false, py::arg("threads") = 0,
      py::arg("progress") = py::none());
  m.def(
      "_run_info",
      [](const std::string& run_dir) {
        const runs::RunConfig c = runs::load_run_dir_config(run_dir);
        const runs::Checkpoint ck = runs::load_run_checkpoint(run_dir, c);
        py::module_ json = py::module_::import("json");
        return py::dict(py::arg("config") = json.attr("loads")(runs::to_json(c).dump()), py::arg("step") = ck.step,
                        py::arg("params") = owned_array(std::vector<float>(ck.params.begin(), ck.params.end()),
                                                        {py::ssize_t(ck.params.size())}));
      },
      py::arg("run"));
  m.def("_evaluate", &evaluate, py::arg("run"), py::arg("lengths"), py::arg("losses") = false,
        py::arg("threads") = 0, py::arg("progress") = py::none());
  m.def(
      "_probe",
      [](const std::vector<std::string>& runs, const std::string& lengths, int64_t window, int64_t max_windows,
         double eps, const std::string& csv, int64_t threads, const py::object& progress) {
        const ThreadsFor threads_for(threads);
        runs::ProbeOptions o;
        o.runs = runs;
        o.lengths = lengths;
        o.window = window;
        o.max_windows = max_windows;
        o.eps = eps;
        o.csv = csv;
        o.hooks = python_hooks(progress);
        std::string rows;
        {
          py::gil_scoped_release release;
          rows = runs::probe_runs(o);
        }
        py::dict out;
        out["rows"] = csv_to_arrays(rows, {"far_mass", "far_norm", "entropy", "logit_range", "far_mass_lower_bound",
                                           "far_mass_last_bin"});
        out["angles"] = csv_to_arrays(read_text(runs::probe_angles_path(csv)),
                                      {"frequency", "eps", "beta", "drift", "beta_init"});
        out["phases"] = csv_to_arrays(read_text(runs::probe_phases_path(csv)),
                                      {"mean_cos", "variance_ratio", "mean_abs_corr", "mean_cos_iid"});
        return out;
      },
      py::arg("runs"), py::arg("lengths"), py::arg("window"), py::arg("max_windows"), py::arg("eps"), py::arg("csv"),
      py::arg("threads") = 0, py::arg("progress") = py::none());
  m.def(
      "_passkey",
      [](const std::string& run, const std::string& lengths, const std::vector<double>& depths, int64_t trials,
         uint64_t seed, const std::string& out, int64_t threads, const py::object& progress) {
        const ThreadsFor threads_for(threads);
        std::string csv;
        {
          py::gil_scoped_release release;
          csv = runs::passkey_run(run, lengths, depths, trials, seed, out, false, {}, python_hooks(progress));
        }
        return csv_to_arrays(csv, {"depth", "accuracy", "digit_accuracy", "key_bits_per_byte"});
      },
      py::arg("run"), py::arg("lengths"), py::arg("depths"), py::arg("trials"), py::arg("seed"), py::arg("out"),
      py::arg("threads") = 0, py::arg("progress") = py::none());
  m.def("_export", &runs::export_run, py::arg("run"), py::arg("out"));
}

}  // namespace routelab::python
