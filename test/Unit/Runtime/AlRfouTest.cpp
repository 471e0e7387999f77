//===- AlRfouTest.cpp - Objective "alrfou": schedule and windows -*- C++
//-*-===//

#include "txl/rt/commands/AlRfou.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

namespace txl::rt {
namespace {

using test::expectError;

txl_model_info_t alrfouInfo(int64_t nLayer) {
  txl_model_info_t info{};
  info.n_layer = nLayer;
  info.objective = "alrfou";
  info.multiple_positions = 1;
  info.intermediate_layers = 1;
  info.multiple_targets = 1;
  return info;
}

// Layer l < n contributes to updates 1 .. floor(l * max_step / (2n)).
TEST(AlRfouTest, LayerDropSchedule) {
  EXPECT_EQ(alRfouLastUpdateOfLayer(1, 3, 12), 2);
  EXPECT_EQ(alRfouLastUpdateOfLayer(2, 3, 12), 4);
  EXPECT_EQ(alRfouLastUpdateOfLayer(1, 3, 5), 0); // floor(5/6): never
  EXPECT_EQ(alRfouLastUpdateOfLayer(63, 64, 1000000), 492187);
  txl_model_info_t info = alrfouInfo(3);
  int64_t expected[] = {3, 3, 2, 2, 1, 1, 1};
  for (int64_t u = 1; u <= 7; ++u)
    EXPECT_EQ(alRfouWeights(info, u, 12, 4).contributingLayers, expected[u - 1])
        << "update " << u;
}

TEST(AlRfouTest, LossWeights) {
  txl_model_info_t info = alrfouInfo(3);
  // Update 3 of 12: layer 1 dropped, layers 2 and 3 count.
  AlRfouWeights w = alRfouWeights(info, 3, 12, 4);
  EXPECT_EQ(w.loss, (std::vector<float>{0, 1, 1, 0, 0.5f, 0.5f}));
  EXPECT_EQ(w.position, (std::vector<float>{1, 1, 1, 1}));
  // Each switch off.
  info.multiple_targets = 0;
  EXPECT_EQ(alRfouWeights(info, 1, 12, 4).loss,
            (std::vector<float>{1, 1, 1, 0, 0, 0}));
  info.multiple_targets = 1;
  info.intermediate_layers = 0;
  w = alRfouWeights(info, 1, 12, 4);
  EXPECT_EQ(w.loss, (std::vector<float>{0, 0, 1, 0, 0, 0.5f}));
  EXPECT_EQ(w.contributingLayers, 1);
  info.intermediate_layers = 1;
  info.multiple_positions = 0;
  EXPECT_EQ(alRfouWeights(info, 1, 12, 4).position,
            (std::vector<float>{0, 0, 0, 4}));
}

TEST(AlRfouTest, Windows) {
  std::vector<int64_t> stream(20);
  for (int64_t i = 0; i < 20; ++i)
    stream[size_t(i)] = 100 + i;
  NumpyRandomState rng(7);
  LMSegment out;
  sampleAlRfouWindows(stream, 4, 3, rng, out);
  EXPECT_EQ(out.seqLen, 4);
  EXPECT_EQ(out.dataRows, 4);
  ASSERT_EQ(out.data.size(), 12u);
  ASSERT_EQ(out.target.size(), 15u);
  // Every column is a window of the stream; its targets continue it by one,
  // with a fifth row two past the last data row.
  for (int64_t b = 0; b < 3; ++b) {
    int64_t start = out.data[size_t(b)] - 100;
    EXPECT_GE(start, 0);
    EXPECT_LE(start, 20 - 4 - 2);
    for (int64_t r = 0; r < 4; ++r)
      EXPECT_EQ(out.data[size_t(r * 3 + b)], 100 + start + r);
    for (int64_t r = 0; r < 5; ++r)
      EXPECT_EQ(out.target[size_t(r * 3 + b)], 100 + start + 1 + r);
  }
  // The starts are numpy's: [RandomState(7).randint(0, 15) for _ in
  // range(3)] is [4, 9, 6].
  EXPECT_EQ(out.data[0], 104);
  EXPECT_EQ(out.data[1], 109);
  EXPECT_EQ(out.data[2], 106);
}

TEST(AlRfouTest, StreamTooShort) {
  std::vector<int64_t> stream(5);
  NumpyRandomState rng(1);
  LMSegment out;
  expectError([&] { sampleAlRfouWindows(stream, 4, 1, rng, out); },
              TXL_DATA_ERROR,
              {"the train split has 5 tokens, fewer than the 6 of one window"});
}

} // namespace
} // namespace txl::rt
