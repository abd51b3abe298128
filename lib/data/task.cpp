#include "data/task.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/core.h>

#include "data/flipflop.h"
#include "data/latest_value.h"

namespace routelab::data {

std::string task_names() { return "flipflop, latest_value"; }

bool is_task(const std::string& name) { return name == "flipflop" || name == "latest_value"; }

bool task_reads(const std::string& name, const std::string& key) {
  if (key.starts_with("flipflop_")) return name == "flipflop";
  if (key.starts_with("recall_")) return name == "latest_value";
  return true;
}

namespace {

void require_task(const TaskConfig& t) {
  if (!is_task(t.name))
    throw std::invalid_argument(fmt::format("task '{}' is unknown; accepted: {}", t.name, task_names()));
}

}  // namespace

int task_unit(const TaskConfig& t) {
  require_task(t);
  return t.name == "flipflop" ? 2 : 1;
}

int64_t task_min_window(const TaskConfig& t) { return task_unit(t) == 2 ? 4 : 3; }

bool task_distance_fits(const TaskConfig& t, int64_t distance, int64_t window) {
  const int unit = task_unit(t);
  return distance >= unit && distance % unit == 0 && distance <= window - 2;
}

TaskSequence task_sequence(const TaskConfig& t, int64_t window, uint64_t seed, uint64_t stream, int64_t distance) {
  require_task(t);
  if (t.name == "flipflop") return flipflop_sequence(t.p, window, seed, stream, distance);
  return latest_value_sequence(t.keys, t.values, t.query, window, seed, stream, distance);
}

std::vector<uint8_t> task_stream(const TaskConfig& t, int64_t window, int64_t count, uint64_t seed,
                                 uint64_t first_stream) {
  std::vector<uint8_t> out;
  out.reserve(std::size_t(window * count + 1));
  for (int64_t i = 0; i < count; ++i) {
    const TaskSequence s = task_sequence(t, window, seed, first_stream + uint64_t(i));
    out.insert(out.end(), s.bytes.begin(), s.bytes.end() - (i + 1 < count ? 1 : 0));
  }
  return out;
}

double expected_reads(const TaskConfig& t, int64_t window) {
  require_task(t);
  return t.name == "flipflop" ? flipflop_expected_reads(t.p, window) : latest_value_expected_reads(t.query, window);
}

bool read_is_right(const TaskSequence& s, const TaskRead& r, const float* logits_row, int vocab) {
  const int predicted = int(std::max_element(logits_row, logits_row + vocab) - logits_row);
  return predicted == s.bytes[std::size_t(r.at) + 1];
}

}  // namespace routelab::data
