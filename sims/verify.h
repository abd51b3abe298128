// `routelab verify`: every check at default sizes, as a table.
// The test suite runs the same checks at small sizes.
#pragma once

#include <string>
#include <vector>

#include "io/table.h"
#include "sims/runner.h"

namespace routelab {

struct Check {
  std::string name;  // short label for the table
  RunRequest request;
  long long quick_samples;
};

// The checks; samples at default sizes (quick: under a minute on
// two cores for all of them together).
std::vector<Check> verify_checks(bool quick);

struct VerifyResult {
  Table rows;  // every row of every check, with a leading `check` column
  int failures = 0;
  int passes = 0;
};

VerifyResult run_verify(bool quick, int threads, uint64_t seed, bool progress);
// The printed summary table: one line per row that carries a verdict.
std::string format_verify_table(const VerifyResult& r);

}  // namespace routelab
