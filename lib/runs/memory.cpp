#include "runs/memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <utility>
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

namespace {

// kB of a "Key: N kB" line of /proc/self/status; nullopt when absent.
std::optional<std::size_t> status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.starts_with(key + ":")) {
      std::istringstream in(line.substr(key.size() + 1));
      std::size_t kib = 0;
      if (in >> kib) return kib * 1024;
    }
  return std::nullopt;
}

// What limit `resource` leaves above `used` (mapped) bytes; the maximum when
// unlimited or unreadable.
std::size_t headroom(int resource, const std::string& used_key) {
  struct rlimit r {};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::numeric_limits<std::size_t>::max();
  const std::size_t used = status_bytes(used_key).value_or(0);
  return std::size_t(r.rlim_cur) > used ? std::size_t(r.rlim_cur) - used : 1;
}

// The host's available memory and whether a limit of this process is what
// bounds it.
std::pair<std::size_t, bool> host_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  std::size_t have = 0;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") have = kib * 1024;
  const std::size_t limit = std::min(headroom(RLIMIT_AS, "VmSize"), headroom(RLIMIT_DATA, "VmData"));
  if (limit == std::numeric_limits<std::size_t>::max() || (have != 0 && have <= limit)) return {have, false};
  return {limit, true};
}

}  // namespace

std::size_t available_memory_bytes() { return host_memory().first; }

void require_memory(std::size_t bytes, const std::string& what, const nn::BackendFactory& backend) {
  const bool device = bool(backend.free_bytes);
  const auto [have, limited] = device ? std::pair{backend.free_bytes(), false} : host_memory();
  if (have == 0 || bytes <= have) return;
  throw ConfigError(fmt::format("{} needs {:.1f} GiB, more than the {:.1f} GiB {}; use a smaller model, batch or "
                                "length",
                                what, double(bytes) / (1 << 30), double(have) / (1 << 30),
                                device    ? "the device has free"
                                : limited ? "this process's limits leave it (ulimit -v, ulimit -d)"
                                          : "this machine has available"));
}

}  // namespace routelab::runs
