// Scale-out gives the same bytes as one process: `--shard K/N` partials
// merged by `routelab merge`, and `mpirun -np 2` splitting the sample streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "cli_helpers.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path dir() {
  const fs::path d = fs::temp_directory_path() / ("routelab_scale_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

int sh(const std::string& cmd) {
  const int raw = std::system((cmd + " 2> " + (dir() / "err").string()).c_str());
  return WEXITSTATUS(raw);
}

const std::string kBin = routelab::testing::routelab_binary();
const std::string kSweep = "sim spectral-gap --family householder,givens,so2 --d 4,6 --samples 4000";

TEST(ScaleOut, ShardsMergeToTheSingleProcessBytes) {
  const auto d = dir();
  ASSERT_EQ(sh(kBin + " " + kSweep + " --seed 5 --out " + (d / "one.csv").string()), 0);
  std::string parts;
  for (int k = 0; k < 4; ++k) {
    const auto part = d / ("part" + std::to_string(k) + ".csv");
    ASSERT_EQ(sh(kBin + " " + kSweep + " --seed 5 --threads 1 --shard " + std::to_string(k) + "/4 --out " + part.string()), 0);
    parts = part.string() + " " + parts;  // any order
  }
  ASSERT_EQ(sh(kBin + " merge " + parts + "--out " + (d / "merged.csv").string()), 0);
  EXPECT_EQ(slurp(d / "merged.csv"), slurp(d / "one.csv"));
  EXPECT_TRUE(fs::exists(d / "merged.csv.json"));
}

// Every split of a sweep of P points into N shards merges to the single run's
// bytes, N > P included: a shard past the last point writes a partial with no
// rows (and says so on stderr), and merge takes it (issue 38).
TEST(ScaleOut, EverySplitIntoShardsMergesToTheSingleRun) {
  const auto d = dir() / "splits";
  fs::create_directories(d);
  for (const std::string ds : {"4", "3,4,5"}) {
    const long points = long(std::count(ds.begin(), ds.end(), ',')) + 1;
    const std::string sweep = "sim spectral-gap --family givens --a 0.7 --samples 2000 --seed 4 --d " + ds;
    const auto one = d / "one.csv";
    ASSERT_EQ(sh(kBin + " " + sweep + " --out " + one.string()), 0);
    for (long n = 1; n <= points + 2; ++n) {
      std::string parts;
      for (long k = 0; k < n; ++k) {
        const auto part = d / ("part" + std::to_string(k) + ".csv");
        const std::string split = std::to_string(k) + "/" + std::to_string(n);
        ASSERT_EQ(sh(kBin + " " + sweep + " --shard " + split + " --out " + part.string()), 0) << split;
        const std::string err = slurp(dir() / "err");
        if (k >= points)
          EXPECT_NE(err.find("covers no point"), std::string::npos) << split << ": " << err;
        else
          EXPECT_EQ(err, "") << split;
        parts = part.string() + " " + parts;  // any order
      }
      const auto merged = d / "merged.csv";
      ASSERT_EQ(sh(kBin + " merge " + parts + "--out " + merged.string()), 0)
          << points << " points, " << n << " shards: " << slurp(dir() / "err");
      EXPECT_EQ(slurp(merged), slurp(one)) << points << " points, " << n << " shards";
      fs::remove(merged), fs::remove(merged.string() + ".json");
    }
  }
}

TEST(ScaleOut, MergeRefusesIncompleteOrMixedPartials) {
  const auto d = dir();
  const auto a = (d / "a.csv").string(), b = (d / "b.csv").string(), c = (d / "c.csv").string();
  ASSERT_EQ(sh(kBin + " " + kSweep + " --shard 0/2 --out " + a), 0);
  ASSERT_EQ(sh(kBin + " " + kSweep + " --shard 1/2 --out " + b), 0);
  ASSERT_EQ(sh(kBin + " " + kSweep + " --seed 6 --shard 1/2 --out " + c), 0);
  const auto out = (d / "m.csv").string();
  EXPECT_EQ(sh(kBin + " merge " + a + " --out " + out), 2);       // shard 1/2 missing
  EXPECT_EQ(sh(kBin + " merge " + a + " " + a + " --out " + out), 2);  // given twice
  EXPECT_EQ(sh(kBin + " merge " + a + " " + c + " --out " + out), 2);  // another seed
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(sh(kBin + " " + kSweep + " --shard 2/2 --out " + out), 2);  // K out of range
  EXPECT_EQ(sh(kBin + " merge " + a + " " + b + " --out " + out), 0);
}

// The partials' damage that used to merge into wrong output with exit 0, and
// the sidecars that crashed or wrote out of bounds: each refused, exit 2.
TEST(ScaleOut, MergeChecksEveryPartialAgainstItsSidecar) {
  const auto d = dir() / "damaged";
  fs::create_directories(d);
  const auto a = (d / "a.csv").string(), b = (d / "b.csv").string(), x = (d / "x.csv").string();
  ASSERT_EQ(sh(kBin + " " + kSweep + " --shard 0/2 --out " + a), 0);
  ASSERT_EQ(sh(kBin + " " + kSweep + " --shard 1/2 --out " + b), 0);
  const std::string csv = slurp(a), side = slurp(a + ".json"), other = slurp(b);
  const auto out = (d / "m.csv").string();
  auto write = [](const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; };
  auto expect_refused = [&](const std::string& csv_text, const std::string& side_text, const std::string& why) {
    write(x, csv_text);
    write(x + ".json", side_text);
    EXPECT_EQ(sh(kBin + " merge " + x + " " + b + " --out " + out), 2) << why;
    EXPECT_FALSE(fs::exists(out)) << why;
    std::string err = slurp(dir() / "err");
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << why << ": " << err;
  };
  const std::string body = csv.substr(0, csv.find('\n') + 1);
  expect_refused(csv.substr(0, csv.size() - 40), side, "truncated");
  expect_refused(csv.substr(0, csv.rfind('\n', csv.size() - 2) + 1), side, "the last row cut off");
  expect_refused(csv + other.substr(other.find('\n') + 1), side, "another shard's rows appended");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = side;
    j.replace(j.find(from), from.size(), to);
    return j;
  };
  expect_refused(csv, with("\"index\": 0", "\"index\": -1"), "shard index -1");
  expect_refused(csv, with("\"index\": 0", "\"index\": 7"), "shard index 7 of 2");
  expect_refused(csv, with("\"index\": 0", "\"index\": \"zero\""), "a string index");
  expect_refused(body + "junk\n", side, "a junk row");
  expect_refused(csv, "{", "a sidecar that is not JSON");
  expect_refused(csv, "[1, 2]", "a sidecar that is not an object");
  write(x, csv), write(x + ".json", side);
  EXPECT_EQ(sh(kBin + " merge " + x + " " + b + " --out " + out), 0);  // the copy itself is fine
}

TEST(ScaleOut, MpiRanksGiveTheSingleProcessBytes) {
#ifndef ROUTELAB_MPIEXEC
  GTEST_SKIP() << "built without MPI (install libopenmpi-dev and reconfigure)";
#else
  const auto d = dir();
  const std::string mpirun = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ") +
                             ROUTELAB_MPIEXEC + " -np 2 --oversubscribe ";
  for (const std::string sim : {"sim haar-mixing --family householder --d 5 --n 1,4,20 --samples 5000",
                                "sim moment-decay --family givens --d 4 --samples 5000",
                                "sim spectral-gap --family so2,householder --d 4 --samples 5000"}) {
    ASSERT_EQ(sh(kBin + " " + sim + " --threads 1 --out " + (d / "one.csv").string()), 0);
    ASSERT_EQ(sh(mpirun + kBin + " " + sim + " --threads 1 --out " + (d / "mpi.csv").string()), 0)
        << slurp(d / "err");
    EXPECT_EQ(slurp(d / "mpi.csv"), slurp(d / "one.csv")) << sim;
  }
#endif
}

}  // namespace
