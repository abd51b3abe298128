// Reading back the tidy CSV routelab writes: a header row and rows of text
// cells, RFC 4180 quoting (a quoted cell may hold commas, doubled quotes and
// line breaks). Cells stay text; the caller parses the columns it needs.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace routelab {

// A CSV that is not one: the message names the file and the row.
struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  // The column's index; -1 when absent.
  int column(const std::string& name) const;
};

// Parses `text`; `where` names the source in messages. Throws CsvError on an unterminated quote, an empty text, or a row whose
// cell count differs from the header's, naming the row.
CsvTable parse_csv(const std::string& text, const std::string& where);

}  // namespace routelab
