//===- CheckpointTest.cpp - A training checkpoint's metadata ----*- C++ -*-===//

#include "txl/rt/data/Checkpoint.h"

#include "txl/rt/data/LMIterator.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace txl::rt {
namespace {

using test::expectError;

/// A record as a run of `train` would write it.
CheckpointRecord sampleRecord() {
  CheckpointRecord record;
  record.model = "ptb_small";
  record.dataset = "ptb";
  record.loop.step = 200;
  record.loop.epoch = 2;
  record.loop.batchInEpoch = 17;
  record.loop.iteratorRow = 1190;
  record.loop.lr = 0.00025 * 0.3;
  record.loop.bestValLoss = 5.125;
  record.loop.intervalLoss = 1234.5;
  record.loop.intervalSteps = 40;
  record.loop.evalCount = 1;
  record.loop.plateauBad = 3;
  record.memRows = 70;
  record.batchSize = 20;
  record.batchChunk = 2;
  NumpyRandomState rng(1111);
  rng.normal(0, 1); // leaves a cached gauss
  record.numpyRng = rng.save();
  record.seed = 18446744073709551615ull;
  record.threads = 2;
  return record;
}

// Every field reads back exactly, doubles bit for bit, the 64-bit seed and
// the initial +inf plateau_best included.
TEST(CheckpointTest, RoundTrip) {
  CheckpointRecord record = sampleRecord();
  CheckpointRecord again =
      parseCheckpointMetadata(checkpointMetadata(record), "last.safetensors");
  EXPECT_EQ(again.model, "ptb_small");
  EXPECT_EQ(again.loop.step, 200);
  EXPECT_EQ(again.loop.lr, record.loop.lr);
  EXPECT_EQ(again.loop.bestValLoss, 5.125);
  EXPECT_TRUE(std::isinf(again.loop.plateauBest));
  EXPECT_EQ(again.memRows, 70);
  EXPECT_EQ(again.numpyRng, record.numpyRng);
  EXPECT_EQ(again.seed, 18446744073709551615ull);
  EXPECT_FALSE(again.lossScaling);

  record.lossScaling = true;
  record.loop.lossScaleLog2 = -3;
  record.loop.cleanSteps = 999;
  record.loop.skippedSteps = 4;
  record.loop.bestValLoss.reset();
  again =
      parseCheckpointMetadata(checkpointMetadata(record), "last.safetensors");
  EXPECT_TRUE(again.lossScaling);
  EXPECT_EQ(again.loop.lossScaleLog2, -3);
  EXPECT_EQ(again.loop.cleanSteps, 999);
  EXPECT_EQ(again.loop.skippedSteps, 4);
  EXPECT_FALSE(again.loop.bestValLoss);
  EXPECT_FALSE(again.loop.intervalParts);

  // Objective "alrfou": the interval's sums of the loss's parts.
  record.loop.intervalParts = std::array<double, 3>{0.1, 0.0, 1.0 / 3.0};
  again =
      parseCheckpointMetadata(checkpointMetadata(record), "last.safetensors");
  ASSERT_TRUE(again.loop.intervalParts);
  EXPECT_EQ(*again.loop.intervalParts, *record.loop.intervalParts);
}

// Each value is checked, never wrapped or taken on trust: the message names
// the file and the key.
TEST(CheckpointTest, RejectsImpossibleValues) {
  struct Case {
    const char *key, *value, *fragment;
  } cases[] = {
      {"format", "txlc-train-0", "checkpoint format 'txlc-train-0'"},
      {"step", "12x", "metadata 'step': '12x' is not an integer"},
      {"step", "-1", "metadata 'step': '-1' is outside [0, "},
      {"step", "9223372036854775808", "'9223372036854775808' is outside"},
      {"epoch", "0", "metadata 'epoch': '0' is outside [1, "},
      {"mem_rows", "-5", "metadata 'mem_rows'"},
      {"batch_chunk", "3", "'3' does not divide batch_size 20"},
      {"batch_chunk", "40", "metadata 'batch_chunk': '40' is outside [1, 20]"},
      {"threads", "0", "metadata 'threads'"},
      {"threads", "4294967296", "metadata 'threads'"},
      {"lr", "nan", "metadata 'lr': 'nan' is not a finite number"},
      {"lr", "-0x1p-3", "metadata 'lr': '-0x1p-3' is negative"},
      {"interval_loss", "inf", "is not a finite number"},
      {"plateau_best", "-inf", "metadata 'plateau_best'"},
      {"best_val_loss", "", "metadata 'best_val_loss': '' is not a number"},
      {"seed", "-1", "metadata 'seed': '-1' is not an unsigned integer"},
      {"seed", "18446744073709551616", "does not fit in 64 bits"},
      {"loss_scale_log2", "128", "metadata 'loss_scale_log2'"},
      {"numpy_rng", "1 2 3", "metadata 'numpy_rng': malformed random"},
      {"interval_loss_parts", "0x1p+0 0x1p+1",
       "metadata 'interval_loss_parts': '0x1p+0 0x1p+1' is not three finite"},
      {"interval_loss_parts", "1 2 3 4", "is not three finite numbers"},
      {"interval_loss_parts", "1 inf 3", "is not three finite numbers"},
  };
  for (const Case &c : cases) {
    auto metadata = checkpointMetadata(sampleRecord());
    if (std::string(c.key) == "loss_scale_log2") {
      metadata["loss_scale_clean_steps"] = "0";
      metadata["skipped_steps"] = "0";
    }
    metadata[c.key] = c.value;
    expectError([&] { parseCheckpointMetadata(metadata, "ck.safetensors"); },
                TXL_DATA_ERROR, {"ck.safetensors: ", c.fragment});
  }
  auto metadata = checkpointMetadata(sampleRecord());
  metadata.erase("iterator_row");
  expectError(
      [&] { parseCheckpointMetadata(metadata, "ck.safetensors"); },
      TXL_DATA_ERROR,
      {"ck.safetensors: not a txlc training checkpoint (no 'iterator_row'"});
}

// A random state is restored only from what `save` writes; the one state
// that would make the polar method loop for ever is refused.
TEST(CheckpointTest, RandomStateIsValidated) {
  NumpyRandomState rng(5);
  std::string text = rng.save();
  NumpyRandomState copy(0);
  copy.restore(text);
  EXPECT_EQ(copy.save(), text);
  EXPECT_EQ(copy.interval(1 << 20), rng.interval(1 << 20));

  std::string zeros;
  for (int i = 0; i < 624; ++i)
    zeros += "0 ";
  for (std::string bad :
       {text + " 7", text.substr(0, text.size() / 2), std::string(""),
        "x" + text, zeros + "0 0 0x0p+0", zeros + "625 0 0x0p+0",
        zeros + "0 2 0x0p+0", zeros + "0 0 nan",
        "4294967296 " + zeros.substr(2) + "0 0 0x0p+0"})
    expectError([&] { copy.restore(bad); }, TXL_DATA_ERROR, {"random"});
  // The state is the top bit of word 0 and words 1 to 623: with only the
  // low bits of word 0 set it is all zero.
  std::string lowBitsOnly = "2147483647 " + zeros.substr(2) + "0 0 0x0p+0";
  expectError([&] { copy.restore(lowBitsOnly); }, TXL_DATA_ERROR,
              {"random generator state is all zero"});
  std::string topBitOnly = "2147483648 " + zeros.substr(2) + "624 1 -0x1.8p+0";
  copy.restore(topBitOnly);
  EXPECT_EQ(copy.normal(0, 1), -1.5);
}

} // namespace
} // namespace txl::rt
