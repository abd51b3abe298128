// The compiled half of the routelab Python package (routelab._routelab):
// one file per concern binds it (sims.cpp, families.cpp, runs.cpp); this
// one defines the module and how routelab's refusals reach Python.
#include <pybind11/pybind11.h>

#include "base/version.h"
#include "io/output.h"
#include "python/bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_routelab, m) {
  m.doc() = "routelab's C++ library from Python (the routelab package wraps it; see docs/python.md)";
  m.attr("__version__") = ROUTELAB_VERSION_STRING;
  m.attr("git_revision") = ROUTELAB_GIT_REV;
  routelab::python::register_errors(m);
  // A caught SIGTERM or SIGHUP removes the temporaries and run locks in
  // flight, as in the CLI; Python's own SIGINT handler stays (it unwinds).
  routelab::install_cleanup_handlers();
  routelab::python::bind_sims(m);
  routelab::python::bind_families(m);
  routelab::python::bind_runs(m);
  routelab::python::bind_tasks(m);
}
