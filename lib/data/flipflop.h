// Flip-flop language modelling (Liu et al., NeurIPS 2023): a sequence of
// instruction-bit pairs over the bytes w r i 0 1. The first instruction is w,
// the last r; FFL(p) draws each instruction in between as i with probability
// p and w or r with (1 - p) / 2 each. The bit after w or i is uniform; the bit
// after r is the bit of the latest w, the only deterministic bytes and the
// only scored ones. The latest w is near (about 2 / (1 - p) pairs back), the
// stale writes before it grow with length: the far set of Section 4's lower
// bound, in data.
#pragma once

#include <cstdint>

#include "data/task.h"

namespace routelab::data {

inline constexpr uint8_t kFlipWrite = 'w', kFlipRead = 'r', kFlipIgnore = 'i';

// window + 1 bytes: kTaskStart, then window / 2 pairs (window even, >= 4).
// distance D > 0: the last read's write sits D bytes before it (D even),
// ignores between, FFL(p) before; only that read is scored.
TaskSequence flipflop_sequence(double p, int64_t window, uint64_t seed, uint64_t stream, int64_t distance);

// 1 + (pairs - 2) (1 - p) / 2: the forced last read and the law's reads.
double flipflop_expected_reads(double p, int64_t window);

}  // namespace routelab::data
