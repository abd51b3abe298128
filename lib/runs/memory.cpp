#include "runs/memory.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/core.h>

#include "nn/model.h"
#include "runs/config.h"

namespace routelab::runs {

namespace {

// a * b, saturating: a size past 2^64 bytes is simply "too large".
std::size_t mul(std::size_t a, std::size_t b) {
  return b != 0 && a > std::numeric_limits<std::size_t>::max() / b ? std::numeric_limits<std::size_t>::max() : a * b;
}
std::size_t add(std::size_t a, std::size_t b) {
  return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace

int eval_batch(int64_t L) { return int(std::max<int64_t>(1, 8192 / L)); }

std::size_t training_bytes(const nn::ModelConfig& m, int B, int64_t T) {
  const std::size_t arena = nn::ActivationLayout<float>::size(m, B, int(T), false);
  return mul(add(mul(nn::param_count(m), 4), mul(arena, 2)), sizeof(float));
}

std::size_t evaluation_bytes(const nn::ModelConfig& m, int64_t L) {
  const std::size_t arena = nn::ActivationLayout<float>::size(m, eval_batch(L), int(L), true);
  return mul(add(nn::param_count(m), arena), sizeof(float));
}

std::size_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

void require_memory(std::size_t bytes, const std::string& what) {
  const std::size_t have = available_memory_bytes();
  if (have == 0 || bytes <= have) return;
  throw ConfigError(fmt::format("{} needs {:.1f} GiB, more than the {:.1f} GiB this machine has available; use a "
                                "smaller model, batch or length",
                                what, double(bytes) / (1 << 30), double(have) / (1 << 30)));
}

}  // namespace routelab::runs
