// The step laws every per-law test runs, CPU (tests/test_step_laws.cpp) and
// GPU (tests/test_gpu_sims.cpp) alike: one list, so a family added here is
// tested on both, and a family missing here fails
// FamilyRegistry.EveryFamilyIsComplete. Awkward sizes (odd d, d not a
// multiple of a block) and every option that changes the draw.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "planted_law.h"

namespace routelab::testing {

struct LawCase {
  std::string name;  // a gtest parameter name: letters, digits, '_'
  Params params;
};

inline void PrintTo(const LawCase& c, std::ostream* os) { *os << c.name; }

inline std::vector<LawCase> law_cases() {
  return {
      {"so2", params_for("so2", {{"d", "6"}, {"a", "1"}})},
      {"so2_drift", params_for("so2", {{"d", "6"}, {"a", "1"}, {"omega", "0.7"}})},
      {"so2_rope", params_for("so2", {{"d", "8"}, {"rope-base", "10000"}, {"omega", "0.3"}})},
      {"so2_rope100", params_for("so2", {{"d", "8"}, {"rope-base", "100"}})},
      {"givens", params_for("givens", {{"d", "5"}})},
      {"householder", params_for("householder", {{"d", "7"}})},
      {"householder_coordinate", params_for("householder", {{"d", "4"}, {"normals", "coordinate"}})},
      {"householder_coordinate6", params_for("householder", {{"d", "6"}, {"normals", "coordinate"}})},
      {"householder_gaussian", params_for("householder", {{"d", "5"}, {"normals", "gaussian"}})},
      {"householder_gaussian3", params_for("householder", {{"d", "5"}, {"normals", "gaussian"}, {"aniso", "3"}})},
      {"axis3", params_for("axis3", {{"d", "6"}})},
      {"axis3_theta2", params_for("axis3", {{"d", "6"}, {"theta", "2"}})},
      {"skewexp", params_for("skewexp", {{"d", "6"}})},
      {"heat2", params_for("heat", {{"d", "2"}})},
      {"heat3", params_for("heat", {{"d", "3"}})},
      {"heat3_short", params_for("heat", {{"d", "3"}, {"tau", "0.3"}})},
      {"heat5", params_for("heat", {{"d", "5"}, {"tau", "0.1"}, {"heat-h", "0.02"}})},
      {"fisher2", params_for("fisher", {{"d", "2"}})},
      {"fisher2_kappa", params_for("fisher", {{"d", "2"}, {"kappa", "1.5"}})},
      {"fisher3", params_for("fisher", {{"d", "3"}})},
      {"lieball3", params_for("lieball", {{"d", "3"}})},
      {"lieball3_r3", params_for("lieball", {{"d", "3"}, {"r", "3"}})},
      {"lieball4_bump", params_for("lieball", {{"d", "4"}, {"density", "bump"}})},
      {"lieball8_pi", params_for("lieball", {{"d", "8"}, {"r", "3.141592653589793"}})},
      {"haar_o", params_for("haar", {{"d", "6"}, {"group", "o"}})},
      {"haar_o5", params_for("haar", {{"d", "5"}, {"group", "o"}})},
      {"haar_so", params_for("haar", {{"d", "6"}, {"group", "so"}})},
      {"haar_so4", params_for("haar", {{"d", "4"}, {"group", "so"}})},
      {"dithered_minus", params_for("dithered", {{"d", "4"}, {"tau", "0.2"}})},
      {"dithered_mixed", params_for("dithered", {{"d", "4"}, {"sign", "mixed"}})},
      {"dithered_walk", params_for("dithered", {{"d", "4"}, {"tau", "0.1"}, {"heat-h", "0.05"}})},
      {"dithered3_gaussian_mixed",
       params_for("dithered", {{"d", "3"}, {"sign", "mixed"}, {"normals", "gaussian"}, {"aniso", "3"}})},
      {"nonnormal", params_for("nonnormal", {{"d", "3"}})},
  };
}

}  // namespace routelab::testing
