#include "data/latest_value.h"

#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "rng/stream.h"

namespace routelab::data {

TaskSequence latest_value_sequence(int keys, int values, double query, int64_t window, uint64_t seed,
                                   uint64_t stream, int64_t distance) {
  if (keys < 1 || keys > kMaxValueKeys || values < 1 || values > kMaxValues)
    throw std::invalid_argument(fmt::format("latest-value keys {} and values {}: accepted: 1 to {} and 1 to {}", keys,
                                            values, kMaxValueKeys, kMaxValues));
  if (window < 3)
    throw std::invalid_argument(fmt::format("latest-value window {}: accepted: at least 3 bytes", window));
  // The last query's byte sits at window - 1, its answer at window; the
  // planted assignment at window - 1 - D, at least 1.
  if (distance != 0 && (distance < 1 || distance > window - 2))
    throw std::invalid_argument(
        fmt::format("latest-value distance {} at window {}: accepted: 1 to {}", distance, window, window - 2));
  if (distance > 0 && keys < 2)
    throw std::invalid_argument("latest-value distance sets need at least 2 keys (other keys fill the distance)");
  Stream s(seed, stream);
  TaskSequence out;
  out.bytes.assign(std::size_t(window) + 1, 0);
  out.bytes[0] = kTaskStart;
  std::vector<int> value(keys, -1);         // the latest value of each key
  std::vector<int64_t> assigned(keys, -1);  // where its latest assignment sits
  std::vector<int> known;                   // keys assigned so far
  const int64_t last = window - 1;          // the last query's byte
  const int target = distance ? int(s.below(uint64_t(keys))) : -1;
  const int64_t plant = distance ? last - distance : -1;
  auto assign = [&](int64_t at, int key) {
    const int v = int(s.below(uint64_t(values)));
    out.bytes[at] = uint8_t(kAssignFirst + key * values + v);
    if (value[key] < 0) known.push_back(key);
    value[key] = v, assigned[key] = at;
  };
  auto ask = [&](int64_t at, int key, bool scored) {
    out.bytes[at] = uint8_t(kQueryFirst + key);
    out.bytes[at + 1] = uint8_t(kValueFirst + value[key]);
    if (scored) out.reads.push_back({at, at - assigned[key]});
  };
  for (int64_t at = 1; at <= window;) {
    const bool between = plant >= 0 && at > plant;  // other keys only until the last query
    if (at == last) {
      ask(at, distance ? target : known[s.below(known.size())], true);
      break;
    }
    if (at == plant) {
      assign(at, target);
      ++at;
      continue;
    }
    // A query needs two bytes and may not cover the planted assignment or
    // the last query's byte; the first item assigns.
    const bool room = at + 1 < last && (plant < 0 || at >= plant || at + 1 < plant);
    bool is_query = at > 1 && room && s.uniform() < query;
    std::vector<int> pool;
    if (is_query)
      for (int k : known)
        if (!between || k != target) pool.push_back(k);
    if (pool.empty()) is_query = false;
    if (is_query) {
      ask(at, pool[s.below(pool.size())], !distance);
      at += 2;
    } else {
      int key = int(s.below(uint64_t(between ? keys - 1 : keys)));
      if (between && key >= target) ++key;
      assign(at, key);
      ++at;
    }
  }
  return out;
}

double latest_value_expected_reads(double query, int64_t window) {
  return 1 + double(window - 3) * query / (1 + query);
}

}  // namespace routelab::data
