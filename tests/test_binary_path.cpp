// The tests run the routelab beside the test binary, not a path compiled in:
// a copied or moved build folder tests its own binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_helpers.h"

namespace {

using namespace routelab::testing;

// The test binary, linked (or copied) into a scratch folder beside a stand-in
// `routelab` that prints a marker, runs this test's inner half, which must
// see the marker. Planted (tried): routelab_binary() returning the build's
// own path makes the copy run the real binary, and this fails.
TEST(TestBinary, RunsTheRoutelabBesideIt) {
  if (const char* marker = std::getenv("ROUTELAB_TEST_BINARY_MARKER")) {
    TempDir tmp("_inner");
    const CliResult r = run_routelab("--version", tmp.path);
    EXPECT_EQ(r.out, std::string(marker) + "\n") << "ran " << routelab_binary();
    return;
  }
  const fs::path self = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(fs::path(routelab_binary()), self.parent_path() / "routelab");
  TempDir tmp;
  std::error_code ec;
  fs::create_hard_link(self, tmp / "routelab_tests", ec);
  if (ec) fs::copy_file(self, tmp / "routelab_tests");
  spit(tmp / "routelab", "#!/bin/sh\necho stand-in routelab\n");
  fs::permissions(tmp / "routelab", fs::perms::owner_all, fs::perm_options::add);
  const std::string cmd = "ROUTELAB_TEST_BINARY_MARKER='stand-in routelab' '" + (tmp / "routelab_tests").string() +
                          "' --gtest_filter=TestBinary.RunsTheRoutelabBesideIt > '" + (tmp / "log").string() +
                          "' 2>&1";
  const int raw = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(raw), 0) << slurp(tmp / "log");
}

}  // namespace
