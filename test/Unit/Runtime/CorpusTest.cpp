//===- CorpusTest.cpp - Vocabulary and corpora ------------------*- C++ -*-===//
//
// Expected values for the real corpora come from the official
// utils/vocabulary.py + data_utils.py algorithm run in Python on the same
// files (and agree with data/MANIFEST.txt's counts).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/Corpus.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <sstream>

namespace txl::rt {
namespace {

using test::expectError;
using test::symbols;
using test::sharedPath;
using test::TempDir;
using ::testing::ElementsAre;

// tokenize: strip, split on any whitespace run (Unicode too, as Python's
// str.split()), lower-case when asked, "<eos>" appended when asked.
TEST(VocabTest, Tokenize) {
  Vocab lower({"<eos>"}, /*lowerCase=*/true);
  EXPECT_THAT(lower.tokenize("  The  CAT\tsat \n", true),
              ElementsAre("the", "cat", "sat", "<eos>"));
  EXPECT_THAT(lower.tokenize("   ", true), ElementsAre("<eos>"));
  EXPECT_THAT(lower.tokenize("", false), ElementsAre());
  // U+00A0, U+3000 and U+2009 separate tokens; U+00E9 does not.
  EXPECT_THAT(lower.tokenize("caf\xc3\xa9\xc2\xa0x\xe3\x80\x80y\xe2\x80\x89z"),
              ElementsAre("caf\xc3\xa9", "x", "y", "z"));
  Vocab cased({"<eos>"}, /*lowerCase=*/false);
  EXPECT_THAT(cased.tokenize(" The Cat ", false), ElementsAre("The", "Cat"));
}

// build_vocab: specials first, then by count descending, ties broken by
// first occurrence (Counter.most_common on an insertion-ordered dict).
TEST(VocabTest, OrderByCountThenFirstOccurrence) {
  Vocab vocab({"<eos>"}, true);
  vocab.countText("b a c\na b\nc c d\n");
  vocab.countText("e d\n");
  vocab.build();
  // counts: c 3, b 2, a 2, d 2, e 1; b, a, d tie in first-seen order.
  EXPECT_THAT(symbols(vocab), ElementsAre("<eos>", "c", "b", "a", "d", "e"));
  EXPECT_EQ(vocab.count("c"), 3);
  EXPECT_EQ(vocab.count("<eos>"), 0); // count_file runs without add_eos
  EXPECT_EQ(vocab.find("d"), 4);
  EXPECT_EQ(vocab.find("zzz"), std::nullopt);
  EXPECT_THAT(vocab.encodeText("a b\n\nc"), ElementsAre(3, 2, 0, 0, 1, 0));
  EXPECT_THAT(vocab.encodeText("a b\n", false), ElementsAre(3, 2));
}

// A counted special keeps its special slot; counting with add_eos counts it.
TEST(VocabTest, SpecialsKeepTheirSlot) {
  Vocab vocab({"<eos>"}, true);
  vocab.countText("x <eos> y\nx\n", /*addEos=*/true);
  vocab.build();
  EXPECT_EQ(vocab.count("<eos>"), 3);
  EXPECT_THAT(symbols(vocab), ElementsAre("<eos>", "x", "y"));
}

// ptb lower-cases (The/the merge); wt2/wt103 keep case.
TEST(VocabTest, LowerCasing) {
  Vocab ptb = Vocab(datasetSpec("ptb").special, datasetSpec("ptb").lowerCase);
  ptb.countText("The the THE dog\n");
  ptb.build();
  EXPECT_THAT(symbols(ptb), ElementsAre("<eos>", "the", "dog"));
  EXPECT_EQ(ptb.count("the"), 3);

  Vocab wt2 = Vocab(datasetSpec("wt2").special, datasetSpec("wt2").lowerCase);
  wt2.countText("The the THE the dog\n");
  wt2.build();
  EXPECT_THAT(symbols(wt2), ElementsAre("<eos>", "the", "The", "THE", "dog"));
}

// Lines end at \n, \r\n or \r (Python's universal newlines); every line, an
// empty one too, ends with "<eos>"; no extra line after a final newline.
TEST(VocabTest, UniversalNewlines) {
  Vocab vocab({"<eos>"}, true);
  vocab.countText("a\nb");
  vocab.build();
  EXPECT_THAT(vocab.encodeText("a\r\nb\ra\n\nb"),
              ElementsAre(1, 0, 2, 0, 1, 0, 0, 2, 0));
  EXPECT_THAT(vocab.encodeText("a\n"), ElementsAre(1, 0));
  EXPECT_THAT(vocab.encodeText(""), ElementsAre());
}

// Unknown symbols and invalid UTF-8 name the source and the line.
TEST(VocabTest, EncodeErrors) {
  Vocab vocab({"<eos>"}, true);
  vocab.countText("a b\n");
  vocab.build();
  expectError([&] { vocab.encodeText("a\nb zebra\n", true, "valid.txt"); },
              TXL_DATA_ERROR,
              {"valid.txt:2: symbol 'zebra' is not in the vocabulary"});
  expectError([&] { vocab.encodeText("a\nb \xff\n", true, "bad.txt"); },
              TXL_DATA_ERROR, {"bad.txt:2: invalid UTF-8", "0xff"});
  Vocab other({"<eos>"}, true);
  expectError([&] { other.countText("ok\n\xc3\x28\n", false, "c.txt"); },
              TXL_DATA_ERROR, {"c.txt:2: invalid UTF-8"});
  // Without the "<eos>" special, add_eos asks for a symbol not in the vocab.
  Vocab noSpecial({}, true);
  noSpecial.countText("a\n");
  noSpecial.build();
  expectError([&] { noSpecial.encodeText("a\n", true, "t"); }, TXL_DATA_ERROR,
              {"'<eos>'"});
}

TEST(CorpusTest, SplitNames) {
  EXPECT_EQ(parseSplit("valid"), Split::Valid);
  EXPECT_EQ(parseSplit("train"), Split::Train);
  EXPECT_EQ(parseSplit("test"), Split::Test);
  EXPECT_EQ(parseSplit("all"), std::nullopt);
  EXPECT_EQ(splitName(Split::Test), "test");
  EXPECT_TRUE(isCharacterDataset("enwik8"));
  EXPECT_TRUE(isCharacterDataset("text8"));
  EXPECT_TRUE(isCharacterDataset("ptb-char"));
  EXPECT_FALSE(isCharacterDataset("ptb"));
  expectError([] { datasetSpec("wt3"); }, TXL_INVALID_ARGUMENT,
              {"unsupported dataset 'wt3'",
               "ptb, ptb-char, wt2, wt103, enwik8, text8, lm1b"});
}

// The get_lm_corpus kwargs and Corpus branches of each dataset.
TEST(CorpusTest, DatasetSpecsFollowGetLmCorpus) {
  DatasetSpec ptb = datasetSpec("ptb");
  EXPECT_THAT(ptb.special, ElementsAre("<eos>"));
  EXPECT_TRUE(ptb.lowerCase);
  EXPECT_TRUE(ptb.addEos);
  EXPECT_TRUE(ptb.countValidTest);

  for (const char *name : {"wt2", "wt103"}) {
    DatasetSpec wt = datasetSpec(name);
    EXPECT_THAT(wt.special, ElementsAre("<eos>"));
    EXPECT_FALSE(wt.lowerCase);
    EXPECT_TRUE(wt.addEos);
    EXPECT_EQ(wt.countValidTest, std::string(name) == "wt2");
  }

  for (const char *name : {"enwik8", "text8"}) {
    DatasetSpec chars = datasetSpec(name);
    EXPECT_TRUE(chars.special.empty());
    EXPECT_TRUE(chars.lowerCase); // Vocab() defaults
    EXPECT_FALSE(chars.addEos);
    EXPECT_TRUE(chars.countValidTest);
    EXPECT_EQ(chars.rawFile, name);
  }

  DatasetSpec ptbChar = datasetSpec("ptb-char");
  EXPECT_THAT(ptbChar.special, ElementsAre("<eos>"));
  EXPECT_FALSE(ptbChar.lowerCase);
  EXPECT_TRUE(ptbChar.addEos);
  EXPECT_TRUE(ptbChar.spellWords);

  DatasetSpec lm1b = datasetSpec("lm1b");
  EXPECT_TRUE(lm1b.special.empty());
  EXPECT_FALSE(lm1b.lowerCase);
  EXPECT_TRUE(lm1b.addDoubleEos);
  EXPECT_EQ(lm1b.vocabFile, "1b_word_vocab.txt");
  EXPECT_TRUE(lm1b.sentenceLevel);
}

// ptb-char spells the words of each stripped line out, "_" between words;
// leading, trailing and repeated whitespace vanish; case and "<unk>"'s
// brackets are kept; a blank line stays (it becomes a lone "<eos>").
TEST(PtbCharTest, SpellsWordsOut) {
  EXPECT_EQ(ptbCharText(" aer banknote \n"), "a e r _ b a n k n o t e\n");
  EXPECT_EQ(ptbCharText("  N   <unk>\tx \r\n\n caf\xc3\xa9"),
            "N _ < u n k > _ x\n\nc a f \xc3\xa9\n");
  EXPECT_EQ(ptbCharText(""), "");
  expectError([] { ptbCharText("ok\n\xff\n", "w.txt"); }, TXL_DATA_ERROR,
              {"w.txt:2: invalid UTF-8"});
}

// The ids of a small ptb-char corpus, from the official Vocab(special=
// ['<eos>'], lower_case=False) over the spelled-out files in Python.
TEST(PtbCharTest, PinsIds) {
  TempDir dir;
  dir.write("train.txt", " aer banknote \n n N <unk>\n");
  dir.write("valid.txt", " a  b \n\n");
  dir.write("test.txt", "x\n");
  Corpus corpus = loadCorpus("ptb-char", dir.path());
  EXPECT_THAT(symbols(corpus.vocab),
              ElementsAre("<eos>", "_", "n", "a", "e", "b", "k", "r", "o", "t",
                          "N", "<", "u", ">", "x"));
  EXPECT_THAT(corpus.train, ElementsAre(3, 4, 7, 1, 5, 3, 2, 6, 2, 8, 9, 4, 0,
                                        2, 1, 10, 1, 11, 12, 2, 6, 13, 0));
  EXPECT_THAT(corpus.valid, ElementsAre(3, 1, 5, 0, 0));
  EXPECT_THAT(corpus.test, ElementsAre(14, 0));
}

// The real PTB as ptb-char: 50 symbols; lengths and id sums from the Python
// reference of the documented mapping.
TEST(PtbCharTest, PennTreebank) {
  Corpus corpus = loadCorpus("ptb-char", sharedPath("data/ptb"));
  ASSERT_EQ(corpus.vocab.size(), 50);
  std::vector<std::string> all = symbols(corpus.vocab);
  EXPECT_THAT(std::vector<std::string>(all.begin(), all.begin() + 8),
              ElementsAre("<eos>", "_", "e", "t", "a", "n", "o", "i"));
  EXPECT_EQ(corpus.vocab.find("N"), 26);
  EXPECT_EQ(corpus.train.size(), 5017482u);
  EXPECT_EQ(corpus.valid.size(), 393042u);
  EXPECT_EQ(corpus.test.size(), 442423u);
  EXPECT_THAT(
      std::vector<int64_t>(corpus.valid.begin(), corpus.valid.begin() + 12),
      ElementsAre(14, 6, 5, 8, 12, 15, 2, 9, 8, 1, 15, 4));
  auto sum = [](const std::vector<int64_t> &ids) {
    return std::accumulate(ids.begin(), ids.end(), int64_t(0));
  };
  EXPECT_EQ(sum(corpus.train), 39775769);
  EXPECT_EQ(sum(corpus.valid), 3120756);
  EXPECT_EQ(sum(corpus.test), 3537311);
}

// ptb: the vocabulary counts train, valid and test; only the requested
// splits are encoded.
TEST(CorpusTest, LoadCountsAllSplitsForPtb) {
  TempDir dir;
  dir.write("train.txt", " a b a \n b c\n");
  dir.write("valid.txt", " d d d\n");
  dir.write("test.txt", " E\n");
  Corpus corpus = loadCorpus("ptb", dir.path(), {Split::Valid});
  EXPECT_THAT(symbols(corpus.vocab),
              ElementsAre("<eos>", "d", "a", "b", "c", "e"));
  EXPECT_THAT(corpus.valid, ElementsAre(1, 1, 1, 0));
  EXPECT_TRUE(corpus.train.empty());
  EXPECT_TRUE(corpus.test.empty());

  Corpus all = loadCorpus("ptb", dir.path() + "/");
  EXPECT_THAT(all.train, ElementsAre(2, 3, 2, 0, 3, 4, 0));
  EXPECT_THAT(all.stream(Split::Test), ElementsAre(5, 0));
}

// wt103 counts train only, so a valid-only symbol is an error; wt2 falls
// back to the wiki.<split>.tokens names.
TEST(CorpusTest, Wt103CountsTrainOnlyAndWikiNames) {
  TempDir dir;
  dir.write("wiki.train.tokens", " The cat \n");
  dir.write("wiki.valid.tokens", " The dog \n");
  dir.write("wiki.test.tokens", " cat \n");
  expectError([&] { loadCorpus("wt103", dir.path(), {Split::Valid}); },
              TXL_DATA_ERROR,
              {dir.file("wiki.valid.tokens") + ":1: symbol 'dog'"});
  Corpus wt103 = loadCorpus("wt103", dir.path(), {Split::Test});
  EXPECT_THAT(symbols(wt103.vocab), ElementsAre("<eos>", "The", "cat"));
  Corpus wt2 = loadCorpus("wt2", dir.path(), {Split::Valid});
  EXPECT_THAT(symbols(wt2.vocab), ElementsAre("<eos>", "The", "cat", "dog"));
  EXPECT_THAT(wt2.valid, ElementsAre(1, 3, 0));
  EXPECT_EQ(splitPath("wt2", dir.path(), Split::Train),
            dir.file("wiki.train.tokens"));
  EXPECT_EQ(splitPath("ptb", dir.path(), Split::Train), dir.file("train.txt"));
}

// enwik8/text8: no specials and no "<eos>".
TEST(CorpusTest, CharacterDatasetsHaveNoEos) {
  TempDir dir;
  dir.write("train.txt", "60 61 60\n");
  dir.write("valid.txt", "61\n");
  dir.write("test.txt", "62\n");
  Corpus corpus = loadCorpus("enwik8", dir.path());
  EXPECT_THAT(symbols(corpus.vocab), ElementsAre("60", "61", "62"));
  EXPECT_THAT(corpus.train, ElementsAre(0, 1, 0));
  EXPECT_THAT(corpus.valid, ElementsAre(1));
}

// A missing split file is reported by path, even one only counted.
TEST(CorpusTest, MissingFileNamesPath) {
  TempDir dir;
  dir.write("train.txt", "a\n");
  dir.write("valid.txt", "a\n");
  expectError([&] { loadCorpus("ptb", dir.path(), {Split::Valid}); },
              TXL_NOT_FOUND, {dir.file("test.txt"), "no such file"});
  expectError([&] { loadCorpus("ptb", dir.file("nowhere"), {Split::Valid}); },
              TXL_NOT_FOUND, {dir.file("nowhere/train.txt")});
}

/// Whitespace-separated words and lines of a file, counted independently.
void countWordsAndLines(const std::string &path, int64_t &words,
                        int64_t &lines) {
  std::ifstream in(path);
  std::string line, word;
  words = lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    std::istringstream tokens(line);
    while (tokens >> word)
      ++words;
  }
}

// The real PTB: 10000 symbols ("<eos>", then "the", "<unk>", "N", ...), the
// streams have one id per word plus one "<eos>" per line, and the ids match
// the official code's.
TEST(CorpusTest, PennTreebank) {
  std::string dir = sharedPath("data/ptb");
  Corpus corpus = loadCorpus("ptb", dir);
  ASSERT_EQ(corpus.vocab.size(), 10000);
  std::vector<std::string> all = symbols(corpus.vocab);
  EXPECT_THAT(std::vector<std::string>(all.begin(), all.begin() + 6),
              ElementsAre("<eos>", "the", "<unk>", "n", "of", "to"));

  int64_t words = 0, lines = 0;
  countWordsAndLines(dir + "/valid.txt", words, lines);
  EXPECT_EQ(words, 70390);
  EXPECT_EQ(lines, 3370);
  EXPECT_EQ(static_cast<int64_t>(corpus.valid.size()), words + lines);
  EXPECT_EQ(corpus.train.size(), 929589u);
  EXPECT_EQ(corpus.test.size(), 82430u);

  EXPECT_THAT(
      std::vector<int64_t>(corpus.valid.begin(), corpus.valid.begin() + 20),
      ElementsAre(1077, 94, 356, 5, 340, 50, 5856, 6, 322, 2595, 5, 1, 686, 374,
                  0, 2, 2, 2583, 1984, 9));
  auto sum = [](const std::vector<int64_t> &ids) {
    return std::accumulate(ids.begin(), ids.end(), int64_t(0));
  };
  EXPECT_EQ(sum(corpus.valid), 57824242);
  EXPECT_EQ(sum(corpus.test), 58578218);
  EXPECT_EQ(sum(corpus.train), 764970891);
}

// WikiText-2 ships here without its train file: loading reports the path;
// the vocabulary over valid + test alone matches Python's.
TEST(CorpusTest, WikiText2ValidTest) {
  std::string dir = sharedPath("data/wikitext-2");
  expectError([&] { loadCorpus("wt2", dir, {Split::Valid}); }, TXL_NOT_FOUND,
              {dir + "/train.txt"});
  Vocab vocab(datasetSpec("wt2").special, datasetSpec("wt2").lowerCase);
  vocab.countFile(dir + "/wiki.valid.tokens");
  vocab.countFile(dir + "/wiki.test.tokens");
  vocab.build();
  EXPECT_EQ(vocab.size(), 18328);
  EXPECT_THAT(std::vector<std::string>({vocab.symbol(0), vocab.symbol(1),
                                        vocab.symbol(2), vocab.symbol(3)}),
              ElementsAre("<eos>", "<unk>", "the", ","));
  EXPECT_EQ(vocab.encodeFile(dir + "/wiki.valid.tokens").size(), 217646u);
  EXPECT_EQ(vocab.encodeFile(dir + "/wiki.test.tokens").size(), 245569u);
}

} // namespace
} // namespace txl::rt
