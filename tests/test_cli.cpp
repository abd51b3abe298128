// The command line as a user meets it: same seed, same bytes at any thread
// count; bad input gets one line on stderr, exit status 2 and no file.
#include <gtest/gtest.h>

#include "cli_helpers.h"
#include "groups/family.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

using routelab::testing::CliResult;
using routelab::testing::slurp;

CliResult run(const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("routelab_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return routelab::testing::run_routelab(args, dir);
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("routelab_cli_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::remove(dir / name);
  fs::remove(dir / (name + ".json"));
  return dir / name;
}

TEST(Cli, SameBytesAtOneAndTwoThreads) {
  for (const std::string sim : {"spectral-gap --family householder,so2 --d 4", "moment-decay --family givens --d 4",
                                "haar-mixing --family householder --d 4 --n 1,3"}) {
    const auto a = scratch("a.csv"), b = scratch("b.csv");
    ASSERT_EQ(run("sim " + sim + " --samples 5000 --seed 9 --threads 1 --out " + a.string()).status, 0);
    ASSERT_EQ(run("sim " + sim + " --samples 5000 --seed 9 --threads 2 --out " + b.string()).status, 0);
    const std::string bytes = slurp(a);
    EXPECT_GT(bytes.size(), 100u);
    EXPECT_EQ(bytes, slurp(b)) << sim;
    EXPECT_TRUE(fs::exists(a.string() + ".json"));
  }
}

TEST(Cli, SeedChangesTheNumbers) {
  const auto a = run("sim spectral-gap --family so2 --d 2 --samples 2000 --seed 1 --threads 1");
  const auto b = run("sim spectral-gap --family so2 --d 2 --samples 2000 --seed 2 --threads 1");
  EXPECT_EQ(a.status, 0);
  EXPECT_NE(a.out, b.out);
}

TEST(Cli, CsvIsTidy) {
  const auto r = run("sim spectral-gap --family givens --d 3,4 --a 1 --samples 2000");
  ASSERT_EQ(r.status, 0);
  std::istringstream lines(r.out);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "sim,result,quantity,family,d,a,samples,seed,estimate,stderr,ci_low,ci_high,theory,kind,verdict");
  int rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  EXPECT_EQ(rows, 4);  // beta and max_entry_z at two points
}

void expect_bad_input(const std::string& args, const std::string& flag) {
  const auto out = scratch("bad.csv");
  const auto r = run(args + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << args;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << args;
  EXPECT_FALSE(fs::exists(out.string() + ".json")) << args;
}

TEST(Cli, BadInputIsOneLineExitTwoNoFile) {
  expect_bad_input("sim spectral-gap --family so2 --d 7", "--d");
  expect_bad_input("sim spectral-gap --family axis3 --d 4", "--d");
  expect_bad_input("sim spectral-gap --family so2 --a 0", "--a");
  expect_bad_input("sim spectral-gap --family cube", "--family");
  expect_bad_input("sim spectral-gap --samples 0", "--samples");
  expect_bad_input("sim spectral-gap --samples -3", "--samples");
  expect_bad_input("sim spectral-gap --threads 0", "--threads");
  expect_bad_input("sim spectral-gap --frobnicate 1", "--frobnicate");
  expect_bad_input("sim moment-decay --n 0", "--n");
  expect_bad_input("sim moment-decay --eps 2", "--eps");
  expect_bad_input("sim haar-mixing --family haar --group x", "--group");
  expect_bad_input("sim nosuch", "--sim");
  expect_bad_input("sim spectral-gap --family givens --d 4,3,1", "--d");  // a later point is bad: nothing written
}

// Numbers that overflow, saturate or carry spaces are refused, not read as
// something else (issue 16: d = 2^32 + 2 used to run d = 2 and pass).
TEST(Cli, NumbersOutOfRangeOrMalformedAreRefused) {
  for (const char* family : {"givens", "householder", "so2"})
    expect_bad_input(std::string("sim spectral-gap --family ") + family + " --d 4294967298", "--d");
  expect_bad_input("sim spectral-gap --family householder --d ' 3'", "--d");
  expect_bad_input("sim spectral-gap --family householder --d '3 '", "--d");
  expect_bad_input("sim spectral-gap --family householder --d 5000", "[2, 4096]");
  expect_bad_input("sim spectral-gap --seed 18446744073709551616", "--seed");
  expect_bad_input("sim spectral-gap --seed -1", "--seed");
  expect_bad_input("sim spectral-gap --samples 99999999999999999999", "--samples");
  expect_bad_input("sim spectral-gap --samples 2199023255552", "2^40");
  expect_bad_input("sim spectral-gap --threads 100000", "[1, 1024]");
  expect_bad_input("sim spectral-gap --family so2 --a 1e999", "--a");
  expect_bad_input("sim spectral-gap --family so2 --a nan", "--a");
  expect_bad_input("sim moment-decay --family so2 --eps 0.1,", "--eps");
  expect_bad_input("sim moment-decay --family so2 --eps 0.1,,0.2", "--eps");
  expect_bad_input("sim spectral-gap --shard 1/0", "--shard");
  expect_bad_input("sim spectral-gap --shard ' 0/2'", "--shard");
  // The largest seed is a seed.
  EXPECT_EQ(run("sim spectral-gap --family so2 --d 2 --samples 100 --seed 18446744073709551615").status, 0);
}

TEST(Cli, CommandsAreNamedInTheirRefusals) {
  for (const auto& [args, says] : {std::pair<std::string, std::string>{"frob", "unknown command 'frob'"},
                                   {"sim", "name a simulation"},
                                   {"verify --threads 0", "is not accepted; an integer in [1, 1024]"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(Cli, FamiliesListsEveryFamily) {
  const auto r = run("families");
  ASSERT_EQ(r.status, 0);
  for (const auto& f : routelab::families()) EXPECT_NE(r.out.find(f.name + "\n"), std::string::npos) << f.name;
}

}  // namespace
