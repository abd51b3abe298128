// What the command-line tests share: a scratch folder per test, whole-file
// reads and writes, and running the routelab binary with its output caught.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace routelab::testing {

namespace fs = std::filesystem;

// A fresh folder named after the running test, removed afterwards.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag = "") {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(t->test_suite_name()) + "_" + t->name() + tag;
    for (char& c : name)
      if (c == '/') c = '_';
    path = fs::temp_directory_path() / ("routelab_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path operator/(const std::string& p) const { return path / p; }
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Built with AddressSanitizer (the `sanitize` preset): its shadow memory is
// a reservation of terabytes, so no process of this build can run under
// `ulimit -v`, and it reports an impossible allocation instead of throwing
// std::bad_alloc. Tests of memory limits skip there, saying so.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// The routelab binary the tests run: the one beside the running test binary
// (/proc/self/exe's folder), so a copied or moved build folder tests its own
// binary rather than the one of the build that compiled it.
inline const std::string& routelab_binary() {
  static const std::string path = (fs::read_symlink("/proc/self/exe").parent_path() / "routelab").string();
  return path;
}

struct CliResult {
  int status;
  std::string out, err;
};

// Runs `routelab ARGS` (ARGS as a shell would split them) in `cwd`.
inline CliResult run_routelab(const std::string& args, const fs::path& scratch, const fs::path& cwd = ".") {
  const fs::path out = scratch / ".stdout", err = scratch / ".stderr";
  const std::string cmd = "cd '" + cwd.string() + "' && " + routelab_binary() + " " + args + " > '" +
                          out.string() + "' 2> '" + err.string() + "'";
  const int raw = std::system(cmd.c_str());
  CliResult r{WEXITSTATUS(raw), slurp(out), slurp(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

// Every file under a folder (a symbolic link as its target's name, a folder
// as "<dir>") with its contents: to check that a refusal left it exactly as
// it was. run_routelab's capture files are not part of it.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(e.path(), dir).string();
    if (name.starts_with(".std")) continue;
    out[name] = e.is_symlink() ? "-> " + fs::read_symlink(e.path()).string()
                : e.is_regular_file() ? slurp(e.path())
                                      : "<dir>";
  }
  return out;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

inline const std::string kSlice = std::string(ROUTELAB_SOURCE_DIR) + "/tests/data/brown-slice";

// A model small enough that a thousand steps take well under a second.
inline std::string tiny_config(const std::string& scheme, int steps, int checkpoint_every,
                               const std::string& corpus = kSlice) {
  return "[model]\nd_model = 16\nheads = 2\nlayers = 1\nmlp_ratio = 2\ncontext = 16\nscheme = \"" + scheme +
         "\"\n[train]\nbatch = 4\nwarmup = 2\nsteps = " + std::to_string(steps) +
         "\ncheckpoint_every = " + std::to_string(checkpoint_every) + "\nlog_every = 5\n[data]\ncorpus = \"" +
         corpus + "\"\n";
}

// One line on stderr, exit 2, nothing on stdout.
inline void expect_refusal(const CliResult& r, const std::string& says) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Each (arguments, what the line says) run in `dir`: a refusal as above that
// leaves every file in `dir` as it was.
inline void expect_refusals_touch_nothing(const std::vector<std::pair<const char*, const char*>>& cases,
                                          const fs::path& dir) {
  for (const auto& [args, says] : cases) {
    SCOPED_TRACE(args);
    const auto before = snapshot(dir);
    expect_refusal(run_routelab(args, dir, dir), says);
    EXPECT_EQ(snapshot(dir), before) << "a refusal touched a file";
  }
}

}  // namespace routelab::testing
