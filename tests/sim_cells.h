// A simulation row's extra cell by name, for the tests that read sims' rows.
#pragma once

#include <string>

#include "sims/sim.h"

namespace routelab::testing {

// The value of `key` among r's cells; "" when r has none.
inline std::string cell(const SimRow& r, const std::string& key) {
  for (const auto& [k, v] : r.cells)
    if (k == key) return v;
  return "";
}

}  // namespace routelab::testing
