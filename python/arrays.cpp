// Text tables to NumPy columns, and the library's refusals to ValueError.
#include <algorithm>
#include <stdexcept>

#include "cuda/device.h"
#include "data/brown.h"
#include "io/csv_read.h"
#include "io/parse.h"
#include "groups/family.h"
#include "io/output.h"
#include "io/user_paths.h"
#include "runs/run_dir.h"
#include "runs/config.h"
#include "runs/train.h"
#include "python/bindings.h"

namespace routelab::python {

py::dict columns_to_arrays(const std::vector<std::string>& names, const std::vector<std::vector<std::string>>& rows,
                           const std::set<std::string>& real,
                           std::vector<std::pair<std::string, std::vector<double>>> numbers) {
  py::dict out;
  const py::ssize_t n = py::ssize_t(rows.size());
  for (std::size_t c = 0; c < names.size(); ++c) {
    const auto given = std::find_if(numbers.begin(), numbers.end(), [&](const auto& g) { return g.first == names[c]; });
    if (given != numbers.end()) {
      if (given->second.size() != rows.size()) throw std::logic_error("column " + names[c] + ": one number per row");
      out[py::str(names[c])] = owned_array(std::move(given->second), {n});
      continue;
    }
    auto cell = [&](std::size_t r) -> const std::string& {
      static const std::string empty;
      return c < rows[r].size() ? rows[r][c] : empty;
    };
    std::vector<int64_t> ints(rows.size());
    bool all_int = n > 0 && !real.count(names[c]);
    for (std::size_t r = 0; r < rows.size() && all_int; ++r) {
      const auto v = parse_integer(cell(r));
      all_int = v.has_value();
      ints[r] = v.value_or(0);
    }
    if (all_int) {
      out[py::str(names[c])] = owned_array(std::move(ints), {n});
      continue;
    }
    std::vector<double> nums(rows.size());
    bool all_num = true;
    for (std::size_t r = 0; r < rows.size() && all_num; ++r) {
      const auto v = number_cell(cell(r));
      all_num = v.has_value();
      nums[r] = v.value_or(0);
    }
    if (all_num) {
      out[py::str(names[c])] = owned_array(std::move(nums), {n});
      continue;
    }
    py::list texts;
    for (std::size_t r = 0; r < rows.size(); ++r) texts.append(py::str(cell(r)));
    out[py::str(names[c])] = py::array(texts);
  }
  return out;
}

py::dict csv_to_arrays(const std::string& csv, const std::set<std::string>& real) {
  if (csv.empty()) return py::dict();
  const CsvTable t = parse_csv(csv, "the CSV");
  return columns_to_arrays(t.columns, t.rows, real);
}

void register_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const BadInput& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const runs::ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const data::CorpusError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const runs::CheckpointError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const runs::RunDirError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const cuda::DeviceError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    } catch (const OutputError& e) {
      PyErr_SetString(PyExc_ValueError, one_line(e.what()).c_str());
    }
  });
}

}  // namespace routelab::python
