// Latest-value recall: a stream of assignments `k=v;` in which keys are
// assigned again and again, and queries `k?v;` whose answer v is the key's
// latest value (N-back with N = 1, as PaTH and stick-breaking attention
// evaluate it, after Zoology's associative recall). Stale assignments carry
// the same key bytes as the latest one, so only where they sit tells them
// apart: the paper's stylized model (one near target, many far look-alikes)
// in data. The answer is the byte after `?`, scored there.
#pragma once

#include <cstdint>

#include "data/task.h"

namespace routelab::data {

// The key alphabet: the first `keys` bytes of it name the keys.
inline constexpr char kValueKeys[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
inline constexpr int kMaxValueKeys = 52, kMaxValues = 10;
inline constexpr uint8_t kAssign = '=', kQuery = '?', kItemEnd = ';';

// window + 1 bytes: kTaskStart, then window / 4 items (window a multiple of 4,
// >= 8). The first item assigns; each later one is, with probability
// `query`, a query of a key assigned before, else an assignment of a uniform
// key to a uniform value; the last item is a query. distance D > 0: the last
// query's latest assignment sits D bytes before it (a multiple of 4), items
// of other keys between, the law before; only that query is scored.
TaskSequence latest_value_sequence(int keys, int values, double query, int64_t window, uint64_t seed,
                                   uint64_t stream, int64_t distance);

// 1 + (items - 2) query: the last query and the law's (every query after the
// first item has an assigned key).
double latest_value_expected_reads(double query, int64_t window);

}  // namespace routelab::data
