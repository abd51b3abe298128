// The number of elements of a tensor shape, for the parameter layouts
// (nn/model.h, runs/export.h) and the safetensors reader and writer (io/),
// which also meets shapes it has not checked.
#pragma once

#include <cstdint>
#include <vector>

namespace routelab {

// prod(shape), or -1 when a dimension is negative or the product passes 2^62.
inline int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 62) / d)) return -1;
    n *= d;
  }
  return n;
}

}  // namespace routelab
