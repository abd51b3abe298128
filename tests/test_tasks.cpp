// The synthetic tasks (lib/data/task.h): each generator against an oracle
// that reads the rules back from the bytes alone (flip-flop: the bit after r
// is the latest w's; latest value: the value after k? is k's latest
// assignment), the laws' frequencies against their probabilities with
// intervals (z = 5), the distance sets' planted source, the scorer, and
// reproducibility from (seed, stream). Each oracle is shown to catch a
// planted wrong answer.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/flipflop.h"
#include "data/latest_value.h"
#include "data/task.h"
#include "stats/intervals.h"

namespace {

using namespace routelab;
using namespace routelab::data;

// What an oracle finds in a sequence: the reads it derives from the bytes
// and whether every byte obeys the task's grammar and every answer its rule.
struct Oracle {
  std::vector<TaskRead> reads;
  std::string broken;  // the first rule broken, empty if none
};

Oracle flipflop_oracle(const std::vector<uint8_t>& b) {
  Oracle o;
  if (b.empty() || b[0] != kTaskStart) return {{}, "no start byte"};
  if (b.size() % 2 != 1) return {{}, "not whole pairs"};
  int64_t latest = -1;
  uint8_t bit = 0;
  for (std::size_t at = 1; at + 1 < b.size(); at += 2) {
    const uint8_t op = b[at], v = b[at + 1];
    if (v != '0' && v != '1') return {{}, "a bit that is not 0 or 1"};
    if (at == 1 && op != kFlipWrite) return {{}, "the first instruction is not w"};
    if (op == kFlipWrite) {
      latest = int64_t(at), bit = v;
    } else if (op == kFlipRead) {
      if (v != bit) return {{}, "a read's bit is not the latest write's"};
      o.reads.push_back({int64_t(at), int64_t(at) - latest});
    } else if (op != kFlipIgnore) {
      return {{}, "an unknown instruction"};
    }
  }
  if (b[b.size() - 2] != kFlipRead) return {{}, "the last instruction is not r"};
  return o;
}

Oracle latest_value_oracle(const std::vector<uint8_t>& b, int keys, int values) {
  Oracle o;
  if (b.empty() || b[0] != kTaskStart) return {{}, "no start byte"};
  std::map<int, std::pair<int, int64_t>> latest;  // key -> (value, where its assignment is)
  for (std::size_t at = 1; at < b.size();) {
    const int x = b[at];
    if (x >= kAssignFirst && x < kAssignFirst + keys * values) {
      latest[(x - kAssignFirst) / values] = {(x - kAssignFirst) % values, int64_t(at)};
      ++at;
    } else if (x >= kQueryFirst && x < kQueryFirst + keys) {
      const int k = x - kQueryFirst;
      if (at + 1 >= b.size()) return {{}, "a query without its answer"};
      if (!latest.count(k)) return {{}, "a query of a key never assigned"};
      if (b[at + 1] != kValueFirst + latest[k].first) return {{}, "a query's value is not the latest"};
      o.reads.push_back({int64_t(at), int64_t(at) - latest[k].second});
      at += 2;
    } else {
      return {{}, "a byte neither an assignment nor a query"};
    }
  }
  if (b.size() < 3 || b[b.size() - 2] < kQueryFirst || b[b.size() - 2] >= kQueryFirst + keys)
    return {{}, "the last item is not a query"};
  return o;
}

void expect_same_reads(const std::vector<TaskRead>& a, const std::vector<TaskRead>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at, b[i].at) << i;
    EXPECT_EQ(a[i].distance, b[i].distance) << i;
  }
}

TaskConfig flipflop(double p) { return {.name = "flipflop", .p = p}; }
TaskConfig latest_value() { return {.name = "latest_value"}; }

TEST(tasks, flipflop_sequences_obey_the_rules_and_list_every_read) {
  for (double p : {0.0, 0.1, 0.8, 0.98})
    for (uint64_t stream = 0; stream < 50; ++stream) {
      const TaskSequence s = task_sequence(flipflop(p), 64, 7, stream);
      ASSERT_EQ(s.bytes.size(), 65u);
      const Oracle o = flipflop_oracle(s.bytes);
      ASSERT_EQ(o.broken, "") << "p=" << p << " stream " << stream;
      expect_same_reads(s.reads, o.reads);
    }
}

TEST(tasks, flipflop_oracle_catches_a_wrong_answer) {
  TaskSequence s = task_sequence(flipflop(0.5), 64, 3, 0);
  ASSERT_EQ(flipflop_oracle(s.bytes).broken, "");
  // The planted error: the last read answers the other bit.
  uint8_t& answer = s.bytes[s.reads.back().at + 1];
  answer = answer == '0' ? '1' : '0';
  EXPECT_EQ(flipflop_oracle(s.bytes).broken, "a read's bit is not the latest write's");
}

TEST(tasks, flipflop_law_draws_ignores_with_probability_p) {
  // The instructions between the first and the last are i with probability
  // p and w with (1 - p) / 2; the bits after w and i are fair.
  const double p = 0.8;
  int64_t n = 0, ignores = 0, writes = 0, bits = 0, ones = 0;
  for (uint64_t stream = 0; stream < 400; ++stream) {
    const auto b = task_sequence(flipflop(p), 512, 11, stream).bytes;
    for (std::size_t at = 3; at + 2 < b.size() - 1; at += 2) {
      ++n, ignores += b[at] == kFlipIgnore, writes += b[at] == kFlipWrite;
      if (b[at] != kFlipRead) ++bits, ones += b[at + 1] == '1';
    }
  }
  auto within = [](int64_t x, int64_t m, double q) {
    const double sd = std::sqrt(m * q * (1 - q));
    return std::abs(double(x) - m * q) < kZ * sd;
  };
  EXPECT_TRUE(within(ignores, n, p)) << ignores << " of " << n;
  EXPECT_TRUE(within(writes, n, (1 - p) / 2)) << writes << " of " << n;
  EXPECT_TRUE(within(ones, bits, 0.5)) << ones << " of " << bits;
  // The planted error: a law of p = 0.75 is told apart from 0.8 at this size.
  EXPECT_FALSE(within(ignores, n, 0.75));
}

TEST(tasks, expected_reads_match_the_mean) {
  for (const TaskConfig& t : {flipflop(0.8), flipflop(0.98), latest_value()}) {
    const int64_t window = 256;
    double sum = 0, sum2 = 0;
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
      const double r = double(task_sequence(t, window, 5, uint64_t(i)).reads.size());
      sum += r, sum2 += r * r;
    }
    const double mean = sum / n, se = std::sqrt((sum2 / n - mean * mean) / n);
    // Latest value's formula ignores the window's two ends (at most one item).
    EXPECT_NEAR(mean, expected_reads(t, window), kZ * se + (t.name == "latest_value" ? 1.0 : 1e-9))
        << t.name << " p=" << t.p;
  }
}

TEST(tasks, flipflop_distance_sets_plant_the_write_exactly_d_back) {
  for (int64_t D : {2, 4, 10, 62, 126}) {
    const TaskSequence s = task_sequence(flipflop(0.8), 128, 9, uint64_t(D), D);
    const Oracle o = flipflop_oracle(s.bytes);
    ASSERT_EQ(o.broken, "") << D;
    ASSERT_EQ(s.reads.size(), 1u);  // only the last read is scored
    EXPECT_EQ(s.reads[0].at, 127);
    EXPECT_EQ(s.reads[0].distance, D);
    EXPECT_EQ(o.reads.back().distance, D);  // the oracle finds the same write
    for (int64_t at = 127 - D + 2; at < 127; at += 2) EXPECT_EQ(s.bytes[at], kFlipIgnore) << D;
  }
  EXPECT_THROW(task_sequence(flipflop(0.8), 128, 9, 0, 3), std::invalid_argument);    // odd
  EXPECT_THROW(task_sequence(flipflop(0.8), 128, 9, 0, 128), std::invalid_argument);  // no room
  EXPECT_THROW(task_sequence(flipflop(0.8), 127, 9, 0), std::invalid_argument);       // half a pair
}

TEST(tasks, latest_value_sequences_obey_the_rules_and_list_every_read) {
  for (uint64_t stream = 0; stream < 100; ++stream) {
    const TaskSequence s = task_sequence(latest_value(), 256, 4, stream);
    const Oracle o = latest_value_oracle(s.bytes, 16, 10);
    ASSERT_EQ(o.broken, "") << "stream " << stream;
    expect_same_reads(s.reads, o.reads);
  }
  TaskSequence s = task_sequence(latest_value(), 256, 4, 0);
  uint8_t& answer = s.bytes[s.reads.back().at + 1];
  answer = answer == '0' ? '1' : '0';  // the planted error
  EXPECT_EQ(latest_value_oracle(s.bytes, 16, 10).broken, "a query's value is not the latest");
}

TEST(tasks, latest_value_distance_sets_keep_other_keys_between) {
  for (int64_t D : {1, 2, 7, 64, 254}) {
    const TaskSequence s = task_sequence(latest_value(), 256, 2, uint64_t(D), D);
    const Oracle o = latest_value_oracle(s.bytes, 16, 10);
    ASSERT_EQ(o.broken, "") << D;
    ASSERT_EQ(s.reads.size(), 1u);
    EXPECT_EQ(s.reads[0].at, 255);
    EXPECT_EQ(s.reads[0].distance, D);
    EXPECT_EQ(o.reads.back().distance, D);  // the oracle finds the same assignment
    const int key = s.bytes[s.reads[0].at] - kQueryFirst;
    for (int64_t at = s.reads[0].at - D + 1; at < s.reads[0].at; ++at) {
      const int x = s.bytes[at];
      if (x >= kAssignFirst) {
        EXPECT_NE((x - kAssignFirst) / 10, key) << D;  // no later assignment of the key
      }
    }
  }
  EXPECT_THROW(task_sequence(latest_value(), 256, 2, 0, 255), std::invalid_argument);  // no room
}

TEST(tasks, a_sequence_is_a_function_of_seed_and_stream) {
  for (const TaskConfig& t : {flipflop(0.8), latest_value()}) {
    EXPECT_EQ(task_sequence(t, 128, 1, 5).bytes, task_sequence(t, 128, 1, 5).bytes);
    EXPECT_NE(task_sequence(t, 128, 1, 5).bytes, task_sequence(t, 128, 1, 6).bytes);
    EXPECT_NE(task_sequence(t, 128, 1, 5).bytes, task_sequence(t, 128, 2, 5).bytes);
  }
}

TEST(tasks, the_scorer_takes_the_most_likely_byte) {
  const TaskSequence s = task_sequence(flipflop(0.8), 16, 1, 0);
  const TaskRead r = s.reads.back();
  std::vector<float> row(256, 0.0f);
  row[s.bytes[r.at + 1]] = 1.0f;
  EXPECT_TRUE(read_is_right(s, r, row.data(), 256));
  row['0' + '1' - s.bytes[r.at + 1]] = 2.0f;
  EXPECT_FALSE(read_is_right(s, r, row.data(), 256));
}

TEST(tasks, units_and_windows) {
  EXPECT_EQ(task_unit(flipflop(0.8)), 2);
  EXPECT_EQ(task_unit(latest_value()), 1);
  EXPECT_TRUE(task_distance_fits(latest_value(), 7, 64));
  EXPECT_TRUE(task_distance_fits(latest_value(), 62, 64));
  EXPECT_FALSE(task_distance_fits(latest_value(), 63, 64));
  EXPECT_FALSE(task_distance_fits(flipflop(0.8), 7, 64));
  EXPECT_THROW(task_unit({.name = "copy"}), std::invalid_argument);
}

}  // namespace
