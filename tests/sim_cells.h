// A simulation row's extra cell by name, for the tests that read sims' rows.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sims/sim.h"

namespace routelab::testing {

// The value of `key` among r's cells; "" when r has none.
inline std::string cell(const SimRow& r, const std::string& key) {
  for (const auto& [k, v] : r.cells)
    if (k == key) return v;
  return "";
}

// The first row of `quantity` (with cell n = `n` when given). A copy:
// callers pass the rows of a call, a temporary that dies with the statement.
inline SimRow find_row(const std::vector<SimRow>& rows, const std::string& quantity, const std::string& n = "") {
  for (const auto& r : rows)
    if (r.quantity == quantity && (n.empty() || cell(r, "n") == n)) return r;
  throw std::runtime_error("no row " + quantity + " " + n);
}

inline void expect_no_failures(const std::vector<SimRow>& rows, const std::string& what = "") {
  for (const auto& r : rows)
    EXPECT_NE(r.verdict, Verdict::fail) << what << " " << r.result << " " << r.quantity << " = " << r.estimate;
}

}  // namespace routelab::testing
