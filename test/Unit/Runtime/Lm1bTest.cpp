//===- Lm1bTest.cpp - One Billion Word vocabulary and corpus ----*- C++ -*-===//
//
// Expected ids come from the official Vocab(special=[], lower_case=False,
// vocab_file=...) of pytorch/utils/vocabulary.py run in Python on the same
// files.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/Corpus.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

namespace txl::rt {
namespace {

using test::expectError;
using test::TempDir;
using ::testing::ElementsAre;

/// The ids of sentence `i`.
std::vector<int64_t> sentence(const Sentences &sentences, int64_t i) {
  return std::vector<int64_t>(sentences.begin(i),
                              sentences.begin(i) + sentences.length(i));
}

/// A vocabulary file with counts after some symbols, stray spaces and a
/// repeated "the" (which keeps its first id).
constexpr std::string_view kVocabFile = "<S> 0\n</S> 0\n<UNK> 0\nthe 100\n"
                                        "cat 50\nsat\n on 30 \nthe 7\n"
                                        "mat 20\na\n";

// _build_from_file: the first field of every line, in order, no specials;
// "<UNK>" is the unknown symbol.
TEST(Lm1bTest, VocabularyFile) {
  TempDir dir;
  Vocab vocab({}, /*lowerCase=*/false);
  vocab.buildFromFile(dir.write("vocab.txt", kVocabFile));
  ASSERT_EQ(vocab.size(), 9);
  EXPECT_EQ(vocab.symbol(0), "<S>");
  EXPECT_EQ(vocab.symbol(1), "</S>");
  EXPECT_EQ(vocab.symbol(6), "on");
  EXPECT_EQ(vocab.symbol(8), "a");
  EXPECT_EQ(vocab.find("the"), 3);
  EXPECT_EQ(vocab.unkIndex(), 2);
}

// add_double_eos: "<S>" at both ends of every line (an empty one too);
// cased, so "The" is unknown like "zebra".
TEST(Lm1bTest, DoubleEosFraming) {
  TempDir dir;
  Vocab vocab({}, false);
  vocab.buildFromFile(dir.write("vocab.txt", kVocabFile));
  EXPECT_THAT(vocab.tokenize(" the  cat ", /*addEos=*/true,
                             /*addDoubleEos=*/true),
              ElementsAre("<S>", "the", "cat", "<S>"));
  Sentences sentences = vocab.encodeSentencesText(
      "the cat sat\n\n  a  zebra on The mat \n", true, true);
  ASSERT_EQ(sentences.size(), 3);
  EXPECT_THAT(sentence(sentences, 0), ElementsAre(0, 3, 4, 5, 0));
  EXPECT_THAT(sentence(sentences, 1), ElementsAre(0, 0));
  EXPECT_THAT(sentence(sentences, 2), ElementsAre(0, 8, 2, 6, 2, 7, 0));
  // The ordered encoding maps unknowns the same way.
  EXPECT_THAT(vocab.encodeText("zebra the\n", false), ElementsAre(2, 3));
}

// The official asserts: an unknown symbol containing "<eos>", an empty
// vocabulary line (split()[0]), no "<UNK>".
TEST(Lm1bTest, VocabularyErrors) {
  TempDir dir;
  Vocab vocab({}, false);
  vocab.buildFromFile(dir.write("vocab.txt", kVocabFile));
  expectError([&] { vocab.encodeText("the\nx<eos>y\n", false, "v.txt"); },
              TXL_DATA_ERROR,
              {"v.txt:2: symbol 'x<eos>y' is not in the vocabulary",
               "contains '<eos>'"});
  Vocab other({}, false);
  expectError(
      [&] { other.buildFromFile(dir.write("empty.txt", "<UNK>\n \nx\n")); },
      TXL_DATA_ERROR, {dir.file("empty.txt") + ":2: empty line"});
  expectError([&] { other.buildFromFile(dir.write("nounk.txt", "<S>\nx\n")); },
              TXL_DATA_ERROR, {dir.file("nounk.txt") + ": no '<UNK>' symbol"});
  expectError([&] { other.buildFromFile(dir.file("missing.txt")); },
              TXL_NOT_FOUND, {dir.file("missing.txt") + ": no such file"});
}

// A special named "<unk>" sets unk_idx, as official add_special does.
TEST(Lm1bTest, UnkSpecial) {
  Vocab vocab({"<eos>", "<unk>"}, true);
  vocab.countText("a b\n");
  vocab.build();
  EXPECT_EQ(vocab.unkIndex(), 1);
  EXPECT_THAT(vocab.encodeText("a zz\n"), ElementsAre(2, 1, 0));
  Vocab plain({"<eos>"}, true);
  plain.build();
  EXPECT_EQ(plain.unkIndex(), std::nullopt);
}

/// Creates `path` (relative to `dir`) and its parents.
void makeDirs(const TempDir &dir, const std::string &relative) {
  for (size_t pos = relative.find('/');; pos = relative.find('/', pos + 1)) {
    ::mkdir(dir.file(relative.substr(0, pos)).c_str(), 0755);
    if (pos == std::string::npos)
      break;
  }
}

const std::string kArchive(kLm1bArchiveDir);
const std::string kTrainDir =
    kArchive + "/training-monolingual.tokenized.shuffled";
const std::string kHeldoutDir =
    kArchive + "/heldout-monolingual.tokenized.shuffled";

// The getdata.sh layout: the vocabulary file, the training shards (sorted;
// other files ignored) and valid.txt / test.txt.
TEST(Lm1bTest, LoadCorpusLayout) {
  TempDir dir;
  dir.write("1b_word_vocab.txt", kVocabFile);
  makeDirs(dir, kTrainDir);
  dir.write(kTrainDir + "/news.en-00002-of-00100", "cat\n");
  dir.write(kTrainDir + "/news.en-00001-of-00100", "the\n");
  dir.write(kTrainDir + "/README", "x\n");
  dir.write("valid.txt", "the cat\n");
  dir.write("test.txt", "a\nmat\n");

  Corpus corpus = loadCorpus("lm1b", dir.path());
  EXPECT_EQ(corpus.vocab.size(), 9);
  EXPECT_THAT(corpus.trainPaths,
              ElementsAre(dir.file(kTrainDir + "/news.en-00001-of-00100"),
                          dir.file(kTrainDir + "/news.en-00002-of-00100")));
  ASSERT_EQ(corpus.sentences(Split::Valid).size(), 1);
  EXPECT_THAT(sentence(corpus.validSentences, 0), ElementsAre(0, 3, 4, 0));
  ASSERT_EQ(corpus.sentences(Split::Test).size(), 2);
  EXPECT_THAT(sentence(corpus.testSentences, 1), ElementsAre(0, 7, 0));
  EXPECT_TRUE(corpus.train.empty());
  expectError([&] { corpus.stream(Split::Valid); }, TXL_INVALID_ARGUMENT,
              {"'lm1b' is read sentence by sentence"});
  expectError([&] { corpus.sentences(Split::Train); }, TXL_INVALID_ARGUMENT,
              {"list of shard files"});
}

// Without valid.txt / test.txt both read the held-out shard getdata.sh
// copies into them; valid alone needs no training shards.
TEST(Lm1bTest, HeldoutFallbackAndErrors) {
  TempDir dir;
  expectError([&] { loadCorpus("lm1b", dir.path(), {Split::Valid}); },
              TXL_NOT_FOUND, {dir.file("1b_word_vocab.txt")});
  dir.write("1b_word_vocab.txt", kVocabFile);
  expectError([&] { loadCorpus("lm1b", dir.path(), {Split::Valid}); },
              TXL_NOT_FOUND, {dir.file("valid.txt") + ": no such file"});
  makeDirs(dir, kHeldoutDir);
  dir.write(kHeldoutDir + "/news.en.heldout-00000-of-00050", "sat on\n");
  Corpus corpus = loadCorpus("lm1b", dir.path(), {Split::Valid, Split::Test});
  EXPECT_THAT(sentence(corpus.validSentences, 0), ElementsAre(0, 5, 6, 0));
  EXPECT_EQ(corpus.validSentences.ids, corpus.testSentences.ids);
  EXPECT_EQ(splitPath("lm1b", dir.path(), Split::Test),
            dir.file(kHeldoutDir + "/news.en.heldout-00000-of-00050"));
  expectError([&] { loadCorpus("lm1b", dir.path(), {Split::Train}); },
              TXL_NOT_FOUND,
              {dir.file(kTrainDir + "/news.en-*"), "no lm1b training shards"});
  EXPECT_EQ(splitPath("lm1b", dir.path(), Split::Train),
            dir.file(kTrainDir + "/news.en-*"));
}

// Other corpora have no sentences.
TEST(Lm1bTest, OrderedCorporaHaveNoSentences) {
  TempDir dir;
  dir.write("train.txt", "a\n");
  dir.write("valid.txt", "a\n");
  dir.write("test.txt", "a\n");
  Corpus corpus = loadCorpus("ptb", dir.path());
  expectError([&] { corpus.sentences(Split::Valid); }, TXL_INVALID_ARGUMENT,
              {"'ptb' is an ordered stream"});
}

} // namespace
} // namespace txl::rt
