// Runs trained on a task from Python ([data] task, runs/task_eval.h): the
// sets `routelab eval` asks of such a run, their sequences and reads as
// arrays (so a PyTorch model, routelab.torch.from_safetensors, can be scored
// on exactly what the CLI scores), and the evaluation itself through the
// same library call as the CLI, writing the same CSV and sidecar.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "runs/export.h"
#include "runs/run_dir.h"
#include "runs/task_eval.h"

namespace routelab::python {

namespace {

runs::TaskEvalPlan plan_of(const std::string& lengths, const std::vector<double>& p,
                           const std::vector<int64_t>& distances, int reads, int distance_reads, uint64_t seed) {
  runs::TaskEvalPlan plan;
  plan.lengths = lengths;
  plan.p = p;
  plan.distances = distances;
  plan.reads = reads;
  plan.distance_reads = distance_reads;
  plan.seed = seed;
  return plan;
}

// Each set's description, its sequences (sequences x (window + 1) bytes,
// the start byte first), its reads (rows of sequence, position, distance)
// and the CLI's forward passes over it (batch, first_pass).
// `source`: a run folder, or a file `routelab export` wrote (its config
// travels in its metadata).
py::list task_sets(const std::string& source, const runs::TaskEvalPlan& plan) {
  const runs::RunConfig c =
      source.ends_with(".safetensors") ? runs::exported_config(source) : runs::load_run_dir_config(source);
  if (!c.is_task())
    throw runs::ConfigError(source + " was trained on the corpus " + c.corpus + ", not a task");
  py::list out;
  for (const runs::TaskSet& s : runs::task_sets(c, plan, "--")) {
    std::vector<data::TaskSequence> seqs;
    {
      py::gil_scoped_release release;
      seqs = runs::task_set_sequences(s, plan.seed, 0, s.sequences);
    }
    const py::ssize_t n = py::ssize_t(seqs.size()), width = py::ssize_t(s.window) + 1;
    std::vector<uint8_t> bytes;
    bytes.reserve(std::size_t(n * width));
    std::vector<int64_t> reads;
    for (py::ssize_t i = 0; i < n; ++i) {
      bytes.insert(bytes.end(), seqs[i].bytes.begin(), seqs[i].bytes.end());
      for (const auto& r : seqs[i].reads) reads.insert(reads.end(), {int64_t(i), r.at, r.distance});
    }
    const py::ssize_t m = py::ssize_t(reads.size() / 3);
    py::dict d;
    d["name"] = s.name();
    d["set"] = s.kind;
    d["task"] = s.task.name;
    d["p"] = s.task.p;
    d["eval_len"] = s.window;
    d["distance"] = s.distance;
    d["sequences"] = s.sequences;
    const runs::TaskSetPasses passes = runs::task_set_passes(s);
    d["batch"] = passes.batch;
    d["first_pass"] = passes.first_pass;
    d["bytes"] = owned_array(std::move(bytes), {n, width});
    d["reads"] = owned_array(std::move(reads), {m, 3});
    out.append(std::move(d));
  }
  return out;
}

}  // namespace

void bind_tasks(py::module_& m) {
  m.def(
      "_task_sets",
      [](const std::string& run, const std::string& lengths, const std::vector<double>& p,
         const std::vector<int64_t>& distances, int reads, int distance_reads, uint64_t seed) {
        return task_sets(run, plan_of(lengths, p, distances, reads, distance_reads, seed));
      },
      py::arg("run"), py::arg("lengths"), py::arg("p"), py::arg("distances"), py::arg("reads"),
      py::arg("distance_reads"), py::arg("seed"));
  m.def(
      "_task_eval",
      [](const std::string& run, const std::string& lengths, const std::vector<double>& p,
         const std::vector<int64_t>& distances, int reads, int distance_reads, uint64_t seed, const std::string& out) {
        const runs::TaskEvalPlan plan = plan_of(lengths, p, distances, reads, distance_reads, seed);
        std::string rows;
        {
          py::gil_scoped_release release;
          rows = runs::evaluate_task_run(run, plan, out, false);
        }
        return csv_to_arrays(runs::task_csv_header() + rows, {"p", "error_rate", "ci_low", "ci_high", "read_bits"});
      },
      py::arg("run"), py::arg("lengths"), py::arg("p"), py::arg("distances"), py::arg("reads"),
      py::arg("distance_reads"), py::arg("seed"), py::arg("out"));
}

}  // namespace routelab::python
