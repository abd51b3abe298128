// Tidy CSV output: one row per parameter point and measured quantity.
// Files appear whole or not at all (write to a temporary, then rename), and
// numbers print in their shortest round-trip form, so the same run gives the
// same bytes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace routelab {

class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  const std::vector<std::string>& columns() const { return columns_; }
  // A row as column -> text; missing columns stay empty.
  void add_row(const std::vector<std::pair<std::string, std::string>>& cells);
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  std::string to_csv() const;
  int column_index(const std::string& name) const;  // -1 if absent

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// A text cell as CSV writes it: quoted (quotes doubled) when it holds a
// comma, quote or line break, as is otherwise.
std::string csv_field(const std::string& s);
// A row of cells as CSV writes it: csv_field of each, commas between, a
// line break at the end.
std::string csv_line(const std::vector<std::string>& cells);

// Shortest round-trip text of a double; "" for NaN; "inf"/"-inf".
std::string format_number(double x);
std::string format_number(std::optional<double> x);

// The whole file as bytes; nullopt if it cannot be opened, so each caller
// refuses in its own words.
std::optional<std::string> read_file_bytes(const std::string& path);
// The same, empty if it cannot be read (callers that need to tell the two
// apart use read_file_bytes).
std::string read_text_file(const std::string& path);

// A CSV's rows without its header line.
std::string csv_body(const std::string& csv);

// Writes `text` to `path` atomically (temporary file in the same folder, then
// rename). Throws std::filesystem::filesystem_error naming the path and the
// error on failure (io/user_paths.h turns it into a refusal).
void write_file_atomic(const std::string& path, const std::string& text);

// The JSON sidecar FILE.json: configuration, seed, version, git revision,
// wall time.
void write_sidecar(const std::string& csv_path, const nlohmann::json& config, double wall_seconds);
// The sidecar's text, for a command that writes its files as one unit
// (io/output.h).
std::string sidecar_text(const std::string& csv_path, const nlohmann::json& config, double wall_seconds);

}  // namespace routelab
