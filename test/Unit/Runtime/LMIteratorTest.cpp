//===- LMIteratorTest.cpp - Official LMOrderedIterator layout ---*- C++ -*-===//

#include "txl/rt/LMIterator.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace txl::rt {
namespace {

using test::expectError;
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

} // namespace
} // namespace txl::rt
