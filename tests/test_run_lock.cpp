// io/run_lock.h with real processes (issue 38): while one routelab trains a
// run folder (or runs an experiment), a second train, resume, eval into the
// run or experiment there is refused with one line naming the folder and the
// holder's PID, exit 2, nothing touched; a holder killed with SIGKILL leaves
// no lock that blocks the resume.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli_helpers.h"
#include "io/run_lock.h"

namespace {

using namespace routelab::testing;

// `routelab ARGS...` started in `cwd` (output to /dev/null); its PID.
pid_t start_routelab(const std::vector<std::string>& args, const fs::path& cwd) {
  const std::string& bin = routelab_binary();
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (chdir(cwd.c_str()) != 0) _exit(126);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits until `pid` has written itself into the lock of `dir` (and `file`
// exists, when named), then stops it (SIGSTOP) so that it holds the lock, and
// the folder stays as it is, for as long as the test needs. False if the
// process ended first.
bool stop_once_it_holds(pid_t pid, const fs::path& dir, const fs::path& file = {}) {
  const std::string want = std::to_string(pid) + "\n";
  for (int i = 0; i < 60000; ++i) {
    if (slurp(dir / routelab::kRunLockName) == want && (file.empty() || fs::exists(file))) {
      kill(pid, SIGSTOP);
      return true;
    }
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return false;
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
}

TEST(RunLock, SecondProcessOnARunFolderIsRefusedAndAKilledHolderDoesNotBlockResume) {
  TempDir tmp;
  // Long enough (120 steps) that the first process still trains when it is
  // stopped at its first checkpoint, which the resume starts from; one thread
  // each, so that a loaded machine does not stretch the resume.
  spit(tmp / "c.toml", tiny_config("rope", 120, 10));
  const pid_t first =
      start_routelab({"train", "--config", "c.toml", "--out", "run", "--quiet", "--threads", "1"}, tmp.path);
  ASSERT_TRUE(stop_once_it_holds(first, tmp / "run", tmp / "run/checkpoint.bin"))
      << "the first train ended before it was seen holding the lock";
  const std::string pid = std::to_string(first);
  const auto before = snapshot(tmp.path);
  for (const char* args : {"train --config c.toml --out run --quiet", "train --config c.toml --out run --resume",
                           "eval --run run --lengths 1x", "passkey --run run --lengths 128 --trials 1",
                           "export --run run --out run/m.safetensors"}) {
    SCOPED_TRACE(args);
    const CliResult r = run_routelab(args, tmp.path, tmp.path);
    expect_refusal(r, "the run folder run is in use by process " + pid);
    EXPECT_NE(r.err.find("--"), std::string::npos) << "names no flag: " << r.err;
    EXPECT_EQ(snapshot(tmp.path), before) << "the refused process touched a file";
  }
  // Reading the run and writing outside it takes no lock.
  for (const char* args : {"export --run run --out m.safetensors", "eval --run run --lengths 1x --out e.csv --quiet"})
    EXPECT_EQ(run_routelab(args, tmp.path, tmp.path).status, 0) << args;

  // The kernel drops a killed holder's lock: its stale file does not block.
  kill_and_reap(first);
  ASSERT_TRUE(fs::exists(tmp / "run" / routelab::kRunLockName));
  const CliResult resumed =
      run_routelab("train --config c.toml --out run --resume --quiet --threads 1", tmp.path, tmp.path);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_FALSE(fs::exists(tmp / "run" / routelab::kRunLockName)) << "a finished holder removes its lock";
  EXPECT_EQ(run_routelab("eval --run run --lengths 1x --quiet", tmp.path, tmp.path).status, 0);
}

TEST(RunLock, SecondExperimentOnTheSameFoldersIsRefused) {
  TempDir tmp;
  spit(tmp / "e.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nlengths = \"1x\"\nout = \"runs\"\n"
                       "csv = \"out/x.csv\"\n" +
                           tiny_config("nope", 120, 10));
  spit(tmp / "c.toml", tiny_config("rope", 120, 10));
  const pid_t first = start_routelab({"experiment", "e.toml", "--no-plot", "--quiet", "--threads", "1"}, tmp.path);
  ASSERT_TRUE(stop_once_it_holds(first, tmp / "runs/rope-s1")) << "the first experiment ended before it trained";
  const std::string pid = std::to_string(first);
  const auto before = snapshot(tmp.path);
  expect_refusal(run_routelab("experiment e.toml --no-plot --quiet", tmp.path, tmp.path),
                 "[experiment] out: the run folder runs is in use by process " + pid);
  expect_refusal(run_routelab("train --config c.toml --out runs/rope-s1 --resume --quiet", tmp.path, tmp.path),
                 "--out: the run folder runs/rope-s1 is in use by process " + pid);
  EXPECT_EQ(snapshot(tmp.path), before) << "a refused process touched a file";
  kill_and_reap(first);
}

// A refused command that made the run folder to lock it takes it away again.
TEST(RunLock, ARefusedTrainLeavesNoFolderBehind) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 10, 5, (tmp / "no-corpus").string()));
  const auto before = snapshot(tmp.path);
  const CliResult r = run_routelab("train --config c.toml --out runs/a/b --quiet", tmp.path, tmp.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(snapshot(tmp.path), before);
}

}  // namespace

namespace {

// Issue 52: a lock path that is not the folder's own regular file (a link to
// a file elsewhere, a dangling link, a hard link, a FIFO, a folder) is
// refused by every command that locks, with one line, and the file it points
// at keeps its bytes (or is not made).
TEST(RunLock, ALockPathThatIsNotARegularFileIsRefusedByEveryCommandThatLocks) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 10, 5));
  spit(tmp / "e.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nlengths = \"1x\"\nout = \"runs\"\n"
                       "csv = \"out/x.csv\"\n" +
                           tiny_config("nope", 10, 5));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  fs::create_directories(tmp / "runs/rope-s1");
  fs::create_directories(tmp / "fresh");
  spit(tmp / "victim.txt", "keep me\n");
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"train --config c.toml --out fresh --quiet", "fresh"},
      {"train --config c.toml --out run --resume --quiet", "run"},
      {"eval --run run --lengths 1x --quiet", "run"},
      {"passkey --run run --lengths 128 --trials 1 --quiet", "run"},
      {"probe --run run --lengths 1x --window 2 --max-windows 1 --quiet", "run"},
      {"export --run run --out run/m.safetensors", "run"},
      {"experiment e.toml --no-plot --quiet", "runs"},
      {"experiment e.toml --no-plot --quiet", "runs/rope-s1"},
  };
  const std::vector<std::pair<const char*, std::function<void(const fs::path&)>>> plants = {
      {"is a symbolic link", [&](const fs::path& p) { fs::create_symlink(tmp / "victim.txt", p); }},
      {"is a symbolic link", [&](const fs::path& p) { fs::create_symlink(tmp / "made-by-the-lock", p); }},
      {"is a hard link to another file", [&](const fs::path& p) { fs::create_hard_link(tmp / "victim.txt", p); }},
      {"is not a regular file", [&](const fs::path& p) { ASSERT_EQ(mkfifo(p.c_str(), 0644), 0); }},
      {"is a folder", [&](const fs::path& p) { fs::create_directory(p); }},
  };
  for (const auto& [args, folder] : commands)
    for (const auto& [says, plant] : plants) {
      SCOPED_TRACE(args + " with " + folder + "'s lock path that " + says);
      const fs::path lock = tmp / folder / routelab::kRunLockName;
      plant(lock);
      const auto before = snapshot(tmp.path);
      expect_refusal(run_routelab(args, tmp.path, tmp.path), "the lock path " + folder + "/.routelab.lock " + says);
      EXPECT_EQ(snapshot(tmp.path), before);
      EXPECT_EQ(slurp(tmp / "victim.txt"), "keep me\n");
      EXPECT_FALSE(fs::exists(tmp / "made-by-the-lock"));
      fs::remove(lock);
    }
}

// A holder stopped by SIGINT, SIGTERM or SIGHUP removes its lock file on the
// way out (the kernel's lock goes anyway; the file used to stay).
TEST(RunLock, ASignalledHolderRemovesItsLockFile) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 100000, 10));
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string out = "run" + std::to_string(sig);
    const pid_t holder =
        start_routelab({"train", "--config", "c.toml", "--out", out, "--quiet", "--threads", "1"}, tmp.path);
    ASSERT_TRUE(stop_once_it_holds(holder, tmp / out, tmp / out / "checkpoint.bin"));
    kill(holder, sig);
    kill(holder, SIGCONT);
    int status = 0;
    waitpid(holder, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_FALSE(fs::exists(tmp / out / routelab::kRunLockName));
    EXPECT_TRUE(fs::exists(tmp / out / "checkpoint.bin"));
  }
}

// In one process: a thread that holds a folder may lock it again (the
// library's functions nest: an experiment trains a run it holds), through
// any path to it; another thread is refused as another process is.
TEST(RunLock, ANestedLockIsFreeAndAnotherThreadIsRefused) {
  TempDir tmp;
  fs::create_directories(tmp / "run");
  fs::create_directory_symlink(tmp / "run", tmp / "link");
  {
    routelab::RunLock outer((tmp / "run").string(), "--out");
    {
      routelab::RunLock inner((tmp / "link").string(), "--run");
      EXPECT_EQ(slurp(tmp / "run" / routelab::kRunLockName), std::to_string(getpid()) + "\n");
    }
    EXPECT_TRUE(fs::exists(tmp / "run" / routelab::kRunLockName)) << "the inner lock removed the outer one's file";
    std::string refused;
    std::thread([&] {
      try {
        routelab::RunLock other((tmp / "run").string(), "--out");
      } catch (const std::exception& e) {
        refused = e.what();
      }
    }).join();
    EXPECT_NE(refused.find("is in use by process " + std::to_string(getpid())), std::string::npos) << refused;
  }
  EXPECT_FALSE(fs::exists(tmp / "run" / routelab::kRunLockName));
}

// A run that stops before its first checkpoint leaves its folder as it was
// (config.toml is written with that checkpoint), so training it again
// needs no --resume.
TEST(RunLock, ARunKilledBeforeItsFirstCheckpointLeavesNothing) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 100000, 100000));
  const pid_t holder = start_routelab({"train", "--config", "c.toml", "--out", "run", "--quiet", "--threads", "1"},
                                      tmp.path);
  ASSERT_TRUE(stop_once_it_holds(holder, tmp / "run"));
  EXPECT_EQ(snapshot(tmp / "run").size(), 1u) << "more than the lock in the folder";
  kill_and_reap(holder);
  EXPECT_FALSE(fs::exists(tmp / "run/config.toml"));
  spit(tmp / "c.toml", tiny_config("rope", 10, 5));
  EXPECT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
}

}  // namespace
