// The second corpus: GCIDE, the Collaborative International Dictionary of
// English (Webster's 1913 with WordNet additions), from Debian's dict-gcide
// (0.48.5+nmu2, /usr/share/dictd/gcide.dict.dz, decompressed: 39,952,321
// bytes). A different register from Brown's prose: headwords, pronunciations,
// numbered senses, citations, in dictd's plain-text layout.
//
// Text: the decompressed file as it is, cut into entries. An entry starts at
// a line that begins with a non-blank byte right after a blank line (or at
// the file's start) and runs to the next; the dictd header entries
// (00-database-*) and the license preamble before the first headword are
// entries like any other. Entry i goes to validation when i % 128 == 0, else
// to train: 126,301 entries, train 39,649,206 bytes, val 303,115 (1/128
// keeps validation at Brown's size, so evaluating at 64x costs the same).
#pragma once

#include "data/corpus.h"

namespace routelab::data {

inline constexpr size_t kGcideValEvery = 128;

// Builds both streams from the decompressed gcide.dict. With check = true
// (the CLI) throws CorpusError unless they are the design corpus; tests pass
// false for small hand-made dictionaries.
Corpus prepare_gcide(const std::filesystem::path& dict_file, bool check = true);

// The cut into entries and the split, on bytes already read.
Corpus split_gcide(const std::vector<uint8_t>& dict);

}  // namespace routelab::data
