// Reading back the tidy CSV routelab writes: a header row and rows of text
// cells, RFC 4180 quoting (a quoted cell may hold commas, doubled quotes and
// line breaks). Cells stay text; the caller parses the columns it needs.
#pragma once

#include <optional>
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

// A cell's number as routelab writes one (format_number, io/table.h): a
// finite number in plain decimal or exponent form, "inf", "-inf", or empty
// (NaN); nullopt for anything else ("nan", spaces, trailing text).
std::optional<double> number_cell(const std::string& cell);
// Throws CsvError naming `where`, the row and the cell unless every cell of
// `t` outside the columns named in `text_columns` is a number cell: rows read
// back to be kept (an experiment's --new, probe's --update) are checked as
// the rows routelab writes.
void require_number_cells(const CsvTable& t, const std::vector<std::string>& text_columns, const std::string& where);

// Parses `text`; `where` names the source in messages. Throws CsvError on an unterminated quote, an empty text, or a row whose
// cell count differs from the header's, naming the row.
CsvTable parse_csv(const std::string& text, const std::string& where);

}  // namespace routelab
