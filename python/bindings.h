// What the binding files of the Python module share: how a table of text
// cells becomes NumPy columns, how long work releases the GIL and still
// stops on Ctrl-C, and one registration function per concern.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace routelab::python {

namespace py = pybind11;

// Every refusal of the library (BadInput, ConfigError, CorpusError,
// CheckpointError, RunDirError, DeviceError, OutputError) becomes a
// ValueError carrying the CLI's one line (without its "routelab: " prefix).
void register_errors(py::module_& m);
void bind_sims(py::module_& m);      // sims.cpp
void bind_families(py::module_& m);  // families.cpp
void bind_runs(py::module_& m);      // runs.cpp
void bind_tasks(py::module_& m);     // tasks.cpp

// Columns of text cells, as the CSV writes them, to {name: array}: float64
// for the columns named in `real` (measured values, whose shortest text may
// look like an integer: "0"), otherwise int64 where every cell is an
// integer, float64 where every cell is a number as routelab writes one
// (io/csv_read.h number_cell: empty is NaN), else an array of str. A column given in `numbers` (its doubles as computed, one
// per row: sims/runner.h MeasuredColumns) becomes that vector itself, its
// text cells unread. Each array owns the buffer it was filled into or moved
// from (no copy on the way to Python).
py::dict columns_to_arrays(const std::vector<std::string>& names, const std::vector<std::vector<std::string>>& rows,
                           const std::set<std::string>& real = {},
                           std::vector<std::pair<std::string, std::vector<double>>> numbers = {});
// A CSV text as the library writes it (a header line, quoted fields where
// needed), read by io/csv_read.h, to the same columns; an empty text gives
// no columns.
py::dict csv_to_arrays(const std::string& csv, const std::set<std::string>& real = {});

// A vector handed to NumPy without a copy: the array owns it. `strides`
// (bytes per step of each axis; empty: row-major) say how it is laid out.
template <class T>
py::array_t<T> owned_array(std::vector<T>&& v, std::vector<py::ssize_t> shape, std::vector<py::ssize_t> strides = {}) {
  auto* held = new std::vector<T>(std::move(v));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  if (strides.empty()) return py::array_t<T>(shape, held->data(), owner);
  return py::array_t<T>(shape, strides, held->data(), owner);
}

// Called from work running without the GIL at a safe point (between
// forward passes): takes the GIL and raises KeyboardInterrupt (by throwing
// py::error_already_set) if Ctrl-C came.
inline void stop_on_ctrl_c() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// The same between units of the work (a point, a step, a length), then
// calls `callback` (None: no call) with the arguments.
template <class... Args>
void checkpoint_python(const py::object& callback, Args&&... args) {
  stop_on_ctrl_c();
  if (callback.is_none()) return;
  py::gil_scoped_acquire gil;
  callback(std::forward<Args>(args)...);
}

}  // namespace routelab::python
