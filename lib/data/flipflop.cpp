#include "data/flipflop.h"

#include <stdexcept>

#include <fmt/core.h>

#include "rng/stream.h"

namespace routelab::data {

namespace {

// One instruction of FFL(p): i with probability p, else w or r evenly.
uint8_t law_instruction(Stream& s, double p) {
  const double u = s.uniform();
  return u < p ? kFlipIgnore : u < p + (1 - p) / 2 ? kFlipWrite : kFlipRead;
}

}  // namespace

TaskSequence flipflop_sequence(double p, int64_t window, uint64_t seed, uint64_t stream, int64_t distance) {
  if (window < 4 || window % 2 != 0)
    throw std::invalid_argument(fmt::format("flip-flop window {}: accepted: an even number of bytes, at least 4",
                                            window));
  if (distance != 0 && (distance < 2 || distance % 2 != 0 || distance > window - 2))
    throw std::invalid_argument(fmt::format("flip-flop distance {} at window {}: accepted: even, from 2 to {}",
                                            distance, window, window - 2));
  Stream s(seed, stream);
  TaskSequence out;
  out.bytes.assign(std::size_t(window) + 1, 0);
  out.bytes[0] = kTaskStart;
  const int64_t pairs = window / 2;
  // Instruction k sits at byte 1 + 2k, its bit after it.
  const int64_t last = pairs - 1;
  const int64_t write_at = distance ? last - distance / 2 : -1;  // the distance set's planted write
  int64_t latest_write = -1;
  uint8_t latest_bit = 0;
  for (int64_t k = 0; k < pairs; ++k) {
    const int64_t at = 1 + 2 * k;
    uint8_t op;
    if (k == 0 || k == write_at) op = kFlipWrite;
    else if (k == last) op = kFlipRead;
    else if (write_at >= 0 && k > write_at) op = kFlipIgnore;
    else op = law_instruction(s, p);
    uint8_t bit;
    if (op == kFlipRead) {
      bit = latest_bit;
      if (!distance || k == last) out.reads.push_back({at, at - latest_write});
    } else {
      bit = uint8_t('0' + s.below(2));
      if (op == kFlipWrite) latest_write = at, latest_bit = bit;
    }
    out.bytes[at] = op;
    out.bytes[at + 1] = bit;
  }
  return out;
}

double flipflop_expected_reads(double p, int64_t window) {
  return 1 + double(window / 2 - 2) * (1 - p) / 2;
}

}  // namespace routelab::data
