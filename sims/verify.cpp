#include "sims/verify.h"

#include <algorithm>
#include <cstdio>

#include <fmt/core.h>

namespace routelab {

std::vector<Check> verify_checks(bool quick) {
  std::vector<Check> checks;
  for (const auto& sim : all_sims()) {
    for (const auto& c : sim.checks) {
      Check check;
      check.name = c.name;
      check.request.sim = sim.name;
      check.request.given = c.flags;
      check.request.samples = quick ? c.quick_samples : c.samples;
      check.quick_samples = c.quick_samples;
      checks.push_back(check);
    }
  }
  return checks;
}

VerifyResult run_verify(bool quick, int threads, uint64_t seed, bool progress) {
  std::vector<Table> tables;
  std::vector<std::string> columns = {"check"};
  const auto checks = verify_checks(quick);
  for (const auto& c : checks) {
    RunRequest req = c.request;
    req.threads = threads;
    req.seed = seed;
    tables.push_back(run_sim(req));
    for (const auto& col : tables.back().columns())
      if (std::find(columns.begin(), columns.end(), col) == columns.end()) columns.push_back(col);
    if (progress) std::fprintf(stderr, "routelab verify: %s done\n", c.name.c_str());
  }
  VerifyResult out{Table(columns)};
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const auto& t = tables[k];
    const int v = t.column_index("verdict");
    for (const auto& row : t.rows()) {
      std::vector<std::pair<std::string, std::string>> cells = {{"check", checks[k].name}};
      for (std::size_t j = 0; j < row.size(); ++j) cells.push_back({t.columns()[j], row[j]});
      out.rows.add_row(cells);
      if (row[v] == "fail") ++out.failures;
      if (row[v] == "pass") ++out.passes;
    }
  }
  return out;
}

std::string format_verify_table(const VerifyResult& r) {
  const Table& t = r.rows;
  auto col = [&](const char* name) { return t.column_index(name); };
  // Parameters shown per row: every parameter column that is set.
  const std::vector<std::string> skip = {"check", "sim", "result", "quantity", "samples", "seed", "estimate", "stderr",
                                         "ci_low", "ci_high", "theory", "kind", "verdict"};
  std::string out = fmt::format("{:<26} {:<22} {:<34} {:<34} {:>12} {:>27} {:>12} {:<6} {}\n", "check", "result",
                                "quantity", "parameters", "estimate", "interval", "theory", "kind", "verdict");
  for (const auto& row : t.rows()) {
    if (row[col("verdict")] == "none") continue;
    std::string params;
    for (std::size_t j = 0; j < row.size(); ++j) {
      if (row[j].empty() || std::find(skip.begin(), skip.end(), t.columns()[j]) != skip.end()) continue;
      params += (params.empty() ? "" : " ") + t.columns()[j] + "=" + row[j];
    }
    auto num = [&](const char* name) {
      const std::string& s = row[col(name)];
      return s.empty() ? std::string("-") : fmt::format("{:.6g}", std::stod(s));
    };
    const std::string interval =
        row[col("ci_low")].empty() ? "-" : fmt::format("[{}, {}]", num("ci_low"), num("ci_high"));
    out += fmt::format("{:<26} {:<22} {:<34} {:<34} {:>12} {:>27} {:>12} {:<6} {}\n", row[col("check")],
                       row[col("result")], row[col("quantity")], params, num("estimate"), interval, num("theory"),
                       row[col("kind")], row[col("verdict")]);
  }
  out += fmt::format("{} passed, {} failed\n", r.passes, r.failures);
  return out;
}

}  // namespace routelab
