//===- TextTest.cpp - User text <-> ids, sampling ----------------*- C++
//-*-===//

#include "txl/rt/data/Text.h"
#include "txl/rt/commands/Generate.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace txl::rt {
namespace {

using test::expectError;

Vocab built(std::vector<std::string> special, bool lowerCase,
            std::string_view text) {
  Vocab vocab(std::move(special), lowerCase);
  vocab.countText(text, /*addEos=*/false);
  vocab.build();
  return vocab;
}

std::string detokenize(std::string_view dataset, const Vocab &vocab,
                       const std::vector<int64_t> &ids) {
  Detokenizer detokenizer(dataset, vocab);
  std::string out;
  for (int64_t id : ids)
    out += detokenizer.next(id);
  return out;
}

// Word level: lines end in <eos> only when terminated; unknown words map to
// PTB's <unk>; the detokenizer puts spaces between words and a line break
// for <eos>.
TEST(TextTest, WordLevel) {
  Vocab vocab = built({"<eos>"}, true, "the cat sat <unk>\n");
  std::vector<int64_t> ids =
      encodeUserText("ptb", vocab, "The cat\nsat dog", "p.txt");
  auto id = [&](const char *s) { return *vocab.find(s); };
  EXPECT_EQ(ids, (std::vector<int64_t>{id("the"), id("cat"), id("<eos>"),
                                       id("sat"), id("<unk>")}));
  EXPECT_EQ(detokenize("ptb", vocab, ids), "the cat\nsat <unk>");
  Vocab noUnk = built({"<eos>"}, false, "a b\n");
  expectError([&] { encodeUserText("wt2", noUnk, "a c", "p.txt"); },
              TXL_DATA_ERROR, {"p.txt:1: symbol 'c' is not in the vocabulary"});
}

// Invalid UTF-8 is an error naming the text, its line and the byte's offset
// (issue 48, item 10: it was read as <unk>), on every dataset but enwik8,
// whose symbols are bytes.
TEST(TextTest, InvalidUtf8) {
  Vocab vocab = built({"<eos>"}, true, "the cat sat <unk>\n");
  expectError(
      [&] { encodeUserText("ptb", vocab, "the\ncat \xff sat", "p.txt"); },
      TXL_DATA_ERROR, {"p.txt:2: invalid UTF-8 (byte 0xff at offset 8)"});
  // An overlong "/" and a lone continuation byte.
  expectError([&] { encodeUserText("wt2", vocab, "\xc0\xaf", "--prompt"); },
              TXL_DATA_ERROR,
              {"--prompt:1: invalid UTF-8 (byte 0xc0 at offset 0)"});
  Vocab ptbChar = built({"<eos>"}, false, "a b _ c\n");
  expectError(
      [&] { encodeUserText("ptb-char", ptbChar, "ab \x80", "q.txt"); },
      TXL_DATA_ERROR, {"q.txt:1: invalid UTF-8 (byte 0x80 at offset 3)"});
  Vocab enwik8 = built({}, true, "104 255\n");
  EXPECT_EQ(encodeUserText("enwik8", enwik8, "h\xff", "e.txt"),
            (std::vector<int64_t>{*enwik8.find("104"), *enwik8.find("255")}));
}

// Characters: ptb-char spells words with "_" between them, text8 writes " "
// as "_", enwik8 has every byte as its decimal number and no line ends.
TEST(TextTest, CharacterLevel) {
  Vocab ptbChar = built({"<eos>"}, false, "a b _ c\n");
  std::vector<int64_t> ids =
      encodeUserText("ptb-char", ptbChar, "ab c\n", "t.txt");
  auto id = [&](const Vocab &v, const char *s) { return *v.find(s); };
  EXPECT_EQ(ids, (std::vector<int64_t>{id(ptbChar, "a"), id(ptbChar, "b"),
                                       id(ptbChar, "_"), id(ptbChar, "c"),
                                       id(ptbChar, "<eos>")}));
  EXPECT_EQ(detokenize("ptb-char", ptbChar, ids), "ab c\n");

  Vocab text8 = built({}, true, "a _ b\n");
  ids = encodeUserText("text8", text8, "A b", "t.txt");
  EXPECT_EQ(ids, (std::vector<int64_t>{id(text8, "a"), id(text8, "_"),
                                       id(text8, "b")}));
  EXPECT_EQ(detokenize("text8", text8, ids), "a b");

  Vocab enwik8 = built({}, true, "104 105 10\n");
  ids = encodeUserText("enwik8", enwik8, "hi\nhi", "t.txt");
  EXPECT_EQ(ids, (std::vector<int64_t>{id(enwik8, "104"), id(enwik8, "105"),
                                       id(enwik8, "104"), id(enwik8, "105")}));
  EXPECT_EQ(detokenize("enwik8", enwik8, ids), "hihi");
  expectError([&] { detokenize("enwik8", enwik8, {7}); }, TXL_INVALID_ARGUMENT,
              {"token id 7 is outside the vocabulary of 3"});
}

// Greedy is the argmax (lowest id among equals); top-k 1 is greedy; top-p
// keeps the smallest most likely set reaching p; the uniform draw walks the
// kept tokens in decreasing probability.
TEST(TextTest, Sampling) {
  std::vector<float> lp = {std::log(0.1f), std::log(0.4f), std::log(0.4f),
                           std::log(0.1f)};
  EXPECT_EQ(sampleToken(lp, 0.0, 0, 1.0, 0.99), 1);
  EXPECT_EQ(sampleToken(lp, 1.0, 1, 1.0, 0.99), 1);
  // Order 1, 2, 0, 3 with probabilities .4 .4 .1 .1.
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 1.0, 0.0), 1);
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 1.0, 0.5), 2);
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 1.0, 0.85), 0);
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 1.0, 0.95), 3);
  // top-p 0.8 keeps 1 and 2 (mass .8): 0.6 of it is token 2.
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 0.8, 0.6), 2);
  EXPECT_EQ(sampleToken(lp, 1.0, 0, 0.8, 0.99), 2);
  // top-k 3 drops token 3: 0.95 of .9 lands on token 0.
  EXPECT_EQ(sampleToken(lp, 1.0, 3, 1.0, 0.95), 0);
  // A high temperature flattens: .5 of the mass is then past token 2.
  EXPECT_EQ(sampleToken(lp, 1000.0, 0, 1.0, 0.6), 0);
}

} // namespace
} // namespace txl::rt
