// Reading a simulation's rows in tests.
#pragma once

#include <string>

#include "sims/sim.h"

namespace routelab::testing {

// The cell of column `key` in row r; "" when the row has no such column.
inline std::string cell(const SimRow& r, const std::string& key) {
  for (const auto& [k, v] : r.cells)
    if (k == key) return v;
  return "";
}

}  // namespace routelab::testing
