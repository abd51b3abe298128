// io/output.h, and every command through it: an output is refused before any
// work when it is not a regular file (or absent), is one of the command's
// inputs or another of its outputs, or sits in a folder that cannot be
// written; refusals leave the folder exactly as it was; temporaries go away
// on a caught signal.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "cli_helpers.h"
#include "io/output.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

void expect_refused(const std::string& what, const std::function<void(OutputFiles&)>& declare) {
  OutputFiles files("test");
  try {
    declare(files);
    ADD_FAILURE() << "accepted: " << what;
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("test:"), std::string::npos) << e.what();
  }
}

TEST(Outputs, TargetsThatAreNotNewOrRegularFilesAreRefused) {
  TempDir tmp;
  spit(tmp / "in.csv", "x\n");
  fs::create_directories(tmp / "folder");
  fs::create_symlink(tmp / "in.csv", tmp / "link.csv");
  expect_refused("a folder", [&](OutputFiles& f) { f.output((tmp / "folder").string(), "--out"); });
  expect_refused("a device", [&](OutputFiles& f) { f.output("/dev/null", "--out"); });
  expect_refused("a symbolic link", [&](OutputFiles& f) { f.output((tmp / "link.csv").string(), "--out"); });
  expect_refused("an empty path", [&](OutputFiles& f) { f.output("", "--out"); });
  expect_refused("a missing folder", [&](OutputFiles& f) { f.output((tmp / "nowhere/x.csv").string(), "--out"); });
  expect_refused("an input", [&](OutputFiles& f) {
    f.input((tmp / "in.csv").string());
    f.output((tmp / "in.csv").string(), "--out");
  });
  expect_refused("an input named through a link and a dot", [&](OutputFiles& f) {
    f.input((tmp / "link.csv").string());
    f.output((tmp / "folder/../in.csv").string(), "--out");
  });
  expect_refused("a hard link of an input", [&](OutputFiles& f) {
    fs::create_hard_link(tmp / "in.csv", tmp / "hard.csv");
    f.input((tmp / "in.csv").string());
    f.output((tmp / "hard.csv").string(), "--out");
  });
  expect_refused("the same output twice", [&](OutputFiles& f) {
    f.output((tmp / "a.csv").string(), "--out");
    f.output((tmp / "./a.csv").string(), "the sidecar");
  });
  EXPECT_EQ(slurp(tmp / "in.csv"), "x\n");
  // A new file and a regular file are fine; commit writes every set output.
  OutputFiles ok("test");
  ok.output((tmp / "new.csv").string(), "--out");
  ok.output((tmp / "in.csv").string(), "the sidecar");
  ok.set((tmp / "new.csv").string(), "a\n");
  ok.set((tmp / "in.csv").string(), "b\n");
  ok.commit();
  EXPECT_EQ(slurp(tmp / "new.csv"), "a\n");
  EXPECT_EQ(slurp(tmp / "in.csv"), "b\n");
  for (const auto& e : fs::directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

// A caught SIGINT or SIGTERM removes the temporaries in flight, then ends the
// process with the signal.
TEST(Outputs, SignalsRemoveTemporariesInFlight) {
  TempDir tmp;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path t = tmp / ("x.csv.tmp." + std::to_string(sig));
    const pid_t pid = fork();
    if (pid == 0) {
      install_cleanup_handlers();
      spit(t, "partial");
      register_temporary(t.string());
      raise(sig);
      _exit(0);  // not reached
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << sig;
    EXPECT_FALSE(fs::exists(t)) << "signal " << sig << " left " << t;
  }
  // Released temporaries are not touched.
  const fs::path kept = tmp / "kept.tmp.1";
  const pid_t pid = fork();
  if (pid == 0) {
    install_cleanup_handlers();
    spit(kept, "whole");
    register_temporary(kept.string());
    release_temporary(kept.string());
    raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(fs::exists(kept));
}

// Through the commands: each refusal one line, exit 2, the folder as it was.
TEST(Outputs, CommandsRefuseUnsafeOutputsBeforeAnyWork) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 10, 5));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  ASSERT_EQ(run_routelab("sim spectral-gap --family so2 --d 2 --samples 200 --out a.csv --shard 0/2", tmp.path,
                         tmp.path)
                .status,
            0);
  ASSERT_EQ(run_routelab("sim spectral-gap --family so2 --d 2 --samples 200 --out b.csv --shard 1/2", tmp.path,
                         tmp.path)
                .status,
            0);
  fs::create_directories(tmp / "folder");
  fs::create_symlink(tmp / "a.csv", tmp / "link.csv");
  const std::pair<std::string, std::string> cases[] = {
      {"eval --run run --lengths 1x --out run/checkpoint.bin", "also an input"},
      {"eval --run run --lengths 1x --out run/config.toml", "also an input"},
      {"eval --run run --lengths 1x --out nowhere/e.csv", "does not exist"},
      {"eval --run run --lengths 1x --out folder", "not a regular file"},
      {"passkey --run run --lengths 128 --trials 1 --out run/checkpoint.bin", "also an input"},
      {"probe --run run --lengths 1x --window 2 --csv run/checkpoint.bin", "also an input"},
      {"sim spectral-gap --family so2 --d 2 --samples 200 --out /dev/null", "not a regular file"},
      {"sim spectral-gap --family so2 --d 2 --samples 200 --out link.csv", "symbolic link"},
      {"sim spectral-gap --family so2 --d 2 --samples 200 --out nowhere/x.csv", "does not exist"},
      {"merge a.csv b.csv --out a.csv", "also an input"},
      {"merge a.csv b.csv --out a.csv.json", "also an input"},
      {"verify --quick --out nowhere/x.csv", "does not exist"},
  };
  for (const auto& [args, says] : cases) {
    const auto before = snapshot(tmp.path);
    const auto t0 = std::chrono::steady_clock::now();
    expect_refusal(run_routelab(args, tmp.path, tmp.path), says);
    // Refused before the work: verify --quick alone runs for tens of seconds.
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0) << args;
    EXPECT_EQ(snapshot(tmp.path), before) << args;
  }
}

}  // namespace
