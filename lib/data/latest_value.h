// Latest-value recall: keys assigned again and again, and queries whose
// answer is the key's latest value (N-back with N = 1, as PaTH and
// stick-breaking attention evaluate it, after Zoology's associative recall).
// An assignment is ONE byte that names its key and its value together
// (kAssignFirst + k V + v); a query is two bytes, the key's query byte
// (kQueryFirst + k) and then the answer, the digit of the key's latest value,
// scored at the query byte. Stale assignments of the key share its key part
// and differ only in where they sit (and, mostly, in their value): the
// paper's stylized model (one near target, many far look-alikes) in data,
// and one attention layer can answer it (the query byte attends to the latest
// assignment of its key and copies the value), so every scheme has a solution
// inside the training length and what differs is how it extrapolates. A
// format with separate key and value bytes (k=v;) needs two layers (the
// value's position cannot see its key in one) and trained to little above
// chance in 4000 steps at this size (docs/tasks.md).
#pragma once

#include <cstdint>

#include "data/task.h"

namespace routelab::data {

inline constexpr int kMaxValueKeys = 16, kMaxValues = 10;
inline constexpr uint8_t kQueryFirst = 'A';  // query bytes A .. A + keys - 1
inline constexpr uint8_t kAssignFirst = 96;  // assignment bytes 96 .. 96 + keys values - 1 (at most 255)
inline constexpr uint8_t kValueFirst = '0';  // answers 0 .. values - 1

// window + 1 bytes: kTaskStart, then items (window >= 3). The first item
// assigns; each later one is, with probability `query`, a query of a key
// assigned before (two bytes), else an assignment of a uniform key to a
// uniform value; the last item is a query ending the window. distance D > 0:
// the last query's latest assignment sits D bytes before its query byte,
// items of other keys between, the law before; only that query is scored.
TaskSequence latest_value_sequence(int keys, int values, double query, int64_t window, uint64_t seed,
                                   uint64_t stream, int64_t distance);

// The expected number of reads: the window's items times the query share
// (an item is 1 + query bytes on average), plus the last query.
double latest_value_expected_reads(double query, int64_t window);

}  // namespace routelab::data
