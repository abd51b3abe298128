// The tests' measure of agreement between a result and its reference, with
// no CUDA dependency, so CPU and GPU tests alike use it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace routelab::testing {

// RMS(got - want) / RMS(want); 0 when both are zero.
template <class T>
double rms_relative_error(const std::vector<T>& got, const std::vector<T>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    diff += (double(got[i]) - double(want[i])) * (double(got[i]) - double(want[i]));
    ref += double(want[i]) * double(want[i]);
  }
  if (!std::isfinite(diff)) return INFINITY;
  return ref == 0 ? std::sqrt(diff) : std::sqrt(diff / ref);
}

}  // namespace routelab::testing
