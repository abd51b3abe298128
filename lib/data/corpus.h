// A byte-level corpus as the language models read it: two byte streams
// (vocabulary 256), train and validation, kept in a folder as train.txt,
// val.txt and SHA256SUMS. Each corpus routelab knows has a design: the exact
// sizes and digests its preparation must give, so a changed package or a
// changed rule cannot pass unnoticed. brown.h and gcide.h build the streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace routelab::data {

struct Corpus {
  std::vector<uint8_t> train, val;
  std::string dir;  // where it was read from
};

// A missing, damaged or unexpected corpus. The message is one line naming
// the file and the command that fixes it.
struct CorpusError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The streams a corpus's preparation must give, byte for byte.
struct CorpusDesign {
  const char* name;          // the folder's usual name under data/: "brown", "gcide"
  const char* fetch_script;  // scripts/... that installs it
  const char* source;        // the package and version it was built from
  size_t train_bytes;
  const char* train_sha256;
  size_t val_bytes;
  const char* val_sha256;
};

// Every corpus routelab knows.
const std::vector<CorpusDesign>& corpus_designs();
// The design named `name` ("brown", "gcide"); nullptr for none.
const CorpusDesign* find_corpus_design(const std::string& name);

// Throws CorpusError unless c's streams are exactly design d's; `from` names
// what they were built from in the message.
void check_design(const Corpus& c, const CorpusDesign& d, const std::string& from);

// Writes out_dir/train.txt, val.txt and SHA256SUMS (sha256sum -c format),
// each whole or not at all; SHA256SUMS last, so it never vouches for a file
// that is not there yet.
void write_corpus(const Corpus& corpus, const std::filesystem::path& out_dir);

// Reads dir/train.txt and val.txt and checks them against dir/SHA256SUMS and,
// for a stream of a design corpus's size, against that design's digest.
Corpus load_corpus(const std::filesystem::path& dir);

// Reads a whole file; CorpusError naming it and how to fix it otherwise.
std::vector<uint8_t> read_corpus_file(const std::filesystem::path& p);

}  // namespace routelab::data
