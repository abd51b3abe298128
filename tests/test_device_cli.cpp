// --device on train, eval, experiment and sim, and --tf32. `cpu` changes
// nothing; `cuda` without a device (or in a build without CUDA) is refused
// with one line on stderr, exit status 2 and no output file. With a device,
// train, eval and experiment run on it (tests/test_gpu_model.cpp) except for
// Householder schemes, refused the same way; sims say their path is not
// wired. --tf32 is refused on the CPU. Runs in the CPU suite of every build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_helpers.h"
#include "cuda/device.h"

namespace {

using namespace routelab::testing;

// What the refusal must say on this machine and build; `wired` commands
// refuse only for want of a device.
std::string expected_refusal(bool wired = false) {
  const std::string why = routelab::cuda::cuda_unavailable_reason();
  return why.empty() && !wired ? "has no GPU path yet" : why;
}

void expect_refused(const CliResult& r, const std::string& must_say) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(must_say), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

const std::string kConfig =
    "[model]\nd_model = 16\nheads = 2\nlayers = 1\nmlp_ratio = 2\ncontext = 16\nscheme = \"rope\"\n"
    "[train]\nbatch = 4\nwarmup = 2\nsteps = 3\n[data]\ncorpus = \"" +
    std::string(ROUTELAB_SOURCE_DIR) + "/tests/data/brown-slice\"\n";

TEST(device_cli, cuda_is_refused_in_one_line_before_any_output) {
  TempDir tmp;
  spit(tmp / "c.toml", kConfig);
  spit(tmp / "e.toml", "csv = \"out.csv\"\n");
  // With a device the model commands run; their refusal needs none.
  std::vector<std::string> cmds;
  if (!routelab::cuda::cuda_available())
    cmds = {"train --config c.toml --out run --quiet --device cuda", "eval --run run --quiet --device cuda",
            "experiment e.toml --no-plot --quiet --device cuda",
            "train --config c.toml --out run --quiet --device cuda --tf32"};
  for (const std::string cmd : {"sim spectral-gap --family so2 --d 2 --samples 100 --out sim.csv --device cuda",
                                "sim spectral-gap --family so2 --d 2 --samples 100 --device=cuda --out sim.csv"})
    cmds.push_back(cmd);
  for (const std::string& cmd : cmds) {
    SCOPED_TRACE(cmd);
    const CliResult r = run_routelab(cmd, tmp.path, tmp.path);
    expect_refused(r, "--device cuda: " + expected_refusal(cmd.rfind("sim", 0) != 0));
  }
  // Nothing was written: only the two inputs are there.
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) files += e.path().filename().string()[0] != '.';
  EXPECT_EQ(files, 2);
}

TEST(device_cli, tf32_is_refused_on_the_cpu) {
  TempDir tmp;
  spit(tmp / "c.toml", kConfig);
  for (const std::string cmd : {"train --config c.toml --out run --quiet --tf32",
                                "train --config c.toml --out run --quiet --device cpu --tf32",
                                "eval --run run --quiet --tf32", "experiment e.toml --no-plot --quiet --tf32"}) {
    SCOPED_TRACE(cmd);
    expect_refused(run_routelab(cmd, tmp.path, tmp.path), "--tf32: TF32 matmuls need --device cuda");
  }
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

// Householder transport has no device path: refused before the run
// directory exists (here for want of a device, on a GPU machine by name).
TEST(device_cli, householder_on_cuda_is_refused_before_any_output) {
  TempDir tmp;
  std::string config = kConfig;
  config.replace(config.find("\"rope\""), 6, "\"householder_qk\"");
  spit(tmp / "c.toml", config);
  const std::string why = routelab::cuda::cuda_unavailable_reason();
  expect_refused(run_routelab("train --config c.toml --out run --quiet --device cuda", tmp.path, tmp.path),
                 why.empty() ? "scheme householder_qk has no GPU path" : why);
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

TEST(device_cli, an_unknown_device_is_refused) {
  TempDir tmp;
  spit(tmp / "c.toml", kConfig);
  expect_refused(run_routelab("train --config c.toml --out run --device gpu", tmp.path, tmp.path), "--device");
  expect_refused(run_routelab("sim spectral-gap --family so2 --d 2 --device gpu", tmp.path, tmp.path),
                 "--device: cpu or cuda");
  expect_refused(run_routelab("sim spectral-gap --family so2 --d 2 --device cpu --device cpu", tmp.path, tmp.path),
                 "given twice");
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

TEST(device_cli, cpu_is_the_default_and_changes_nothing) {
  TempDir tmp;
  const std::string sim = "sim spectral-gap --family so2 --d 2 --samples 2000 --seed 3 --threads 1";
  const CliResult plain = run_routelab(sim, tmp.path, tmp.path);
  const CliResult cpu = run_routelab(sim + " --device cpu", tmp.path, tmp.path);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  EXPECT_EQ(plain.out, cpu.out);
}

}  // namespace
