// Text tables to NumPy columns, and the library's refusals to ValueError.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cuda/device.h"
#include "data/brown.h"
#include "groups/family.h"
#include "io/output.h"
#include "runs/run_dir.h"
#include "runs/config.h"
#include "runs/train.h"
#include "python/bindings.h"

namespace routelab::python {

namespace {

bool parse_int64(const std::string& s, int64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The CSV's numbers: shortest round-trip text, "" for NaN, inf and -inf
// (io/table.h format_number), so parsing gives the double that was written.
bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return out = std::numeric_limits<double>::quiet_NaN(), true;
  if (s == "inf") return out = INFINITY, true;
  if (s == "-inf") return out = -INFINITY, true;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

}  // namespace

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
    for (std::size_t r = 0; r < rows.size() && all_int; ++r) all_int = parse_int64(cell(r), ints[r]);
    if (all_int) {
      out[py::str(names[c])] = owned_array(std::move(ints), {n});
      continue;
    }
    std::vector<double> nums(rows.size());
    bool all_num = true;
    for (std::size_t r = 0; r < rows.size() && all_num; ++r) all_num = parse_number(cell(r), nums[r]);
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
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < csv.size()) {
    // A quoted field may hold a line break: a line ends at a newline outside quotes.
    std::size_t end = at;
    bool quoted = false;
    while (end < csv.size() && (quoted || csv[end] != '\n')) quoted ^= csv[end++] == '"';
    lines.push_back(csv.substr(at, end - at));
    at = end + 1;
  }
  if (lines.empty()) return py::dict();
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) rows.push_back(split_csv_line(lines[i]));
  return columns_to_arrays(split_csv_line(lines[0]), rows, real);
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
