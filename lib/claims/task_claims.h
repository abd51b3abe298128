// The paper's claims where far context is the answer (issue 51): rules over
// a task experiment's CSV (runs/task_eval.h: the error rate over reads of
// generated sets), judged per seed as claims.h judges the text claims (one
// seed: a reading by the margin's sign; two or more: the mean margin's 95% t
// interval). Every threshold here was fixed before the task suite ran
// (docs/tasks.md): a rise or a fall counts from kTaskRise error-rate points.
//   task_rotation_rises      rotation-only transport: read error rises with
//                            length (16x against 1x), the far set of
//                            Section 4's lower bound growing with no far-mass
//                            control
//   task_control_stays_flat  ALiBi and the forget gate (alone or beside
//                            accumulated angles): read error stays within
//                            kTaskRise of 1x at 16x
//   task_accumulated_beats_rope  accumulated angles err less than RoPE
//                            beyond the training length (mean over 2x..16x,
//                            matched seeds)
//   task_qkv_rises_less      value rotation reduces the rise (QKV against QK
//                            of one family, matched seeds)
//   task_window_predicts_break  Section 3 (B.2) on the distance sets: a
//                            run's read error leaves its short-distance level
//                            near its mixing window (window_rule_hit), +1 a
//                            hit and -1 a miss per run
// A run whose read error at the training length (or, for the window rule,
// at short distances) has its 95% upper limit above kLearnedError did not
// learn the task; it is left out of every rule (and counted as such), since
// no rule about extrapolation speaks of a model at chance.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "claims/claims.h"

namespace routelab::claims {

inline constexpr double kTaskRise = 0.02;      // error-rate points
inline constexpr double kLearnedError = 0.25;  // above it (95% upper limit) a run did not learn

// Errors and reads of one set of one run.
struct ErrorCount {
  int64_t errors = 0, reads = 0;
  double rate() const { return reads ? double(errors) / double(reads) : 0; }
};

// One setting of a task experiment (the task and the swept cells of its rows).
struct TaskReadings {
  std::string setting;  // "flipflop", "flipflop layers=2"
  std::string task;
  int64_t train_len = 0;
  // scheme -> seed -> length ratio (eval_len / train_len) -> the law's set
  std::map<std::string, std::map<uint64_t, std::map<int64_t, ErrorCount>>> lengths;
  // scheme -> seed -> distance -> the distance set
  std::map<std::string, std::map<uint64_t, std::map<int64_t, ErrorCount>>> distances;
  // scheme -> seed -> mixing window in bytes (probe: lower median over layers
  // of each layer's lower median over blocks); -1 never mixes
  std::map<std::string, std::map<uint64_t, long long>> windows;
  bool learned(const std::string& scheme, uint64_t seed) const;
};

struct TaskClaim {
  const char* id;
  const char* wording;
  const char* rule;
  std::vector<SubjectMargins> (*margins)(const TaskReadings&);
};
const std::vector<TaskClaim>& all_task_claims();
// The full markdown table of task verdicts, the task claims' rules under it.
std::string task_claims_markdown(const std::vector<ClaimResult>& results);

// The smallest tested distance (beyond the three shortest, which make the
// short-distance level) whose two-sided 95% Clopper-Pearson lower limit lies
// above the short level's upper limit; -1 where none does.
long long observed_break(const std::map<int64_t, ErrorCount>& by_distance);
// The rule, fixed before the runs: a window within the tested distances
// predicts a break in [window / 2, 4 window] (detection lags the onset on a
// doubling grid); a window beyond the largest tested distance, or none,
// predicts no break there.
bool window_rule_hit(long long window, long long observed, int64_t largest_distance);

// One run's reading on the distance sets, as the window rule judges it:
// its short-distance level (the three shortest distances pooled), whether it
// learned (that level's 95% upper limit within kLearnedError), the observed
// break, and, where the run was probed, its window and the rule's verdict.
struct WindowReading {
  ErrorCount short_level;
  bool learned = false;
  long long observed = -1;  // observed_break; -1 none
  int64_t largest_distance = 0;
  std::optional<long long> window;  // bytes, -1 never mixes; unset: not probed
  // window_rule_hit; false where the run was not probed.
  bool hit() const { return window && window_rule_hit(*window, observed, largest_distance); }
};
// nullopt where the run has fewer than four distance sets.
std::optional<WindowReading> window_reading(const TaskReadings& s, const std::string& scheme, uint64_t seed);
// Every run's WindowReading, tidy: setting, scheme, seed, window (bytes, inf
// never mixes, empty unprobed), short_reads, short_errors, learned,
// observed_break (empty: none), largest_distance, window_rule (hit, miss, or
// empty where the rule does not judge the run).
std::string task_readings_csv(const std::vector<TaskReadings>& settings);

// Reads a task experiment's CSV (its rows grouped by setting) and, where
// given, probe CSVs of its runs (FILE-angles.csv: the windows). ClaimsError
// naming the file for anything else.
std::vector<TaskReadings> read_task_settings(const std::string& csv, const std::vector<std::string>& probe_csvs = {});
std::vector<ClaimResult> evaluate_task_claims(const std::vector<TaskReadings>& settings,
                                              const std::vector<TaskClaim>& claims = all_task_claims());
// Whether `csv` is a task experiment's (its header is task_csv_header's,
// swept columns allowed).
bool is_task_csv(const std::string& csv);

}  // namespace routelab::claims
