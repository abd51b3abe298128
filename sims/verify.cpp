#include "sims/verify.h"

#include <algorithm>
#include <cstdio>

#include <fmt/core.h>

namespace routelab {

namespace {
Check check(std::string name, std::string sim, std::map<std::string, std::string> flags, long long samples,
            long long quick) {
  Check c;
  c.name = std::move(name);
  c.request.sim = std::move(sim);
  c.request.given = std::move(flags);
  c.request.samples = samples;
  c.quick_samples = quick;
  return c;
}
}  // namespace

std::vector<Check> verify_checks(bool quick) {
  std::vector<Check> checks = {
      // Assumption 1 gaps, entrywise (Examples 1-6 and the other laws).
      check("so2 gap", "spectral-gap", {{"family", "so2"}, {"d", "4"}, {"a", "0.5,1,3.141592653589793,4"}, {"omega", "0,0.7"}}, 1000000, 100000),
      check("so2 rope gap", "spectral-gap", {{"family", "so2"}, {"d", "16"}, {"rope-base", "10000"}}, 400000, 50000),
      check("householder gap", "spectral-gap", {{"family", "householder"}, {"d", "2,3,5,8,16"}}, 1000000, 100000),
      check("householder coordinate gap", "spectral-gap", {{"family", "householder"}, {"normals", "coordinate"}, {"d", "4"}}, 400000, 50000),
      check("householder gaussian gap", "spectral-gap", {{"family", "householder"}, {"normals", "gaussian"}, {"aniso", "3"}, {"d", "5"}}, 400000, 50000),
      check("givens gap", "spectral-gap", {{"family", "givens"}, {"d", "2,3,8"}, {"a", "1,3.141592653589793"}}, 1000000, 100000),
      check("axis3 gap", "spectral-gap", {{"family", "axis3"}, {"d", "3"}, {"theta", "0.5235987755982988,1.5707963267948966,2.0943951023931957,2.6179938779914944"}}, 1000000, 100000),
      check("skewexp gap", "spectral-gap", {{"family", "skewexp"}, {"d", "6"}, {"a", "0.5,1.5,3"}}, 400000, 50000),
      check("heat gap", "spectral-gap", {{"family", "heat"}, {"d", "2,3"}, {"tau", "0.2,1"}}, 400000, 50000),
      check("fisher gap", "spectral-gap", {{"family", "fisher"}, {"d", "2,3"}, {"kappa", "0.5,2"}}, 200000, 20000),
      check("lieball gap", "spectral-gap", {{"family", "lieball"}, {"d", "3"}, {"r", "0.5,1.5,3"}}, 400000, 50000),
      check("dithered gap", "spectral-gap", {{"family", "dithered"}, {"d", "4"}, {"normals", "coordinate"}, {"tau", "0.5"}, {"sign", "minus,mixed"}}, 100000, 20000),
      check("haar mean", "spectral-gap", {{"family", "haar"}, {"d", "3,8"}, {"group", "o,so"}}, 200000, 20000),
      // Theorem 3 and the window of B.2 (Theorem 1 through so2).
      check("first-moment decay", "moment-decay", {{"family", "householder"}, {"d", "16"}, {"n", "1,5,10,20"}, {"eps", "0.1,0.01"}}, 100000, 10000),
      check("so2 harmonic decay", "moment-decay", {{"family", "so2"}, {"d", "2"}, {"a", "0.5,1,2"}, {"n", "1,5,10,20"}, {"eps", "0.1,0.01"}}, 400000, 40000),
      check("non-normal decay", "moment-decay", {{"family", "nonnormal"}, {"d", "3"}, {"n", "4,8"}, {"eps", "0.1"}}, 400000, 40000),
      // Theorem 4 through class functions; Proposition 2 and Remark 3.
      check("householder mixing", "haar-mixing", {{"family", "householder"}, {"d", "2,6,16"}, {"n", "1,2,5,8,16,32,64"}}, 40000, 8000),
      check("coordinate fails to mix", "haar-mixing", {{"family", "householder"}, {"normals", "coordinate"}, {"d", "4,8"}, {"n", "1,5,10,40"}}, 40000, 8000),
      check("heat-dithered mixing", "haar-mixing", {{"family", "dithered"}, {"d", "4"}, {"normals", "coordinate"}, {"tau", "0.5"}, {"n", "1,2,12"}}, 20000, 4000),
      check("haar law", "haar-mixing", {{"family", "haar"}, {"d", "2,3,8,32"}, {"group", "o,so"}, {"n", "1"}}, 40000, 8000),
  };
  if (quick)
    for (auto& c : checks) c.request.samples = c.quick_samples;
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
