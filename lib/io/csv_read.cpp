#include "io/csv_read.h"

#include <algorithm>
#include <limits>

#include <fmt/core.h>

#include "io/parse.h"

namespace routelab {

int CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return int(i);
  return -1;
}

CsvTable parse_csv(const std::string& text, const std::string& where) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string cell;
  bool quoted = false, any = false;
  std::size_t line = 1, record_line = 1;
  auto end_record = [&] {
    record.push_back(std::move(cell));
    cell.clear();
    records.push_back(std::move(record));
    record.clear();
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (!any) record_line = line;
    any = true;
    if (c == '"' && cell.empty()) {
      quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n') {
      end_record();
      ++line;
    } else if (c != '\r' || i + 1 >= text.size() || text[i + 1] != '\n') {
      cell += c;
    }
  }
  if (quoted) throw CsvError(fmt::format("{}: a quoted cell opened on line {} never closes", where, record_line));
  if (any) end_record();
  if (records.empty() || (records[0].size() == 1 && records[0][0].empty()))
    throw CsvError(fmt::format("{}: is empty; expected a CSV header line", where));
  CsvTable t;
  t.columns = std::move(records[0]);
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != t.columns.size())
      throw CsvError(fmt::format("{}: row {} has {} cells, the header {}", where, r, records[r].size(),
                                 t.columns.size()));
    t.rows.push_back(std::move(records[r]));
  }
  return t;
}

std::optional<double> number_cell(const std::string& cell) {
  if (cell.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (cell == "inf") return std::numeric_limits<double>::infinity();
  if (cell == "-inf") return -std::numeric_limits<double>::infinity();
  return parse_finite(cell);
}

void require_number_cells(const CsvTable& t, const std::vector<std::string>& text_columns, const std::string& where) {
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      if (std::find(text_columns.begin(), text_columns.end(), t.columns[c]) == text_columns.end() &&
          !number_cell(t.rows[r][c]))
        throw CsvError(fmt::format("{}: row {}: {} = '{}' is not a number", where, r + 1, t.columns[c], t.rows[r][c]));
}

}  // namespace routelab
