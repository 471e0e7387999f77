//===- AttentionPartsTest.cpp - How many parts the keys are split into -*- C++
//-*-===//
//
// txl::rt::attentionKeyParts, the choice behind txl_device_attention_parts
// that compiled host code asks before each launch of the f32 rel_attention
// kernel: split the keys only when the unsplit grid leaves compute units
// idle, and then within its bounds.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Device.h"

#include <gtest/gtest.h>

namespace txl::rt {
namespace {

// The paper's enwik8 evaluation (qlen 80, klen 2180: 5 query tiles x 32
// columns, 69 key tiles) on an H100's 132 SMs, 4 workgroups each: two waves
// of 528 need ceil(1056 / 160) = 7 parts.
TEST(AttentionPartsTest, PaperEvaluationOnH100) {
  EXPECT_EQ(attentionKeyParts(132, 160, 4, 69), 7);
}

// The tensor-core kernel at the same shape: 64 query rows per workgroup
// (2 x 32 workgroups), 2 resident per SM: two waves of 264 need 9 parts.
TEST(AttentionPartsTest, PaperEvaluationTensorCoresOnH100) {
  EXPECT_EQ(attentionKeyParts(132, 64, 2, 69), 9);
}

// A grid that already fills every SM is not split (enwik8's training
// shape, qlen 512 over 32 x 22 x 8 workgroups), nor one exactly filling it.
TEST(AttentionPartsTest, FullGridIsNotSplit) {
  EXPECT_EQ(attentionKeyParts(132, 32 * 22 * 8, 4, 32), 1);
  EXPECT_EQ(attentionKeyParts(132, 528, 4, 1000), 1);
  EXPECT_EQ(attentionKeyParts(2, 8, 4, 1000), 1);
}

// Each part keeps at least 4 key tiles: short key ranges split less, or
// not at all.
TEST(AttentionPartsTest, FewKeysSplitLess) {
  EXPECT_EQ(attentionKeyParts(132, 160, 4, 12), 3);
  EXPECT_EQ(attentionKeyParts(132, 160, 4, 7), 1);
  EXPECT_EQ(attentionKeyParts(132, 1, 4, 3), 1);
}

// At most 16 parts, however small the grid.
TEST(AttentionPartsTest, AtMostSixteenParts) {
  EXPECT_EQ(attentionKeyParts(132, 1, 4, 10000), 16);
  EXPECT_EQ(attentionKeyParts(132, 64, 4, 10000), 16);
  EXPECT_EQ(attentionKeyParts(132, 100, 4, 10000), 11);
}

// Inputs below 1 count as 1 (a device reporting no compute units, an
// empty grid or key range): never zero parts or a division by zero.
TEST(AttentionPartsTest, DegenerateInputs) {
  EXPECT_EQ(attentionKeyParts(0, 0, 0, 0), 1);
  EXPECT_EQ(attentionKeyParts(132, 0, 4, 0), 1);
  // One compute unit of 4 slots, one workgroup: two waves are 8 parts.
  EXPECT_EQ(attentionKeyParts(-1, 1, 4, 100), 8);
}

} // namespace
} // namespace txl::rt
