// The task claims (lib/claims/task_claims.h) on readings made here: each rule
// says yes where its claim holds and no where a planted reading breaks it,
// runs that did not learn are left out, the window rule's break is found
// where the errors say, and a task experiment's CSV reads back into its
// settings.
#include <gtest/gtest.h>

#include <string>

#include "claims/task_claims.h"
#include "cli_helpers.h"
#include "runs/config.h"
#include "runs/task_eval.h"

namespace {

using namespace routelab;
using claims::ClaimResult;
using claims::ErrorCount;
using claims::TaskReadings;
using claims::evaluate_task_claims;
using claims::observed_break;
using claims::window_rule_hit;
using claims::read_task_settings;
using claims::is_task_csv;
using namespace routelab::testing;

// n reads at error rate `rate`.
ErrorCount at_rate(double rate, int64_t n = 2000) { return {int64_t(rate * n + 0.5), n}; }

// A scheme's length readings in three seeds: `one` at 1x, `sixteen` at 16x,
// linear between.
void put_lengths(TaskReadings& s, const std::string& scheme, double one, double sixteen) {
  for (uint64_t seed : {1, 2, 3})
    for (int64_t r = 1; r <= 16; r *= 2)
      s.lengths[scheme][seed][r] = at_rate(one + (sixteen - one) * (r - 1) / 15.0 + 0.001 * seed);
}

const ClaimResult* find(const std::vector<ClaimResult>& rs, const std::string& claim, const std::string& subject) {
  for (const auto& r : rs)
    if (r.claim == claim && r.subject == subject) return &r;
  return nullptr;
}

TEST(task_claims, rules_hold_where_the_readings_say_and_fail_where_planted) {
  TaskReadings s{"flipflop", "flipflop", 512, {}, {}, {}};
  put_lengths(s, "learned_qk", 0.05, 0.30);   // rises
  put_lengths(s, "learned_qkv", 0.05, 0.10);  // rises less
  put_lengths(s, "alibi", 0.10, 0.105);       // flat
  put_lengths(s, "fox", 0.10, 0.20);          // planted: a control that rises
  put_lengths(s, "rope", 0.50, 0.50);         // at chance: left out of its own rules
  const auto rs = evaluate_task_claims({s});
  EXPECT_EQ(find(rs, "task_rotation_rises", "learned_qk")->verdict, claims::Verdict::yes);
  EXPECT_EQ(find(rs, "task_control_stays_flat", "alibi")->verdict, claims::Verdict::yes);
  EXPECT_EQ(find(rs, "task_control_stays_flat", "fox")->verdict, claims::Verdict::no);
  EXPECT_EQ(find(rs, "task_qkv_rises_less", "learned")->verdict, claims::Verdict::yes);
  EXPECT_EQ(find(rs, "task_accumulated_beats_rope", "learned_qkv")->verdict, claims::Verdict::yes);
  EXPECT_EQ(find(rs, "task_rotation_rises", "rope"), nullptr);  // did not learn
  // Planted: the QKV scheme rises more than QK, and the rule says no.
  put_lengths(s, "learned_qkv", 0.05, 0.50);
  const auto planted = evaluate_task_claims({s});
  EXPECT_EQ(find(planted, "task_qkv_rises_less", "learned")->verdict, claims::Verdict::no);
}

TEST(task_claims, the_markdown_states_the_task_rules_and_their_unit) {
  TaskReadings s{"flipflop", "flipflop", 512, {}, {}, {}};
  put_lengths(s, "learned_qk", 0.05, 0.30);
  const std::string md = claims::task_claims_markdown(evaluate_task_claims({s}));
  EXPECT_NE(md.find("| flipflop |"), std::string::npos) << md;
  EXPECT_NE(md.find("Margins in read error"), std::string::npos) << md;
  for (const auto& c : claims::all_task_claims()) EXPECT_NE(md.find(std::string("- `") + c.id + "`"), std::string::npos);
  // Not the text claims' rules or unit.
  EXPECT_EQ(md.find("bits per byte"), std::string::npos) << md;
  EXPECT_EQ(md.find("`alibi_flat`"), std::string::npos) << md;
}

// Two schemes that err on no read tie in every seed: the cell says so rather
// than asking for more seeds than any power calculation can give.
TEST(task_claims, a_tie_in_every_seed_is_not_sent_for_more_seeds) {
  TaskReadings s{"flipflop", "flipflop", 512, {}, {}, {}};
  put_lengths(s, "path_qk", 0.0, 0.0);
  put_lengths(s, "path_qkv", 0.0, 0.0);
  for (const char* scheme : {"path_qk", "path_qkv"})
    for (auto& [seed, by_length] : s.lengths[scheme])
      for (auto& [ratio, count] : by_length) count = {0, 2000};
  const auto rs = evaluate_task_claims({s});
  ASSERT_NE(find(rs, "task_qkv_rises_less", "path"), nullptr);
  EXPECT_EQ(find(rs, "task_qkv_rises_less", "path")->verdict, claims::Verdict::marginal);
  const std::string md = claims::task_claims_markdown(rs);
  EXPECT_NE(md.find("marginal +0.000 [+0.000, +0.000] 0/3, every seed's margin is 0"), std::string::npos) << md;
  EXPECT_EQ(md.find("needs more than"), std::string::npos) << md;
  // The terminal table (`routelab claims`' default output) says the same in its power column.
  const std::string table = claims::claims_table(rs);
  EXPECT_NE(table.find("none: every margin 0"), std::string::npos) << table;
  EXPECT_EQ(table.find("more than 1000"), std::string::npos) << table;
  // One seed off zero: the margins differ, and the cell asks for seeds again.
  s.lengths["path_qkv"][2][16] = {20, 2000};
  EXPECT_NE(claims::task_claims_markdown(evaluate_task_claims({s})).find("needs"), std::string::npos);
}

TEST(task_claims, the_break_is_the_first_distance_above_the_short_level) {
  std::map<int64_t, ErrorCount> d;
  for (int64_t D : {2, 4, 8, 16, 32}) d[D] = at_rate(0.02, 500);
  d[64] = at_rate(0.03, 500);  // within noise of the short level
  d[128] = at_rate(0.30, 500);
  d[256] = at_rate(0.45, 500);
  EXPECT_EQ(observed_break(d), 128);
  d[128] = at_rate(0.02, 500), d[256] = at_rate(0.02, 500);
  EXPECT_EQ(observed_break(d), -1);
  EXPECT_TRUE(window_rule_hit(100, 128, 256));   // in [50, 400]
  EXPECT_FALSE(window_rule_hit(20, 128, 256));   // breaks later than 4 windows
  EXPECT_FALSE(window_rule_hit(300, 128, 256));  // ... or earlier than half
  EXPECT_TRUE(window_rule_hit(-1, -1, 256));     // never mixes, never breaks
  EXPECT_TRUE(window_rule_hit(1000, -1, 256));   // beyond the tested distances
  EXPECT_FALSE(window_rule_hit(1000, 128, 256));
  EXPECT_FALSE(window_rule_hit(100, -1, 256));  // a window inside, no break: a miss
}

TEST(task_claims, the_window_rule_counts_hits_and_misses) {
  TaskReadings s{"flipflop", "flipflop", 512, {}, {}, {}};
  for (uint64_t seed : {1, 2}) {
    s.lengths["learned_qkv"][seed][1] = at_rate(0.05);
    for (int64_t D : {2, 4, 8, 16, 32, 64, 128, 256})
      s.distances["learned_qkv"][seed][D] = at_rate(D >= 128 ? 0.4 : 0.03, 500);
  }
  s.windows["learned_qkv"][1] = 100;  // break at 128: a hit
  s.windows["learned_qkv"][2] = 10;   // predicted far earlier: a miss
  const auto results = evaluate_task_claims({s});
  const auto* r = find(results, "task_window_predicts_break", "learned_qkv");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->seeds.size(), 2u);
  EXPECT_EQ(r->seeds[0].margin, 1.0);
  EXPECT_EQ(r->seeds[1].margin, -1.0);
  // The same readings, tidy, one row a run; seed 3 was not probed and seed 4
  // did not learn: each has its row, which the rule does not judge.
  for (int64_t D : {2, 4, 8, 16, 32, 64, 128, 256}) {
    s.distances["learned_qkv"][3][D] = at_rate(0.03, 500);
    s.distances["learned_qkv"][4][D] = at_rate(0.5, 500);
  }
  s.windows["learned_qkv"][4] = -1;
  EXPECT_EQ(claims::task_readings_csv({s}),
            "setting,scheme,seed,window,short_reads,short_errors,learned,observed_break,largest_distance,"
            "window_rule\n"
            "flipflop,learned_qkv,1,100,1500,45,true,128,256,hit\n"
            "flipflop,learned_qkv,2,10,1500,45,true,128,256,miss\n"
            "flipflop,learned_qkv,3,,1500,45,true,,256,\n"
            "flipflop,learned_qkv,4,inf,1500,750,false,,256,\n");
}

// A flip-flop experiment's CSV path in `tmp`, its sidecar written (training
// length 32, p 0.8): the CSV is the test's to write.
std::string flipflop_csv_path(const TempDir& tmp) {
  runs::RunConfig base;
  base.task.name = "flipflop";
  base.model.context = 32;
  const std::string csv = (tmp.path / "ff.csv").string();
  spit(csv + ".json", nlohmann::json{{"config", runs::to_json(base)}}.dump());
  return csv;
}

TEST(task_claims, a_task_experiment_csv_reads_back_by_setting) {
  TempDir tmp;
  const std::string csv = flipflop_csv_path(tmp);
  std::string rows = "scheme,layers,seed,train_len,task,set,p,eval_len,distance,sequences,reads,errors,error_rate,"
                     "ci_low,ci_high,read_bits\n";
  for (const char* layers : {"1", "2"})
    for (int64_t L : {32, 64, 512})
      rows += fmt::format("rope,{},1,32,flipflop,length,0.8,{},,10,100,{},0,0,0,0\n", layers, L, L / 32);
  rows += "rope,1,1,32,flipflop,length,0.98,32,,10,100,50,0,0,0,0\n";  // a further p: not a length reading
  rows += "rope,1,1,32,flipflop,distance,0.8,32,8,10,10,1,0,0,0,0\n";
  spit(csv, rows);
  ASSERT_TRUE(is_task_csv(csv));
  const auto settings = read_task_settings(csv);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0].setting, "flipflop layers=1");
  EXPECT_EQ(settings[1].setting, "flipflop layers=2");
  EXPECT_EQ(settings[0].lengths.at("rope").at(1).at(16).errors, 16);
  EXPECT_EQ(settings[0].lengths.at("rope").at(1).at(1).errors, 1);  // not the p = 0.98 row's 50
  EXPECT_EQ(settings[0].distances.at("rope").at(1).at(8).reads, 10);
  spit(csv, "scheme,seed,eval_len\nrope,1,32\n");
  EXPECT_FALSE(is_task_csv(csv));
  EXPECT_THROW(read_task_settings(csv), claims::ClaimsError);
}

// What the text claims refuse (issue 52), the task claims refuse too: a
// header alone, cells no run writes (a training length of 0 divided by zero
// before), more errors than reads, a seed missing a length its scheme's other
// seeds have, and CSVs from which no rule can judge anything.
TEST(task_claims, a_csv_that_cannot_be_judged_whole_is_refused_naming_why) {
  TempDir tmp;
  const std::string csv = flipflop_csv_path(tmp);
  const std::string header = runs::task_csv_header();
  std::string whole;
  for (int seed : {1, 2})
    for (int64_t L : {32, 512})
      whole += fmt::format("rope,{},32,flipflop,length,0.8,{},,10,100,{},0,0,0,0\n", seed, L, L / 32);
  const auto refusal = [&](const std::string& rows) -> std::string {
    spit(csv, header + rows);
    try {
      evaluate_task_claims(read_task_settings(csv));
    } catch (const claims::ClaimsError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal(whole), "");  // rope's rise: task_rotation_rises reads it
  EXPECT_NE(refusal("").find("a header and no rows"), std::string::npos);
  std::string zero = whole;
  zero.replace(zero.find(",32,flipflop"), 4, ",0,");
  EXPECT_NE(refusal(zero).find("train_len cell '0'"), std::string::npos);
  std::string more = whole;
  more.replace(more.find(",100,1,"), 7, ",100,101,");
  EXPECT_NE(refusal(more).find("101 errors in 100 reads"), std::string::npos);
  const std::string cut = whole.substr(0, whole.rfind("rope,2,"));  // seed 2 lacks 16x
  EXPECT_NE(refusal(cut).find("rope seed 2 (flipflop) has no row at length ratio 16"), std::string::npos);
  EXPECT_NE(refusal("nope,1,32,flipflop,length,0.8,32,,10,100,50,0,0,0,0\n").find("no task claim can be judged"),
            std::string::npos);
}

}  // namespace
