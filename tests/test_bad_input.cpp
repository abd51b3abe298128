// The bad-input driver (issue 16): one table of refusals across every
// command, each class the adversarial review found (and a few more). Every
// case must print one line on stderr naming the problem, exit with status 2,
// print nothing on stdout, and leave the scratch folder exactly as it was
// (every file's name and contents, inputs included).
#include <gtest/gtest.h>

#include <string>

#include "cli_helpers.h"

namespace {

using namespace routelab::testing;

struct Case {
  const char* args;
  const char* says;  // a part of the one stderr line
};

// class: integers that overflow, saturate or carry spaces
const Case kNumbers[] = {
    {"sim spectral-gap --family givens --d 4294967298", "--d: '4294967298' is not accepted"},
    {"sim spectral-gap --family so2 --d 4294967298", "[2, 4096]"},
    {"sim spectral-gap --family householder --d ' 3'", "--d"},
    {"sim spectral-gap --family householder --d '3 '", "--d"},
    {"sim spectral-gap --seed 18446744073709551616", "--seed"},
    {"sim spectral-gap --samples 99999999999999999999", "--samples"},
    {"sim spectral-gap --samples 1", "--samples"},
    {"sim spectral-gap --threads 0", "[1, 1024]"},
    {"sim spectral-gap --threads 4096", "[1, 1024]"},
    {"sim spectral-gap --family so2 --a 1e999", "--a"},
    {"sim moment-decay --eps 0.1,", "--eps"},
    {"sim moment-decay --n 1,,5", "--n"},
    {"train --config c.toml --threads 0", "is not accepted; an integer in [1, 1024]"},
    {"train --config c.toml --threads 99999999999999999999", "--threads"},
    {"passkey --run run --lengths 128 --seed -1", "--seed"},
    {"passkey --run run --lengths 128 --depths 0,,1", "--depths"},
    {"eval --run run --lengths 1x,,2x", "--lengths"},
    {"verify --threads 0", "is not accepted; an integer in [1, 1024]"},
};

// class: outputs that are not new or regular files, or that name an input
const Case kOutputs[] = {
    {"sim spectral-gap --family so2 --d 2 --samples 100 --out /dev/null", "not a regular file"},
    {"sim spectral-gap --family so2 --d 2 --samples 100 --out folder", "not a regular file"},
    {"sim spectral-gap --family so2 --d 2 --samples 100 --out link.csv", "symbolic link"},
    {"sim spectral-gap --family so2 --d 2 --samples 100 --out nodir/x.csv", "does not exist"},
    {"sim spectral-gap --family so2 --d 2 --samples 100 --out ''", "--out"},
    {"eval --run run --lengths 1x --out run/checkpoint.bin", "also an input"},
    {"eval --run run --lengths 1x --out run/config.toml", "also an input"},
    {"eval --run run --lengths 1x --out ''", "empty path"},
    {"passkey --run run --lengths 128 --out run/checkpoint.bin", "also an input"},
    {"probe --run run --lengths 1x --window 2 --csv run/config.toml", "also an input"},
    {"merge a.csv b.csv --out a.csv", "also an input"},
    {"merge a.csv b.csv --out b.csv.json", "also an input"},
    {"verify --quick --out nodir/x.csv", "does not exist"},
    {"verify --quick --out ''", "empty path"},
    {"train --config c.toml --out ''", "empty path"},
};

// class: merge of partials that do not belong together
const Case kMerge[] = {
    {"merge a.csv --out m.csv", "shard 1/2 is missing"},
    {"merge a.csv a.csv --out m.csv", "given twice"},
    {"merge a.csv c.csv --out m.csv", "another run"},
    {"merge a.csv cut.csv --out m.csv", "bytes differ"},
    {"merge a.csv noside.csv --out m.csv", "sidecar"},
};

// class: configs, checkpoints, run folders
const Case kConfigs[] = {
    {"train --config folder", "not a regular file"},
    {"train --config missing.toml", "no such file"},
    {"train --config beta1.toml --out r2", "beta1 must be a number in [0, 1)"},
    {"train --config passkey.toml --out r2", "passkey_fraction needs context >= 97"},
    {"train --config huge.toml --out r2", "GiB this machine has available"},
    {"train --config c.toml --out run", "pass --resume"},
    {"eval --run run --lengths 100000", "longer than the validation stream"},
    {"passkey --run run --lengths 100000", "longer than the validation stream"},
    {"eval --run damaged", "is damaged"},
    {"eval --run nowhere", "not a run directory"},
    {"experiment dup.toml --no-plot", "lists 1 twice"},
    {"experiment sweep.toml --no-plot", "learned_sigma is read by none"},
};

// class: messages that named nothing
const Case kMessages[] = {
    {"frobnicate", "unknown command 'frobnicate'"},
    {"sim", "name a simulation"},
    {"sim nosuch", "unknown simulation 'nosuch'"},
    {"sim spectral-gap --frobnicate 1", "--frobnicate"},
};

TEST(BadInput, EveryClassIsOneLineExitTwoAndTheFolderUntouched) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("rope", 6, 3));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  fs::create_directories(tmp / "damaged");
  fs::copy_file(tmp / "run/config.toml", tmp / "damaged/config.toml");
  std::string ck = slurp(tmp / "run/checkpoint.bin");
  ck[ck.size() / 2] ^= 1;
  spit(tmp / "damaged/checkpoint.bin", ck);
  const std::string sweep = "sim spectral-gap --family so2,givens --d 2,4 --samples 200";
  for (const char* part : {"--shard 0/2 --out a.csv", "--shard 1/2 --out b.csv", "--shard 1/2 --seed 9 --out c.csv"})
    ASSERT_EQ(run_routelab(sweep + " " + part, tmp.path, tmp.path).status, 0);
  spit(tmp / "cut.csv", slurp(tmp / "b.csv").substr(0, 50));
  fs::copy_file(tmp / "b.csv.json", tmp / "cut.csv.json");
  fs::copy_file(tmp / "b.csv", tmp / "noside.csv");
  fs::create_directories(tmp / "folder");
  fs::create_symlink(tmp / "a.csv", tmp / "link.csv");
  spit(tmp / "beta1.toml", "[train]\nbeta1 = 1\n[data]\ncorpus = \"" + kSlice + "\"\n");
  spit(tmp / "passkey.toml",
       "[train]\npasskey_fraction = 0.5\n[model]\ncontext = 64\n[data]\ncorpus = \"" + kSlice + "\"\n");
  spit(tmp / "huge.toml", "[model]\nd_model = 8192\nheads = 64\nlayers = 256\ncontext = 4096\n[train]\nbatch = 64\n"
                          "[data]\ncorpus = \"" + kSlice + "\"\n");
  spit(tmp / "dup.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1, 1]\nout = \"r3\"\ncsv = \"o/x.csv\"\n" +
                             tiny_config("nope", 6, 3));
  spit(tmp / "sweep.toml", "[experiment]\nschemes = [\"rope\"]\nseeds = [1]\nout = \"r3\"\ncsv = \"o/x.csv\"\n"
                           "[experiment.sweep]\nlearned_sigma = [0.5, 1]\n" +
                               tiny_config("nope", 6, 3));
  int cases = 0;
  auto check = [&](const Case* begin, const Case* end) {
    for (const Case* c = begin; c != end; ++c, ++cases) {
      const auto before = snapshot(tmp.path);
      expect_refusal(run_routelab(c->args, tmp.path, tmp.path), c->says);
      EXPECT_EQ(snapshot(tmp.path), before) << c->args << " changed the folder";
    }
  };
  check(std::begin(kNumbers), std::end(kNumbers));
  check(std::begin(kOutputs), std::end(kOutputs));
  check(std::begin(kMerge), std::end(kMerge));
  check(std::begin(kConfigs), std::end(kConfigs));
  check(std::begin(kMessages), std::end(kMessages));
  std::printf("bad-input driver: %d cases\n", cases);
}

}  // namespace
