#include "io/table.h"

#include "base/build.h"
#include "base/normal_log.h"
#include "base/version.h"
#include "io/output.h"

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/core.h>
#include <unistd.h>

namespace routelab {

void Table::add_row(const std::vector<std::pair<std::string, std::string>>& cells) {
  std::vector<std::string> row(columns_.size());
  for (const auto& [name, value] : cells) {
    const int j = column_index(name);
    if (j < 0) throw std::logic_error("table has no column " + name);
    row[j] = value;
  }
  rows_.push_back(std::move(row));
}

int Table::column_index(const std::string& name) const {
  for (std::size_t j = 0; j < columns_.size(); ++j)
    if (columns_[j] == name) return int(j);
  return -1;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t j = 0; j < cells.size(); ++j) {
    if (j) out += ',';
    out += csv_field(cells[j]);
  }
  return out + '\n';
}

std::string Table::to_csv() const {
  std::string out = csv_line(columns_);
  for (const auto& r : rows_) out += csv_line(r);
  return out;
}

std::string format_number(double x) {
  if (std::isnan(x)) return "";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);
}

std::string format_number(std::optional<double> x) { return x ? format_number(*x) : ""; }

std::optional<std::string> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string read_text_file(const std::string& path) { return read_file_bytes(path).value_or(""); }

std::string csv_body(const std::string& csv) {
  const auto nl = csv.find('\n');
  return nl == std::string::npos ? "" : csv.substr(nl + 1);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_beside(path);
  int err = write_temporary(tmp, text);
  if (!err && std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
  }
  release_temporary(tmp);
  if (err) throw std::filesystem::filesystem_error("write", path, std::error_code(err, std::generic_category()));
}

std::string sidecar_text(const std::string& csv_path, const nlohmann::json& config, double wall_seconds) {
  nlohmann::json j = config;
  j["version"] = ROUTELAB_VERSION_STRING;
  j["git_revision"] = ROUTELAB_GIT_REV;
  j["normal_log"] = normal_log_path();  // the normals' last bits depend on it
  j["build_isa"] = build_isa();         // and FMA contraction and the vector kernels on this
  j["cpu"] = host_cpu_name();
  j["wall_seconds"] = wall_seconds;
  j["csv"] = csv_path;
  return j.dump(2) + "\n";
}

void write_sidecar(const std::string& csv_path, const nlohmann::json& config, double wall_seconds) {
  write_file_atomic(csv_path + ".json", sidecar_text(csv_path, config, wall_seconds));
}

}  // namespace routelab
