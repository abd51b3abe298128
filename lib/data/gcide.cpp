#include "data/gcide.h"

namespace routelab::data {

namespace {

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

Corpus split_gcide(const std::vector<uint8_t>& dict) {
  Corpus c;
  const size_t n = dict.size();
  size_t entry = 0, entry_start = 0;
  bool previous_blank = false;
  auto close_entry = [&](size_t end) {
    if (end == entry_start) return;
    std::vector<uint8_t>& out = entry % kGcideValEvery == 0 ? c.val : c.train;
    out.insert(out.end(), dict.begin() + entry_start, dict.begin() + end);
    entry++;
    entry_start = end;
  };
  for (size_t line = 0; line < n;) {
    size_t end = line;
    while (end < n && dict[end] != '\n') end++;
    bool blank = true;
    for (size_t i = line; i < end; i++) blank = blank && is_space(dict[i]);
    if (previous_blank && !blank && !is_space(dict[line])) close_entry(line);
    previous_blank = blank;
    line = end + 1;
  }
  close_entry(n);
  return c;
}

Corpus prepare_gcide(const std::filesystem::path& dict_file, bool check) {
  // The file is the user's --from, not a corpus folder's: the fix is where to get it.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dict_file, ec))
    throw CorpusError("corpus: --from " + dict_file.string() +
                      " is not a readable file; name gcide.dict, /usr/share/dictd/gcide.dict.dz decompressed "
                      "(`bash scripts/fetch-corpus.sh gcide` does both)");
  Corpus c = split_gcide(read_corpus_file(dict_file));
  c.dir = dict_file.string();
  if (check) check_design(c, *find_corpus_design("gcide"), dict_file.string());
  return c;
}

}  // namespace routelab::data
