//===- CharCorpusTest.cpp - enwik8 and text8, raw and prepared --*- C++ -*-===//
//
// The pinned vocabularies and ids come from the official algorithms run in
// Python on the same bytes: prep_enwik8.py (salesforce/awd-lstm-lm) /
// prep_text8.py (kimiyoung/transformer-xl) with num_test_chars scaled down,
// then data_utils.Corpus (Vocab() defaults, count_file over train/valid/test,
// encode_file(ordered=True, add_eos=False)).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/Corpus.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace txl::rt {
namespace {

using test::expectError;
using test::symbols;
using test::TempDir;
using ::testing::ElementsAre;

/// data[:-2n], data[-2n:-n], data[-n:] of a byte/ASCII string.
std::vector<std::string> officialParts(const std::string &data, size_t n) {
  size_t size = data.size();
  return {data.substr(0, size - 2 * n), data.substr(size - 2 * n, n),
          data.substr(size - n)};
}

/// prep_enwik8.py: ' '.join(str(c) if c != ord('\n') else '\n' for c in
/// part), written to train/valid/test.txt in `dir`.
void prepEnwik8(const TempDir &dir, const std::string &raw, size_t n) {
  const char *names[] = {"train.txt", "valid.txt", "test.txt"};
  std::vector<std::string> parts = officialParts(raw, n);
  for (int i = 0; i < 3; ++i) {
    std::string text;
    for (size_t k = 0; k < parts[i].size(); ++k) {
      if (k)
        text += ' ';
      auto byte = static_cast<unsigned char>(parts[i][k]);
      text += byte == '\n' ? std::string("\n") : std::to_string(byte);
    }
    dir.write(names[i], text);
  }
}

/// prep_text8.py for ASCII text whose only whitespace is " \t\n":
/// ' '.join('_' if c == ' ' else c for c in part.strip()).
void prepText8(const TempDir &dir, const std::string &raw, size_t n) {
  const char *names[] = {"train.txt", "valid.txt", "test.txt"};
  std::vector<std::string> parts = officialParts(raw, n);
  for (int i = 0; i < 3; ++i) {
    const std::string &part = parts[i];
    size_t begin = part.find_first_not_of(" \t\n");
    size_t end = part.find_last_not_of(" \t\n");
    std::string text;
    if (begin != std::string::npos)
      for (size_t k = begin; k <= end; ++k) {
        if (k != begin)
          text += ' ';
        text += part[k] == ' ' ? '_' : part[k];
      }
    dir.write(names[i], text);
  }
}

const std::string kEnwik8Raw("ab\nba c\n\x80\xff\n\nzz\x80 b\n\na", 20);

// The raw file split with num_test_chars = 5: train = bytes [0, 10), valid
// [10, 15), test [15, 20). Newline bytes are line breaks in the prepared
// files, so never symbols; no "<eos>"; every other byte is its decimal
// string, ordered by count over the three parts, ties by first occurrence.
TEST(Enwik8Test, RawFilePinsOfficialIds) {
  TempDir dir;
  dir.write("enwik8", kEnwik8Raw);
  Corpus corpus =
      loadCorpus("enwik8", dir.path(),
                 {Split::Train, Split::Valid, Split::Test}, CorpusOptions{5});
  EXPECT_THAT(symbols(corpus.vocab),
              ElementsAre("97", "98", "32", "128", "122", "99", "255"));
  EXPECT_THAT(corpus.train, ElementsAre(0, 1, 1, 0, 2, 5, 3, 6));
  EXPECT_THAT(corpus.valid, ElementsAre(4, 4, 3));
  EXPECT_THAT(corpus.test, ElementsAre(2, 1, 0));
}

// The official prepared files of the same bytes give the same corpus.
TEST(Enwik8Test, PreparedFilesPinOfficialIds) {
  TempDir dir;
  prepEnwik8(dir, kEnwik8Raw, 5);
  EXPECT_EQ(test::slurp(dir.file("train.txt")),
            "97 98 \n 98 97 32 99 \n 128 255");
  EXPECT_EQ(test::slurp(dir.file("valid.txt")), "\n \n 122 122 128");
  Corpus corpus = loadCorpus("enwik8", dir.path());
  EXPECT_THAT(symbols(corpus.vocab),
              ElementsAre("97", "98", "32", "128", "122", "99", "255"));
  EXPECT_THAT(corpus.train, ElementsAre(0, 1, 1, 0, 2, 5, 3, 6));
  EXPECT_THAT(corpus.valid, ElementsAre(4, 4, 3));
  EXPECT_THAT(corpus.test, ElementsAre(2, 1, 0));
}

// Random bytes (newlines included): the raw reader and the generic reader of
// the prepared files agree on every id, and only the asked splits are
// encoded.
TEST(Enwik8Test, RawAndPreparedAgree) {
  std::mt19937 rng(42);
  std::string raw(3000, '\0');
  for (char &c : raw) {
    unsigned value = rng() % 300;
    c = static_cast<char>(value >= 256 ? '\n' : value % 256);
  }
  TempDir rawDir, preparedDir;
  rawDir.write("enwik8", raw);
  prepEnwik8(preparedDir, raw, 400);
  Corpus fromRaw =
      loadCorpus("enwik8", rawDir.path(),
                 {Split::Train, Split::Valid, Split::Test}, CorpusOptions{400});
  Corpus prepared = loadCorpus("enwik8", preparedDir.path());
  EXPECT_EQ(symbols(fromRaw.vocab), symbols(prepared.vocab));
  EXPECT_EQ(fromRaw.train, prepared.train);
  EXPECT_EQ(fromRaw.valid, prepared.valid);
  EXPECT_EQ(fromRaw.test, prepared.test);
  size_t newlines = std::count(raw.begin(), raw.end(), '\n');
  EXPECT_EQ(fromRaw.train.size() + fromRaw.valid.size() + fromRaw.test.size(),
            raw.size() - newlines);

  Corpus validOnly =
      loadCorpus("enwik8", rawDir.path(), {Split::Valid}, CorpusOptions{400});
  EXPECT_EQ(validOnly.valid, prepared.valid);
  EXPECT_TRUE(validOnly.train.empty());
  EXPECT_EQ(validOnly.vocab.size(), prepared.vocab.size());
}

// The prepared files win when both layouts are present.
TEST(Enwik8Test, PreparedFilesTakePrecedence) {
  TempDir dir;
  dir.write("enwik8", kEnwik8Raw);
  dir.write("train.txt", "50 51\n");
  dir.write("valid.txt", "51\n");
  dir.write("test.txt", "51\n");
  Corpus corpus = loadCorpus("enwik8", dir.path());
  EXPECT_THAT(symbols(corpus.vocab), ElementsAre("51", "50"));
  EXPECT_THAT(corpus.train, ElementsAre(1, 0));
}

// Missing data names both layouts; a raw file too short for the split and
// a non-positive num_test_chars are rejected.
TEST(Enwik8Test, Errors) {
  TempDir dir;
  expectError([&] { loadCorpus("enwik8", dir.path()); }, TXL_NOT_FOUND,
              {dir.file("train.txt") + ": no such file", dir.file("enwik8")});
  dir.write("enwik8", kEnwik8Raw);
  expectError(
      [&] {
        loadCorpus("enwik8", dir.path(), {Split::Test}, CorpusOptions{11});
      },
      TXL_DATA_ERROR,
      {dir.file("enwik8") + ": 20 bytes, fewer than the 2 * 11"});
  expectError(
      [&] {
        loadCorpus("enwik8", dir.path(), {Split::Test}, CorpusOptions{0});
      },
      TXL_INVALID_ARGUMENT, {"num_test_chars must be positive, got 0"});
  // A prepared layout missing one file names that file.
  TempDir partial;
  partial.write("train.txt", "50\n");
  partial.write("valid.txt", "50\n");
  expectError([&] { loadCorpus("enwik8", partial.path(), {Split::Train}); },
              TXL_NOT_FOUND, {partial.file("test.txt")});
}

// The official split is 90M / 5M / 5M of the 100M bytes.
TEST(Enwik8Test, OfficialSplitSize) {
  EXPECT_EQ(CorpusOptions().numTestChars, 5000000);
}

// text8 with num_test_chars = 8 over 43 characters (one of them U+00E9, two
// bytes: the split counts characters): each part is stripped, " " becomes
// "_" (merging with text8's own "_"), other whitespace vanishes, letters are
// lower-cased (Vocab's default lower_case=True), no "<eos>".
TEST(Text8Test, RawFilePinsOfficialIds) {
  TempDir dir;
  dir.write("text8", "  a cat_sat on\tthe Mat  caf\xc3\xa9 is  open  now ");
  Corpus corpus =
      loadCorpus("text8", dir.path(), {Split::Train, Split::Valid, Split::Test},
                 CorpusOptions{8});
  EXPECT_THAT(symbols(corpus.vocab),
              ElementsAre("_", "a", "t", "o", "n", "c", "s", "e", "h", "m", "f",
                          "\xc3\xa9", "i", "p", "w"));
  EXPECT_THAT(corpus.train, ElementsAre(1, 0, 5, 1, 2, 0, 6, 1, 2, 0, 3, 4, 2,
                                        8, 7, 0, 9, 1, 2, 0, 0, 5, 1, 10));
  EXPECT_THAT(corpus.valid, ElementsAre(11, 0, 12, 6, 0, 0, 3, 13));
  EXPECT_THAT(corpus.test, ElementsAre(7, 4, 0, 0, 4, 3, 14));
}

// The prepared files prep_text8.py writes for that text read the same.
TEST(Text8Test, PreparedFilesPinOfficialIds) {
  TempDir dir;
  dir.write("train.txt", "a _ c a t _ s a t _ o n \t t h e _ M a t _ _ c a f");
  dir.write("valid.txt", "\xc3\xa9 _ i s _ _ o p");
  dir.write("test.txt", "e n _ _ n o w");
  Corpus corpus = loadCorpus("text8", dir.path());
  EXPECT_EQ(corpus.vocab.size(), 15);
  EXPECT_THAT(corpus.train, ElementsAre(1, 0, 5, 1, 2, 0, 6, 1, 2, 0, 3, 4, 2,
                                        8, 7, 0, 9, 1, 2, 0, 0, 5, 1, 10));
  EXPECT_THAT(corpus.valid, ElementsAre(11, 0, 12, 6, 0, 0, 3, 13));
  EXPECT_THAT(corpus.test, ElementsAre(7, 4, 0, 0, 4, 3, 14));
}

// Random lower-case words, spaces, tabs and newlines: raw and prepared
// agree; "\r\n" in the raw file is read as "\n" (Python text mode) before
// the characters are counted.
TEST(Text8Test, RawAndPreparedAgree) {
  std::mt19937 rng(7);
  std::string raw;
  const char alphabet[] = "abcdefghijklmnopqrstuvwxyz    \t\n";
  for (int i = 0; i < 4000; ++i)
    raw += alphabet[rng() % (sizeof(alphabet) - 1)];
  TempDir rawDir, preparedDir;
  rawDir.write("text8", raw);
  prepText8(preparedDir, raw, 500);
  Corpus fromRaw =
      loadCorpus("text8", rawDir.path(),
                 {Split::Train, Split::Valid, Split::Test}, CorpusOptions{500});
  Corpus prepared = loadCorpus("text8", preparedDir.path());
  EXPECT_EQ(symbols(fromRaw.vocab), symbols(prepared.vocab));
  EXPECT_EQ(fromRaw.train, prepared.train);
  EXPECT_EQ(fromRaw.valid, prepared.valid);
  EXPECT_EQ(fromRaw.test, prepared.test);

  TempDir crlf;
  std::string withCr;
  for (char c : raw)
    withCr += c == '\n' ? std::string("\r\n") : std::string(1, c);
  crlf.write("text8", withCr);
  Corpus translated =
      loadCorpus("text8", crlf.path(),
                 {Split::Train, Split::Valid, Split::Test}, CorpusOptions{500});
  EXPECT_EQ(translated.train, prepared.train);
  EXPECT_EQ(translated.test, prepared.test);
}

TEST(Text8Test, Errors) {
  TempDir dir;
  expectError([&] { loadCorpus("text8", dir.path()); }, TXL_NOT_FOUND,
              {dir.file("train.txt"), dir.file("text8")});
  dir.write("text8", "ab\xc3\xa9");
  expectError(
      [&] { loadCorpus("text8", dir.path(), {Split::Test}, CorpusOptions{2}); },
      TXL_DATA_ERROR, {dir.file("text8") + ": 3 characters"});
  TempDir bad;
  bad.write("text8", "ab\xff cd");
  expectError(
      [&] { loadCorpus("text8", bad.path(), {Split::Test}, CorpusOptions{1}); },
      TXL_DATA_ERROR, {bad.file("text8") + ":1: invalid UTF-8"});
}

} // namespace
} // namespace txl::rt
