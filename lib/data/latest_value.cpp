#include "data/latest_value.h"

#include <stdexcept>

#include <fmt/core.h>

#include "rng/stream.h"

namespace routelab::data {

TaskSequence latest_value_sequence(int keys, int values, double query, int64_t window, uint64_t seed,
                                   uint64_t stream, int64_t distance) {
  if (window < 8 || window % 4 != 0)
    throw std::invalid_argument(
        fmt::format("latest-value window {}: accepted: a multiple of 4 bytes (one item k=v;), at least 8", window));
  if (distance != 0 && (distance < 4 || distance % 4 != 0 || distance > window - 4))
    throw std::invalid_argument(fmt::format(
        "latest-value distance {} at window {}: accepted: a multiple of 4, from 4 to {}", distance, window, window - 4));
  if (distance > 0 && keys < 2)
    throw std::invalid_argument("latest-value distance sets need at least 2 keys (other keys fill the distance)");
  Stream s(seed, stream);
  TaskSequence out;
  out.bytes.assign(std::size_t(window) + 1, 0);
  out.bytes[0] = kTaskStart;
  const int64_t items = window / 4, last = items - 1;
  // Item i is bytes 1 + 4i .. 4 + 4i: key, '=' or '?', value, ';'.
  std::vector<int> value(keys, -1);         // the latest value of each key
  std::vector<int64_t> assigned(keys, -1);  // where its latest '=' sits
  std::vector<int> known;                   // keys assigned so far
  // The distance set's key and planted assignment (the last query's).
  const int target = distance ? int(s.below(uint64_t(keys))) : -1;
  const int64_t plant = distance ? last - distance / 4 : -1;
  for (int64_t i = 0; i < items; ++i) {
    const int64_t at = 1 + 4 * i;
    const bool between = plant >= 0 && i > plant && i < last;  // other keys only
    int key;
    bool ask;
    if (i == plant) {
      key = target, ask = false;
    } else if (i == last) {
      ask = true;
      key = distance ? target : known[s.below(known.size())];
    } else {
      ask = i > 0 && s.uniform() < query;
      // Between the planted assignment and its query, draws skip the target.
      std::vector<int> pool;
      if (ask)
        for (int k : known)
          if (!between || k != target) pool.push_back(k);
      if (ask && pool.empty()) ask = false;
      if (ask) {
        key = pool[s.below(pool.size())];
      } else {
        key = int(s.below(uint64_t(between ? keys - 1 : keys)));
        if (between && key >= target) ++key;
      }
    }
    out.bytes[at] = uint8_t(kValueKeys[key]);
    out.bytes[at + 3] = kItemEnd;
    if (ask) {
      out.bytes[at + 1] = kQuery;
      out.bytes[at + 2] = uint8_t('0' + value[key]);
      if (!distance || i == last) out.reads.push_back({at + 1, at + 1 - assigned[key]});
    } else {
      const int v = int(s.below(uint64_t(values)));
      out.bytes[at + 1] = kAssign;
      out.bytes[at + 2] = uint8_t('0' + v);
      if (value[key] < 0) known.push_back(key);
      value[key] = v, assigned[key] = at + 1;
    }
  }
  return out;
}

double latest_value_expected_reads(double query, int64_t window) { return 1 + double(window / 4 - 2) * query; }

}  // namespace routelab::data
