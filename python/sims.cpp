// Simulations from Python: the flags go through the parser and runner that
// `routelab sim` uses (sims/runner.h), so the same flags give the same rows,
// refusals and files; the rows come back as NumPy columns, the measured
// values handed over as the doubles the simulation computed.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "sims/runner.h"

namespace routelab::python {

void bind_sims(py::module_& m) {
  m.def(
      "_sim",
      [](const std::string& name, const std::vector<std::pair<std::string, std::string>>& flags,
         const py::object& progress) {
        std::vector<std::string> args;
        for (const auto& [flag, text] : flags) args.push_back("--" + flag + "=" + text);
        RunRequest req = parse_sim_args(name, args);
        req.on_point = [&progress](std::size_t done, std::size_t total) { checkpoint_python(progress, done, total); };
        MeasuredColumns measured;
        Table table = [&] {
          py::gil_scoped_release release;
          return run_sim_to_outputs(req, &measured);
        }();
        // The measured values as computed; the flags' columns (text as given) and the rest parsed from the table.
        return columns_to_arrays(table.columns(), table.rows(), {}, std::move(measured));
      },
      py::arg("name"), py::arg("flags"), py::arg("progress") = py::none());
  m.def(
      "sims",
      [] {
        py::list out;
        for (const auto& s : all_sims()) {
          py::list flags;
          for (const auto& f : s.flags)
            flags.append(py::dict(py::arg("name") = f.name, py::arg("default") = f.default_value,
                                  py::arg("help") = f.help, py::arg("series") = f.series,
                                  py::arg("list_valued") = list_valued(f.name)));
          out.append(py::dict(py::arg("name") = s.name, py::arg("summary") = s.summary, py::arg("flags") = flags,
                              py::arg("uses_family") = s.uses_family,
                              py::arg("default_samples") = s.default_samples));
        }
        return out;
      },
      "The simulations as `routelab sims` lists them, each with its own flags.");
  m.def("sim_help", [](const std::string& name) { return sim_help(find_sim(name)); }, py::arg("name"),
        "`routelab sim NAME --help`: every flag with its default.");
}

}  // namespace routelab::python
