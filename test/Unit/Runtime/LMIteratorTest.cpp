//===- LMIteratorTest.cpp - Official LM iterators ---------------*- C++ -*-===//
//
// The pinned stream-iterator blocks and shuffles come from the official
// data_utils.py stream_iterator / LMShuffledIterator / LMMultiFileIterator
// run in Python (numpy arrays in place of torch tensors) after
// np.random.seed(seed) on the same sentences and files.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/data/LMIterator.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <numeric>
#include <set>

namespace txl::rt {
namespace {

using test::expectError;
using test::TempDir;
using ::testing::ElementsAre;

/// The stream 0, 1, ..., n - 1.
std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> stream(static_cast<size_t>(n));
  std::iota(stream.begin(), stream.end(), 0);
  return stream;
}

// 23 tokens, batch 2, bptt 4: n_step = 11, token 22 is dropped, column b
// holds tokens [11b, 11b + 11). Segments start at rows 0, 4, 8; the last has
// seq_len = min(4, 11 - 1 - 8) = 2. Blocks are row-major [seq_len, batch].
TEST(LMIteratorTest, PinsOfficialBlocks) {
  LMOrderedIterator it(iota(23), /*batch=*/2, /*bptt=*/4);
  EXPECT_EQ(it.numSteps(), 11);
  EXPECT_EQ(it.numSegments(), 3);
  EXPECT_EQ(it.numPredictedTokens(), 20);

  LMSegment s;
  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 0);
  EXPECT_EQ(s.seqLen, 4);
  EXPECT_EQ(s.dataRows, 4);
  EXPECT_EQ(s.batch, 2);
  EXPECT_THAT(s.data, ElementsAre(0, 11, 1, 12, 2, 13, 3, 14));
  EXPECT_THAT(s.target, ElementsAre(1, 12, 2, 13, 3, 14, 4, 15));

  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 4);
  EXPECT_EQ(s.seqLen, 4);
  EXPECT_THAT(s.data, ElementsAre(4, 15, 5, 16, 6, 17, 7, 18));
  EXPECT_THAT(s.target, ElementsAre(5, 16, 6, 17, 7, 18, 8, 19));

  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 8);
  EXPECT_EQ(s.seqLen, 2);
  EXPECT_THAT(s.data, ElementsAre(8, 19, 9, 20));
  EXPECT_THAT(s.target, ElementsAre(9, 20, 10, 21));

  EXPECT_FALSE(it.next(s));
  it.reset();
  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 0);
}

// When bptt divides n_step - 1 exactly there is no short segment; when
// n_step - 1 = k * bptt + 1 the last segment has a single row.
TEST(LMIteratorTest, SegmentCounts) {
  LMOrderedIterator exact(iota(9), 1, 4); // n_step 9: rows 0-3, 4-7
  EXPECT_EQ(exact.numSegments(), 2);
  LMOrderedIterator oneRow(iota(10), 1, 4); // n_step 10: 4, 4, 1
  EXPECT_EQ(oneRow.numSegments(), 3);
  LMSegment s;
  int count = 0;
  while (oneRow.next(s))
    ++count;
  EXPECT_EQ(count, 3);
  EXPECT_EQ(s.seqLen, 1);
  EXPECT_THAT(s.data, ElementsAre(8));
  EXPECT_THAT(s.target, ElementsAre(9));
}

// ext_len prepends up to ext_len earlier rows to the data block only.
TEST(LMIteratorTest, ExtendedContext) {
  LMOrderedIterator it(iota(12), 1, 4, /*extLen=*/2);
  LMSegment s = it.segmentAt(0);
  EXPECT_EQ(s.dataRows, 4);
  s = it.segmentAt(4);
  EXPECT_EQ(s.dataRows, 6);
  EXPECT_EQ(s.seqLen, 4);
  EXPECT_THAT(s.data, ElementsAre(2, 3, 4, 5, 6, 7));
  EXPECT_THAT(s.target, ElementsAre(5, 6, 7, 8));
}

// Fewer than two rows yield nothing (the official loop does not run).
TEST(LMIteratorTest, TooShortStream) {
  LMOrderedIterator it(iota(5), 3, 4); // n_step 1
  EXPECT_EQ(it.numSegments(), 0);
  EXPECT_EQ(it.numPredictedTokens(), 0);
  LMSegment s;
  EXPECT_FALSE(it.next(s));
  expectError([&] { it.segmentAt(0); }, TXL_INVALID_ARGUMENT,
              {"segment start 0 out of range"});
}

TEST(LMIteratorTest, RejectsBadSizes) {
  expectError([] { LMOrderedIterator(iota(8), 0, 4); }, TXL_INVALID_ARGUMENT,
              {"batch size must be positive, got 0"});
  expectError([] { LMOrderedIterator(iota(8), 2, -1); }, TXL_INVALID_ARGUMENT,
              {"tgt_len must be positive, got -1"});
  expectError([] { LMOrderedIterator(iota(8), 2, 2, -1); },
              TXL_INVALID_ARGUMENT, {"ext_len"});
}

// numpy's legacy RNG: the same seed gives np.random.permutation's and
// np.random.shuffle's orders bit for bit (values printed by numpy 2.4).
TEST(NumpyRandomStateTest, MatchesNumpy) {
  EXPECT_THAT(NumpyRandomState(0).permutation(10),
              ElementsAre(2, 8, 4, 9, 1, 6, 7, 3, 0, 5));
  NumpyRandomState rng(1111);
  EXPECT_THAT(rng.permutation(10), ElementsAre(9, 3, 8, 0, 6, 2, 4, 1, 5, 7));
  std::vector<char> letters(17);
  std::iota(letters.begin(), letters.end(), 'a');
  rng.shuffle(letters); // continues the same stream
  EXPECT_EQ(std::string(letters.begin(), letters.end()), "hjabfkeqdpncmgiol");
  EXPECT_THAT(NumpyRandomState(4294967295u).permutation(5),
              ElementsAre(4, 1, 0, 2, 3));
  EXPECT_EQ(NumpyRandomState(3).interval(0), 0u);
}

/// Sentences from id lists.
Sentences makeSentences(const std::vector<std::vector<int64_t>> &lists) {
  Sentences sentences;
  for (const auto &list : lists)
    sentences.push(list);
  return sentences;
}

/// Six "<S>"-framed sentences ("<S>" = 0).
Sentences sixSentences() {
  return makeSentences({{0, 11, 12, 13, 0},
                        {0, 21, 0},
                        {0, 31, 32, 0},
                        {0, 41, 42, 43, 44, 45, 0},
                        {0, 51, 0},
                        {0, 61, 62, 0}});
}

// stream_iterator with bsz 2, bptt 3, ext_len 2, in order: column 0 fills
// first, a sentence's last token is consumed only as target, and the
// segment whose column 1 runs out of sentences is dropped. data rows are
// n_retain + bptt with n_retain = min(rows of the previous data, ext_len).
TEST(LMShuffledIteratorTest, PinsOfficialBlocks) {
  LMShuffledIterator it(sixSentences(), /*batch=*/2, /*bptt=*/3,
                        /*extLen=*/2);
  LMSegment s;
  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 0);
  EXPECT_EQ(s.seqLen, 3);
  EXPECT_EQ(s.dataRows, 3);
  EXPECT_THAT(s.data, ElementsAre(0, 0, 11, 21, 12, 0));
  EXPECT_THAT(s.target, ElementsAre(11, 21, 12, 0, 13, 31));
  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 1);
  EXPECT_EQ(s.dataRows, 5);
  EXPECT_THAT(s.data, ElementsAre(11, 21, 12, 0, 13, 31, 0, 32, 41, 0));
  EXPECT_THAT(s.target, ElementsAre(0, 32, 41, 0, 42, 51));
  ASSERT_TRUE(it.next(s));
  EXPECT_THAT(s.data, ElementsAre(0, 32, 41, 0, 42, 51, 43, 0, 44, 61));
  EXPECT_THAT(s.target, ElementsAre(43, 0, 44, 61, 45, 62));
  EXPECT_FALSE(it.next(s));
  EXPECT_FALSE(it.next(s));

  // A new epoch starts over.
  it.reset();
  ASSERT_TRUE(it.next(s));
  EXPECT_EQ(s.start, 0);
  EXPECT_THAT(s.data, ElementsAre(0, 0, 11, 21, 12, 0));
}

// ext_len larger than bptt: the retained context grows by bptt rows per
// segment up to ext_len.
TEST(LMShuffledIteratorTest, RetainedContextGrows) {
  LMShuffledIterator it(sixSentences(), 1, 2, /*extLen=*/4);
  std::vector<std::vector<int64_t>> data, target;
  LMSegment s;
  while (it.next(s)) {
    data.push_back(s.data);
    target.push_back(s.target);
  }
  ASSERT_EQ(data.size(), 10u);
  EXPECT_THAT(data[0], ElementsAre(0, 11));
  EXPECT_THAT(data[1], ElementsAre(0, 11, 12, 13));
  EXPECT_THAT(data[3], ElementsAre(12, 13, 0, 21, 0, 31));
  EXPECT_THAT(target[3], ElementsAre(31, 32));
  EXPECT_THAT(data[9], ElementsAre(45, 0, 51, 0, 61, 62));
  EXPECT_THAT(target[9], ElementsAre(62, 0));
}

// shuffle=True draws np.random.permutation(6) = [3, 5, 0, 2, 1, 4] for seed 7.
TEST(LMShuffledIteratorTest, ShuffleMatchesNumpy) {
  LMShuffledIterator it(sixSentences(), 2, 3, 0, /*shuffle=*/true,
                        /*seed=*/7);
  LMSegment s;
  ASSERT_TRUE(it.next(s));
  EXPECT_THAT(it.order(), ElementsAre(3, 5, 0, 2, 1, 4));
  EXPECT_THAT(s.data, ElementsAre(0, 0, 41, 61, 42, 62));
  EXPECT_THAT(s.target, ElementsAre(41, 61, 42, 62, 43, 0));
  ASSERT_TRUE(it.next(s));
  EXPECT_THAT(s.data, ElementsAre(43, 0, 44, 11, 45, 12));
  ASSERT_TRUE(it.next(s));
  EXPECT_THAT(s.data, ElementsAre(0, 13, 31, 0, 32, 21));
  EXPECT_THAT(s.target, ElementsAre(31, 0, 32, 21, 0, 0));
  EXPECT_FALSE(it.next(s));
}

TEST(LMShuffledIteratorTest, RejectsBadSizes) {
  expectError([] { LMShuffledIterator(sixSentences(), 0, 3); },
              TXL_INVALID_ARGUMENT, {"batch size must be positive, got 0"});
  expectError([] { LMStreamBatcher(2, 0); }, TXL_INVALID_ARGUMENT,
              {"tgt_len must be positive, got 0"});
  expectError([] { LMStreamBatcher(2, 3, -1); }, TXL_INVALID_ARGUMENT,
              {"ext_len must not be negative, got -1"});
}

/// The lm1b test vocabulary: <S> 0, </S> 1, <UNK> 2, the 3, cat 4, sat 5,
/// on 6, mat 7, a 8.
Vocab lm1bVocab(const TempDir &dir) {
  Vocab vocab({}, false);
  vocab.buildFromFile(
      dir.write("vocab.txt", "<S>\n</S>\n<UNK>\nthe\ncat\nsat\non\nmat\na\n"));
  return vocab;
}

/// Three ragged shards (4, 5 and 3 sentences), their paths sorted.
std::vector<std::string> raggedShards(const TempDir &dir) {
  return {dir.write("news.en-00001-of-00100",
                    "the cat\nsat on the mat\na\nthe the the the the cat\n"),
          dir.write("news.en-00002-of-00100",
                    "cat sat\non a mat\nthe\nmat mat\ncat\n"),
          dir.write("news.en-00003-of-00100", "a a a a\nsat\non the cat\n")};
}

/// One yielded segment: the file's number, data, target.
struct Block {
  int file;
  std::vector<int64_t> data, target;
  int64_t start = -1; ///< LMSegment::start
};

/// Every segment of one epoch.
std::vector<Block> epoch(LMMultiFileIterator &it) {
  std::vector<Block> blocks;
  LMSegment s;
  while (it.next(s)) {
    EXPECT_EQ(s.start, static_cast<int64_t>(blocks.size()));
    std::string name = it.currentPath().substr(it.currentPath().size() - 14);
    blocks.push_back({std::stoi(name.substr(0, 5)), s.data, s.target});
  }
  return blocks;
}

MATCHER_P3(IsBlock, file, data, target, "") {
  return arg.file == file && arg.data == std::vector<int64_t>(data) &&
         arg.target == std::vector<int64_t>(target);
}

using V = std::vector<int64_t>;

// Unshuffled: files in order, each with a fresh stream_iterator (the last
// partial segment and the column tails of a file are dropped: shard 1 gives
// one segment, shard 3 one).
TEST(LMMultiFileIteratorTest, PinsOfficialBlocksInOrder) {
  TempDir dir;
  Vocab vocab = lm1bVocab(dir);
  LMMultiFileIterator it(raggedShards(dir), vocab, /*batch=*/2, /*bptt=*/3);
  EXPECT_THAT(
      epoch(it),
      ElementsAre(IsBlock(1, V{0, 0, 3, 5, 4, 6}, V{3, 5, 4, 6, 0, 3}),
                  IsBlock(2, V{0, 0, 4, 6, 5, 8}, V{4, 6, 5, 8, 0, 7}),
                  IsBlock(2, V{0, 7, 3, 0, 0, 4}, V{3, 0, 0, 4, 7, 0}),
                  IsBlock(3, V{0, 0, 8, 5, 8, 0}, V{8, 5, 8, 0, 8, 6})));
}

// shuffle=True with seed 1111: the paths and each file's sentences are
// shuffled as np.random.shuffle does after np.random.seed(1111); the second
// epoch reshuffles the already shuffled path list.
TEST(LMMultiFileIteratorTest, ShuffleMatchesNumpy) {
  TempDir dir;
  Vocab vocab = lm1bVocab(dir);
  LMMultiFileIterator it(raggedShards(dir), vocab, 2, 3, 0, /*shuffle=*/true,
                         /*seed=*/1111);
  EXPECT_THAT(
      epoch(it),
      ElementsAre(IsBlock(3, V{0, 0, 8, 6, 8, 3}, V{8, 6, 8, 3, 8, 4}),
                  IsBlock(2, V{0, 0, 6, 7, 8, 7}, V{6, 7, 8, 7, 7, 0}),
                  IsBlock(2, V{7, 0, 0, 3, 4, 0}, V{0, 3, 4, 0, 5, 4}),
                  IsBlock(1, V{0, 0, 3, 5, 3, 6}, V{3, 5, 3, 6, 3, 3}),
                  IsBlock(1, V{3, 3, 3, 7, 3, 0}, V{3, 7, 3, 0, 4, 3})));
  it.reset();
  EXPECT_THAT(
      epoch(it),
      ElementsAre(IsBlock(2, V{0, 0, 6, 4, 8, 5}, V{6, 4, 8, 5, 7, 0}),
                  IsBlock(2, V{7, 0, 0, 3, 7, 0}, V{0, 3, 7, 0, 7, 4}),
                  IsBlock(3, V{0, 0, 6, 5, 3, 0}, V{6, 5, 3, 0, 4, 8}),
                  IsBlock(1, V{0, 0, 3, 3, 4, 3}, V{3, 3, 4, 3, 0, 3}),
                  IsBlock(1, V{0, 3, 5, 3, 6, 3}, V{5, 3, 6, 3, 3, 4})));
}

// Sentences of exactly bptt + 1 ids and an even count per file: every column
// takes one whole sentence per segment, so each epoch yields every sentence
// of every file exactly once, in a different order per epoch, and within a
// column target[t] == data[t + 1] while the last target row is the "<S>"
// that the next segment's data opens with.
TEST(LMMultiFileIteratorTest, EverySentenceOncePerEpoch) {
  TempDir dir;
  std::string vocabText = "<S>\n<UNK>\n";
  for (int w = 0; w < 48; ++w)
    vocabText += "w" + std::to_string(w) + "\n";
  Vocab vocab({}, false);
  vocab.buildFromFile(dir.write("vocab.txt", vocabText));
  std::vector<std::string> paths;
  for (int file = 0; file < 4; ++file) {
    std::string text;
    for (int k = 0; k < 4; ++k) {
      int first = 3 * (4 * file + k);
      text += "w" + std::to_string(first) + " w" + std::to_string(first + 1) +
              " w" + std::to_string(first + 2) + "\n";
    }
    paths.push_back(dir.write("news.en-0000" + std::to_string(file), text));
  }

  const int64_t batch = 2, bptt = 4;
  LMMultiFileIterator it(paths, vocab, batch, bptt, 0, true, 1234);
  std::vector<int64_t> previousOrder;
  for (int epochNo = 0; epochNo < 3; ++epochNo) {
    it.reset();
    std::map<int64_t, int> seen; // a sentence's first word id -> times
    std::vector<int64_t> order;
    LMSegment s;
    while (it.next(s)) {
      ASSERT_EQ(s.seqLen, bptt);
      ASSERT_EQ(s.dataRows, bptt);
      for (int64_t b = 0; b < batch; ++b) {
        auto at = [&](const std::vector<int64_t> &block, int64_t t) {
          return block[static_cast<size_t>(t * batch + b)];
        };
        EXPECT_EQ(at(s.data, 0), 0);   // "<S>" opens the sentence
        EXPECT_EQ(at(s.target, 3), 0); // and closes it
        for (int64_t t = 0; t + 1 < bptt; ++t)
          EXPECT_EQ(at(s.target, t), at(s.data, t + 1));
        // The three words are consecutive ids w3k, w3k+1, w3k+2.
        int64_t first = at(s.data, 1);
        EXPECT_EQ(at(s.data, 2), first + 1);
        EXPECT_EQ(at(s.data, 3), first + 2);
        ++seen[first];
        order.push_back(first);
      }
    }
    ASSERT_EQ(seen.size(), 16u) << "epoch " << epochNo;
    for (const auto &[first, times] : seen) {
      EXPECT_EQ(times, 1) << "sentence at id " << first;
      EXPECT_EQ((first - 2) % 3, 0); // ids start at 2 ("<S>", "<UNK>")
    }
    EXPECT_NE(order, previousOrder);
    previousOrder = order;
  }
}

// An empty path list yields nothing; an unreadable shard is reported when
// the iteration reaches it.
TEST(LMMultiFileIteratorTest, EmptyAndMissing) {
  TempDir dir;
  Vocab vocab = lm1bVocab(dir);
  LMSegment s;
  LMMultiFileIterator none({}, vocab, 2, 3);
  EXPECT_FALSE(none.next(s));
  LMMultiFileIterator missing({dir.file("news.en-gone")}, vocab, 2, 3);
  expectError([&] { missing.next(s); }, TXL_NOT_FOUND,
              {dir.file("news.en-gone") + ": no such file"});
}

} // namespace
} // namespace txl::rt

namespace txl::rt {
namespace {

// Values printed by numpy 1.24 after np.random.seed(1111).
TEST(NumpyRandomStateTest, RandomAndNormalMatchNumpy) {
  NumpyRandomState rng(1111);
  EXPECT_DOUBLE_EQ(rng.randomSample(), 0.09554919920876204);
  EXPECT_DOUBLE_EQ(rng.randomSample(), 0.9250037018616327);
  EXPECT_DOUBLE_EQ(rng.randomSample(), 0.34357342320721895);
  std::string saved = rng.save();
  EXPECT_DOUBLE_EQ(rng.normal(64, 5), 60.177389280130484);
  // The second value of a polar pair comes from the cache, and survives
  // save/restore.
  std::string mid = rng.save();
  EXPECT_DOUBLE_EQ(rng.normal(64, 5), 60.14536031607655);
  EXPECT_DOUBLE_EQ(rng.normal(64, 5), 63.83356280969498);
  EXPECT_DOUBLE_EQ(rng.randomSample(), 0.7844253488091156);
  NumpyRandomState other(7);
  other.restore(mid);
  EXPECT_DOUBLE_EQ(other.normal(64, 5), 60.14536031607655);
  other.restore(saved);
  EXPECT_DOUBLE_EQ(other.normal(64, 5), 60.177389280130484);
  EXPECT_THROW(other.restore("not a state"), Error);
}

// np.random.seed(1111); the official get_varlen_iter lengths at bptt 70:
// [68, 72, 66, 66, 68, 71, 68, 62].
TEST(LMVarlenIteratorTest, LengthsMatchTrainPy) {
  std::vector<int64_t> stream(2 * 1000);
  for (size_t i = 0; i < stream.size(); ++i)
    stream[i] = static_cast<int64_t>(i);
  NumpyRandomState rng(1111);
  LMVarlenIterator iterator(stream, 2, 70, rng);
  std::vector<int64_t> lengths, starts;
  LMSegment segment;
  while (iterator.next(segment)) {
    lengths.push_back(segment.seqLen);
    starts.push_back(segment.start);
  }
  ASSERT_GE(lengths.size(), 8u);
  EXPECT_EQ(std::vector<int64_t>(lengths.begin(), lengths.begin() + 8),
            (std::vector<int64_t>{68, 72, 66, 66, 68, 71, 68, 62}));
  // Consecutive, and stopping once the start reaches n_step - 2 = 998.
  for (size_t i = 1; i < starts.size(); ++i)
    EXPECT_EQ(starts[i], starts[i - 1] + lengths[i - 1]);
  EXPECT_LT(starts.back(), 998);
  EXPECT_GE(starts.back() + lengths.back(), 998);
  // Column 1 of row r is token 1000 + r; the target is the next row.
  EXPECT_EQ(segment.target[1], segment.data[1] + 1);
}

/// Every segment of `it` until `count` epochs have ended (each epoch's
/// segments, then an empty marker block of file -1).
std::vector<Block> epochs(LMMultiFileIterator &it, int count) {
  std::vector<Block> blocks;
  for (int e = 0; e < count; ++e) {
    LMSegment s;
    while (it.next(s)) {
      std::string name = it.currentPath().substr(it.currentPath().size() - 14);
      blocks.push_back(
          {std::stoi(name.substr(0, 5)), s.data, s.target, s.start});
    }
    blocks.push_back({-1, {}, {}});
    it.reset();
  }
  return blocks;
}

// A training checkpoint's position: saved at every segment of two epochs
// (inside a file, at a file's last segment, at an epoch's last), restored
// into a fresh iterator over the same shards copied to another directory,
// the rest of that epoch and two more equal the uninterrupted run's, and
// the generator is where the uninterrupted one is.
TEST(LMMultiFileIteratorTest, SaveRestoreContinuesExactly) {
  TempDir dir, moved;
  Vocab vocab = lm1bVocab(dir);
  std::vector<std::string> paths = raggedShards(dir);
  std::vector<std::string> movedPaths = raggedShards(moved);
  LMMultiFileIterator reference(paths, vocab, 2, 3, 0, /*shuffle=*/true, 99);
  std::vector<Block> all = epochs(reference, 4);

  LMMultiFileIterator running(paths, vocab, 2, 3, 0, true, 99);
  size_t taken = 0;
  LMSegment s;
  for (int e = 0; e < 2; ++e) {
    while (running.next(s)) {
      ++taken;
      std::string state = running.saveState();
      LMMultiFileIterator resumed(movedPaths, vocab, 2, 3, 0, true, 0);
      resumed.restoreState(state, "ckpt");
      EXPECT_EQ(resumed.rng().save(), running.rng().save());
      std::vector<Block> rest = epochs(resumed, 3 - e);
      ASSERT_GE(all.size(), taken + rest.size());
      for (size_t i = 0; i < rest.size(); ++i) {
        EXPECT_EQ(rest[i].file, all[taken + i].file) << taken << " " << i;
        EXPECT_EQ(rest[i].data, all[taken + i].data) << taken << " " << i;
        EXPECT_EQ(rest[i].target, all[taken + i].target) << taken << " " << i;
        EXPECT_EQ(rest[i].start, all[taken + i].start) << taken << " " << i;
      }
    }
    ++taken; // the epoch marker
    running.reset();
  }
  EXPECT_GT(taken, 6u);
}

// A position that does not fit the data is refused, naming the state's
// source: a missing shard, an extra one, a changed shard, malformed text.
TEST(LMMultiFileIteratorTest, RestoreRefusesOtherData) {
  TempDir dir, changed;
  Vocab vocab = lm1bVocab(dir);
  std::vector<std::string> paths = raggedShards(dir);
  LMMultiFileIterator it(paths, vocab, 2, 3, 0, true, 5);
  LMSegment s;
  ASSERT_TRUE(it.next(s));
  std::string state = it.saveState();

  std::vector<std::string> two(paths.begin(), paths.begin() + 2);
  LMMultiFileIterator missing(two, vocab, 2, 3, 0, true, 5);
  expectError([&] { missing.restoreState(state, "last.safetensors"); },
              TXL_DATA_ERROR,
              {"last.safetensors: the checkpoint trained on shard "
               "'news.en-0000"});
  std::vector<std::string> four = paths;
  four.push_back(dir.write("news.en-00004-of-00100", "the cat\n"));
  LMMultiFileIterator extra(four, vocab, 2, 3, 0, true, 5);
  expectError([&] { extra.restoreState(state, "last.safetensors"); },
              TXL_DATA_ERROR,
              {"the checkpoint trained on 3 shard files, the data has 4"});

  // The shard being read, shortened: fewer segments than were taken.
  std::string current = it.currentPath().substr(dir.path().size() + 1);
  std::vector<std::string> edited;
  for (const std::string &path : paths) {
    std::string name = path.substr(dir.path().size() + 1);
    edited.push_back(
        changed.write(name, name == current ? "a\n" : test::slurp(path)));
  }
  LMMultiFileIterator shortened(edited, vocab, 2, 3, 0, true, 5);
  expectError([&] { shortened.restoreState(state, "ckpt"); }, TXL_DATA_ERROR,
              {"the file changed since"});

  LMMultiFileIterator malformed(paths, vocab, 2, 3, 0, true, 5);
  expectError([&] { malformed.restoreState("{\"paths\": 3}", "ckpt"); },
              TXL_DATA_ERROR, {"ckpt: malformed training iterator state"});
  expectError([&] { malformed.restoreState("not json", "ckpt"); },
              TXL_DATA_ERROR, {"ckpt: malformed training iterator state"});
  nlohmann::json badRng = nlohmann::json::parse(state);
  badRng["file_rng"] = "1 2 3";
  expectError([&] { malformed.restoreState(badRng.dump(), "ckpt"); },
              TXL_DATA_ERROR,
              {"ckpt: training iterator state: malformed random generator "
               "state"});
}

} // namespace
} // namespace txl::rt
