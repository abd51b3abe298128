// --device on train, eval, experiment, passkey and sim, and --tf32. `cpu`
// changes nothing; `cuda` is refused where there is no GPU path (the sims
// other than spectral-gap, haar-mixing, score-tail and far-mass, and any
// family not ported to the GPU; every family is, today) with one line on
// stderr, exit status 2 and no output file: on a machine without a device (or
// a build without CUDA) the line says so; with one, it says the path is not
// there. With a device, train, eval, experiment and passkey run on it
// (tests/test_gpu_model.cpp); --tf32 is refused on the CPU.
// Runs in the CPU suite of every build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_helpers.h"
#include "cuda/device.h"
#include "groups/family.h"
#include "planted_law.h"
#include "sims/device_walks.h"
#include "sims/runner.h"

namespace {

using namespace routelab::testing;

// What the refusal must say on this machine and build.
std::string expected_refusal() {
  const std::string why = routelab::cuda::cuda_unavailable_reason();
  return why.empty() ? "has no GPU path" : why;
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
  const std::string refusal = expected_refusal();
  std::vector<std::string> cmds = {
      "sim moment-decay --family so2 --d 2 --samples 100 --out sim.csv --device cuda",
      "sim softmax-scale --samples 100 --out sim.csv --device cuda",
      "sim moment-decay --family so2,fisher --d 2 --samples 100 --device=cuda --out sim.csv"};
  // With a device the model commands run; only the lack of one refuses them.
  if (!routelab::cuda::cuda_available())
    for (const std::string cmd : {"train --config c.toml --out run --quiet --device cuda",
                                  "eval --run run --quiet --device cuda",
                                  "experiment e.toml --no-plot --quiet --device cuda",
                                  "passkey --run run --quiet --device cuda",
                                  "train --config c.toml --out run --quiet --device cuda --tf32"})
      cmds.push_back(cmd);
  for (const std::string& cmd : cmds) {
    SCOPED_TRACE(cmd);
    const CliResult r = run_routelab(cmd, tmp.path, tmp.path);
    expect_refused(r, "--device cuda: " + refusal);
  }
  // Nothing was written: only the two inputs are there.
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) files += e.path().filename().string()[0] != '.';
  EXPECT_EQ(files, 2);
}

// Whether or not a device is there, run_sim checks every point before any
// work: a sim without a GPU path is one line naming it. A family without one
// would be refused by name with the list of those ported (gpu_family_refusal);
// today every family is ported, and the registry's `gpu` marks exactly the
// families whose step law has a kernel.
TEST(device_cli, sims_refuse_what_is_not_ported_before_any_work) {
  auto refusal = [](const std::string& sim, const std::map<std::string, std::string>& flags) -> std::string {
    routelab::RunRequest req;
    req.sim = sim;
    req.given = flags;
    req.samples = 100;
    req.gpu = true;
    try {
      routelab::run_sim(req);
    } catch (const routelab::cuda::DeviceError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal("moment-decay", {{"family", "so2"}, {"d", "2"}}),
            "--device cuda: sim moment-decay has no GPU path; use --device cpu");
  EXPECT_EQ(refusal("moment-decay", {{"family", "heat,lieball"}, {"d", "3"}}),
            "--device cuda: sim moment-decay has no GPU path; use --device cpu");
}

TEST(device_cli, the_gpu_family_list_names_exactly_the_families_with_a_kernel) {
  const std::string listed = ", " + routelab::gpu_family_names() + ",";
  for (const auto& f : routelab::families()) {
    SCOPED_TRACE(f.name);
    const std::string d = f.default_d ? std::to_string(f.default_d) : "4";
    const auto p = routelab::testing::params_for(f.name, {{"d", d}});
    const bool has_kernel = routelab::make_step_law(p)->kernel().has_value();
    EXPECT_EQ(listed.find(", " + f.name + ",") != std::string::npos, has_kernel);
    EXPECT_EQ(routelab::gpu_family_refusal(p).empty(), has_kernel);
  }
}

TEST(device_cli, tf32_is_refused_on_the_cpu) {
  TempDir tmp;
  spit(tmp / "c.toml", kConfig);
  for (const std::string cmd : {"train --config c.toml --out run --quiet --tf32",
                                "train --config c.toml --out run --quiet --device cpu --tf32",
                                "eval --run run --quiet --tf32", "passkey --run run --quiet --tf32",
                                "experiment e.toml --no-plot --quiet --tf32"}) {
    SCOPED_TRACE(cmd);
    expect_refused(run_routelab(cmd, tmp.path, tmp.path), "--tf32: TF32 matmuls need --device cuda");
  }
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
